//! The streaming tiler against a naive reference, on the seed's example and
//! on random shapes, splits and element sizes.

use std::collections::HashMap;

use proptest::prelude::*;
use retile_stream::*;

/// The seed's worked example, exactly.
#[test]
fn the_seed_example_plan_comes_out_exactly() {
    let spec = StreamSpec::new(DType::U16, vec![4, 4, 6], vec![2, 2, 3]).unwrap();
    let plan = StreamPlan::new(&spec).unwrap();
    let json = plan.to_json();
    assert_eq!(json["tile_counts"], serde_json::json!([2, 2, 2]));
    assert_eq!(json["lifted_shape"], serde_json::json!([2, 2, 2, 2, 2, 3]));
    assert_eq!(
        json["lifted_strides"],
        serde_json::json!([48, 24, 12, 6, 3, 1])
    );
    assert_eq!(json["C"], 32);
    assert_eq!(json["M"], 4);
    assert_eq!(json["epoch_elements"], 48);
    let spans: Vec<(Vec<u64>, u64, u64)> = plan
        .tiles(100)
        .into_iter()
        .map(|t| (t.tile, t.first, t.last))
        .collect();
    let expected = [
        (vec![0, 0, 0], 0, 32),
        (vec![0, 0, 1], 3, 35),
        (vec![0, 1, 0], 12, 44),
        (vec![0, 1, 1], 15, 47),
        (vec![1, 0, 0], 48, 80),
        (vec![1, 0, 1], 51, 83),
        (vec![1, 1, 0], 60, 92),
        (vec![1, 1, 1], 63, 95),
    ];
    assert_eq!(spans, expected);
}

/// Tile spans of the plan match a brute-force scan of the input indices.
#[test]
fn tile_spans_match_a_brute_force_scan_on_ragged_shapes() {
    let spec = StreamSpec::new(DType::U8, vec![5, 3, 7], vec![2, 2, 3]).unwrap();
    let plan = StreamPlan::new(&spec).unwrap();
    let mut seen: HashMap<Vec<u64>, (u64, u64)> = HashMap::new();
    for i in 0..5 * 3 * 7u64 {
        let x = [i / 21, i / 7 % 3, i % 7];
        let t = vec![x[0] / 2, x[1] / 2, x[2] / 3];
        let e = seen.entry(t).or_insert((i, i));
        e.1 = i;
    }
    for span in plan.tiles(1000) {
        assert_eq!(
            seen[&span.tile],
            (span.first, span.last),
            "tile {:?}",
            span.tile
        );
    }
    assert_eq!(plan.padding(), vec![(0, 1, 2), (1, 1, 2), (2, 1, 3)]);
}

/// Expected tiles computed one element at a time: tile coordinates, offset
/// in the tile, fill elsewhere.
fn reference_tiles(
    shape: &[u64],
    tile: &[u64],
    esize: usize,
    planes: u64,
    data: &[u8],
    fill: &[u8],
) -> HashMap<Vec<u64>, Vec<u8>> {
    let rank = shape.len();
    let tile_elems: u64 = tile.iter().product();
    let mut counts: Vec<u64> = shape
        .iter()
        .zip(tile)
        .map(|(&s, &n)| s.div_ceil(n))
        .collect();
    counts[0] = planes.div_ceil(tile[0]);
    let mut out = HashMap::new();
    let total_tiles: u64 = counts.iter().product();
    for t in 0..total_tiles {
        let mut key = vec![0; rank];
        let mut rest = t;
        for d in (0..rank).rev() {
            key[d] = rest % counts[d];
            rest /= counts[d];
        }
        out.insert(
            key,
            fill.iter()
                .copied()
                .cycle()
                .take(tile_elems as usize * esize)
                .collect::<Vec<u8>>(),
        );
    }
    let mut dims = shape.to_vec();
    dims[0] = planes;
    let total: u64 = dims.iter().product();
    for i in 0..total {
        let mut x = vec![0; rank];
        let mut rest = i;
        for d in (0..rank).rev() {
            x[d] = rest % dims[d];
            rest /= dims[d];
        }
        let key: Vec<u64> = x.iter().zip(tile).map(|(a, n)| a / n).collect();
        let intra = x.iter().zip(tile).fold(0, |acc, (a, n)| acc * n + a % n) as usize;
        let src = &data[i as usize * esize..(i as usize + 1) * esize];
        out.get_mut(&key).unwrap()[intra * esize..(intra + 1) * esize].copy_from_slice(src);
    }
    out
}

