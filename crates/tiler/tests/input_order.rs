//! An input arriving in another order than the stored one: every tile,
//! padding included, against a reference placed element by element from
//! the permutation, for every rank 1 to 5, random shapes, tiles, element
//! sizes, permutations and append splits.

use proptest::prelude::*;
use retile_plan::{unravel, DType, MemorySink, StreamError, StreamSpec};
use retile_tiler::TileStream;

/// A random stream: element type, shape (bounded or not), tile, input
/// order (a permutation; its first is 0 when unbounded) and append pieces.
#[derive(Debug, Clone)]
struct Case {
    dtype: DType,
    shape: Vec<u64>,
    tile: Vec<u64>,
    order: Vec<usize>,
    unbounded_planes: Option<u64>,
    pieces: Vec<usize>,
    /// Tiles along the input's slowest dimension per slab, when it is not
    /// the stored first.
    slab_tiles: u64,
}

fn case() -> impl Strategy<Value = Case> {
    let dtypes = prop::sample::select(vec![DType::U8, DType::U16, DType::U32, DType::U64]);
    (1usize..=5, dtypes, any::<bool>())
        .prop_flat_map(|(rank, dtype, unbounded)| {
            let dims = prop::collection::vec((1u64..=7, 1u64..=4), rank);
            let order = Just((0..rank).collect::<Vec<usize>>()).prop_shuffle();
            let pieces = prop::collection::vec(1usize..200, 1..8);
            (
                Just(dtype),
                dims,
                order,
                Just(unbounded),
                pieces,
                1u64..=6,
                1u64..=3,
            )
        })
        .prop_map(
            |(dtype, dims, mut order, unbounded, pieces, planes, slab_tiles)| {
                let unbounded = unbounded && order[0] == 0;
                let mut shape: Vec<u64> = dims.iter().map(|&(s, _)| s).collect();
                let tile = dims.iter().map(|&(s, n)| n.min(s + 1)).collect();
                if unbounded {
                    shape[0] = 0;
                }
                if shape.len() == 1 {
                    order = vec![0];
                }
                Case {
                    dtype,
                    shape,
                    tile,
                    order,
                    unbounded_planes: unbounded.then_some(planes),
                    pieces,
                    slab_tiles,
                }
            },
        )
}

/// The input's bytes: every byte different from its neighbours.
fn input(len: usize) -> Vec<u8> {
    (0..len).map(|k| (k * 131 + k / 251) as u8).collect()
}

/// The stored extents (the planes streamed, when unbounded).
fn extents(case: &Case) -> Vec<u64> {
    let mut e = case.shape.clone();
    if let Some(planes) = case.unbounded_planes {
        e[0] = planes;
    }
    e
}

/// The input index of the element at stored `coords`: row-major over the
/// extents taken in input order.
fn input_index(coords: &[u64], extents: &[u64], order: &[usize]) -> u64 {
    order.iter().fold(0, |acc, &d| acc * extents[d] + coords[d])
}

fn run(case: &Case, data: &[u8]) -> (Result<u64, StreamError>, MemorySink) {
    let spec = StreamSpec::new(case.dtype, case.shape.clone(), case.tile.clone())
        .and_then(|s| s.with_input_order(case.order.clone()))
        .and_then(|s| {
            let slab = case.tile[case.order[0]] * case.slab_tiles;
            s.with_input_slab(slab)
        })
        .expect("a valid spec");
    let sink = MemorySink::new();
    let fill = vec![0xA5; case.dtype.size()];
    let mut stream = TileStream::new(spec, &fill, 2, Box::new(sink.clone())).expect("a stream");
    let mut at = 0;
    for &n in case.pieces.iter().cycle() {
        if at >= data.len() {
            break;
        }
        let n = n.min(data.len() - at);
        assert_eq!(stream.append(&data[at..at + n]).expect("append"), n);
        at += n;
    }
    let memory = stream.plan().memory_bytes();
    let finished = stream.finish();
    if let Ok(summary) = &finished {
        // buffers made on the way stay within the plan's memory
        assert!(summary.buffer_bytes <= memory, "{summary:?} of {case:?}");
    }
    (finished.map(|s| s.planes), sink)
}

