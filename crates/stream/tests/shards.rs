//! Sharded and compressed Zarr output: read back with `zarrs` as a reader
//! would, and each shard's bytes checked against the `sharding_indexed`
//! specification.

use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use retile_stream::*;
use zarrs::array::{Array, ElementOwned};
use zarrs::filesystem::FilesystemStore;

/// The bytes of a stream whose element `i` holds `i * 7919 + 13`, truncated
/// to `esize` bytes (distinct across planes, not too compressible).
fn pattern(elements: u64, esize: usize) -> Vec<u8> {
    (0..elements)
        .flat_map(|i| (i.wrapping_mul(7919) + 13).to_le_bytes()[..esize].to_vec())
        .collect()
}

fn stream_into(
    options: ZarrOptions,
    dtype: DType,
    shape: &[u64],
    planes: u64,
    tile: &[u64],
    data: &[u8],
    piece: usize,
) -> Summary {
    let spec = StreamSpec::new(dtype, shape.to_vec(), tile.to_vec()).unwrap();
    let fill = vec![0xA5; dtype.size()];
    let mut stream = TileStream::new(spec, &fill, 2, Box::new(ZarrSink::new(options))).unwrap();
    let _ = planes;
    for part in data.chunks(piece.max(1)) {
        stream.append(part).unwrap();
    }
    stream.finish().unwrap()
}

/// The whole array as `zarrs` reads it, as little-endian bytes.
fn read_back<T: ElementOwned + Copy>(
    path: &Path,
    to_bytes: fn(T) -> Vec<u8>,
) -> (Vec<u64>, Vec<u8>) {
    let store = Arc::new(FilesystemStore::new(path).unwrap());
    let array = Array::open(store, "/").unwrap();
    let values: Vec<T> = array.retrieve_array_subset(&array.subset_all()).unwrap();
    (
        array.shape().to_vec(),
        values.into_iter().flat_map(to_bytes).collect(),
    )
}

fn read_any(path: &Path, esize: usize) -> (Vec<u64>, Vec<u8>) {
    match esize {
        1 => read_back::<u8>(path, |v| vec![v]),
        2 => read_back::<u16>(path, |v| v.to_le_bytes().to_vec()),
        4 => read_back::<u32>(path, |v| v.to_le_bytes().to_vec()),
        _ => read_back::<u64>(path, |v| v.to_le_bytes().to_vec()),
    }
}

const CODECS: [&str; 8] = [
    "none",
    "zstd:1",
    "gzip:1",
    "blosc-lz4:1",
    "blosc-zstd:1",
    "blosc-lz4hc:2",
    "blosc-zlib:1",
    "blosc-lz4:1/bit",
];

fn codec(text: &str) -> Codec {
    match text.split_once('/') {
        Some((name, "bit")) => name
            .parse::<Codec>()
            .unwrap()
            .with_shuffle(Shuffle::Bit)
            .unwrap(),
        _ => text.parse().unwrap(),
    }
}

