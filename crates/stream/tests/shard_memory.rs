//! Memory of a sharded stream, alone in its own process (peak memory is
//! per process, and the other tests would add theirs).

use retile_stream::*;

mod common;
#[cfg(target_os = "linux")]
use common::peak;

/// Memory stays at two epochs of tiles whatever the shard depth: a shard 8
/// epochs deep holds no epoch back, only its index and a partial block.
#[cfg(target_os = "linux")]
#[test]
fn memory_stays_flat_with_a_shard_eight_epochs_deep() {
    let epoch_bytes: u64 = 16 * 1024 * 1024;
    let mut peaks = vec![];
    for depth in [1u64, 8] {
        let dir = tempfile::tempdir().unwrap();
        let spec = StreamSpec::new(DType::U8, vec![0, 1024, 1024], vec![16, 256, 256]).unwrap();
        let options = ZarrOptions {
            path: dir.path().join("m.zarr"),
            shard: Some(vec![depth, 2, 2]),
            writers: Some(2),
            ..Default::default()
        };
        std::fs::write("/proc/self/clear_refs", "5").unwrap();
        let mut stream = TileStream::new(spec, &[0], 2, Box::new(ZarrSink::new(options))).unwrap();
        let piece = vec![3u8; 4 << 20];
        for _ in 0..(24 * epoch_bytes / piece.len() as u64) {
            stream.append(&piece).unwrap();
        }
        stream.finish().unwrap();
        peaks.push(peak());
    }
    assert!(
        peaks[1] < peaks[0] + epoch_bytes,
        "peak memory {} MB with shards 8 epochs deep, {} MB one epoch deep",
        peaks[1] >> 20,
        peaks[0] >> 20
    );
}
