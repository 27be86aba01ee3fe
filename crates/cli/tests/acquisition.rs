//! `retile stream --config FILE --input KEY=FILE ...`: several arrays of
//! random ranks (1 to 5), shapes and element types, described in JSON or
//! TOML, each read from its own file; every array read back with
//! zarr-python (`zarr_readback.py`, with `PYTHON` naming an interpreter that
//! has zarr and numpy) and compared with its input. Bad settings and inputs
//! are refused with one clear error, and what was complete is kept.

mod readback;

use std::path::Path;
use std::process::{Command, Output};

use proptest::prelude::*;

const DTYPES: [(&str, &str); 6] = [
    ("u8", "uint8"),
    ("i16", "int16"),
    ("u32", "uint32"),
    ("f32", "float32"),
    ("f64", "float64"),
    ("i64", "int64"),
];
const KEYS: [&str; 3] = ["cam0", "run/cam1", "run/deep/pos-2"];

fn retile(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retile"))
        .args(args)
        .output()
        .expect("retile runs")
}

/// One array of a case: its key, description and input length.
#[derive(Debug, Clone)]
struct Array {
    key: &'static str,
    shape: Vec<u64>,
    tile: Vec<u64>,
    dtype: usize,
    planes: u64,
    codec: bool,
}

fn array(key: &'static str) -> impl Strategy<Value = Array> {
    (1usize..6, 0usize..DTYPES.len(), 1u64..9, any::<bool>())
        .prop_flat_map(move |(rank, dtype, planes, codec)| {
            let extents = prop::collection::vec(1u64..6, rank - 1);
            (extents, Just((dtype, planes, codec)), 1u64..4)
        })
        .prop_flat_map(move |(extents, (dtype, planes, codec), first)| {
            let tiles: Vec<BoxedStrategy<u64>> = extents.iter().map(|&e| (1..=e).boxed()).collect();
            (Just(extents), tiles, Just((dtype, planes, codec, first)))
        })
        .prop_map(
            move |(extents, tiles, (dtype, planes, codec, first))| Array {
                key,
                shape: [&[0][..], &extents].concat(),
                tile: [&[first][..], &tiles].concat(),
                dtype,
                planes,
                codec,
            },
        )
}

