//! Epochs whose chunks a backend encoded itself (as the GPU does with
//! nvCOMP): the Zarr sink stores their bytes as they are, leaves out the
//! chunks marked as fill, and refuses chunks of another codec than the
//! array's. Here the "backend" is the CPU's zstd, so this runs everywhere;
//! the GPU's own chunks are checked in `gpu_codec.rs`.

use std::sync::Arc;

use retile_stream::*;
use zarrs::array::Array;
use zarrs::filesystem::FilesystemStore;

/// A sink that encodes every tile with zstd itself and hands the Zarr sink
/// the chunks packed back to back, as the CUDA stream does.
struct EncodingSink {
    inner: ZarrSink,
    fill: Vec<u8>,
    codec: DeviceCodec,
}

impl Sink for EncodingSink {
    fn begin(&mut self, plan: &StreamPlan, fill: &[u8]) -> Result<(), StreamError> {
        assert_eq!(
            self.inner.device_codec(plan).map(|d| d.0),
            Some(DeviceCodec::Zstd)
        );
        self.fill = fill.to_vec();
        self.inner.begin(plan, fill)
    }
    fn write_epoch(&mut self, epoch: &Epoch<'_>) -> Result<(), StreamError> {
        let mut packed = vec![];
        let mut chunks = vec![];
        for slot in 0..epoch.plan.m() as usize {
            let tile = epoch.tile(slot);
            if tile.chunks(self.fill.len()).all(|e| e == self.fill) {
                chunks.push(None);
                continue;
            }
            let frame = zstd::bulk::compress(tile, 1).unwrap();
            chunks.push(Some((packed.len() as u64, frame.len() as u64)));
            packed.extend_from_slice(&frame);
        }
        // the bytes after the chunks are not the store's
        packed.extend_from_slice(&[0xAB; 7]);
        let shared = SharedEpoch::new(
            epoch.index,
            epoch.planes,
            Arc::new(packed),
            Arc::new(epoch.plan.clone()),
        )
        .with_encoded(EncodedChunks {
            codec: self.codec,
            chunks,
        });
        self.inner.submit(shared)
    }
    fn finish(&mut self, planes: u64) -> Result<(), StreamError> {
        self.inner.finish(planes)
    }
    fn stats(&self) -> SinkStats {
        self.inner.stats()
    }
}

/// Streams 7 planes of 10 x 13 u16 (ragged tiles, every other tile row of
/// fill alone) through an [`EncodingSink`] and reads them back.
fn stream(
    shard: Option<Vec<u64>>,
    codec: DeviceCodec,
) -> Result<(Vec<u16>, Vec<u16>, SinkStats), StreamError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.zarr");
    let fill = 3u16;
    let spec = StreamSpec::new(DType::U16, vec![0, 10, 13], vec![2, 4, 5])?;
    let data: Vec<u16> = (0..7 * 10 * 13u32)
        .map(|i| match (i / 13 % 10) / 4 {
            1 => fill,
            _ => (i * 31 % 1000) as u16,
        })
        .collect();
    let sink = EncodingSink {
        inner: ZarrSink::new(ZarrOptions {
            path: path.clone(),
            codec: Codec::Zstd(1),
            shard,
            ..Default::default()
        }),
        fill: vec![],
        codec,
    };
    let mut s = TileStream::new(spec, &fill.to_le_bytes(), 1, Box::new(sink))?;
    let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    s.append(&bytes)?;
    let summary = s.finish()?;
    let store = Arc::new(FilesystemStore::new(&path).unwrap());
    let array = Array::open(store, "/").unwrap();
    let read: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
    Ok((read, data, summary.sink))
}

#[test]
fn encoded_chunks_are_stored_as_they_are_and_read_back() {
    for shard in [None, Some(vec![1, 2, 2]), Some(vec![2, 3, 3])] {
        let (read, data, stats) = stream(shard.clone(), DeviceCodec::Zstd).unwrap();
        assert_eq!(read, data, "shard {shard:?}");
        // rows 4..8 are fill alone: one tile row of every epoch (4 epochs x 3 tiles)
        assert_eq!(stats.omitted_chunks, 12, "shard {shard:?}");
        assert_eq!(stats.encode_seconds, 0.0, "the sink encoded nothing itself");
    }
}

#[test]
fn chunks_of_another_codec_than_the_arrays_are_refused() {
    let e = stream(None, DeviceCodec::BloscLz4 { typesize: 2 })
        .err()
        .unwrap();
    assert!(e.to_string().contains("zstd:1"), "{e}");
}
