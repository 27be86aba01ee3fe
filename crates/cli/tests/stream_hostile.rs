//! `retile stream` used as a hostile user would: killed at random moments,
//! interrupted, fed too much, given numbers out of range, writing to a full
//! stdout. Whatever happens, the store opens and holds exactly the planes
//! its metadata claims, and bad arguments get one line, not a panic.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod common;
use common::planes_holding_the_pattern;

fn retile(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retile"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Fails unless the command failed with one line naming `expected`.
fn refused(args: &[&str], expected: &str) {
    let out = retile(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(
        err.contains(expected) && !err.contains("panicked"),
        "{args:?}: {err}"
    );
}

#[test]
fn a_stream_killed_at_any_moment_leaves_a_store_that_holds_what_it_claims() {
    let dir = tempfile::tempdir().unwrap();
    let mut seed = 0x2545F4914F6CDD1Du64;
    for trial in 0..36 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let path = dir.path().join(format!("k{trial}.zarr"));
        let path_text = path.to_str().unwrap().to_owned();
        let mut args = vec![
            "stream",
            "--shape",
            "0,16,16",
            "--tile",
            "1,16,16",
            "--dtype",
            "u16",
            "--planes",
            "100000000",
            "--output",
            &path_text,
        ];
        match trial % 4 {
            1 => args.extend(["--shard", "3,1,1"]),
            2 => args.extend(["--codec", "blosc-lz4:1", "--shard", "1,1,1"]),
            3 => args.extend(["--buffered-io", "--codec", "zstd:1"]),
            _ => {}
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_retile"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // A third of the kills land at random while the store is being made;
        // the rest at random moments after it first claims a plane, however
        // slowly a loaded machine starts the command.
        let after_data = trial % 3 != 0;
        if after_data {
            wait_for_a_claimed_plane(&path);
        }
        std::thread::sleep(Duration::from_millis(seed % 300));
        child.kill().unwrap();
        child.wait().unwrap();
        if !path.join("zarr.json").exists() {
            assert!(
                !after_data,
                "trial {trial}: no zarr.json after a plane was claimed"
            );
            continue; // killed before the store was made
        }
        let planes = planes_holding_the_pattern(&path, "/", 256);
        assert!(
            !after_data || planes > 0,
            "trial {trial}: a claimed plane was lost"
        );
    }
}

/// Waits (at most a minute) until the store at `path` claims a plane.
fn wait_for_a_claimed_plane(path: &Path) {
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let meta = std::fs::read_to_string(path.join("zarr.json")).unwrap_or_default();
        let shape: Option<serde_json::Value> = serde_json::from_str(&meta).ok();
        if shape.is_some_and(|m| m["shape"][0].as_u64().unwrap_or(0) > 0) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("{} claimed no plane in a minute", path.display());
}

#[cfg(unix)]
#[test]
fn sigint_writes_every_plane_taken_and_closes_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("int.zarr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_retile"))
        .args([
            "stream", "--shape", "0,16,16", "--tile", "4,16,16", "--dtype", "u16", "--input", "-",
        ])
        .args(["--shard", "2,1,1", "--output", path.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let planes: Vec<u8> = (0..10 * 256u32)
        .flat_map(|i| (i as u16).to_le_bytes())
        .collect();
    stdin.write_all(&planes).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: sends a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    assert_eq!(planes_holding_the_pattern(&path, "/", 256), 10);
}

#[test]
fn input_beyond_a_bounded_shape_is_refused_after_every_plane_of_the_shape_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.raw");
    let bytes: Vec<u8> = (0..11 * 256u32)
        .flat_map(|i| (i as u16).to_le_bytes())
        .collect();
    std::fs::write(&input, bytes).unwrap();
    for shard in ["1,1,1", "4,1,1"] {
        let path = dir.path().join(format!("b{}.zarr", &shard[..1]));
        let out = retile(&[
            "stream",
            "--shape",
            "10,16,16",
            "--tile",
            "4,16,16",
            "--dtype",
            "u16",
            "--input",
            input.to_str().unwrap(),
            "--output",
            path.to_str().unwrap(),
            "--shard",
            shard,
        ]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains("longer than the shape"),
            "{}",
            stderr(&out)
        );
        assert_eq!(
            planes_holding_the_pattern(&path, "/", 256),
            10,
            "shard {shard}"
        );
    }
}

#[test]
fn numbers_are_parsed_exactly_in_their_type() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.zarr");
    let out = out.to_str().unwrap();
    let base = [
        "stream", "--shape", "2,4,4", "--tile", "1,2,2", "--output", out,
    ];
    for (dtype, fill, expected) in [
        ("u16", "-1", "not a u16 value"),
        ("u16", "70000", "not a u16 value"),
        ("u8", "1.7", "not a u8 value"),
        ("i8", "128", "not a i8 value"),
        ("f32", "one", "not a f32 value"),
    ] {
        refused(
            &[&base[..], &["--dtype", dtype, "--fill", fill]].concat(),
            expected,
        );
    }
    let exact = retile(&[&base[..], &["--dtype", "u64", "--fill", "9007199254740993"]].concat());
    assert!(exact.status.success(), "{}", stderr(&exact));
    let meta = std::fs::read_to_string(Path::new(out).join("zarr.json")).unwrap();
    assert!(meta.contains("9007199254740993"), "{meta}");
    refused(
        &[
            "stream",
            "--shape",
            "0,1024,1024",
            "--tile",
            "1,64,64",
            "--dtype",
            "u64",
            "--planes",
            "576460752303423488",
        ],
        "do not fit in 64 bits",
    );
    refused(
        &[
            "stream",
            "--shape",
            "0,4,4",
            "--tile",
            "1,2,2",
            "--threads",
            "100000",
        ],
        "not 100000",
    );
    refused(
        &[
            "stream",
            "--shape",
            "0,4,4",
            "--tile",
            "1,2,2",
            "--writers",
            "100000",
            "--output",
            out,
            "--overwrite",
        ],
        "not 100000",
    );
}

