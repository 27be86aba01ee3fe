//! What the CLI's tests read back from a store: the planes its `zarr.json`
//! claims, and the claimed elements checked against the synthetic pattern
//! `retile stream --planes` writes (element i holds i, truncated to u16).
//! Each test file uses part of it.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use zarrs::array::Array;
use zarrs::filesystem::FilesystemStore;

/// The planes the array's `zarr.json` at `dir` claims (0 before its
/// metadata exists, or while it cannot be read).
pub fn claimed(dir: &Path) -> u64 {
    let meta = std::fs::read_to_string(dir.join("zarr.json")).unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(&meta)
        .ok()
        .and_then(|m| m["shape"][0].as_u64())
        .unwrap_or(0)
}

/// The planes of `plane` elements the u16 array at `key` inside the store
/// at `root` ("/" for the root) claims, after checking every claimed
/// element against the synthetic pattern, read back with zarrs.
pub fn planes_holding_the_pattern(root: &Path, key: &str, plane: u64) -> u64 {
    let store = Arc::new(FilesystemStore::new(root).unwrap());
    let array = Array::open(store, key).unwrap_or_else(|e| panic!("{}{key}: {e}", root.display()));
    let values: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
    for (i, &v) in values.iter().enumerate() {
        assert_eq!(v, i as u16, "element {i} of {}{key}", root.display());
    }
    values.len() as u64 / plane
}