/// Every tile of the sink against the reference: an element inside the
/// array holds the input's element at its permuted index, padding the fill.
fn check_tiles(case: &Case, data: &[u8], sink: &MemorySink) {
    let es = case.dtype.size();
    let extents = extents(case);
    let counts: Vec<u64> = extents
        .iter()
        .zip(&case.tile)
        .map(|(&s, &n)| s.div_ceil(n))
        .collect();
    let tiles: u64 = counts.iter().product();
    assert_eq!(sink.tile_count() as u64, tiles);
    for t in 0..tiles {
        let key = unravel(t, &counts);
        let tile = sink.tile(&key).expect("every tile is written");
        let per_tile: u64 = case.tile.iter().product();
        for i in 0..per_tile {
            let intra = unravel(i, &case.tile);
            let coords: Vec<u64> = key
                .iter()
                .zip(&intra)
                .zip(&case.tile)
                .map(|((&k, &x), &n)| k * n + x)
                .collect();
            let got = &tile[i as usize * es..(i as usize + 1) * es];
            if coords.iter().zip(&extents).all(|(&c, &e)| c < e) {
                let at = input_index(&coords, &extents, &case.order) as usize * es;
                assert_eq!(got, &data[at..at + es], "element {coords:?} of {case:?}");
            } else {
                assert!(
                    got.iter().all(|&b| b == 0xA5),
                    "padding at {coords:?} of {case:?}"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn every_order_tiles_as_the_reference(case in case()) {
        let total: u64 = extents(&case).iter().product::<u64>() * case.dtype.size() as u64;
        let data = input(total as usize);
        let (planes, sink) = run(&case, &data);
        prop_assert_eq!(planes.expect("a whole input finishes"), extents(&case)[0]);
        check_tiles(&case, &data, &sink);
    }

    /// An input cut short: with the stored first dimension slowest, the
    /// complete planes are written and claimed; otherwise the complete
    /// slabs are written, and the complete epochs of the slab cut short
    /// (held whole or streamed in epochs), but nothing is claimed, and the
    /// error says so.
    #[test]
    fn a_short_input_claims_only_complete_planes(case in case(), cut in 1u64..1000) {
        prop_assume!(case.unbounded_planes.is_none());
        let es = case.dtype.size() as u64;
        let total: u64 = case.shape.iter().product::<u64>() * es;
        let taken = total - 1 - (cut % total);
        let data = input(taken as usize);
        let (result, sink) = run(&case, &data);
        let frame: u64 = case.shape[1..].iter().product::<u64>() * es;
        match case.order[0] == 0 {
            true => {
                let planes = taken / frame;
                let err = result.expect_err("a short input is an error");
                prop_assert!(matches!(err, StreamError::PartialPlane { .. } | StreamError::ShortInput { .. }), "{}", err);
                prop_assert_eq!(sink.planes(), Some(planes));
            }
            false => {
                let err = result.expect_err("a short input is an error");
                prop_assert!(matches!(err, StreamError::HeldInput { bytes, expected } if bytes == taken && expected == total), "{}", err);
                prop_assert_eq!(sink.planes(), Some(0));
                let s = case.order[0];
                // a slab thicker than the dimension is all of it
                let slab = (case.tile[s] * case.slab_tiles).min(case.shape[s]);
                let slab_bytes = total / case.shape[s] * slab;
                let tiles_across: u64 = (0..case.shape.len())
                    .filter(|&d| d != s)
                    .map(|d| case.shape[d].div_ceil(case.tile[d]))
                    .product();
                let whole_slabs = taken / slab_bytes;
                let per_slab = slab.div_ceil(case.tile[s]) * tiles_across;
                // and every epoch of the slab cut short whose last element
                // (its farthest corner in input order) was taken
                let mut cut_slab = case.shape.clone();
                cut_slab[s] = slab.min(case.shape[s] - (whole_slabs * slab).min(case.shape[s]));
                let elements = (taken - whole_slabs * slab_bytes) / es;
                let epochs = case.shape[0].div_ceil(case.tile[0]);
                let complete = (0..epochs)
                    .filter(|&e| {
                        let mut corner: Vec<u64> = cut_slab.iter().map(|&n| n.saturating_sub(1)).collect();
                        corner[0] = ((e + 1) * case.tile[0]).min(case.shape[0]) - 1;
                        cut_slab[s] > 0 && input_index(&corner, &cut_slab, &case.order) < elements
                    })
                    .count() as u64;
                let per_epoch = cut_slab[s].div_ceil(case.tile[s]) * tiles_across / epochs;
                let tiles = whole_slabs * per_slab + complete * per_epoch;
                prop_assert_eq!(sink.tile_count() as u64, tiles);
            }
        }
    }
}

#[test]
fn bad_orders_are_refused_with_the_rule() {
    let spec = StreamSpec::new(DType::U8, vec![2, 3, 4], vec![1, 1, 4]).unwrap();
    for order in [vec![0, 1], vec![0, 1, 1], vec![0, 1, 3], vec![0, 1, 2, 3]] {
        let err = spec
            .clone()
            .with_input_order(order)
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not a permutation"), "{err}");
    }
    let unbounded = StreamSpec::new(DType::U8, vec![0, 3, 4], vec![1, 1, 4]).unwrap();
    let err = unbounded
        .with_input_order(vec![1, 0, 2])
        .unwrap_err()
        .to_string();
    assert!(err.contains("unbounded"), "{err}");
}
