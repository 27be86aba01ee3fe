//! Reading a file straight into tile runs with `preadv` (the iovecs are
//! the segments each input row splits into), against `pread` into a 4 MiB
//! buffer followed by a user-space scatter of the same runs: how `retile
//! stream --input FILE` should read (issue #28 item 2, "read into the tile
//! ring directly"). 1 GiB of 4 KiB rows (2048 u16), segments of 128 to
//! 1024 bytes, on THREADS threads, each its own range of rows.
//!
//!     rustc -O bench/preadv_probe.rs -o /tmp/preadv_probe
//!     THREADS=16 FILE=/dev/shm/probe.bin /tmp/preadv_probe
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::time::Instant;
#[repr(C)]
struct IoVec { base: *mut u8, len: usize }
extern "C" { fn preadv(fd: i32, iov: *const IoVec, cnt: i32, off: i64) -> isize; }
#[derive(Clone, Copy)]
struct P(*mut u8);
unsafe impl Send for P {}
unsafe impl Sync for P {}
const ROW: usize = 4096;
fn direct(f: &File, dst: P, n: usize, seg: usize, lo: usize, hi: usize) {
    let cols = ROW / seg;
    let slot = n / cols;
    let fd = f.as_raw_fd();
    let mut iov: Vec<IoVec> = Vec::with_capacity(1024);
    let mut r = lo;
    while r < hi {
        iov.clear();
        let first = r;
        while r < hi && iov.len() + cols <= 1024 {
            for c in 0..cols {
                iov.push(IoVec { base: unsafe { dst.0.add(c * slot + r * seg) }, len: seg });
            }
            r += 1;
        }
        let want = (r - first) * ROW;
        let got = unsafe { preadv(fd, iov.as_ptr(), iov.len() as i32, (first * ROW) as i64) };
        assert_eq!(got as usize, want);
    }
}
fn twice(f: &File, dst: P, n: usize, seg: usize, lo: usize, hi: usize) {
    let cols = ROW / seg;
    let slot = n / cols;
    let mut buf = vec![0u8; 4 << 20];
    let per = buf.len() / ROW;
    let mut r = lo;
    while r < hi {
        let k = per.min(hi - r);
        f.read_exact_at(&mut buf[..k * ROW], (r * ROW) as u64).unwrap();
        for (i, row) in buf[..k * ROW].chunks_exact(ROW).enumerate() {
            for c in 0..cols {
                unsafe { std::ptr::copy_nonoverlapping(row.as_ptr().add(c * seg), dst.0.add(c * slot + (r + i) * seg), seg) };
            }
        }
        r += k;
    }
}
fn main() {
    let threads: usize = std::env::var("THREADS").ok().and_then(|t| t.parse().ok()).unwrap_or(1);
    let n: usize = 1 << 30;
    let path = std::env::var("FILE").unwrap_or("/dev/shm/pv.bin".into());
    std::fs::write(&path, vec![7u8; n]).unwrap();
    let f = File::open(&path).unwrap();
    let mut dst = vec![1u8; n];
    let p = P(dst.as_mut_ptr());
    let rows = n / ROW;
    for rep in 0..2 {
        for seg in [128usize, 256, 512, 1024] {
            let mut line = format!("threads {threads} rep {rep} seg {seg}:");
            for (name, how) in [("preadv", direct as fn(&File, P, usize, usize, usize, usize)), ("pread+scatter", twice)] {
                let t = Instant::now();
                std::thread::scope(|s| {
                    for k in 0..threads {
                        let f = &f;
                        s.spawn(move || how(f, p, n, seg, rows * k / threads, rows * (k + 1) / threads));
                    }
                });
                line += &format!(" {name} {:.2} GB/s", n as f64 / t.elapsed().as_secs_f64() / 1e9);
            }
            println!("{line}");
        }
    }
    drop(dst);
    std::fs::remove_file(&path).unwrap();
}