fn dtype_of(esize: usize) -> DType {
    match esize {
        1 => DType::U8,
        2 => DType::U16,
        4 => DType::U32,
        _ => DType::U64,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random ragged shapes, bounded and unbounded streams, shard depths of
    /// one and more epochs, every codec and element size.
    #[test]
    fn sharded_streams_read_back_identically(
        rank in 2usize..=4,
        extents in prop::collection::vec(1u64..12, 4),
        tiles in prop::collection::vec(1u64..5, 4),
        shards in prop::collection::vec(1u64..4, 4),
        planes in 1u64..14,
        unbounded in any::<bool>(),
        esize in prop::sample::select(vec![1usize, 2, 4, 8]),
        codec_name in prop::sample::select(CODECS.to_vec()),
        direct in any::<bool>(),
        piece in 1usize..300,
    ) {
        let mut shape = extents[..rank].to_vec();
        shape[0] = if unbounded { 0 } else { planes };
        let tile = tiles[..rank].to_vec();
        let shard = shards[..rank].to_vec();
        let mut dims = shape.clone();
        dims[0] = planes;
        let data = pattern(dims.iter().product(), esize);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.zarr");
        let options = ZarrOptions {
            path: path.clone(),
            codec: codec(codec_name),
            shard: Some(shard.clone()),
            buffered_io: !direct,
            // these chunks are tiny: direct I/O only when asked for
            direct_io_min_chunk: Some(0),
            writers: Some(3),
            ..Default::default()
        };
        stream_into(options, dtype_of(esize), &shape, planes, &tile, &data, piece);
        let (read_shape, read) = read_any(&path, esize);
        prop_assert_eq!(read_shape, dims);
        prop_assert!(read == data, "values differ: {:?} {:?} {:?} {}", shape, tile, shard, codec_name);
    }
}

/// Parses a shard file: its chunks as the index places them (`None`: left out).
fn shard_chunks(bytes: &[u8], chunks: usize) -> Vec<Option<&[u8]>> {
    let index_len = chunks * 16 + 4;
    assert!(bytes.len() >= index_len, "a shard ends with its index");
    let (body, index) = bytes.split_at(bytes.len() - index_len);
    let (entries, crc) = index.split_at(chunks * 16);
    assert_eq!(
        crc,
        crc32c::crc32c(entries).to_le_bytes(),
        "the index's crc32c"
    );
    entries
        .chunks_exact(16)
        .map(|e| {
            let offset = u64::from_le_bytes(e[..8].try_into().unwrap());
            let nbytes = u64::from_le_bytes(e[8..].try_into().unwrap());
            if (offset, nbytes) == (u64::MAX, u64::MAX) {
                return None;
            }
            let end = (offset + nbytes) as usize;
            assert!(end <= body.len(), "a chunk inside the shard's body");
            Some(&bytes[offset as usize..end])
        })
        .collect()
}

#[test]
fn a_shard_holds_its_tiles_then_its_index_as_the_specification_says() {
    // 2 x 4 x 6 u16, tiles 1 x 2 x 3, shards of 2 x 2 x 1 tiles: 2 shards, each of 4 chunks
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.zarr");
    let data = pattern(48, 2);
    let options = ZarrOptions {
        path: path.clone(),
        shard: Some(vec![2, 2, 1]),
        ..Default::default()
    };
    stream_into(options, DType::U16, &[2, 4, 6], 2, &[1, 2, 3], &data, 7);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path.join("zarr.json")).unwrap()).unwrap();
    let sharding = &meta["codecs"][0];
    assert_eq!(sharding["name"], "sharding_indexed", "{meta}");
    assert_eq!(sharding["configuration"]["index_location"], "end", "{meta}");
    assert_eq!(
        sharding["configuration"]["index_codecs"][1]["name"], "crc32c",
        "{meta}"
    );
    let element = |p: usize, y: usize, x: usize| &data[((p * 4 + y) * 6 + x) * 2..][..2];
    for sx in 0..2 {
        let bytes = std::fs::read(path.join(format!("c/0/0/{sx}"))).unwrap();
        let chunks = shard_chunks(&bytes, 4);
        // inner chunk (p, ty) of shard (0, 0, sx) is tile (p, ty, sx)
        for (inner, chunk) in chunks.iter().enumerate() {
            let (p, ty) = (inner / 2, inner % 2);
            let expected: Vec<u8> = (0..2)
                .flat_map(|y| (0..3).flat_map(move |x| element(p, ty * 2 + y, sx * 3 + x).to_vec()))
                .collect();
            assert_eq!(chunk.unwrap(), &expected[..], "shard {sx}, chunk {inner}");
        }
    }
}

