//! Making an epoch buffer: fresh anonymous memory (huge pages advised)
//! written by THREADS threads, against the same memory faulted in by
//! `madvise(MADV_POPULATE_WRITE)` (Linux 5.14) without writing it, which
//! would skip a pass for a fill of zeros. 256 MiB, three rounds.
//!
//!     rustc -O bench/populate_probe.rs -o /tmp/populate_probe
//!     THREADS=16 /tmp/populate_probe
use std::time::Instant;
const MADV_HUGEPAGE: i32 = 14;
const MADV_POPULATE_WRITE: i32 = 23;
extern "C" {
    fn mmap(a: *mut u8, l: usize, p: i32, f: i32, fd: i32, o: i64) -> *mut u8;
    fn munmap(a: *mut u8, l: usize) -> i32;
    fn madvise(a: *mut u8, l: usize, adv: i32) -> i32;
}
#[derive(Clone, Copy)] struct P(*mut u8); unsafe impl Send for P {} unsafe impl Sync for P {}
fn main() {
    let threads: usize = std::env::var("THREADS").ok().and_then(|t| t.parse().ok()).unwrap_or(2);
    let n = 256usize << 20;
    for rep in 0..3 {
        for how in ["fill", "populate"] {
            let t = Instant::now();
            let p = unsafe { mmap(std::ptr::null_mut(), n, 3, 0x22, -1, 0) };
            unsafe { madvise(p, n, MADV_HUGEPAGE) };
            let pp = P(p);
            std::thread::scope(|s| {
                for k in 0..threads {
                    s.spawn(move || {
                        let (lo, hi) = (n * k / threads / (2 << 20) * (2 << 20), n * (k + 1) / threads / (2 << 20) * (2 << 20));
                        let pp = pp;
                        unsafe {
                            if how == "fill" { std::ptr::write_bytes(pp.0.add(lo), 0, hi - lo); }
                            else { assert_eq!(madvise(pp.0.add(lo), hi - lo, MADV_POPULATE_WRITE), 0); }
                        }
                    });
                }
            });
            let dt = t.elapsed().as_secs_f64();
            unsafe { munmap(p, n) };
            println!("threads {threads} rep {rep} {how}: {:.1} GB/s", n as f64 / dt / 1e9);
        }
    }
}
