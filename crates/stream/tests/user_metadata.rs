//! Issue 29's metadata and dropped frames through the Rust API: user
//! attributes and per-plane records written by a stream's claims and read
//! back with zarrs (an independent reader of the `string` array), and
//! `MultiscaleStream::skip` equal to appending the fill value itself, for
//! random streams of every rank, with and without a pyramid.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};
use zarrs::array::Array;
use zarrs::filesystem::FilesystemStore;

use retile_stream::{
    open_output, Backend, DType, MemorySink, MultiscaleStream, Output, PyramidOptions, StreamSpec,
    UserMetadata, ZarrOptions, FRAME_METADATA,
};

fn open(path: &std::path::Path) -> Array<FilesystemStore> {
    Array::open(Arc::new(FilesystemStore::new(path).unwrap()), "/").unwrap()
}

#[test]
fn attributes_and_records_are_read_back_by_zarrs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.zarr");
    let user = UserMetadata::new(json!({"sample": "mouse 7"})).unwrap();
    let zarr = ZarrOptions {
        path: path.clone(),
        user: Some(user.clone()),
        ..Default::default()
    };
    let output = Output {
        zarr: Some(zarr),
        ..Default::default()
    };
    let spec = StreamSpec::new(DType::U8, vec![0, 4], vec![2, 4]).unwrap();
    let mut stream = open_output(spec, &[0], Backend::Cpu { threads: 1 }, &output).unwrap();
    let planes = 9u64;
    for p in 0..planes {
        if p % 3 != 1 {
            user.record(p, 1, &json!({"plane": p, "note": "é"}))
                .unwrap();
        }
        stream.append(&[p as u8; 4]).unwrap();
        if p == 4 {
            user.set_attributes(json!({"temperature": 37})).unwrap();
        }
    }
    stream.skip(2).unwrap();
    let summary = stream.finish().unwrap();
    assert_eq!((summary.planes, summary.skipped_planes), (planes + 2, 2));

    let array = open(&path);
    assert_eq!(
        Value::Object(array.attributes().clone()),
        json!({"sample": "mouse 7", "temperature": 37})
    );
    let records = open(&path.join(FRAME_METADATA));
    assert_eq!(records.shape(), &[planes + 2]);
    let texts: Vec<String> = records
        .retrieve_array_subset(&records.subset_all())
        .unwrap();
    for (p, text) in texts.iter().enumerate() {
        let p = p as u64;
        match p % 3 != 1 && p < planes {
            true => assert_eq!(
                serde_json::from_str::<Value>(text).unwrap(),
                json!({"plane": p, "note": "é"})
            ),
            false => assert_eq!(text, "", "plane {p}"),
        }
    }
}

/// A random stream of rank 1 to 5: its spec, and the appends (`Ok(planes)`
/// of data) and skips (`Err(planes)`) made of it.
fn stream_case() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, Vec<Result<u64, u64>>)> {
    (1usize..=5)
        .prop_flat_map(|rank| {
            (
                proptest::collection::vec(1u64..6, rank - 1),
                1u64..4,
                proptest::collection::vec(
                    prop_oneof![(1u64..5).prop_map(Ok), (0u64..9).prop_map(Err)],
                    1..6,
                ),
            )
        })
        .prop_flat_map(|(plane, depth, ops)| {
            let tile: Vec<BoxedStrategy<u64>> = plane.iter().map(|&n| (1..=n).boxed()).collect();
            (Just(plane), tile, Just(depth), Just(ops))
        })
        .prop_map(|(plane, tile, depth, ops)| {
            let shape = [vec![0], plane].concat();
            let tile = [vec![depth], tile].concat();
            (shape, tile, ops)
        })
}