#[test]
fn chunks_of_fill_alone_are_left_out_and_read_as_the_fill() {
    // planes of fill with one non-fill plane in the middle; a ragged edge
    let shape = [0u64, 8, 10];
    let esize = 2;
    let mut data = vec![0xA5u8; 6 * 80 * esize];
    data[3 * 160..3 * 160 + 20].copy_from_slice(&pattern(10, esize));
    for shard in [None, Some(vec![2, 2, 2])] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.zarr");
        let options = ZarrOptions {
            path: path.clone(),
            shard: shard.clone(),
            ..Default::default()
        };
        let summary = stream_into(options, DType::U16, &shape, 6, &[1, 4, 4], &data, 64);
        // 6 planes x 2 x 3 tiles; only the 3 tiles holding plane 3's first row have data
        assert_eq!(summary.sink.omitted_chunks, 6 * 6 - 3, "{shard:?}");
        let (read_shape, read) = read_any(&path, esize);
        assert_eq!(read_shape, vec![6, 8, 10]);
        assert_eq!(read, data, "{shard:?}");
        if shard.is_none() {
            assert!(path.join("c/3/0/0").exists() && !path.join("c/2/0/0").exists());
        } else {
            // a shard of nothing but fill chunks is not made either
            assert!(path.join("c/1/0/0").exists() && path.join("c/1/0/1").exists());
            for empty in ["c/0/0/0", "c/0/0/1", "c/2/0/0", "c/2/0/1"] {
                assert!(!path.join(empty).exists(), "{empty}");
            }
            assert_eq!(summary.sink.files, 2);
        }
    }
}

#[test]
fn a_deep_shard_is_claimed_only_once_its_row_is_complete() {
    // shards 3 epochs deep; after 4 epochs the metadata claims the first 3
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.zarr");
    let spec = StreamSpec::new(DType::U8, vec![0, 4, 4], vec![2, 2, 2]).unwrap();
    let options = ZarrOptions {
        path: path.clone(),
        shard: Some(vec![3, 1, 2]),
        ..Default::default()
    };
    let mut stream = TileStream::new(spec, &[0], 1, Box::new(ZarrSink::new(options))).unwrap();
    let claimed = || {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path.join("zarr.json")).unwrap())
                .unwrap();
        meta["shape"][0].as_u64().unwrap()
    };
    let data = pattern(11 * 16, 1);
    stream.append(&data[..8 * 16]).unwrap();
    let mut waited = 0;
    while claimed() < 6 && waited < 500 {
        std::thread::sleep(std::time::Duration::from_millis(10));
        waited += 1;
    }
    assert_eq!(
        claimed(),
        6,
        "the first row of shards (3 epochs of 2 planes)"
    );
    stream.append(&data[8 * 16..]).unwrap();
    stream.finish().unwrap();
    assert_eq!(claimed(), 11);
    assert_eq!(read_any(&path, 1).1, data);
}

#[test]
fn an_existing_store_is_refused_unless_overwritten_and_then_nothing_old_remains() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("o.zarr");
    let write = |dtype: DType, shape: &[u64], overwrite: bool| {
        let spec = StreamSpec::new(dtype, shape.to_vec(), vec![1, 2, 2]).unwrap();
        let options = ZarrOptions {
            path: path.clone(),
            overwrite,
            ..Default::default()
        };
        let fill = vec![0; dtype.size()];
        TileStream::new(spec, &fill, 1, Box::new(ZarrSink::new(options))).map(|mut s| {
            s.append(&pattern(shape.iter().product(), dtype.size()))
                .unwrap();
            s.finish().unwrap()
        })
    };
    write(DType::U32, &[3, 6, 6], false).unwrap();
    let err = write(DType::U8, &[1, 2, 2], false).err().unwrap();
    assert!(err.to_string().contains("already exists"), "{err}");
    write(DType::U8, &[1, 2, 2], true).unwrap();
    let (shape, read) = read_any(&path, 1);
    assert_eq!((shape, read), (vec![1, 2, 2], pattern(4, 1)));
    assert!(
        !path.join("c/2").exists(),
        "a stale chunk of the old array remains"
    );
    // a directory that is not a store is never deleted
    let other = dir.path().join("photos");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("a.jpg"), b"x").unwrap();
    let spec = StreamSpec::new(DType::U8, vec![1, 2, 2], vec![1, 2, 2]).unwrap();
    let options = ZarrOptions {
        path: other.clone(),
        overwrite: true,
        ..Default::default()
    };
    let err = TileStream::new(spec, &[0], 1, Box::new(ZarrSink::new(options)))
        .err()
        .unwrap();
    assert!(err.to_string().contains("not a Zarr store"), "{err}");
    assert!(other.join("a.jpg").exists());
}
