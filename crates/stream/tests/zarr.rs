//! Zarr output read back with `zarrs`, as a reader would.

use std::sync::Arc;

use retile_stream::*;
use zarrs::array::Array;
use zarrs::filesystem::FilesystemStore;

fn values(shape: &[u64]) -> Vec<u16> {
    let n: u64 = shape.iter().product();
    (0..n).map(|i| (i * 7 + i / 13) as u16).collect()
}

fn to_bytes(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Streams `data` into a Zarr store with `options` and reads it back.
fn round_trip(
    shape: Vec<u64>,
    planes: u64,
    tile: Vec<u64>,
    options: ZarrOptions,
) -> (Vec<u64>, Vec<u16>, Vec<u16>) {
    let mut dims = shape.clone();
    dims[0] = planes;
    let data = values(&dims);
    let spec = StreamSpec::new(DType::U16, shape, tile).unwrap();
    let path = options.path.clone();
    let mut stream = TileStream::new(
        spec,
        &7u16.to_le_bytes(),
        2,
        Box::new(ZarrSink::new(options)),
    )
    .unwrap();
    for piece in to_bytes(&data).chunks(1001) {
        stream.append(piece).unwrap();
    }
    stream.finish().unwrap();
    let store = Arc::new(FilesystemStore::new(&path).unwrap());
    let array = Array::open(store, "/").unwrap();
    let read: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
    (array.shape().to_vec(), read, data)
}

#[test]
fn bounded_ragged_stream_reads_back_identically() {
    let dir = tempfile::tempdir().unwrap();
    let options = ZarrOptions {
        path: dir.path().join("a.zarr"),
        ..Default::default()
    };
    let (shape, read, data) = round_trip(vec![5, 9, 14], 5, vec![2, 4, 3], options);
    assert_eq!(shape, vec![5, 9, 14]);
    assert_eq!(read, data);
}

#[test]
fn unbounded_stream_with_zstd_and_names_reads_back_identically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.zarr");
    let options = ZarrOptions {
        path: path.clone(),
        codec: Codec::Zstd(3),
        dimension_names: Some(vec!["t".into(), "y".into(), "x".into()]),
        ..Default::default()
    };
    let (shape, read, data) = round_trip(vec![0, 16, 20], 7, vec![3, 8, 8], options);
    assert_eq!(shape, vec![7, 16, 20]);
    assert_eq!(read, data);
    let meta = std::fs::read_to_string(path.join("zarr.json")).unwrap();
    assert!(meta.contains("zstd") && meta.contains("\"t\""), "{meta}");
}

#[test]
fn sharded_stream_reads_back_identically() {
    let dir = tempfile::tempdir().unwrap();
    let options = ZarrOptions {
        path: dir.path().join("c.zarr"),
        shard: Some(vec![2, 2, 3]),
        codec: Codec::Zstd(1),
        ..Default::default()
    };
    let (shape, read, data) = round_trip(vec![0, 10, 17], 9, vec![2, 3, 4], options);
    assert_eq!(shape, vec![9, 10, 17]);
    assert_eq!(read, data);
}

#[test]
fn page_sized_tiles_in_padded_slots_read_back_identically() {
    for (name, shard) in [("d.zarr", None), ("e.zarr", Some(vec![1, 2, 2]))] {
        let dir = tempfile::tempdir().unwrap();
        let options = ZarrOptions {
            path: dir.path().join(name),
            shard,
            ..Default::default()
        };
        let (shape, read, data) = round_trip(vec![0, 40, 70], 3, vec![2, 32, 32], options);
        assert_eq!(shape, vec![3, 40, 70]);
        assert_eq!(read, data);
    }
}

#[test]
fn an_unwritable_store_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-directory");
    std::fs::write(&file, b"x").unwrap();
    let spec = StreamSpec::new(DType::U16, vec![0, 4], vec![1, 2]).unwrap();
    let sink = ZarrSink::new(ZarrOptions {
        path: file.join("out.zarr"),
        ..Default::default()
    });
    let err = TileStream::new(spec, &[0, 0], 1, Box::new(sink))
        .err()
        .expect("creating a store under a file fails");
    assert!(err.to_string().contains("not-a-directory"), "{err}");
}