/// Streams `data` split at `cuts`, returns the sink and the result of finish.
fn run(
    spec: StreamSpec,
    data: &[u8],
    cuts: &[usize],
    fill: &[u8],
    threads: usize,
) -> (MemorySink, Result<Summary, StreamError>) {
    let sink = MemorySink::new();
    let mut stream = TileStream::new(spec, fill, threads, Box::new(sink.clone())).unwrap();
    let mut at = 0;
    for &cut in cuts.iter().chain(std::iter::once(&data.len())) {
        let cut = cut.clamp(at, data.len());
        let taken = stream.append(&data[at..cut]).unwrap();
        assert_eq!(taken, cut - at);
        at = cut;
    }
    let result = stream.finish();
    (sink, result)
}

fn case() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, usize, bool, u64, Vec<usize>, u64)> {
    (1usize..=6)
        .prop_flat_map(|rank| {
            let budget = match rank {
                1 => 64,
                2 => 12,
                3 => 7,
                4 => 4,
                _ => 3,
            };
            (
                prop::collection::vec(1u64..=budget, rank),
                prop::collection::vec(1u64..=budget, rank),
                prop::sample::select(vec![1usize, 2, 4, 8]),
                any::<bool>(),
                1u64..=9,
                prop::collection::vec(any::<usize>(), 0..6),
                any::<u64>(),
            )
        })
        .prop_map(|(shape, tile, esize, unbounded, planes, cuts, seed)| {
            (shape, tile, esize, unbounded, planes, cuts, seed)
        })
}

fn dtype_of(esize: usize) -> DType {
    match esize {
        1 => DType::U8,
        2 => DType::F16,
        4 => DType::I32,
        _ => DType::F64,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_streams_match_the_naive_reference((mut shape, tile, esize, unbounded, planes, cuts, seed) in case()) {
        let planes = if unbounded { planes } else { shape[0] };
        let mut dims = shape.clone();
        dims[0] = planes;
        let bytes = dims.iter().product::<u64>() as usize * esize;
        let data: Vec<u8> = (0..bytes).map(|i| ((i as u64 * 2654435761) ^ seed) as u8).collect();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes + 1)).collect();
        cuts.sort_unstable();
        if unbounded {
            shape[0] = 0;
        }
        let fill: Vec<u8> = (0..esize as u8).map(|b| 0xA0 | b).collect();
        let spec = StreamSpec::new(dtype_of(esize), shape.clone(), tile.clone()).unwrap();
        let (sink, result) = run(spec, &data, &cuts, &fill, 2);
        let summary = result.unwrap();
        prop_assert_eq!(summary.planes, planes);
        prop_assert_eq!(summary.bytes as usize, bytes);
        let mut full_shape = shape.clone();
        full_shape[0] = planes;
        let expected = reference_tiles(&full_shape, &tile, esize, planes, &data, &fill);
        prop_assert_eq!(sink.tile_count(), expected.len());
        for (key, tile_bytes) in &expected {
            let got = sink.tile(key);
            prop_assert_eq!(got.as_ref(), Some(tile_bytes), "tile {:?}", key);
        }
        prop_assert_eq!(sink.assemble().unwrap(), data);
    }
}

/// Shapes whose tiles are one or two elements wide along the fastest
/// dimension and tall enough for the in-register transposes (up to 64 rows
/// per step, 32 columns per block), ragged on every side.
fn thin_case() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, usize, Vec<usize>, u64)> {
    (
        (1u64..=3, 1u64..=140, 1u64..=140),
        (1u64..=2, 1u64..=90, 1u64..=2),
        prop::sample::select(vec![1usize, 2, 4, 8]),
        prop::collection::vec(any::<usize>(), 0..4),
        any::<u64>(),
    )
        .prop_map(|((p, r, c), (tp, tr, tc), esize, cuts, seed)| {
            (vec![p, r, c], vec![tp, tr, tc], esize, cuts, seed)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 60, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn thin_tiles_match_the_naive_reference((shape, tile, esize, cuts, seed) in thin_case()) {
        let bytes = shape.iter().product::<u64>() as usize * esize;
        let data: Vec<u8> = (0..bytes).map(|i| ((i as u64).wrapping_mul(0x9E3779B97F4A7C15) ^ seed) as u8).collect();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes + 1)).collect();
        cuts.sort_unstable();
        let fill = vec![0x5A; esize];
        let spec = StreamSpec::new(dtype_of(esize), shape.clone(), tile.clone()).unwrap();
        let (sink, result) = run(spec, &data, &cuts, &fill, 2);
        prop_assert_eq!(result.unwrap().bytes as usize, bytes);
        let expected = reference_tiles(&shape, &tile, esize, shape[0], &data, &fill);
        for (key, tile_bytes) in &expected {
            let got = sink.tile(key);
            prop_assert_eq!(got.as_ref(), Some(tile_bytes), "tile {:?}", key);
        }
    }
}

