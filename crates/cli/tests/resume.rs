//! `retile stream --append`: a writer killed with SIGKILL at random moments
//! is resumed from its last claimed plane, round after round, until the
//! whole recording is in; after every kill the store claims only planes
//! it holds, equal to the input (read back with zarrs), and the finished
//! store is read back whole by zarr-python against numpy, every pyramid
//! level included (`zarr_readback.py`, with `PYTHON` naming an
//! interpreter that has zarr and numpy). Stores retile did not write and
//! options that contradict the store are refused, and nothing claimed is
//! lost by a refusal.
#![cfg(target_os = "linux")]

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use zarrs::array::Array;
use zarrs::filesystem::FilesystemStore;

mod common;
mod readback;
use common::{claimed, retile};
use readback::zarr_readback;

/// Planes of the recording, and the extents of one (rows, columns).
const PLANES: u64 = 48;
const ROWS: u64 = 12;
const COLUMNS: u64 = 20;
const PLANE_BYTES: usize = (ROWS * COLUMNS * 2) as usize;

/// A xorshift generator: the kill moments and the recording.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The seed of this run (`RETILE_TEST_SEED` repeats one), printed with
/// every failure.
fn seed() -> u64 {
    std::env::var("RETILE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        })
}

/// The recording: `PLANES` planes of u16 values, mostly small (so that some
/// tiles are fill alone and left out) and some large.
fn recording(random: &mut Random) -> Vec<u8> {
    (0..PLANES * ROWS * COLUMNS)
        .flat_map(|_| {
            let v = random.next();
            let value = match v % 4 {
                0 => (v >> 8) as u16,
                _ => 0,
            };
            value.to_le_bytes()
        })
        .collect()
}

/// `retile stream` reading stdin into `store` with `args`.
fn writer(store: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_retile"))
        .args(["stream", "--input", "-", "--output"])
        .arg(store)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Feeds `planes` to `child`'s stdin a plane at a time, a little slowly,
/// on a thread of its own (a killed child's pipe ends the feeding).
fn feed(child: &mut Child, planes: Vec<u8>) -> std::thread::JoinHandle<()> {
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || {
        for plane in planes.chunks(PLANE_BYTES) {
            if stdin.write_all(plane).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(4));
        }
    })
}

/// Waits (at most 10 s) until the array at `dir` claims more than `planes`
/// planes, or can no longer (it claims them all).
fn grows_past(dir: &Path, planes: u64) {
    let started = std::time::Instant::now();
    while claimed(dir) <= planes.min(PLANES - 1) && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The u16 values of the array at `key` in `root` that its metadata claims.
fn stored(root: &Path, key: &str) -> Vec<u16> {
    let store = Arc::new(FilesystemStore::new(root).unwrap());
    let array = Array::open(store, key).unwrap_or_else(|e| panic!("{}{key}: {e}", root.display()));
    array.retrieve_array_subset(&array.subset_all()).unwrap()
}

/// Fails unless level 0 of `store` claims planes equal to the recording's
/// first ones, and every level claims at most what its parent allows.
fn claims_hold_the_recording(
    store: &Path,
    level0: &str,
    data: &[u8],
    halves_first: bool,
    at: &str,
) {
    let values = stored(store, level0);
    let claimed_bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert!(
        claimed_bytes.len() <= data.len(),
        "{at}: more planes than the recording"
    );
    assert!(
        claimed_bytes == data[..claimed_bytes.len()],
        "{at}: a claimed plane differs from the recording"
    );
    if level0 == "/" {
        return;
    }
    let mut parent = claimed(&store.join("0"));
    for k in 1.. {
        let level = store.join(k.to_string());
        if !level.join("zarr.json").exists() {
            break;
        }
        let planes = claimed(&level);
        let allowed = match halves_first {
            true => parent.div_ceil(2),
            false => parent,
        };
        assert!(
            planes <= allowed,
            "{at}: level {k} claims {planes}, its parent {parent}"
        );
        parent = planes;
    }
}

/// One case: the store's options, whether its levels halve the first
/// dimension, and the pyramid method zarr_readback checks (`None`: a plain
/// array or levels zarr_readback.py does not model).
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    halves_first: bool,
    pyramid: Option<&'static str>,
}

