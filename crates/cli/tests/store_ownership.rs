//! Who may write a store, and what `--overwrite` may delete: one stream
//! owns a store while it lives (a second is refused, naming the owner, with
//! or without `--overwrite`); overwriting deletes a Zarr store and retile's
//! own leftovers, never a file that is not part of one, and follows a
//! symbolic link without replacing it; `--sync rows` makes every claim
//! durable; NGFF arguments that would make an invalid image are refused.
//! Every store written is read back with zarrs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{claimed, planes_holding_the_pattern};

/// The elements of a plane of the streams these tests write (16x16).
const PLANE: u64 = 256;

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

/// Fails unless the command failed with one line naming every `expected`.
fn refused(args: &[&str], expected: &[&str]) -> String {
    let out = retile(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for e in expected {
        assert!(err.contains(e), "{args:?}: expected '{e}' in: {err}");
    }
    err
}

/// Fails unless the command succeeded.
fn succeeds(args: &[&str]) {
    let out = retile(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
}

/// `retile stream` of `planes` synthetic u16 planes of 16x16 into `path`
/// (a plain array), with `extra` arguments.
fn stream_args<'a>(path: &'a str, planes: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "stream", "--shape", "0,16,16", "--tile", "4,8,16", "--dtype", "u16", "--planes", planes,
        "--output", path,
    ];
    args.extend_from_slice(extra);
    args
}

/// Starts a long stream into `path` and waits (a minute at most) until it
/// claims a plane.
fn start_writer(path: &Path, zarr_json_dir: &Path, extra: &[&str]) -> Child {
    let text = path.to_str().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_retile"))
        .args(stream_args(text, "100000000", extra))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while claimed(zarr_json_dir) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{} claimed no plane in a minute",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

/// Stops `child` with SIGINT and checks that it wrote every plane it took.
#[cfg(unix)]
fn interrupt(mut child: Child) {
    // SAFETY: sends a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "the first writer: {status:?}");
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all.extend(files_under(&path));
        }
        all.push(path);
    }
    all
}

#[cfg(unix)]
#[test]
fn a_second_writer_is_refused_naming_the_owner_even_with_overwrite() {
    for pyramid in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("one.zarr");
        let text = path.to_str().unwrap();
        let extra: &[&str] = if pyramid { &["--pyramid", "mean"] } else { &[] };
        let level0 = if pyramid {
            path.join("0")
        } else {
            path.clone()
        };
        let first = start_writer(&path, &level0, extra);
        let owner = format!("process {}", first.id());
        for overwrite in [false, true] {
            let mut args = stream_args(text, "3", extra);
            if overwrite {
                args.push("--overwrite");
            }
            refused(&args, &["is being written by another stream", &owner]);
        }
        // nor may a stream write inside the store, or a level of it
        let inner = path.join("0");
        let inner_text = inner.to_str().unwrap();
        refused(
            &stream_args(inner_text, "3", &["--overwrite"]),
            &["is being written by another stream", &owner],
        );
        interrupt(first);
        // the first writer's store is whole: the refused ones touched nothing
        let planes = planes_holding_the_pattern(&path, if pyramid { "/0" } else { "/" }, PLANE);
        assert!(planes > 0);
        assert!(
            !path.join(".retile.lock").exists(),
            "the lock outlived its stream"
        );
        // once the owner is gone, the store may be overwritten
        succeeds(&[&stream_args(text, "3", extra)[..], &["--overwrite"]].concat());
        assert_eq!(
            planes_holding_the_pattern(&path, if pyramid { "/0" } else { "/" }, PLANE),
            3
        );
    }
}

#[test]
fn two_writers_started_together_never_both_succeed() {
    for trial in 0..6 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("race.zarr");
        let text = path.to_str().unwrap().to_owned();
        let overwrite: &[&str] = if trial % 2 == 1 {
            &["--overwrite"]
        } else {
            &[]
        };
        let spawn = || {
            Command::new(env!("CARGO_BIN_EXE_retile"))
                .args(stream_args(&text, "200", overwrite))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn(), spawn());
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let ok = [&a, &b].iter().filter(|o| o.status.success()).count();
        assert!(
            ok >= 1 || trial % 2 == 0,
            "trial {trial}: neither succeeded"
        );
        assert!(
            ok <= 1
                || !path.join("zarr.json").exists()
                || planes_holding_the_pattern(&path, "/", PLANE) == 200,
            "trial {trial}: both writers succeeded"
        );
        for failed in [&a, &b].into_iter().filter(|o| !o.status.success()) {
            let err = stderr(failed);
            assert!(
                err.contains("is being written by another stream")
                    || err.contains("already exists"),
                "trial {trial}: {err}"
            );
        }
        // whoever won, the store holds its planes, each one whole
        if ok == 1 {
            assert_eq!(
                planes_holding_the_pattern(&path, "/", PLANE),
                200,
                "trial {trial}"
            );
        }
        assert!(ok <= 1, "trial {trial}: two writers both claimed the store");
    }
}