/// Shapes whose tiles are whole multiples of 4 KiB, so that their slots in
/// the epoch buffer are padded apart; ragged, bounded with a short last
/// epoch or unbounded.
fn page_case() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, usize, bool, Vec<usize>)> {
    (
        (1u64..=5, 1u64..=80, 1u64..=200),
        (1u64..=3, prop::sample::select(vec![8u64, 16, 32, 64])),
        prop::sample::select(vec![1usize, 2, 4, 8]),
        any::<bool>(),
        prop::collection::vec(any::<usize>(), 0..4),
    )
        .prop_map(|((p, r, c), (tp, tr), esize, unbounded, cuts)| {
            let tc = 4096 / (esize as u64 * tr);
            (vec![p, r, c], vec![tp, tr, tc], esize, unbounded, cuts)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn page_sized_tiles_match_the_naive_reference((shape, tile, esize, unbounded, cuts) in page_case()) {
        let bytes = shape.iter().product::<u64>() as usize * esize;
        let data: Vec<u8> = (0..bytes).map(|i| (i as u64).wrapping_mul(0x9E3779B97F4A7C15).to_le_bytes()[7]).collect();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes + 1)).collect();
        cuts.sort_unstable();
        let fill = vec![0x5A; esize];
        let mut stream_shape = shape.clone();
        if unbounded {
            stream_shape[0] = 0;
        }
        let spec = StreamSpec::new(dtype_of(esize), stream_shape, tile.clone()).unwrap();
        let plan = StreamPlan::new(&spec).unwrap();
        prop_assert_eq!(plan.slot_bytes(), plan.tile_bytes() + 64);
        let (sink, result) = run(spec, &data, &cuts, &fill, 2);
        prop_assert_eq!(result.unwrap().bytes as usize, bytes);
        let expected = reference_tiles(&shape, &tile, esize, shape[0], &data, &fill);
        prop_assert_eq!(sink.tile_count(), expected.len());
        for (key, tile_bytes) in &expected {
            let got = sink.tile(key);
            prop_assert_eq!(got.as_ref(), Some(tile_bytes), "tile {:?}", key);
        }
    }
}

/// Every element of a coordinate-encoded stream lands where its value says.
#[test]
fn a_coordinate_encoded_fixture_proves_every_placement() {
    let shape = [5u64, 9, 13];
    let tile = [2u64, 4, 1];
    let mut data = Vec::new();
    for z in 0..shape[0] {
        for y in 0..shape[1] {
            for x in 0..shape[2] {
                data.extend_from_slice(&(z << 32 | y << 16 | x).to_le_bytes());
            }
        }
    }
    let spec = StreamSpec::new(DType::U64, shape.to_vec(), tile.to_vec()).unwrap();
    let fill = u64::MAX.to_le_bytes();
    let (sink, result) = run(spec, &data, &[1, 7, 100, 101, 1000], &fill, 2);
    result.unwrap();
    let mut seen = 0;
    for tz in 0..3 {
        for ty in 0..3 {
            for tx in 0..13 {
                let t = sink.tile(&[tz, ty, tx]).expect("every tile is written");
                for (k, v) in t
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                    .enumerate()
                {
                    let (z, y, x) = (tz * 2 + k as u64 / 4, ty * 4 + k as u64 % 4, tx);
                    if z < shape[0] && y < shape[1] {
                        assert_eq!(
                            v,
                            z << 32 | y << 16 | x,
                            "tile {:?} element {k}",
                            [tz, ty, tx]
                        );
                        seen += 1;
                    } else {
                        assert_eq!(
                            v,
                            u64::MAX,
                            "padding of tile {:?} element {k}",
                            [tz, ty, tx]
                        );
                    }
                }
            }
        }
    }
    assert_eq!(seen, 5 * 9 * 13);
}