#[test]
fn shard_counts_must_match_the_rank() {
    let dir = tempfile::tempdir().unwrap();
    let spec = StreamSpec::new(DType::U16, vec![0, 4], vec![1, 2]).unwrap();
    let sink = ZarrSink::new(ZarrOptions {
        path: dir.path().join("x"),
        shard: Some(vec![1]),
        ..Default::default()
    });
    let err = TileStream::new(spec, &[0, 0], 1, Box::new(sink))
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("a shard needs 2 positive tile counts"),
        "{err}"
    );
}

#[test]
fn buffered_writes_by_one_writer_read_back_identically() {
    for (name, shard) in [("f.zarr", None), ("g.zarr", Some(vec![2, 1, 2]))] {
        let dir = tempfile::tempdir().unwrap();
        let options = ZarrOptions {
            path: dir.path().join(name),
            shard,
            codec: Codec::Zstd(2),
            buffered_io: true,
            writers: Some(1),
            ..Default::default()
        };
        let (shape, read, data) = round_trip(vec![0, 13, 40], 5, vec![2, 4, 32], options);
        assert_eq!(shape, vec![5, 13, 40]);
        assert_eq!(read, data);
    }
}

#[test]
fn the_store_holds_only_zarr_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.zarr");
    let options = ZarrOptions {
        path: path.clone(),
        ..Default::default()
    };
    round_trip(vec![0, 8, 8], 2, vec![1, 8, 8], options);
    let mut entries: Vec<String> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(entries, ["c", "zarr.json"]);
}

#[test]
fn a_sink_without_writers_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = StreamSpec::new(DType::U16, vec![0, 4], vec![1, 2]).unwrap();
    let sink = ZarrSink::new(ZarrOptions {
        path: dir.path().join("w.zarr"),
        writers: Some(0),
        ..Default::default()
    });
    let err = TileStream::new(spec, &[0, 0], 1, Box::new(sink))
        .err()
        .expect("zero writers are refused");
    assert!(
        err.to_string().contains("1 to 256 writer threads, not 0"),
        "{err}"
    );
}

/// A store in a directory nobody may create entries in (procfs, refused
/// even to root): the stream is refused before any data is taken.
#[cfg(target_os = "linux")]
#[test]
fn a_read_only_directory_is_an_error() {
    let spec = StreamSpec::new(DType::U16, vec![0, 4], vec![1, 2]).unwrap();
    let sink = ZarrSink::new(ZarrOptions {
        path: "/proc/self/retile-test.zarr".into(),
        ..Default::default()
    });
    let err = TileStream::new(spec, &[0, 0], 1, Box::new(sink))
        .err()
        .expect("a store under /proc/self cannot be created");
    assert!(
        err.to_string().contains("/proc/self/retile-test.zarr"),
        "{err}"
    );
    // the file system's own error is kept as the source
    let source = std::error::Error::source(&err).expect("an I/O error as the source");
    assert!(
        source.downcast_ref::<std::io::Error>().is_some(),
        "{source:?}"
    );
}

/// A full disk, simulated: one chunk's file is a link to /dev/full, where
/// every write fails with "no space left on device". Both ways of writing
/// report it, and the array's metadata claims only the epochs before it.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_an_error_and_the_metadata_claims_only_what_was_written() {
    for (failing_epoch, buffered_io) in [(0, false), (1, false), (1, true)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("full.zarr");
        let spec = StreamSpec::new(DType::U16, vec![0, 4], vec![2, 4]).unwrap();
        let sink = ZarrSink::new(ZarrOptions {
            path: path.clone(),
            buffered_io,
            ..Default::default()
        });
        let mut stream = TileStream::new(spec, &[0, 0], 1, Box::new(sink)).unwrap();
        std::fs::create_dir_all(path.join(format!("c/{failing_epoch}"))).unwrap();
        std::os::unix::fs::symlink("/dev/full", path.join(format!("c/{failing_epoch}/0"))).unwrap();
        let appended = (0..6).try_for_each(|_| stream.append(&[1; 8]).map(|_| ()));
        let err = appended
            .and_then(|_| stream.finish().map(|_| ()))
            .expect_err("writing to a full disk fails");
        assert!(
            err.to_string()
                .contains(&format!("chunk c/{failing_epoch}/0")),
            "{err}"
        );
        let meta = std::fs::read_to_string(path.join("zarr.json")).unwrap();
        let meta: serde_json::Value = serde_json::from_str(&meta).unwrap();
        assert_eq!(meta["shape"][0], 2 * failing_epoch, "{meta}");
    }
}
