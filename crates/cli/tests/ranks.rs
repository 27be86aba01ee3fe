//! Every rank from 1 to 5 through `retile stream`: random shapes, tiles and
//! element types, bounded or unbounded, the input from a file, from stdin
//! (a file or a pipe) or synthetic, with and without an output, shards,
//! codecs and pyramids (rank 2 and up). Every store is read back with
//! zarr-python and compared with numpy (`zarr_readback.py`, which needs
//! `python3 -m pip install zarr numpy`, or `PYTHON` naming an interpreter
//! that has them). A 1-D pyramid is a clear error.

mod readback;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use proptest::prelude::*;

const DTYPES: [(&str, &str); 11] = [
    ("u8", "uint8"),
    ("i8", "int8"),
    ("u16", "uint16"),
    ("i16", "int16"),
    ("u32", "uint32"),
    ("i32", "int32"),
    ("u64", "uint64"),
    ("i64", "int64"),
    ("f16", "float16"),
    ("f32", "float32"),
    ("f64", "float64"),
];
const METHODS: [&str; 5] = ["mean", "min", "max", "decimate", "median"];
const CODECS: [&str; 3] = ["none", "zstd:1", "blosc-lz4:1"];

/// Where a case's input comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    Synthetic,
    File,
    StdinFile,
    StdinPipe,
}

#[derive(Debug, Clone)]
struct Case {
    shape: Vec<u64>,
    tile: Vec<u64>,
    dtype: usize,
    unbounded: bool,
    source: Source,
    output: bool,
    shard: Option<Vec<u64>>,
    codec: usize,
    pyramid: Option<usize>,
    seed: u64,
}

fn cases() -> impl Strategy<Value = Case> {
    (1usize..=5).prop_flat_map(|rank| {
        (
            prop::collection::vec(1u64..8, rank),
            prop::collection::vec(1u64..5, rank),
            0..DTYPES.len(),
            any::<bool>(),
            prop_oneof![
                Just(Source::Synthetic),
                Just(Source::File),
                Just(Source::StdinFile),
                Just(Source::StdinPipe)
            ],
            any::<bool>(),
            prop::option::of(prop::collection::vec(1u64..3, rank)),
            0..CODECS.len(),
            prop::option::of(0..METHODS.len()),
            any::<u64>(),
        )
            .prop_map(
                |(shape, tile, dtype, unbounded, source, output, shard, codec, pyramid, seed)| {
                    Case {
                        shape,
                        tile,
                        dtype,
                        unbounded,
                        source,
                        output,
                        shard,
                        codec,
                        pyramid,
                        seed,
                    }
                },
            )
    })
}

/// `count` elements of `dtype` from a xorshift sequence: any bits for the
/// integers, multiples of 1/8 in [-125, 125] for the floats (exact in
/// every float type, so that means are exact).
fn elements(dtype: &str, count: u64, mut seed: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..count {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let float = (seed % 2001) as f64 / 8.0 - 125.0;
        match dtype {
            "f64" => out.extend(float.to_le_bytes()),
            "f32" => out.extend((float as f32).to_le_bytes()),
            "f16" => out.extend(half_bits(float as f32).to_le_bytes()),
            _ => {
                let size = dtype[1..].parse::<usize>().unwrap() / 8;
                out.extend(&seed.to_le_bytes()[..size]);
            }
        }
    }
    out
}

/// The f16 bits of `v`, a value f16 holds exactly (normal or zero).
fn half_bits(v: f32) -> u16 {
    if v == 0.0 {
        return 0;
    }
    let bits = v.to_bits();
    let sign = (bits >> 16) & 0x8000;
    let exponent = ((bits >> 23) & 0xFF) as i32 - 127 + 15;
    (sign | ((exponent as u32) << 10) | ((bits >> 13) & 0x3FF)) as u16
}

fn join(values: &[u64]) -> String {
    values
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs `retile` with `args`, its stdin from `source` (`input` holding the bytes).
fn run(args: &[String], source: Source, input: &Path) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_retile"));
    command
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match source {
        Source::StdinFile => {
            command.stdin(std::fs::File::open(input).unwrap());
        }
        Source::StdinPipe => {
            command.stdin(Stdio::piped());
        }
        _ => {
            command.stdin(Stdio::null());
        }
    }
    let mut child = command.spawn().unwrap();
    let writer = child.stdin.take().map(|mut stdin| {
        let bytes = std::fs::read(input).unwrap();
        std::thread::spawn(move || {
            // a little at a time, as a producer writes; a refused stream
            // exits without reading (its status is what the test checks),
            // so a broken pipe ends the producer
            for piece in bytes.chunks(1000) {
                if stdin.write_all(piece).is_err() {
                    break;
                }
            }
        })
    });
    let out = child.wait_with_output().unwrap();
    if let Some(w) = writer {
        w.join().unwrap();
    }
    out
}