fn list(values: &[u64]) -> String {
    let parts: Vec<String> = values.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// The settings file's text: JSON, or TOML.
fn settings(out: &Path, arrays: &[Array], toml: bool) -> String {
    let codec = |a: &Array| match a.codec {
        true => "zstd:1",
        false => "none",
    };
    match toml {
        true => {
            let mut text = format!("output = {:?}\n", out.to_str().unwrap());
            for a in arrays {
                text += &format!(
                    "[arrays.\"{}\"]\nshape = {}\ntile = {}\ndtype = \"{}\"\ncodec = \"{}\"\n",
                    a.key,
                    list(&a.shape),
                    list(&a.tile),
                    DTYPES[a.dtype].0,
                    codec(a)
                );
            }
            text
        }
        false => {
            let arrays: serde_json::Map<String, serde_json::Value> = arrays
                .iter()
                .map(|a| {
                    let d = serde_json::json!({"shape": a.shape, "tile": a.tile,
                        "dtype": DTYPES[a.dtype].0, "codec": codec(a)});
                    (a.key.to_string(), d)
                })
                .collect();
            serde_json::json!({"output": out, "arrays": arrays}).to_string()
        }
    }
}

fn elements(a: &Array) -> u64 {
    a.planes * a.shape[1..].iter().product::<u64>()
}

/// Whether zarr-python reads the store of `spec` (store, input, shape,
/// dtype, tile, pyramid) back as its input; what it said where not.
fn reads_back(spec: &serde_json::Value) -> Result<(), String> {
    let read = readback::zarr_readback(spec);
    match read.status.success() {
        true => Ok(()),
        false => Err(format!(
            "zarr-python: {}{}",
            String::from_utf8_lossy(&read.stdout),
            String::from_utf8_lossy(&read.stderr)
        )),
    }
}

/// Reads back the array `a` at `store` with zarr-python against `input`.
fn read_back(store: &Path, input: &Path, a: &Array, planes: u64) -> Result<(), TestCaseError> {
    let shape = [&[planes][..], &a.shape[1..]].concat();
    let spec = serde_json::json!({"store": store, "input": input, "shape": shape,
        "dtype": DTYPES[a.dtype].1, "tile": a.tile, "pyramid": null});
    reads_back(&spec).map_err(|e| TestCaseError::fail(format!("{a:?}: {e}")))
}

/// Writes each array's input: random bytes, whole planes.
fn inputs(dir: &Path, arrays: &[Array], seed: u64) -> Vec<String> {
    let mut state = seed | 1;
    arrays
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let size = DTYPES[a.dtype].1.trim_start_matches(char::is_alphabetic);
            let bytes = elements(a) * size.parse::<u64>().unwrap() / 8;
            let data: Vec<u8> = (0..bytes)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 24) as u8
                })
                .collect();
            let path = dir.join(format!("in{i}.raw"));
            std::fs::write(&path, data).unwrap();
            format!("{}={}", a.key, path.display())
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, max_shrink_iters: 16, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arrays_from_a_settings_file_read_back(arrays in (array(KEYS[0]), array(KEYS[1]), array(KEYS[2])), toml in any::<bool>(), seed in any::<u64>()) {
        let arrays = [arrays.0, arrays.1, arrays.2];
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("acq.zarr");
        let config = dir.path().join(match toml { true => "acq.toml", false => "acq.json" });
        std::fs::write(&config, settings(&out, &arrays, toml)).unwrap();
        let inputs = inputs(dir.path(), &arrays, seed);
        let mut args = vec!["stream", "--config", config.to_str().unwrap()];
        for input in &inputs {
            args.extend(["--input", input.as_str()]);
        }
        let run = retile(&args);
        prop_assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        let stdout = String::from_utf8_lossy(&run.stdout);
        prop_assert!(stdout.contains("bytes of tile buffers for 3 arrays"), "{}", stdout);
        for (i, a) in arrays.iter().enumerate() {
            prop_assert!(stdout.contains(&format!("  {}: {} planes", a.key, a.planes)), "{}", stdout);
            read_back(&out.join(a.key), &dir.path().join(format!("in{i}.raw")), a, a.planes)?;
        }
        for group in ["", "run", "run/deep"] {
            let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join(group).join("zarr.json")).unwrap()).unwrap();
            prop_assert_eq!(&meta["node_type"], "group");
        }
    }
}

/// A settings file of two u16 arrays of 4 x 4 planes at `out`.
fn two_arrays(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let out = dir.join("acq.zarr");
    let config = dir.join("acq.json");
    let text = serde_json::json!({"output": out, "arrays": {
        "a": {"shape": [0, 4, 4], "tile": [1, 4, 4], "dtype": "u16"},
        "b": {"shape": [0, 4, 4], "tile": [1, 4, 4], "dtype": "u16"}}});
    std::fs::write(&config, text.to_string()).unwrap();
    (out, config)
}

fn refused(args: &[&str], expected: &str) {
    let run = retile(args);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "{args:?} succeeded");
    assert!(stderr.contains(expected), "{args:?}: {stderr}");
}