#[test]
fn input_ending_inside_a_plane_keeps_every_complete_plane() {
    let spec = StreamSpec::new(DType::U16, vec![0, 3, 4], vec![2, 2, 2]).unwrap();
    let data: Vec<u8> = (0..=255).cycle().take(3 * 24 + 5).collect();
    let (sink, result) = run(spec, &data, &[], &[0, 0], 1);
    match result {
        Err(StreamError::PartialPlane {
            planes: 3,
            bytes: 5,
        }) => {}
        other => panic!("expected a partial plane error, got {other:?}"),
    }
    assert_eq!(sink.planes(), Some(3));
    assert_eq!(sink.assemble().unwrap(), data[..72].to_vec());
}

#[test]
fn a_bounded_stream_takes_exactly_its_capacity_and_reports_short_input() {
    let spec = StreamSpec::new(DType::U8, vec![3, 4], vec![2, 2]).unwrap();
    let mut stream = TileStream::new(spec.clone(), &[0], 1, Box::new(NullSink)).unwrap();
    assert_eq!(stream.append(&[7; 20]).unwrap(), 12);
    assert_eq!(stream.append(&[7; 3]).unwrap(), 0);
    assert_eq!(stream.finish().unwrap().planes, 3);
    assert!(matches!(stream.append(&[1]), Err(StreamError::Finished)));
    assert!(matches!(stream.finish(), Err(StreamError::Finished)));
    let mut short = TileStream::new(spec, &[0], 1, Box::new(NullSink)).unwrap();
    short.append(&[1; 8]).unwrap();
    assert!(matches!(
        short.finish(),
        Err(StreamError::ShortInput {
            planes: 2,
            expected: 3
        })
    ));
}

#[test]
fn bad_specs_are_rejected_with_a_reason() {
    let cases: [(Vec<u64>, Vec<u64>, &str); 4] = [
        (vec![4, 0], vec![2, 2], "only the first"),
        (vec![4, 4], vec![2, 0], "tile extent of dimension 1 is 0"),
        (vec![4, 4], vec![2], "the tile has 1 dimensions"),
        (vec![1 << 40, 1 << 40], vec![1, 1], "too large"),
    ];
    for (shape, tile, message) in cases {
        let err = StreamSpec::new(DType::U8, shape, tile).unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
    }
    let spec = StreamSpec::new(DType::U16, vec![2, 2], vec![1, 1]).unwrap();
    assert!(
        TileStream::new(spec, &[0], 1, Box::new(NullSink)).is_err(),
        "a one-byte fill for u16"
    );
    // each size fits, but 2^40 tiles of 2^40 bytes in one epoch do not
    let huge = StreamSpec::new(DType::U8, vec![0, 1 << 40, 1], vec![1, 1, 1 << 40]).unwrap();
    let err = StreamPlan::new(&huge).unwrap_err();
    assert!(err.to_string().contains("would not fit"), "{err}");
    // streams hold numeric types; the others are refused with the list
    for dtype in [DType::Bool, DType::F8E4M3, DType::F8E5M2] {
        let err = StreamSpec::new(dtype, vec![2, 2], vec![1, 1]).unwrap_err();
        assert!(err.to_string().contains("cannot hold"), "{err}");
        assert!(dtype.parse_value("0").is_err());
    }
}

/// A sink that fails on its second epoch, as a full disk would.
struct FailingSink(u32);

impl Sink for FailingSink {
    fn begin(&mut self, _: &StreamPlan, _: &[u8]) -> Result<(), StreamError> {
        Ok(())
    }
    fn write_epoch(&mut self, _: &Epoch<'_>) -> Result<(), StreamError> {
        self.0 += 1;
        if self.0 >= 2 {
            Err(StreamError::Sink("no space left on device".into()))
        } else {
            Ok(())
        }
    }
    fn finish(&mut self, _: u64) -> Result<(), StreamError> {
        Ok(())
    }
}

#[test]
fn a_failing_sink_surfaces_as_an_error() {
    let spec = StreamSpec::new(DType::U8, vec![0, 16], vec![1, 4]).unwrap();
    let mut stream = TileStream::new(spec, &[0], 1, Box::new(FailingSink(0))).unwrap();
    let mut failed = false;
    for _ in 0..8 {
        if stream.append(&[1; 16]).is_err() {
            failed = true;
            break;
        }
    }
    let finished = stream.finish();
    assert!(
        failed || finished.is_err(),
        "the sink failure must reach the caller"
    );
    if let Err(e) = finished {
        assert!(
            e.to_string().contains("no space left") || matches!(e, StreamError::Finished),
            "{e}"
        );
    }
}

