//! `retile rechunk`: a store written by `retile stream` re-tiled into
//! another tiling (shards, a codec, a memory limit), read back with zarrs
//! equal to the synthetic pattern; a limit too small refused in one line
//! with the figure, nothing made.

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
