//! `retile stream --input-order`, `retile plan stream --input-order` and
//! an `input_order` key in a `--config` file (JSON and TOML): random
//! shapes, tiles and permutations of ranks 2 to 5, the input a file whose
//! u16 elements hold their input index; every store read back with zarrs
//! and each element compared with the index the permutation gives it. Bad
//! orders are one clear error each.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::retile;
use proptest::prelude::*;
use zarrs::array::Array;
use zarrs::filesystem::FilesystemStore;

const NAMES: [&[&str]; 4] = [
    &["y", "x"],
    &["t", "y", "x"],
    &["t", "z", "y", "x"],
    &["t", "c", "z", "y", "x"],
];

fn joined<T: ToString>(values: &[T]) -> String {
    let parts: Vec<String> = values.iter().map(T::to_string).collect();
    parts.join(",")
}

/// Runs `retile ARGS`, which must fail with `says` in its error.
fn refused(args: &[&str], says: &str) -> String {
    let result = retile(args);
    let err = String::from_utf8_lossy(&result.stderr).into_owned();
    assert!(
        !result.status.success() && err.contains(says),
        "{args:?}: {err}"
    );
    err
}

/// Writes the input of `shape` arriving in `order`: element `i` holds `i`.
fn write_input(path: &Path, shape: &[u64]) {
    let total: u64 = shape.iter().product();
    let bytes: Vec<u8> = (0..total).flat_map(|i| (i as u16).to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

/// Reads the u16 array at `dir` and checks every element against the
/// input index its stored coordinates have under `order`.
fn check(dir: &Path, shape: &[u64], order: &[usize]) {
    let store = Arc::new(FilesystemStore::new(dir).unwrap());
    let array = Array::open(store, "/").unwrap();
    assert_eq!(array.shape(), shape);
    let values: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
    for (i, &v) in values.iter().enumerate() {
        let coords = unravel(i as u64, shape);
        let index = order.iter().fold(0, |a, &d| a * shape[d] + coords[d]);
        assert_eq!(
            v, index as u16,
            "element {coords:?} of {shape:?} in order {order:?}"
        );
    }
}

fn unravel(mut index: u64, extents: &[u64]) -> Vec<u64> {
    let mut coords = vec![0; extents.len()];
    for (c, &e) in coords.iter_mut().zip(extents).rev() {
        *c = index % e;
        index /= e;
    }
    coords
}

fn case() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, Vec<usize>, u8)> {
    (2usize..=5)
        .prop_flat_map(|rank| {
            let dims = prop::collection::vec((1u64..=5, 1u64..=3), rank);
            let order = Just((0..rank).collect::<Vec<usize>>()).prop_shuffle();
            (dims, order, 0u8..4)
        })
        .prop_map(|(dims, order, how)| {
            let shape = dims.iter().map(|&(s, _)| s).collect();
            let tile = dims.iter().map(|&(s, n)| n.min(s)).collect();
            (shape, tile, order, how)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// `how`: 0 names on the command line, 1 indices, 2 a JSON settings
    /// file, 3 a TOML one.
    #[test]
    fn every_order_reads_back((shape, tile, order, how) in case()) {
        let dir = tempfile::tempdir().unwrap();
        let (input, out) = (dir.path().join("in.raw"), dir.path().join("out.zarr"));
        let input_shape: Vec<u64> = order.iter().map(|&d| shape[d]).collect();
        write_input(&input, &input_shape);
        let names = NAMES[shape.len() - 2];
        let named: Vec<&str> = order.iter().map(|&d| names[d]).collect();
        let result = match how {
            0 | 1 => {
                let order_arg = match how {
                    0 => joined(&named),
                    _ => joined(&order),
                };
                retile(&[
                    "stream", "--shape", &joined(&shape), "--tile", &joined(&tile), "--dtype", "u16",
                    "--input", input.to_str().unwrap(), "--output", out.to_str().unwrap(),
                    "--dim-names", &joined(names), "--input-order", &order_arg, "--shard",
                    &joined(&vec![2; shape.len()]),
                ])
            }
            _ => {
                let settings = match how {
                    2 => (dir.path().join("acq.json"), format!(
                        r#"{{"output": {:?}, "arrays": {{"a": {{"shape": [{}], "tile": [{}], "dtype": "u16", "codec": "zstd:1", "input_order": [{}]}}}}}}"#,
                        out.to_str().unwrap(), joined(&shape), joined(&tile),
                        named.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "))),
                    _ => (dir.path().join("acq.toml"), format!(
                        "output = {:?}\n[arrays.a]\nshape = [{}]\ntile = [{}]\ndtype = \"u16\"\ninput_order = [{}]\n",
                        out.to_str().unwrap(), joined(&shape), joined(&tile), joined(&order))),
                };
                std::fs::write(&settings.0, settings.1).unwrap();
                retile(&[
                    "stream", "--config", settings.0.to_str().unwrap(),
                    "--input", &format!("a={}", input.to_str().unwrap()),
                ])
            }
        };
        prop_assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
        let array = match how {
            0 | 1 => out.clone(),
            _ => out.join("a"),
        };
        check(&array, &shape, &order);
    }
}

#[test]
fn the_plan_states_the_order_and_its_memory() {
    let plan = |extra: &[&str]| {
        let mut args = vec![
            "plan", "stream", "--shape", "4,3,8,8", "--tile", "1,1,4,8", "--dtype", "u8",
        ];
        args.extend_from_slice(extra);
        retile(&args)
    };
    let kept = plan(&["--input-order", "t,z,x,y", "--json"]);
    assert!(kept.status.success());
    let json: serde_json::Value = serde_json::from_slice(&kept.stdout).unwrap();
    assert_eq!(json["input_order"], serde_json::json!([0, 1, 3, 2]));
    // an epoch is 6 tiles of 32 bytes, two of them as in the stored order
    assert_eq!(json["memory_bytes"], 2 * 6 * 32);
    let held = plan(&[
        "--dim-names",
        "a,b,c,d",
        "--input-order",
        "b,a,c,d",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&held.stdout).unwrap();
    // slowest along the stored second (3 in tiles of 1), then the stored
    // first: slabs of one channel, each streaming in epochs of its 2 of the
    // 6 tiles, two epoch buffers as in the stored order
    assert_eq!(json["memory_bytes"], 2 * 2 * 32);
    assert_eq!(
        json["input_slab"],
        serde_json::json!({"dim": 1, "extent": 1, "slabs": 3})
    );
    let text = String::from_utf8(plan(&["--input-order", "z,t,y,x"]).stdout).unwrap();
    assert!(text.contains("input order     [1, 0, 2, 3]"), "{text}");
    assert!(
        text.contains(
            "the input arrives in 3 slabs of 1 along dimension 1, each streamed in epochs"
        ),
        "{text}"
    );
    // slowest along z, then y: each slab (4 epochs of 2 tiles) held whole,
    // two at once
    let whole = plan(&["--input-order", "z,y,t,x", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();
    assert_eq!(json["memory_bytes"], 2 * 4 * 2 * 32);
    let text = String::from_utf8(plan(&["--input-order", "z,y,t,x"]).stdout).unwrap();
    assert!(text.contains("each held whole"), "{text}");
    let refused = plan(&["--input-order", "z,y,t,x", "--memory", "511"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains("less than the 512 bytes"),
        "{err}"
    );
    // shards 3 deep along z: one slab of all of z, held alone
    let sharded = plan(&["--input-order", "z,t,y,x", "--shard", "1,3,1,1", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&sharded.stdout).unwrap();
    assert_eq!(json["memory_bytes"], 4 * 6 * 32);
    // shards only matter to the text plan of an input in slabs
    let drawn_only = plan(&["--shard", "1,3,1,1"]);
    assert!(!drawn_only.status.success());
}

#[test]
fn bad_orders_are_one_clear_error_each() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bad.zarr");
    for (order, says) in [
        (
            "t,y",
            "--input-order names 2 dimensions but the array has 3",
        ),
        ("t,y,y", "--input-order names dimension 'y' twice"),
        (
            "t,y,q",
            "'q' is not a dimension of the array; its dimensions are t,y,x",
        ),
        ("0,1,3", "dimension 3 is out of range"),
        (
            "y,t,x",
            "an unbounded stream must arrive with its first (unbounded) dimension slowest",
        ),
    ] {
        let err = refused(
            &[
                "stream",
                "--shape",
                "0,4,4",
                "--tile",
                "1,2,2",
                "--planes",
                "2",
                "--output",
                out.to_str().unwrap(),
                "--input-order",
                order,
            ],
            says,
        );
        assert_eq!(
            err.lines().filter(|l| !l.trim().is_empty()).count(),
            1,
            "{err}"
        );
        assert!(!out.exists(), "nothing is made for a bad order");
    }
}

#[test]
fn a_short_input_slowest_along_another_dimension_claims_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("in.raw"), dir.path().join("held.zarr"));
    write_input(&input, &[4, 3, 5]);
    let bytes = std::fs::read(&input).unwrap();
    std::fs::write(&input, &bytes[..bytes.len() - 2]).unwrap();
    refused(
        &[
            "stream",
            "--shape",
            "3,4,5",
            "--tile",
            "2,2,2",
            "--input",
            input.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--input-order",
            "y,t,x",
        ],
        "no stored plane was complete",
    );
    assert_eq!(common::claimed(&out), 0);
}

#[test]
fn a_pyramid_plan_refuses_an_order_that_completes_no_plane() {
    let args = |order| {
        let shape = ["plan", "stream", "--shape", "4,3,8,8", "--tile", "1,1,4,8"];
        [&shape[..], &["--input-order", order, "--pyramid", "mean"]].concat()
    };
    refused(&args("z,t,y,x"), "a pyramid halves stored planes");
    let kept = retile(&args("t,z,x,y"));
    assert!(
        kept.status.success(),
        "{}",
        String::from_utf8_lossy(&kept.stderr)
    );
}