#[test]
fn bad_settings_and_inputs_are_refused_and_complete_planes_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (out, config) = two_arrays(dir.path());
    let c = config.to_str().unwrap();
    let a = dir.path().join("a.raw");
    std::fs::write(&a, [1u8; 3 * 32]).unwrap();
    let input_a = format!("a={}", a.display());
    refused(
        &["stream", "--config", c, "--input", &input_a],
        "add --input KEY=FILE for b",
    );
    refused(
        &[
            "stream", "--config", c, "--input", &input_a, "--input", "c=x",
        ],
        "no array has the key 'c'",
    );
    refused(
        &["stream", "--config", c, "--input", "a.raw"],
        "each input is KEY=FILE",
    );
    refused(
        &[
            "stream", "--config", c, "--input", &input_a, "--shape", "0,4",
        ],
        "cannot be used with",
    );
    assert!(!out.exists(), "a refused start made the store");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"output": "x.zarr", "arrays": {"a": {"shape": [0, 4], "tile": [1, 4], "dtype": "u8", "shrad": [1, 1]}}}"#).unwrap();
    refused(
        &[
            "stream",
            "--config",
            bad.to_str().unwrap(),
            "--input",
            &input_a,
        ],
        "unknown field `shrad`",
    );
    // b's input ends inside its fourth plane: the three complete planes are written
    let b = dir.path().join("b.raw");
    std::fs::write(&b, [2u8; 3 * 32 + 5]).unwrap();
    let input_b = format!("b={}", b.display());
    refused(
        &[
            "stream", "--config", c, "--input", &input_a, "--input", &input_b,
        ],
        "the input of 'b' ended inside a plane: its last 5 bytes were dropped",
    );
    for key in ["a", "b"] {
        let meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(key).join("zarr.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(meta["shape"], serde_json::json!([3, 4, 4]), "{key}");
    }
    // and --overwrite replaces an acquisition's store
    let run = retile(&[
        "stream",
        "--config",
        c,
        "--overwrite",
        "--input",
        &input_a,
        "--input",
        &input_a.replace("a=", "b="),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn the_plan_states_the_budget_and_an_array_past_it_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("acq.zarr");
    let config = dir.path().join("acq.toml");
    let text = |memory: u64| {
        format!(
            "output = {:?}\nmemory = {memory}\n[arrays.a]\nshape = [0, 16]\ntile = [4, 16]\ndtype = \"u8\"\n[arrays.b]\nshape = [0, 64]\ntile = [4, 16]\ndtype = \"u8\"\n",
            out.to_str().unwrap()
        )
    };
    std::fs::write(&config, text(1000)).unwrap();
    let c = config.to_str().unwrap();
    let plan = retile(&["plan", "stream", "--config", c]);
    assert!(
        plan.status.success(),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
    // two epochs of 4 planes: 2 x 4 x 16 bytes and 2 x 4 x 64
    assert_eq!(
        String::from_utf8_lossy(&plan.stdout),
        "memory: 640 bytes of tile buffers for 2 arrays (a budget of 1000 bytes)\n  a: 128 bytes\n  b: 512 bytes\n"
    );
    std::fs::write(&config, text(639)).unwrap();
    let expected = "the array 'b' needs 512 bytes of tile buffers but only 511 of the acquisition's memory budget of 639 bytes are left (the arrays before it take 128)";
    refused(&["plan", "stream", "--config", c], expected);
    let input = dir.path().join("x.raw");
    std::fs::write(&input, [0u8; 64]).unwrap();
    let a = format!("a={}", input.display());
    let b = format!("b={}", input.display());
    refused(
        &["stream", "--config", c, "--input", &a, "--input", &b],
        expected,
    );
    assert!(!out.exists(), "a refused acquisition made its store");
}

/// `retile stream --config` with array `a` from the regular file `a_input`
/// and array `b` from stdin, written `b_input` 7 bytes at a time with a
/// pause after each, so that the pieces the pipe hands on cut planes.
fn stream_with_piped_b(c: &str, a_input: &Path, b_input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_retile"))
        .args(["stream", "--config", c, "--overwrite"])
        .args(["--input", &format!("a={}", a_input.display())])
        .args(["--input", "b=-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("retile runs");
    let mut stdin = child.stdin.take().unwrap();
    for piece in b_input.chunks(7) {
        stdin.write_all(piece).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn planes_that_a_pipe_cuts_are_written_whole_and_a_cut_last_one_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (out, config) = two_arrays(dir.path());
    let c = config.to_str().unwrap();
    let bytes =
        |n: usize, seed: usize| -> Vec<u8> { (0..n).map(|i| (i * 31 + seed) as u8).collect() };
    let a = dir.path().join("a.raw");
    std::fs::write(&a, bytes(3 * 32, 1)).unwrap();
    let b_planes = bytes(6 * 32, 2);
    let b = dir.path().join("b.raw");
    std::fs::write(&b, &b_planes).unwrap();
    let check = |key: &str, input: &Path, planes: u64| {
        let spec = serde_json::json!({"store": out.join(key), "input": input,
            "shape": [planes, 4, 4], "dtype": "uint16", "tile": [1, 4, 4], "pyramid": null});
        reads_back(&spec).unwrap_or_else(|e| panic!("{key}: {e}"));
    };
    // whole planes in pieces that cut them: every plane written
    let run = stream_with_piped_b(c, &a, &b_planes);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    check("a", &a, 3);
    check("b", &b, 6);
    // and 5 bytes of a seventh plane: dropped, reported, the six kept
    let mut cut = b_planes.clone();
    cut.extend_from_slice(&[9; 5]);
    let run = stream_with_piped_b(c, &a, &cut);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        stderr.contains("the input of 'b' ended inside a plane: its last 5 bytes were dropped"),
        "{stderr}"
    );
    check("a", &a, 3);
    check("b", &b, 6);
}
