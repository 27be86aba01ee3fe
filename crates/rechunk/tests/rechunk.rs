//! Re-tiling round trips: random arrays of every rank 1-5, written by
//! retile in one tiling and re-tiled into another (shards, codecs, a memory
//! limit), read back with zarrs equal to what went in; the memory limit
//! refused with the figure it needs.

use std::path::Path;

use proptest::prelude::*;
use retile_ngff::{open_output, Output};
use retile_plan::{DType, StreamSpec};
use retile_pyramid::Backend;
use retile_rechunk::{rechunk, Rechunk, RechunkError, ZarrSource};
use retile_store::{Codec, ZarrOptions};

/// Writes `data` (u16, `shape`) to `path` in tiles `tile`.
fn write(path: &Path, shape: &[u64], tile: &[u64], data: &[u16]) {
    let spec = StreamSpec::new(DType::U16, shape.to_vec(), tile.to_vec()).unwrap();
    let output = Output {
        zarr: Some(ZarrOptions {
            path: path.to_owned(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut s = open_output(spec, &[0, 0], Backend::Cpu { threads: 2 }, &output).unwrap();
    let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    s.append(&bytes).unwrap();
    s.finish().unwrap();
}

fn job(path: &Path, tile: Vec<u64>, shard: Option<Vec<u64>>, memory: Option<u64>) -> Rechunk {
    Rechunk {
        tile,
        output: Output {
            zarr: Some(ZarrOptions {
                path: path.to_owned(),
                shard,
                codec: Codec::Zstd(1),
                ..Default::default()
            }),
            ..Default::default()
        },
        backend: Backend::Cpu { threads: 2 },
        memory,
    }
}

/// A shape of rank 1-5, and two tilings of it (each tile dimension 1 to
/// the extent), and a shard count per dimension for the second.
fn case() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>)> {
    (1usize..=5).prop_flat_map(|rank| {
        prop::collection::vec(1u64..=7, rank).prop_flat_map(move |shape| {
            let tiles = shape.iter().map(|&n| 1..=n).collect::<Vec<_>>();
            (
                Just(shape.clone()),
                tiles.clone(),
                tiles,
                prop::collection::vec(1u64..=3, rank),
            )
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_retiled_array_reads_back_equal((shape, first, second, shard) in case(), limited in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let n: u64 = shape.iter().product();
        let data: Vec<u16> = (0..n).map(|i| (i * 7 + 3) as u16).collect();
        let (src, dst) = (dir.path().join("src.zarr"), dir.path().join("dst.zarr"));
        write(&src, &shape, &first, &data);
        let source = ZarrSource::open(&src, &Default::default()).unwrap();
        prop_assert_eq!(source.shape(), &shape[..]);
        // a limit that holds the stream and two slabs of one source chunk
        let memory = limited.then_some(1 << 20);
        let mut taken = 0;
        let summary = rechunk(&source, &job(&dst, second.clone(), Some(shard), memory), |b| taken += b).unwrap();
        prop_assert_eq!(summary.planes, shape[0]);
        prop_assert_eq!(taken, n * 2);
        let back = ZarrSource::open(&dst, &Default::default()).unwrap().read(0..shape[0]).unwrap();
        let expected: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        prop_assert_eq!(back, expected);
    }
}

#[test]
fn a_memory_limit_below_the_stream_and_two_chunks_is_refused_with_the_figure() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src.zarr"), dir.path().join("dst.zarr"));
    let data: Vec<u16> = (0..64 * 64 * 8).map(|i| i as u16).collect();
    write(&src, &[8, 64, 64], &[8, 64, 64], &data);
    let source = ZarrSource::open(&src, &Default::default()).unwrap();
    let err = rechunk(
        &source,
        &job(&dst, vec![1, 32, 32], None, Some(4096)),
        |_| {},
    )
    .unwrap_err();
    let RechunkError::Memory { needed, slab, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(*slab, 8 * 64 * 64 * 2);
    assert!(*needed > 2 * slab);
    assert!(err.to_string().contains(&needed.to_string()), "{err}");
    assert!(!dst.exists(), "a refused re-tiling made its output");
}

#[test]
fn a_path_that_is_not_an_array_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = ZarrSource::open(dir.path(), &Default::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains(&dir.path().display().to_string()) && err.contains("not a Zarr array"),
        "{err}"
    );
}