/// Every level's assembled array after running `ops` on a stream of
/// `shape` and `tile` (with a pyramid where the rank allows), skipping with
/// `skip` or appending the fill itself; and the summary's skipped planes.
fn run(shape: &[u64], tile: &[u64], ops: &[Result<u64, u64>], skip: bool) -> (Vec<Vec<u8>>, u64) {
    let spec = StreamSpec::new(DType::U16, shape.to_vec(), tile.to_vec()).unwrap();
    let pyramid = match shape.len() {
        1 => PyramidOptions {
            levels: Some(1),
            ..Default::default()
        },
        _ => PyramidOptions::default(),
    };
    let plane_bytes = shape[1..].iter().product::<u64>() as usize * 2;
    let fill = 0xBEEFu16.to_le_bytes();
    let sinks: Vec<MemorySink> = (0..8).map(|_| MemorySink::new()).collect();
    let mut stream = MultiscaleStream::new(
        spec,
        &fill,
        Backend::Cpu { threads: 1 },
        &pyramid,
        |k, _| Ok(Box::new(sinks[k].clone())),
    )
    .unwrap();
    let mut value = 0u8;
    for op in ops {
        match *op {
            Ok(planes) => {
                let data: Vec<u8> = (0..planes as usize * plane_bytes)
                    .map(|_| {
                        value = value.wrapping_add(37);
                        value
                    })
                    .collect();
                stream.append(&data).unwrap();
            }
            Err(planes) if skip => stream.skip(planes).unwrap(),
            Err(planes) => {
                stream
                    .append(&fill.repeat(planes as usize * plane_bytes / 2))
                    .unwrap();
            }
        }
    }
    let summary = stream.finish().unwrap();
    let levels = summary.levels.len();
    (
        sinks[..levels]
            .iter()
            .map(|s| s.assemble().unwrap())
            .collect(),
        summary.skipped_planes,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn skipping_is_appending_the_fill_at_every_level((shape, tile, ops) in stream_case()) {
        let (skipped, count) = run(&shape, &tile, &ops, true);
        let (filled, none) = run(&shape, &tile, &ops, false);
        prop_assert_eq!(skipped, filled);
        let expected: u64 = ops.iter().filter_map(|op| op.err()).sum();
        prop_assert_eq!((count, none), (expected, 0));
    }
}

#[test]
fn a_skip_of_planes_larger_than_the_piece_is_whole() {
    // planes of 3 MiB: a skip goes one plane at a time
    let spec = StreamSpec::new(DType::U8, vec![0, 1536, 2048], vec![2, 512, 512]).unwrap();
    let sink = MemorySink::new();
    let mut stream = MultiscaleStream::single(
        spec,
        &[9],
        Backend::Cpu { threads: 1 },
        Box::new(sink.clone()),
    )
    .unwrap();
    stream.skip(3).unwrap();
    let summary = stream.finish().unwrap();
    assert_eq!((summary.planes, summary.skipped_planes), (3, 3));
    assert!(sink.assemble().unwrap().iter().all(|&b| b == 9));
}

#[test]
fn a_skip_past_what_readers_can_index_is_refused_and_adds_nothing() {
    // 1-D (a plane of one element) and 3-D u16 (planes of 8 elements, 16 bytes)
    for (dtype, shape, tile) in [
        (DType::U8, vec![0], vec![4]),
        (DType::U16, vec![0, 2, 4], vec![2, 2, 4]),
    ] {
        let sink = MemorySink::new();
        let spec = StreamSpec::new(dtype, shape, tile).unwrap();
        let elements = spec.plane_elements().unwrap();
        let bytes = elements * dtype.size() as u64;
        let mut stream = MultiscaleStream::single(
            spec,
            &vec![7; dtype.size()],
            Backend::Cpu { threads: 1 },
            Box::new(sink.clone()),
        )
        .unwrap();
        stream.append(&vec![1; bytes as usize]).unwrap();
        let most = i64::MAX as u64 / bytes - 1; // planes that may follow the first
        for planes in [most + 1, u64::MAX / bytes, u64::MAX] {
            let err = stream.skip(planes).unwrap_err().to_string();
            assert!(
                err.contains("cannot index")
                    && err.contains(&format!("skip at most {most} planes")),
                "{err}"
            );
        }
        stream.skip(2).unwrap();
        let summary = stream.finish().unwrap();
        assert_eq!((summary.planes, summary.skipped_planes), (3, 2));
        let stored = sink.assemble().unwrap();
        assert_eq!(stored.len() as u64, 3 * bytes);
        assert!(stored[..bytes as usize].iter().all(|&b| b == 1));
        assert!(stored[bytes as usize..].iter().all(|&b| b == 7));
    }
}