const CASES: [Case; 4] = [
    Case {
        name: "plain",
        args: &["--shape", "0,12,20", "--tile", "3,8,8", "--dtype", "u16"],
        halves_first: false,
        pyramid: None,
    },
    Case {
        name: "shards deeper than an epoch, compressed",
        args: &[
            "--shape", "0,12,20", "--tile", "2,8,8", "--dtype", "u16", "--shard", "3,1,2",
            "--codec", "zstd:1",
        ],
        halves_first: false,
        pyramid: None,
    },
    Case {
        name: "mean pyramid with shards",
        args: &[
            "--shape",
            "0,12,20",
            "--tile",
            "2,4,4",
            "--dtype",
            "u16",
            "--shard",
            "2,2,1",
            "--pyramid",
            "mean",
            "--codec",
            "gzip:1",
        ],
        halves_first: false,
        pyramid: Some("mean"),
    },
    Case {
        name: "max pyramid halving the first dimension",
        args: &[
            "--shape",
            "0,12,20",
            "--tile",
            "2,4,4",
            "--dtype",
            "u16",
            "--pyramid",
            "max",
            "--downsample",
            "1,1,1",
            "--levels",
            "3",
            "--shard",
            "2,1,1",
        ],
        halves_first: true,
        pyramid: None,
    },
];

#[test]
fn a_writer_killed_at_random_moments_resumes_from_its_last_claim_until_every_plane_is_in() {
    let seed = seed();
    let mut random = Random(seed);
    let dir = tempfile::tempdir().unwrap();
    for (c, case) in CASES.iter().enumerate() {
        let data = recording(&mut random);
        let store = dir.path().join(format!("case{c}.zarr"));
        let level0 = if case.args.contains(&"--pyramid") {
            "/0"
        } else {
            "/"
        };
        let mut rounds = 0;
        loop {
            rounds += 1;
            let at = format!("seed {seed}, {}, round {rounds}", case.name);
            let exists = store.join("zarr.json").exists();
            let from = match exists {
                true => claimed(&store.join(&level0[1..])) as usize,
                false => 0,
            };
            let mut args: Vec<&str> = match exists {
                true => vec!["--append"],
                false => case.args.iter().copied().chain(["--overwrite"]).collect(),
            };
            if exists && rounds % 2 == 0 {
                // options given again must agree with the store's
                args.extend(case.args.iter().copied());
            }
            let mut child = writer(&store, &args);
            let feeding = feed(&mut child, data[from * PLANE_BYTES..].to_vec());
            let last = rounds > 6;
            if !last {
                match rounds % 2 {
                    // at a random moment
                    1 => std::thread::sleep(Duration::from_millis(10 + random.next() % 300)),
                    // once the claim has grown, a random while later: a
                    // resume from the middle of the recording, every time
                    _ => {
                        grows_past(&store.join(&level0[1..]), from as u64);
                        std::thread::sleep(Duration::from_millis(random.next() % 40));
                    }
                }
                child.kill().unwrap();
            }
            let out = child.wait_with_output().unwrap();
            feeding.join().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("panicked"), "{at}: {err}");
            if exists && !err.is_empty() {
                // the plane it continues from, printed before anything is taken
                assert!(
                    err.contains(&format!("the input is taken as plane {from} on")),
                    "{at}: {err}"
                );
            }
            if last {
                assert!(out.status.success(), "{at}: {err}");
                break;
            }
            if store.join("zarr.json").exists() {
                claims_hold_the_recording(&store, level0, &data, case.halves_first, &at);
            }
        }
        assert_eq!(claimed(&store.join(&level0[1..])), PLANES, "{}", case.name);
        let input = dir.path().join(format!("case{c}.raw"));
        std::fs::write(&input, &data).unwrap();
        // zarr-python reads every level it models against numpy; level 0
        // alone where the levels halve the first dimension too (compared
        // below with a stream written whole)
        let read_back = match (case.pyramid, level0) {
            (None, "/0") => store.join("0"),
            _ => store.clone(),
        };
        let read = zarr_readback(&serde_json::json!({
            "store": read_back, "input": input, "shape": [PLANES, ROWS, COLUMNS], "dtype": "uint16",
            "tile": [2, 4, 4], "pyramid": case.pyramid,
        }));
        assert!(
            read.status.success(),
            "seed {seed}, {}: {}",
            case.name,
            String::from_utf8_lossy(&read.stderr)
        );
        if case.halves_first {
            halved_levels_match_a_stream_written_whole(dir.path(), &store, &input, case);
        }
    }
}

