//! A disk that fails: a failed `fdatasync`, `syncfs`, `fsync`, `close` or
//! `set_len` (`ftruncate`) of any file a stream writes fails the stream
//! with a non-zero exit and a message naming the file and the cause, and
//! the store keeps claiming only planes it holds. The faults come from
//! `shim/fail_io.c`, built here with the C compiler and loaded with
//! `LD_PRELOAD`: it makes one kind of call on the files whose path holds a
//! given part fail with EIO, after the call itself was made, as a disk or
//! a network file system reports a write it lost. Every store is read back
//! with zarrs.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

mod common;
use common::{claimed, planes_holding_the_pattern};

/// The elements of a plane of the streams these tests write (16x16).
const PLANE: u64 = 256;

/// The fault shim, built once for every test of this file.
fn shim() -> &'static Path {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/shim/fail_io.c");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fail_io.so");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let status = Command::new(&cc)
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&out)
            .arg(&source)
            .arg("-ldl")
            .status()
            .unwrap_or_else(|e| panic!("building the fault shim needs a C compiler ({cc}): {e}"));
        assert!(
            status.success(),
            "{cc} failed to build {}",
            source.display()
        );
        out
    })
}

/// `retile stream` of `planes` synthetic u16 planes of 16x16 into `path`
/// with `extra` arguments, with `call` failing on the files whose path
/// holds `part`; its chunks (1 KiB) are written with direct I/O.
fn stream_failing(call: &str, part: &str, path: &Path, planes: u64, extra: &[&str]) -> Output {
    failing(call, part, path, planes, extra)
        .env("RETILE_DIRECT_IO_MIN_CHUNK", "0")
        .output()
        .unwrap()
}

/// The command of [`stream_failing`], its chunks written as the CLI
/// chooses (through the page cache: they are smaller than 64 KiB).
fn failing(call: &str, part: &str, path: &Path, planes: u64, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_retile"));
    command
        .args([
            "stream", "--shape", "0,16,16", "--tile", "4,8,16", "--dtype", "u16",
        ])
        .args(["--planes", &planes.to_string(), "--output"])
        .arg(path)
        .args(extra)
        .env("LD_PRELOAD", shim())
        .env("RETILE_FAIL", call)
        .env("RETILE_FAIL_PATH", part)
        .stdin(Stdio::null());
    command
}

/// Fails unless the stream failed cleanly after the shim injected at least
/// one fault: exit 1, a message naming `names` and the cause, no panic, and
/// a store whose claims (if it has any) hold the pattern.
fn failed_cleanly(out: &Output, path: &Path, names: &str, planes: u64) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fail_io: "), "no fault was injected: {err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let message: Vec<&str> = err.lines().filter(|l| l.starts_with("retile: ")).collect();
    assert_eq!(message.len(), 1, "one error line: {err}");
    assert!(message[0].contains(names), "'{names}' in: {err}");
    assert!(
        message[0].contains("Input/output error"),
        "the cause in: {err}"
    );
    if path.join("zarr.json").exists() {
        let held = planes_holding_the_pattern(path, "/", PLANE);
        assert_eq!(held, claimed(path));
        assert!(held <= planes);
    }
}

/// A directory on the disk the tests build on (not a file system in
/// memory, so that direct I/O and its `set_len` are used).
fn on_disk() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

#[test]
fn a_data_file_that_fails_to_close_or_sync_fails_the_stream_and_is_not_claimed() {
    let cases: &[(&str, &[&str])] = &[
        ("close", &[]),
        ("close", &["--buffered-io"]),
        ("close", &["--sync", "rows"]),
        ("close", &["--shard", "8,16,16"]),
        ("fdatasync", &["--sync", "rows"]),
        ("fdatasync", &["--sync", "rows", "--buffered-io"]),
        ("fdatasync", &["--sync", "rows", "--shard", "8,16,16"]),
        ("ftruncate", &[]),
        ("ftruncate", &["--shard", "8,16,16"]),
    ];
    for (call, extra) in cases {
        let dir = on_disk();
        let path = dir.path().join("out.zarr");
        let out = stream_failing(call, "/out.zarr/c/", &path, 42, extra);
        let file = match extra.contains(&"--shard") {
            true => "shard c/",
            false => "chunk c/",
        };
        failed_cleanly(&out, &path, file, 42);
        assert_eq!(claimed(&path), 0, "{call} {extra:?}: the first row failed");
    }
}

#[test]
fn a_failed_sync_before_the_last_claim_fails_the_stream() {
    for extra in [&[][..], &["--sync", "rows"]] {
        let dir = on_disk();
        let path = dir.path().join("out.zarr");
        let out = stream_failing("syncfs", "/out.zarr", &path, 42, extra);
        failed_cleanly(&out, &path, "syncing the store's files", 42);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("may not be on the disk"), "{extra:?}: {err}");
    }
}

#[test]
fn a_metadata_file_that_fails_to_sync_or_close_fails_the_stream() {
    for call in ["fsync", "close"] {
        for extra in [&[][..], &["--sync", "rows"], &["--pyramid", "mean"]] {
            let dir = on_disk();
            let path = dir.path().join("out.zarr");
            let out = stream_failing(call, "zarr.json", &path, 42, extra);
            let level0 = match extra.contains(&"--pyramid") {
                true => path.join("0"),
                false => path.clone(),
            };
            failed_cleanly(&out, &level0, "zarr.json", 42);
        }
    }
}

#[test]
fn without_a_fault_the_shim_changes_nothing() {
    let dir = on_disk();
    let path = dir.path().join("out.zarr");
    let out = stream_failing("close", "/no-such-part/", &path, 42, &["--sync", "rows"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(planes_holding_the_pattern(&path, "/", PLANE), 42);
}

#[test]
fn chunks_under_64_kib_go_through_the_page_cache_unless_direct_io_is_asked_for() {
    // only direct I/O cuts a file to length (its last block was padded):
    // a failing ftruncate fails the stream that writes 1 KiB chunks with
    // direct I/O, and not the one the CLI lets write them through the page cache
    let dir = on_disk();
    let path = dir.path().join("out.zarr");
    let out = failing("ftruncate", "/out.zarr/c/", &path, 42, &[])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains("fail_io: "),
        "a file was cut to length: {err}"
    );
    assert_eq!(planes_holding_the_pattern(&path, "/", PLANE), 42);
    let out = stream_failing("ftruncate", "/out.zarr/c/", &path, 42, &["--overwrite"]);
    failed_cleanly(&out, &path, "chunk c/", 42);
    for bad in ["64K", "-1", ""] {
        let out = failing("close", "/no-such-part/", &path, 1, &["--overwrite"])
            .env("RETILE_DIRECT_IO_MIN_CHUNK", bad)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bad:?}: {err}");
        assert!(
            err.contains("RETILE_DIRECT_IO_MIN_CHUNK is") && err.contains("number of bytes"),
            "{err}"
        );
    }
}
