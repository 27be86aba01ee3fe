//! What the CUDA backend's setup costs, piece by piece, and what the
//! alternatives to whole-epoch pinned buffers cost: the driver's context,
//! `cuMemHostAlloc` (and zeroing it, on one thread or on every core),
//! `cuMemHostRegister` of huge-page anonymous memory, freeing each, and
//! the bus from pinned and from pageable memory in both directions.
//! libcuda is loaded at run time, so this builds without CUDA.
//!
//!     rustc --edition 2021 -O bench/pinned_probe.rs -o /tmp/pinned_probe
//!     MIB=512 THREADS=16 /tmp/pinned_probe
use std::ffi::{c_char, c_void, CString};
use std::time::Instant;

extern "C" {
    fn dlopen(name: *const c_char, flags: i32) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn mmap(a: *mut c_void, l: usize, p: i32, f: i32, fd: i32, o: i64) -> *mut c_void;
    fn munmap(a: *mut c_void, l: usize) -> i32;
    fn madvise(a: *mut c_void, l: usize, adv: i32) -> i32;
}

struct Cuda(*mut c_void);
impl Cuda {
    fn f<T: Copy>(&self, name: &str) -> T {
        let c = CString::new(name).unwrap();
        let p = unsafe { dlsym(self.0, c.as_ptr()) };
        assert!(!p.is_null(), "{name} not found");
        unsafe { std::mem::transmute_copy(&p) }
    }
}

fn check(what: &str, rc: i32) {
    assert_eq!(rc, 0, "{what} failed: CUresult {rc}");
}

#[derive(Clone, Copy)]
struct P(*mut u8);
unsafe impl Send for P {}
unsafe impl Sync for P {}

/// Zeroes `n` bytes at `p` on `threads` threads.
fn zero(p: *mut u8, n: usize, threads: usize) {
    let part = n.div_ceil(threads);
    let base = P(p);
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let b = base;
                let (from, to) = (t * part, ((t + 1) * part).min(n));
                if from < to {
                    unsafe { std::ptr::write_bytes(b.0.add(from), 0, to - from) };
                }
            });
        }
    });
}

fn main() {
    let mib: usize = std::env::var("MIB").ok().and_then(|v| v.parse().ok()).unwrap_or(512);
    let threads: usize = std::env::var("THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(16);
    let n = mib << 20;
    let t = Instant::now();
    let lib = CString::new("libcuda.so.1").unwrap();
    let handle = unsafe { dlopen(lib.as_ptr(), 2) };
    assert!(!handle.is_null(), "libcuda.so.1 not found");
    let cu = Cuda(handle);
    let init: extern "C" fn(u32) -> i32 = cu.f("cuInit");
    let device_get: extern "C" fn(*mut i32, i32) -> i32 = cu.f("cuDeviceGet");
    let retain: extern "C" fn(*mut *mut c_void, i32) -> i32 = cu.f("cuDevicePrimaryCtxRetain");
    let set_current: extern "C" fn(*mut c_void) -> i32 = cu.f("cuCtxSetCurrent");
    let host_alloc: extern "C" fn(*mut *mut c_void, usize, u32) -> i32 = cu.f("cuMemHostAlloc");
    let free_host: extern "C" fn(*mut c_void) -> i32 = cu.f("cuMemFreeHost");
    let register: extern "C" fn(*mut c_void, usize, u32) -> i32 = cu.f("cuMemHostRegister_v2");
    let unregister: extern "C" fn(*mut c_void) -> i32 = cu.f("cuMemHostUnregister");
    let mem_alloc: extern "C" fn(*mut u64, usize) -> i32 = cu.f("cuMemAlloc_v2");
    let htod: extern "C" fn(u64, *const c_void, usize) -> i32 = cu.f("cuMemcpyHtoD_v2");
    let dtoh: extern "C" fn(*mut c_void, u64, usize) -> i32 = cu.f("cuMemcpyDtoH_v2");
    check("cuInit", init(0));
    let mut dev = 0;
    check("cuDeviceGet", device_get(&mut dev, 0));
    let mut ctx = std::ptr::null_mut();
    check("cuDevicePrimaryCtxRetain", retain(&mut ctx, dev));
    check("cuCtxSetCurrent", set_current(ctx));
    println!("context: {:.3} s (dlopen, cuInit, primary context)", t.elapsed().as_secs_f64());
    let mut device = 0u64;
    check("cuMemAlloc", mem_alloc(&mut device, n));
    let gbs = |secs: f64| n as f64 / secs / 1e9;
    let timed = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    // GB/s up to the GPU and back down from host memory at `p`
    let bus = |p: *mut c_void| {
        let up = timed(&mut || check("HtoD", htod(device, p, n)));
        let down = timed(&mut || check("DtoH", dtoh(p, device, n)));
        (gbs(up), gbs(down))
    };
    for rep in 0..2 {
        // cuMemHostAlloc, then zeroing on one thread and on every thread
        let t = Instant::now();
        let mut p = std::ptr::null_mut();
        check("cuMemHostAlloc", host_alloc(&mut p, n, 0));
        let alloc = t.elapsed().as_secs_f64();
        let t = Instant::now();
        zero(p.cast(), n, 1);
        let zero1 = t.elapsed().as_secs_f64();
        let t = Instant::now();
        zero(p.cast(), n, threads);
        let zero_n = t.elapsed().as_secs_f64();
        let (up, down) = bus(p);
        let free = timed(&mut || check("cuMemFreeHost", free_host(p)));
        println!(
            "rep {rep} cuMemHostAlloc {mib} MiB: alloc {alloc:.3} s ({:.2} GB/s), zero 1 thread {zero1:.3} s, {threads} threads {zero_n:.3} s, up {up:.1} GB/s, down {down:.1} GB/s, free {free:.3} s",
            gbs(alloc)
        );
        // huge-page anonymous memory, written on every thread, then registered
        let t = Instant::now();
        let q = unsafe { mmap(std::ptr::null_mut(), n, 3, 0x22, -1, 0) };
        assert!(q as isize != -1, "mmap failed");
        unsafe { madvise(q, n, 14) };
        zero(q.cast(), n, threads);
        let made = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let rc = register(q, n, 0);
        let reg = t.elapsed().as_secs_f64();
        if rc == 0 {
            let (up, down) = bus(q);
            let unreg = timed(&mut || check("cuMemHostUnregister", unregister(q)));
            println!(
                "rep {rep} huge pages made {made:.3} s, cuMemHostRegister {reg:.3} s ({:.2} GB/s), up {up:.1} GB/s, down {down:.1} GB/s, unregister {unreg:.3} s",
                gbs(reg)
            );
        } else {
            println!("rep {rep} cuMemHostRegister failed: CUresult {rc} after {reg:.3} s");
        }
        // the same memory pageable: the driver stages it itself
        let (up, down) = bus(q);
        println!("rep {rep} pageable: up {up:.1} GB/s, down {down:.1} GB/s");
        unsafe { munmap(q, n) };
    }
}