/// The levels of a pyramid halving the first dimension, resumed, equal
/// those of the same recording streamed in one go.
fn halved_levels_match_a_stream_written_whole(dir: &Path, store: &Path, input: &Path, case: &Case) {
    let whole = dir.join("whole.zarr");
    let mut args = vec!["stream", "--input", input.to_str().unwrap(), "--output"];
    args.push(whole.to_str().unwrap());
    args.extend(case.args.iter().copied());
    args.push("--overwrite");
    let out = retile(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for k in 0..3 {
        let key = format!("/{k}");
        assert_eq!(
            stored(store, &key),
            stored(&whole, &key),
            "{}: level {k}",
            case.name
        );
    }
}

#[test]
fn a_store_retile_did_not_write_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("foreign.zarr");
    std::fs::create_dir(&store).unwrap();
    // a Zarr v3 array as zarr-python writes one: no 'retile' attribute
    let metadata = serde_json::json!({
        "zarr_format": 3, "node_type": "array", "shape": [4, 8], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 8]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "attributes": {}
    });
    let text = serde_json::to_string_pretty(&metadata).unwrap();
    std::fs::write(store.join("zarr.json"), &text).unwrap();
    let input = dir.path().join("in.raw");
    std::fs::write(&input, [0u8; 32]).unwrap();
    let out = retile(&[
        "stream",
        "--append",
        "--input",
        input.to_str().unwrap(),
        "--output",
        store.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "one clear error: {err}");
    assert!(err.contains("was not written by retile"), "{err}");
    assert_eq!(
        std::fs::read_to_string(store.join("zarr.json")).unwrap(),
        text
    );
    let entries: Vec<_> = std::fs::read_dir(&store).unwrap().collect();
    assert_eq!(entries.len(), 1, "nothing made in it");
}

#[test]
fn options_that_contradict_the_store_are_refused_and_nothing_claimed_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.zarr");
    let path = store.to_str().unwrap();
    let base = [
        "stream", "--shape", "0,4,6", "--tile", "3,2,3", "--dtype", "u16", "--planes", "7",
        "--shard", "2,1,1", "--codec", "zstd:1", "--output", path,
    ];
    assert!(retile(&base).status.success());
    let before = stored(&store, "/");
    let input = dir.path().join("in.raw");
    std::fs::write(&input, vec![1u8; 2 * 4 * 6 * 2]).unwrap();
    let append = [
        "stream",
        "--append",
        "--input",
        input.to_str().unwrap(),
        "--output",
        path,
    ];
    for (wrong, named) in [
        (&["--dtype", "u8"][..], "dtype"),
        (&["--tile", "2,2,3"], "tile"),
        (&["--shape", "0,4,7"], "shape"),
        (&["--shard", "1,1,1"], "shard"),
        (&["--codec", "zstd:2"], "codec"),
        (&["--fill", "1"], "fill"),
        (&["--pyramid", "mean"], "pyramid"),
        (&["--ngff"], "ngff"),
    ] {
        let args: Vec<&str> = append.iter().chain(wrong).copied().collect();
        let out = retile(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{wrong:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{wrong:?}: one clear error: {err}");
        assert!(
            err.contains(&format!("{named}=")) && err.contains("contradicts the store"),
            "{err}"
        );
        assert_eq!(
            stored(&store, "/"),
            before,
            "{wrong:?}: the claimed planes changed"
        );
    }
    // --overwrite and --append ask for opposite things
    let args: Vec<&str> = append.iter().chain(&["--overwrite"]).copied().collect();
    assert_eq!(retile(&args).status.code(), Some(2));
    // the options given again, agreeing, append
    let agreeing: Vec<&str> = append
        .iter()
        .chain(&[
            "--shape", "0,4,6", "--tile", "3,2,3", "--dtype", "u16", "--codec", "zstd:1",
        ])
        .copied()
        .collect();
    let out = retile(&agreeing);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = stored(&store, "/");
    assert_eq!(after.len(), before.len() + 2 * 4 * 6);
    assert_eq!(after[..before.len()], before[..]);
    assert!(after[before.len()..].iter().all(|&v| v == 0x0101));
}

#[test]
fn a_bounded_store_goes_on_to_its_shape_and_a_full_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("b.zarr");
    let path = store.to_str().unwrap();
    let plane = 3 * 5;
    let input = dir.path().join("part.raw");
    // 4 of the shape's 9 planes, then the stream is cut short
    std::fs::write(
        &input,
        (0..4 * plane)
            .flat_map(|i| (i as u16).to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let first = retile(&[
        "stream",
        "--shape",
        "9,3,5",
        "--tile",
        "3,2,2",
        "--dtype",
        "u16",
        "--input",
        input.to_str().unwrap(),
        "--output",
        path,
    ]);
    assert_eq!(
        first.status.code(),
        Some(1),
        "a short bounded input is an error"
    );
    assert_eq!(claimed(&store), 4);
    let rest = dir.path().join("rest.raw");
    std::fs::write(
        &rest,
        (4 * plane..9 * plane)
            .flat_map(|i| (i as u16).to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let append = [
        "stream",
        "--append",
        "--input",
        rest.to_str().unwrap(),
        "--output",
        path,
    ];
    let out = retile(&append);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let values = stored(&store, "/");
    assert_eq!(
        values,
        (0..9 * plane).map(|i| i as u16).collect::<Vec<u16>>()
    );
    let again = retile(&append);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{err}");
    assert!(err.contains("holds all 9 planes"), "{err}");
    assert_eq!(stored(&store, "/"), values);
}