fn check(case: &Case) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let (dtype, numpy) = DTYPES[case.dtype];
    let rank = case.shape.len();
    let elements_count: u64 = case.shape.iter().product();
    let input = dir.path().join("in.raw");
    if !matches!(case.source, Source::Synthetic) {
        std::fs::write(&input, elements(dtype, elements_count, case.seed | 1)).unwrap();
    }
    let mut shape = case.shape.clone();
    if case.unbounded {
        shape[0] = 0;
    }
    let store = dir.path().join("out.zarr");
    let mut args: Vec<String> = [
        "stream",
        "--shape",
        &join(&shape),
        "--tile",
        &join(&case.tile),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(["--dtype".into(), dtype.into()]);
    match case.source {
        Source::Synthetic if case.unbounded => {
            args.extend(["--planes".into(), case.shape[0].to_string()])
        }
        Source::Synthetic => {}
        Source::File => args.extend(["--input".into(), input.to_str().unwrap().into()]),
        Source::StdinFile | Source::StdinPipe => args.extend(["--input".into(), "-".into()]),
    }
    if case.output {
        args.extend(["--output".into(), store.to_str().unwrap().into()]);
        args.extend(["--codec".into(), CODECS[case.codec].into()]);
        if let Some(shard) = &case.shard {
            args.extend(["--shard".into(), join(shard)]);
        }
    }
    if let Some(method) = case.pyramid {
        args.extend(["--pyramid".into(), METHODS[method].into()]);
    }
    let out = run(&args, case.source, &input);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if rank == 1 && case.pyramid.is_some() {
        prop_assert_eq!(out.status.code(), Some(1), "{:?}: {}", args, stderr);
        prop_assert!(
            stderr.contains("dimensions") && !stderr.contains("panicked"),
            "{:?}: {}",
            args,
            stderr
        );
        prop_assert!(!store.exists(), "{:?}: a store was made", args);
        return Ok(());
    }
    prop_assert!(out.status.success(), "{:?}: {}", args, stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let planes = format!("({} planes,", case.shape[0]);
    prop_assert!(stdout.contains(&planes), "{:?}: {}", args, stdout);
    if !case.output {
        return Ok(());
    }
    let spec = serde_json::json!({
        "store": store,
        "input": match case.source {
            Source::Synthetic => "synthetic".into(),
            _ => input.to_str().unwrap().to_string(),
        },
        "shape": case.shape,
        "dtype": numpy,
        "tile": case.tile,
        "pyramid": case.pyramid.map(|m| METHODS[m]),
    });
    let read = readback::zarr_readback(&spec);
    prop_assert!(
        read.status.success(),
        "{:?}: zarr-python: {}{}",
        args,
        String::from_utf8_lossy(&read.stdout),
        String::from_utf8_lossy(&read.stderr)
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 36,
        max_shrink_iters: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_rank_streams_and_reads_back(case in cases()) {
        check(&case)?;
    }
}

#[test]
fn every_rank_is_covered_with_and_without_output_shards_and_pyramids() {
    // the random cases above, and these fixed ones whatever the random draw
    for rank in 1..=5usize {
        for (output, shard, pyramid) in [
            (false, false, None),
            (true, false, None),
            (true, true, None),
            (true, true, Some(0)),
            (false, false, Some(2)),
        ] {
            let case = Case {
                shape: (0..rank).map(|d| 3 + d as u64).collect(),
                tile: (0..rank).map(|d| 1 + (d as u64 % 3)).collect(),
                dtype: (rank * 2) % DTYPES.len(),
                unbounded: rank % 2 == 0,
                source: [Source::File, Source::StdinPipe, Source::Synthetic][rank % 3],
                output,
                shard: shard.then(|| vec![2; rank]),
                codec: rank % CODECS.len(),
                pyramid,
                seed: rank as u64 * 7919,
            };
            check(&case).unwrap_or_else(|e| panic!("{case:?}: {e}"));
        }
    }
}

#[test]
fn planes_that_the_input_s_pieces_cut_read_back_with_and_without_a_pyramid() {
    // planes of 3 x 1000 x 701 u16 (4,206,000 bytes): a file comes in 4 MiB
    // pieces cut anywhere without a pyramid, so every piece ends inside a
    // plane; with one it comes in whole planes. Both read back equal.
    for (source, unbounded, shard, codec, pyramid) in [
        (Source::File, false, false, 0, None),
        (Source::StdinFile, true, true, 2, None),
        (Source::Synthetic, false, true, 1, None),
        (Source::File, true, true, 2, Some(0)),
    ] {
        let case = Case {
            shape: vec![5, 3, 1000, 701],
            tile: vec![2, 1, 256, 128],
            dtype: 2,
            unbounded,
            source,
            output: true,
            shard: shard.then(|| vec![1, 3, 2, 2]),
            codec,
            pyramid,
            seed: 104_729,
        };
        check(&case).unwrap_or_else(|e| panic!("{case:?}: {e}"));
    }
}