#[test]
fn a_killed_writer_does_not_block_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.zarr");
    let text = path.to_str().unwrap();
    let mut first = start_writer(&path, &path, &[]);
    first.kill().unwrap();
    first.wait().unwrap();
    // the kernel released its lock: a retry is not told that someone writes
    succeeds(&[&stream_args(text, "5", &[])[..], &["--overwrite"]].concat());
    assert_eq!(planes_holding_the_pattern(&path, "/", PLANE), 5);
}

#[test]
fn overwrite_refuses_a_directory_holding_anything_that_is_not_part_of_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.zarr");
    let text = path.to_str().unwrap();
    succeeds(&stream_args(
        text,
        "4",
        &["--pyramid", "mean", "--shard", "1,2,2"],
    ));
    let foreign: [(&str, bool); 5] = [
        ("input.raw", false),
        ("notes", true),
        ("0/README", false),
        ("0/c/extra", true),
        ("zarr.json.bak", false),
    ];
    for (name, is_dir) in foreign {
        let stray = path.join(name);
        match is_dir {
            true => std::fs::create_dir_all(&stray).unwrap(),
            false => std::fs::write(&stray, b"keep me").unwrap(),
        }
        let before = files_under(&path).len();
        let err = refused(
            &stream_args(text, "2", &["--overwrite"]),
            &[
                "is not part of a Zarr store",
                name.rsplit('/').next().unwrap(),
            ],
        );
        assert!(stray.exists(), "{name} was deleted: {err}");
        assert_eq!(
            files_under(&path).len(),
            before,
            "{name}: the store was touched"
        );
        match is_dir {
            true => std::fs::remove_dir(&stray).unwrap(),
            false => std::fs::remove_file(&stray).unwrap(),
        }
    }
    // with nothing foreign, the store is replaced
    succeeds(&stream_args(text, "2", &["--overwrite"]));
    assert_eq!(planes_holding_the_pattern(&path, "/", PLANE), 2);
    assert!(!path.join("0").exists(), "the old image's level was left");
}

#[cfg(unix)]
#[test]
fn overwrite_follows_a_symbolic_link_and_never_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.zarr");
    let link = dir.path().join("link.zarr");
    let link_text = link.to_str().unwrap();
    succeeds(&stream_args(real.to_str().unwrap(), "3", &[]));
    std::os::unix::fs::symlink(&real, &link).unwrap();
    succeeds(&stream_args(link_text, "5", &["--overwrite"]));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced"
    );
    assert_eq!(planes_holding_the_pattern(&real, "/", PLANE), 5);
    // a link to nothing is refused, and stays as it was
    let dangling = dir.path().join("dangling.zarr");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
    refused(
        &stream_args(dangling.to_str().unwrap(), "2", &["--overwrite"]),
        &["symbolic link", "nowhere"],
    );
    assert!(std::fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(!dir.path().join("nowhere").exists());
}

#[test]
fn retiles_own_leftovers_never_block_a_retry() {
    for overwrite in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("left.zarr");
        let text = path.to_str().unwrap();
        // what a start that failed or was killed may leave
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join(".zarr.json.partial"), b"{\"zarr_fo").unwrap();
        std::fs::write(path.join(".retile-direct-io-probe"), [0u8; 512]).unwrap();
        std::fs::write(
            path.join(".retile.lock"),
            b"pid 2147483000\nhost x\nstarted y\n",
        )
        .unwrap();
        let extra: &[&str] = if overwrite { &["--overwrite"] } else { &[] };
        succeeds(&stream_args(text, "3", extra));
        assert_eq!(planes_holding_the_pattern(&path, "/", PLANE), 3);
        let names: Vec<String> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.starts_with('.')),
            "leftovers remain: {names:?}"
        );
    }
}

#[test]
fn sync_rows_writes_the_same_store_and_bad_policies_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (k, extra) in [
        &["--sync", "rows"][..],
        &["--sync", "rows", "--shard", "2,2,2", "--codec", "zstd:1"],
        &["--sync", "rows", "--buffered-io"],
        &["--sync", "end", "--pyramid", "mean"],
        &["--sync", "rows", "--pyramid", "max"],
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.path().join(format!("s{k}.zarr"));
        succeeds(&stream_args(path.to_str().unwrap(), "9", extra));
        let key = if extra.contains(&"--pyramid") {
            "/0"
        } else {
            "/"
        };
        assert_eq!(
            planes_holding_the_pattern(&path, key, PLANE),
            9,
            "{extra:?}"
        );
    }
    let path = dir.path().join("bad.zarr");
    let out = retile(&stream_args(
        path.to_str().unwrap(),
        "2",
        &["--sync", "always"],
    ));
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.contains("'always'") && err.contains("rows"),
        "{err}"
    );
    assert!(!path.exists());
    refused(
        &[
            "stream", "--shape", "4,4", "--tile", "2,2", "--sync", "rows",
        ],
        &["--sync", "--output"],
    );
}

