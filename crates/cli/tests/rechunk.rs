//! `retile rechunk`: a store written by `retile stream` re-tiled into
//! another tiling (shards, a codec, a memory limit), read back with zarrs
//! equal to the synthetic pattern; a limit too small refused in one line
//! with the figure, nothing made; the peak memory of a re-tiling within
//! its limit plus a fixed overhead, measured.

use std::process::{Command, Output, Stdio};

mod common;
use common::planes_holding_the_pattern;

fn retile(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retile"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_stream_retiled_reads_back_the_pattern_and_too_little_memory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src.zarr"), dir.path().join("dst.zarr"));
    let (src, dst) = (src.to_str().unwrap(), dst.to_str().unwrap());
    let made = retile(&[
        "stream", "--shape", "0,16,16", "--tile", "4,16,8", "--dtype", "u16", "--planes", "42",
        "--output", src,
    ]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let refused = retile(&["rechunk", src, dst, "--tile", "1,8,8", "--memory", "100"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("needs at least") && err.contains("the memory allowed is 100"),
        "{err}"
    );
    assert!(!std::path::Path::new(dst).exists());
    let done = retile(&[
        "rechunk", src, dst, "--tile", "1,8,8", "--shard", "2,2,2", "--codec", "zstd:1",
        "--memory", "64K",
    ]);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(String::from_utf8_lossy(&done.stdout).contains("re-tiled 42 planes"));
    assert_eq!(planes_holding_the_pattern(dir.path(), "/dst.zarr", 256), 42);
}

/// Runs `retile` with `args` to its end; its exit status and its peak
/// resident memory in bytes (the kernel's count for that child alone).
#[allow(clippy::zombie_processes)] // reaped by wait4, which clippy does not see
fn peak_memory(args: &[&str]) -> (i32, u64) {
    let child = Command::new(env!("CARGO_BIN_EXE_retile"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing into the locals above.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    (libc::WEXITSTATUS(status), usage.ru_maxrss as u64 * 1024)
}

#[test]
fn a_retiling_stays_within_its_memory_limit_plus_a_fixed_overhead() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src.zarr"), dir.path().join("dst.zarr"));
    let (src, dst) = (src.to_str().unwrap(), dst.to_str().unwrap());
    // 128 MiB in chunks of 1 MiB, 8 planes deep
    let made = retile(&[
        "stream",
        "--shape",
        "64,1024,1024",
        "--tile",
        "8,256,256",
        "--dtype",
        "u16",
        "--planes",
        "64",
        "--output",
        src,
    ]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    const LIMIT: u64 = 48 << 20;
    // measured: about 40 MB in a release build, 56 MB in a debug one (the
    // process, the writers' staging and codec contexts), whatever the limit
    const OVERHEAD: u64 = 64 << 20;
    let (code, peak) = peak_memory(&[
        "rechunk",
        src,
        dst,
        "--tile",
        "1,512,512",
        "--codec",
        "zstd:1",
        "--memory",
        "48M",
    ]);
    assert_eq!(code, 0);
    assert!(
        peak <= LIMIT + OVERHEAD,
        "peak {peak} bytes over the limit {LIMIT} and the overhead {OVERHEAD}"
    );
    assert_eq!(
        planes_holding_the_pattern(dir.path(), "/dst.zarr", 1 << 20),
        64
    );
}
