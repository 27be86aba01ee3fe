//! Compression on the GPU (nvCOMP, feature `cuda`): the CUDA stream's
//! chunks, compressed by nvCOMP and framed as Zarr's `zstd` and `blosc`
//! codecs, are decoded on the CPU by zarrs (libzstd, c-blosc's format) and
//! equal the input, on random shapes of rank 1-4, every element size,
//! ragged tiles, fill tiles, with and without shards; and on camera-like
//! frames their size is within 10% of the CPU codec's at the same level.
//! They need a GPU and nvCOMP (`RETILE_NVCOMP` or the nvidia-libnvcomp
//! wheel) and are ignored by default, so a machine without them reports
//! them as not run; run them with `-- --ignored`.
#![cfg(feature = "cuda")]

use std::path::Path;
use std::sync::Arc;

use retile_stream::cuda::CudaTileStream;
use retile_stream::{
    BloscKind, Codec, CodecOn, DType, Shuffle, StreamSpec, Summary, TileStream, ZarrOptions,
    ZarrSink,
};
use zarrs::array::{Array, ArrayBytes};
use zarrs::filesystem::FilesystemStore;

struct Rng(u64);

impl Rng {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound.max(1)
    }
}

/// The codecs nvCOMP writes.
fn codecs() -> [Codec; 3] {
    [
        Codec::Zstd(1),
        Codec::Blosc {
            kind: BloscKind::Lz4,
            level: 1,
            shuffle: Shuffle::Byte,
        },
        Codec::Blosc {
            kind: BloscKind::Zstd,
            level: 1,
            shuffle: Shuffle::Byte,
        },
    ]
}

fn dtype_of(esize: usize) -> DType {
    match esize {
        1 => DType::U8,
        2 => DType::U16,
        4 => DType::F32,
        _ => DType::I64,
    }
}

/// Streams `data` into a store at `path` on the GPU (`gpu`) or the CPU.
fn write(
    path: &Path,
    spec: &StreamSpec,
    data: &[u8],
    fill: &[u8],
    codec: Codec,
    shard: Option<Vec<u64>>,
    gpu: bool,
) -> Summary {
    let sink = ZarrSink::new(ZarrOptions {
        path: path.to_path_buf(),
        codec,
        shard,
        overwrite: true,
        codec_on: if gpu { CodecOn::Gpu } else { CodecOn::Cpu },
        ..Default::default()
    });
    if gpu {
        let mut s = CudaTileStream::new(spec.clone(), fill, Box::new(sink)).unwrap();
        assert_eq!(s.append(data).unwrap(), data.len());
        s.finish().unwrap()
    } else {
        let mut s = TileStream::new(spec.clone(), fill, 2, Box::new(sink)).unwrap();
        assert_eq!(s.append(data).unwrap(), data.len());
        s.finish().unwrap()
    }
}

/// The store's bytes, read back by zarrs (which decodes on the CPU).
fn read_back(path: &Path) -> Vec<u8> {
    let store = Arc::new(FilesystemStore::new(path).unwrap());
    let array = Array::open(store, "/").unwrap();
    let bytes: ArrayBytes<'static> = array
        .retrieve_array_subset(&array.subset_all())
        .unwrap_or_else(|e| panic!("{path:?}: {e}"));
    bytes.into_fixed().unwrap().into_owned()
}

/// Bytes of every file under `path`.
fn stored_bytes(path: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(path).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            stored_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

#[test]
#[ignore = "needs an NVIDIA GPU and nvCOMP: run with --ignored on a GPU machine"]
fn gpu_compressed_chunks_decode_on_the_cpu_to_the_input() {
    let mut rng = Rng(11);
    let dir = tempfile::tempdir().unwrap();
    for case in 0..36 {
        let rank = 1 + rng.next(4) as usize;
        let budget = [4000, 90, 24, 12][rank - 1];
        let shape: Vec<u64> = (0..rank).map(|_| 1 + rng.next(budget)).collect();
        let tile: Vec<u64> = (0..rank).map(|_| 1 + rng.next(budget / 2 + 1)).collect();
        let esize = [1, 2, 4, 8][rng.next(4) as usize];
        let codec = codecs()[case % 3];
        let shard = (rng.next(2) == 0).then(|| (0..rank).map(|_| 1 + rng.next(3)).collect());
        let spec = StreamSpec::new(dtype_of(esize), shape.clone(), tile.clone()).unwrap();
        let fill = vec![7u8; esize];
        let count = shape.iter().product::<u64>() as usize * esize;
        // runs of fill, smooth ramps and noise: every chunk kind nvCOMP meets
        let data: Vec<u8> = (0..count)
            .map(|i| match (i / 512) % 3 {
                0 => 7,
                1 => (i / 64) as u8,
                _ => (rng.next(256)) as u8,
            })
            .collect();
        let what = format!("case {case}: {spec:?} {codec} shard {shard:?}");
        let path = dir.path().join(format!("g{case}.zarr"));
        let summary = write(&path, &spec, &data, &fill, codec, shard, true);
        let on = summary.codec_on.clone().unwrap_or_default();
        if on.starts_with("gpu") {
            assert_eq!(read_back(&path), data, "{what}: {on}");
        } else {
            // the one reason the GPU may decline: a tile nvCOMP cannot take whole
            assert!(on.contains("cannot"), "{what}: {on}");
            assert_eq!(read_back(&path), data, "{what}: {on}");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU and nvCOMP: run with --ignored on a GPU machine"]
fn gpu_chunks_are_within_ten_percent_of_the_cpu_codecs() {
    // camera-like u16 frames: a smooth image with photon noise in the low bits
    let (planes, side) = (16u64, 1024u64);
    let spec = StreamSpec::new(DType::U16, vec![planes, side, side], vec![16, 128, 128]).unwrap();
    let mut rng = Rng(5);
    let data: Vec<u8> = (0..planes * side * side)
        .flat_map(|i| {
            let (y, x) = ((i / side) % side, i % side);
            let v = 400 + (x + y) / 8 + rng.next(24);
            (v as u16).to_le_bytes()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for codec in codecs() {
        let (g, c) = (dir.path().join("g.zarr"), dir.path().join("c.zarr"));
        let gs = write(&g, &spec, &data, &[0, 0], codec, Some(vec![1, 4, 4]), true);
        write(&c, &spec, &data, &[0, 0], codec, Some(vec![1, 4, 4]), false);
        let on = gs.codec_on.unwrap_or_default();
        assert!(on.starts_with("gpu"), "{codec}: {on}");
        assert_eq!(read_back(&g), data, "{codec}");
        let (gb, cb) = (stored_bytes(&g), stored_bytes(&c));
        let ratio = gb as f64 / cb as f64;
        println!("{codec}: GPU {gb} bytes, CPU {cb} bytes, GPU/CPU {ratio:.3}");
        assert!(
            (0.9..=1.1).contains(&ratio),
            "{codec}: GPU {gb} bytes against the CPU's {cb}"
        );
    }
}
