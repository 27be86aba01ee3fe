//! Memory of a stream with a pyramid, alone in its own process (peak
//! memory is per process, and the other tests would add theirs).

use retile_stream::*;

mod common;
#[cfg(target_os = "linux")]
use common::peak;

/// A pyramid (the append dimension halved too, so that every level holds
/// a plane back) written to Zarr: memory is the same at 1x and 8x the
/// length, and within what the plan says the pyramid holds.
#[cfg(target_os = "linux")]
#[test]
fn memory_stays_flat_at_eight_times_the_length() {
    let spec = StreamSpec::new(DType::U8, vec![0, 1024, 1024], vec![16, 256, 256]).unwrap();
    let pyramid = PyramidOptions {
        method: Method::Mean,
        downsample: Some(vec![true, true, true]),
        levels: Some(4),
    };
    let planned = pyramid.memory_bytes(&spec).unwrap();
    let epoch_bytes: u64 = 16 << 20;
    let mut peaks = vec![];
    for epochs in [4u64, 32] {
        let dir = tempfile::tempdir().unwrap();
        let zarr = ZarrOptions {
            path: dir.path().join("m.zarr"),
            shard: Some(vec![2, 2, 2]),
            writers: Some(2),
            ..Default::default()
        };
        std::fs::write("/proc/self/clear_refs", "5").unwrap();
        let before = peak();
        let output = Output {
            zarr: Some(zarr),
            pyramid: Some(pyramid.clone()),
            ngff: None,
        };
        let mut stream =
            open_output(spec.clone(), &[0], Backend::Cpu { threads: 2 }, &output).unwrap();
        let piece = vec![3u8; 3 << 20];
        for _ in 0..(epochs * epoch_bytes).div_ceil(piece.len() as u64) {
            stream.append(&piece).unwrap();
        }
        let summary = stream.finish().unwrap();
        assert_eq!(summary.levels.len(), 4);
        assert_eq!(summary.levels[3].shape[0], summary.planes.div_ceil(8));
        peaks.push(peak().saturating_sub(before));
    }
    assert!(
        peaks[1] < peaks[0] + epoch_bytes,
        "peak memory {} MB at 8x the length, {} MB at 1x",
        peaks[1] >> 20,
        peaks[0] >> 20
    );
    assert!(
        peaks[1] < planned + 3 * epoch_bytes,
        "peak memory {} MB, the plan says the pyramid holds {} MB",
        peaks[1] >> 20,
        planned >> 20
    );
}
