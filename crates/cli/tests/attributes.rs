//! `retile stream --attributes JSON|@FILE`: the user's attributes on the
//! array (an image's: on its group, beside `ome`), read back with zarrs;
//! what is not a JSON object, or uses a key of retile's own, refused with
//! one line and nothing made.

use std::process::Output;
use std::sync::Arc;

use serde_json::{json, Value};
use zarrs::array::Array;
use zarrs::filesystem::FilesystemStore;
use zarrs::group::Group;

mod common;
use common::retile;

/// `retile stream` of 5 synthetic u16 planes of 8x8 into `path`, with `extra`.
fn stream(path: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "stream", "--shape", "0,8,8", "--planes", "5", "--tile", "2,4,4", "--dtype", "u16",
        "--output", path,
    ];
    args.extend_from_slice(extra);
    retile(&args)
}

/// The user's attributes of the array at `path`: its attributes less
/// retile's record of the array (`retile`), checked to be the record of
/// what `stream` asks for.
fn attributes_of_array(path: &std::path::Path) -> Value {
    let store = Arc::new(FilesystemStore::new(path).unwrap());
    let array = Array::open(store, "/").unwrap();
    assert_eq!(array.shape()[0], 5);
    let mut attributes = array.attributes().clone();
    let record =
        json!({"version": 1, "array": {"shape": [0, 8, 8], "tile": [2, 4, 4], "dtype": "u16"}});
    assert_eq!(attributes.remove("retile"), Some(record));
    Value::Object(attributes)
}

#[test]
fn inline_and_file_attributes_are_the_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let given = json!({"sample": "mouse 7", "stage": {"x": 1.5, "y": [1, 2]}, "ok": true});
    let inline = dir.path().join("inline.zarr");
    let out = stream(
        inline.to_str().unwrap(),
        &["--attributes", &given.to_string()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(attributes_of_array(&inline), given);

    let file = dir.path().join("attrs.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&given).unwrap()).unwrap();
    let from_file = dir.path().join("file.zarr");
    let at = format!("@{}", file.display());
    let out = stream(from_file.to_str().unwrap(), &["--attributes", &at]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(attributes_of_array(&from_file), given);
}

#[test]
fn an_images_attributes_are_its_groups_beside_ome() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("image.zarr");
    let given = json!({"sample": "mouse 7"});
    let out = stream(
        path.to_str().unwrap(),
        &["--pyramid", "mean", "--attributes", &given.to_string()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Arc::new(FilesystemStore::new(&path).unwrap());
    let group = Group::open(store, "/").unwrap();
    let attributes = group.attributes();
    assert_eq!(attributes["sample"], "mouse 7");
    assert_eq!(attributes["ome"]["version"], "0.5");
    assert!(attributes["ome"]["multiscales"].is_array());
}

#[test]
fn bad_attributes_are_one_line_and_make_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("@{}", dir.path().join("missing.json").display());
    for (given, expected) in [
        ("[1, 2]", "must be a JSON object"),
        ("\"text\"", "must be a JSON object"),
        ("{\"a\": ", "does not hold JSON"),
        ("{\"ome\": {}}", "'ome' is retile's own"),
        ("{\"retile\": 1}", "'retile' is retile's own"),
        (missing.as_str(), "cannot read the file"),
    ] {
        let path = dir.path().join("bad.zarr");
        let out = stream(path.to_str().unwrap(), &["--attributes", given]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{given}: {err}");
        assert!(
            err.contains(expected),
            "{given}: expected '{expected}' in {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            !path.exists(),
            "{given}: a refused stream made {}",
            path.display()
        );
    }
}

#[test]
fn attributes_need_an_output() {
    let out = retile(&[
        "stream",
        "--shape",
        "0,8,8",
        "--planes",
        "1",
        "--tile",
        "1,8,8",
        "--attributes",
        "{}",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--attributes"), "{err}");
}