#[test]
fn memory_stays_at_two_epochs_whatever_the_length() {
    let spec = StreamSpec::new(DType::U16, vec![0, 64, 64], vec![4, 16, 16]).unwrap();
    let plane = vec![3u8; 64 * 64 * 2];
    let mut peaks = Vec::new();
    for planes in [16, 128] {
        let mut stream = TileStream::new(spec.clone(), &[0, 0], 2, Box::new(NullSink)).unwrap();
        for _ in 0..planes {
            stream.append(&plane).unwrap();
        }
        peaks.push(stream.finish().unwrap().buffer_bytes);
    }
    let epoch = 64 * 64 * 4 * 2;
    assert_eq!(peaks, [2 * epoch, 2 * epoch]);
}

#[test]
fn the_first_epochs_buffer_is_made_before_the_first_append_and_the_others_come() {
    let one_epoch = StreamSpec::new(DType::U8, vec![3, 8, 8], vec![4, 4, 4]).unwrap();
    let two_epochs = StreamSpec::new(DType::U8, vec![5, 8, 8], vec![4, 4, 4]).unwrap();
    let unbounded = StreamSpec::new(DType::U8, vec![0, 8, 8], vec![4, 4, 4]).unwrap();
    for (spec, planes, buffers) in [(one_epoch, 3, 1), (two_epochs, 5, 2), (unbounded, 1, 2)] {
        let mut stream = TileStream::new(spec, &[0], 1, Box::new(NullSink)).unwrap();
        stream.append(&vec![1u8; planes * 64]).unwrap();
        let summary = stream.finish().unwrap();
        assert_eq!(summary.buffer_bytes, buffers * 4 * 8 * 8);
        assert!(summary.setup_seconds <= summary.seconds);
    }
}

/// Eight epoch buffers, seven of them made while the first fills: every
/// epoch of a long input arrives whole, on 1 to 3 threads, and a stream
/// finished before its buffers are all made ends at once.
#[test]
fn buffers_made_while_the_stream_runs_carry_every_epoch() {
    let epoch = 4 * 32 * 32 * 2;
    for threads in 1..=3 {
        let spec = StreamSpec::new(DType::U16, vec![0, 32, 32], vec![4, 8, 8])
            .unwrap()
            .within_memory(8 * epoch)
            .unwrap();
        let sink = MemorySink::new();
        let mut stream =
            TileStream::new(spec.clone(), &[9, 0], threads, Box::new(sink.clone())).unwrap();
        let data: Vec<u8> = (0..64 * 32 * 32 * 2u32)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        for piece in data.chunks(999) {
            stream.append(piece).unwrap();
        }
        let summary = stream.finish().unwrap();
        assert_eq!((summary.planes, summary.buffer_bytes), (64, 8 * epoch));
        assert_eq!(sink.assemble().unwrap(), data, "{threads} threads");
        // ended before the others could be made
        let mut quick = TileStream::new(spec, &[0, 0], threads, Box::new(NullSink)).unwrap();
        assert_eq!(quick.finish().unwrap().planes, 0);
    }
}

#[test]
fn an_epoch_too_large_for_memory_is_refused_when_the_stream_is_made() {
    // 2^58 bytes: within the plan's bound, beyond any address space
    let spec = StreamSpec::new(DType::U8, vec![0, 1 << 24, 1 << 24], vec![1 << 10, 1, 1]).unwrap();
    let err = TileStream::new(spec, &[0], 1, Box::new(NullSink))
        .err()
        .expect("an epoch of 2^58 bytes cannot be allocated");
    assert!(
        err.to_string()
            .contains("bytes available; use a smaller first tile extent"),
        "{err}"
    );
}

#[test]
fn a_plan_larger_than_the_machine_is_refused_before_the_store_is_made() {
    // two epochs of 2^40 bytes each: addressable, but no test machine has 2 TiB
    let spec = StreamSpec::new(DType::U8, vec![0, 1 << 15, 1 << 15], vec![1 << 10, 1, 1]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("never.zarr");
    let sink = ZarrSink::new(ZarrOptions {
        path: path.clone(),
        ..Default::default()
    });
    let err = TileStream::new(spec, &[0], 1, Box::new(sink))
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("needs 2199023255552 bytes"),
        "{err}"
    );
    assert!(
        !path.exists(),
        "the store was made before the plan was refused"
    );
}