#[test]
fn pyramid_levels_never_claim_more_than_their_parent_when_killed() {
    let dir = tempfile::tempdir().unwrap();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for trial in 0..8 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let path = dir.path().join(format!("p{trial}.zarr"));
        // even trials halve the first dimension too: a child plane needs two
        let extra: &[&str] = match trial % 2 {
            0 => &[
                "--pyramid",
                "mean",
                "--downsample",
                "1,1,1",
                "--levels",
                "3",
            ],
            _ => &["--pyramid", "max", "--shard", "2,1,1"],
        };
        let mut child = start_writer(&path, &path.join("0"), extra);
        std::thread::sleep(Duration::from_millis(seed % 200));
        child.kill().unwrap();
        child.wait().unwrap();
        let halves_first = trial % 2 == 0;
        let mut parent = planes_holding_the_pattern(&path, "/0", PLANE);
        for k in 1..3 {
            let level = path.join(k.to_string());
            if !level.join("zarr.json").exists() {
                break;
            }
            let planes = claimed(&level);
            let allowed = if halves_first { parent / 2 } else { parent };
            assert!(
                planes <= allowed,
                "trial {trial}: level {k} claims {planes} planes, its parent {parent}"
            );
            parent = planes;
        }
    }
}

#[test]
fn ngff_arguments_that_make_an_invalid_image_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.zarr");
    let text = path.to_str().unwrap();
    let image = [
        "stream",
        "--shape",
        "0,64,64",
        "--tile",
        "1,16,16",
        "--planes",
        "2",
        "--output",
        text,
        "--pyramid",
        "mean",
    ];
    refused(
        &[&image[..], &["--scale", "1,1e308,1"]].concat(),
        &["too large", "'y'"],
    );
    refused(
        &[&image[..], &["--scale", "1,1,5e307"]].concat(),
        &["too large", "'x'", "level 2"],
    );
    refused(
        &[
            &image[..],
            &[
                "--dim-types",
                "channel,space,space",
                "--downsample",
                "1,1,1",
            ],
        ]
        .concat(),
        &["channel axis"],
    );
    refused(
        &[
            "stream",
            "--shape",
            "0,3,16,16",
            "--tile",
            "1,1,8,8",
            "--planes",
            "2",
            "--output",
            text,
            "--pyramid",
            "mean",
            "--dim-types",
            "time,channel,space,space",
            "--downsample",
            "0,1,1,1",
        ],
        &["channel axis"],
    );
    assert!(!path.exists(), "a refused image left a store");
    // the largest scale a level can double still makes a valid image
    succeeds(&[&image[..], &["--scale", "1,4e307,1"]].concat());
    let group: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path.join("zarr.json")).unwrap()).unwrap();
    let scale = &group["attributes"]["ome"]["multiscales"][0]["datasets"][1]
        ["coordinateTransformations"][0]["scale"];
    assert_eq!(scale[1].as_f64(), Some(8e307), "{group}");
    let level2 = &group["attributes"]["ome"]["multiscales"][0]["datasets"][2]
        ["coordinateTransformations"][0]["scale"];
    assert_eq!(level2[1].as_f64(), Some(1.6e308), "{group}");
}

#[test]
fn a_start_that_fails_after_the_store_is_made_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("failed.zarr");
    let text = path.to_str().unwrap();
    // an image's group is made before its levels' arrays, which refuse the writers
    for extra in [&["--pyramid", "mean"][..], &["--ngff"]] {
        for writers in ["0", "300"] {
            let args = [extra, &["--writers", writers]].concat();
            refused(&stream_args(text, "3", &args), &["writer threads"]);
            assert!(
                !path.exists(),
                "{args:?}: a failed start left {}",
                path.display()
            );
        }
    }
    // a directory the user made stays, emptied of what the start made
    std::fs::create_dir(&path).unwrap();
    refused(
        &stream_args(text, "3", &["--pyramid", "mean", "--writers", "0"]),
        &["writer threads"],
    );
    assert_eq!(
        std::fs::read_dir(&path).unwrap().count(),
        0,
        "leftovers in the user's directory"
    );
    succeeds(&stream_args(text, "3", &["--pyramid", "mean"]));
    assert_eq!(planes_holding_the_pattern(&path, "/0", PLANE), 3);
}