#[test]
fn impossible_shards_are_refused_before_anything_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.zarr");
    for shard in [
        "1,4294967296,4294967296",
        "18446744073709551615,1,1",
        "9223372036854775808,1,1",
        "0,1,1",
        "1,1",
    ] {
        refused(
            &[
                "stream",
                "--shape",
                "0,16,16",
                "--tile",
                "1,16,16",
                "--planes",
                "10",
                "--shard",
                shard,
                "--output",
                path.to_str().unwrap(),
            ],
            "shard",
        );
        assert!(!path.exists(), "{shard}: the store was made");
    }
    // a deep shard allocates nothing up front
    let out = retile(&[
        "stream",
        "--shape",
        "0,16,16",
        "--tile",
        "1,16,16",
        "--planes",
        "10",
        "--shard",
        "1000000,1,1",
        "--output",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(planes_holding_the_pattern(&path, "/", 256), 10);
}

#[test]
fn sink_options_without_an_output_are_refused() {
    for option in [
        ["--codec", "garbage"],
        ["--codec", "zstd:1"],
        ["--shard", "0,1"],
        ["--writers", "0"],
        ["--dim-names", "a,b,c"],
    ] {
        let out = retile(
            &[
                &[
                    "stream", "--shape", "0,4,4", "--tile", "1,2,2", "--planes", "2",
                ][..],
                &option[..],
            ]
            .concat(),
        );
        assert_eq!(out.status.code(), Some(1), "{option:?}");
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    for args in [
        vec!["plan", "stream", "--shape", "4,4,6", "--tile", "2,2,3"],
        vec![
            "plan", "stream", "--shape", "4,4,6", "--tile", "2,2,3", "--json",
        ],
        vec![
            "stream", "--shape", "0,4,4", "--tile", "1,2,2", "--planes", "3",
        ],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_retile"))
            .args(&args)
            .stdout(full)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("cannot write to stdout") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn inputs_and_outputs_of_the_wrong_kind_are_refused_before_a_store_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("w.zarr");
    let store = store.to_str().unwrap();
    let base = ["stream", "--shape", "0,4,4", "--tile", "1,2,2"];
    let dir_text = dir.path().to_str().unwrap();
    refused(
        &[&base[..], &["--input", dir_text, "--output", store]].concat(),
        "is a directory",
    );
    assert!(
        !Path::new(store).exists(),
        "a store was made for an input that cannot be read"
    );
    refused(
        &[&base[..], &["--output", "/dev/null"]].concat(),
        "is not a directory",
    );
    refused(
        &[&base[..], &["--planes", "4", "--input", "/dev/null"]].concat(),
        "--planes",
    );
    refused(
        &[
            "stream", "--shape", "3,4,4", "--tile", "1,2,2", "--planes", "99", "--output", store,
        ],
        "contradicts the shape",
    );
}
