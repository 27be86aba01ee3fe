//! The plan's tile map against the lifted layout and a naive placement,
//! element by element, on random shapes: the one source of tile placement
//! must agree with the algebra and with the definition of the tile order.

use proptest::prelude::*;
use retile_layout::IntTuple;
use retile_stream::*;

/// Row-major index of `x` over `extents`.
fn row_major(x: &[u64], extents: &[u64]) -> u64 {
    x.iter().zip(extents).fold(0, |acc, (&c, &e)| acc * e + c)
}

/// Row-major coordinates of `i` over `extents`.
fn coords(mut i: u64, extents: &[u64]) -> Vec<u64> {
    let mut x = vec![0; extents.len()];
    for (c, &e) in x.iter_mut().zip(extents).rev() {
        *c = i % e;
        i /= e;
    }
    x
}

/// The lifted coordinate of element `x`: `((x % n, x / n), ...)`, fastest
/// mode first, as CuTe takes it.
fn lifted_coord(x: &[u64], tile: &[u64]) -> IntTuple {
    IntTuple::Tuple(
        x.iter()
            .zip(tile)
            .rev()
            .map(|(&c, &n)| {
                IntTuple::Tuple(vec![
                    IntTuple::Int((c % n) as i64),
                    IntTuple::Int((c / n) as i64),
                ])
            })
            .collect(),
    )
}

fn case() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, usize, bool)> {
    (1usize..=5).prop_flat_map(|rank| {
        let budget = [0, 40, 11, 7, 5, 4][rank];
        (
            prop::collection::vec(1u64..=budget, rank),
            prop::collection::vec(1u64..=budget, rank),
            prop::sample::select(vec![1usize, 2, 4, 8]),
            any::<bool>(),
        )
    })
}

fn dtype_of(esize: usize) -> DType {
    match esize {
        1 => DType::U8,
        2 => DType::U16,
        4 => DType::F32,
        _ => DType::F64,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_tile_map_agrees_with_the_lifted_layout_and_the_tile_order(
        (shape, tile, esize, unbounded) in case()
    ) {
        let mut stream_shape = shape.clone();
        if unbounded {
            stream_shape[0] = 0;
        }
        let spec = StreamSpec::new(dtype_of(esize), stream_shape, tile.clone()).unwrap();
        let plan = StreamPlan::new(&spec).unwrap();
        let map = plan.tile_map();
        let counts = plan.tile_counts();
        let slot = plan.slot_bytes() / esize as u64;
        prop_assert_eq!(map.input_layout(), plan.lifted_layout());
        prop_assert_eq!(map.input_layout().shape(), map.buffer_layout().shape());
        // one epoch's worth of the first dimension for the lifted layout
        // (an unbounded stream's lifted shape spans one epoch), two epochs
        // and more for the map's own arithmetic
        let lifted_extents: Vec<u64> = if unbounded {
            std::iter::once(tile[0]).chain(shape[1..].iter().copied()).collect()
        } else {
            shape.clone()
        };
        let mut extents = shape.clone();
        if unbounded {
            extents[0] = 2 * tile[0] + 1;
        }
        for i in 0..extents.iter().product::<u64>() {
            let x = coords(i, &extents);
            let key: Vec<u64> = x.iter().zip(&tile).map(|(c, n)| c / n).collect();
            let intra = row_major(
                &x.iter().zip(&tile).map(|(c, n)| c % n).collect::<Vec<_>>(),
                &tile,
            );
            let slot_of = row_major(&key[1..], &counts[1..]);
            let epoch_bytes = plan.m() * slot;
            let offset = key[0] * epoch_bytes + slot_of * slot + intra;
            prop_assert_eq!(map.locate(&x), (key.clone(), intra));
            prop_assert_eq!(map.slot(&key), slot_of);
            prop_assert_eq!(map.tile_of_slot(key[0], slot_of), key.clone());
            prop_assert_eq!(map.buffer_offset(&x), offset);
            if x[0] < lifted_extents[0] {
                let c = lifted_coord(&x, &tile);
                let input = map.input_layout().eval_coord(&c).unwrap() as u64;
                prop_assert_eq!(input, row_major(&x, &extents), "input of {:?}", x);
                let buffer = map.buffer_layout().eval_coord(&c).unwrap() as u64;
                prop_assert_eq!(buffer, offset, "buffer of {:?}", x);
            }
        }
        // every tile's span is the first and last input index of its elements
        if !unbounded {
            for t in plan.tiles(usize::MAX) {
                let inside = (0..extents.iter().product::<u64>())
                    .map(|i| coords(i, &extents))
                    .filter(|x| x.iter().zip(&tile).map(|(c, n)| c / n).eq(t.tile.iter().copied()))
                    .map(|x| row_major(&x, &extents));
                let (first, last) = inside.fold((u64::MAX, 0), |(a, b), i| (a.min(i), b.max(i)));
                prop_assert_eq!((t.first, t.last), (first, last), "span of {:?}", t.tile);
            }
        }
    }
}

/// A tile of a whole number of pages gets a padded slot, and the map's
/// slot stride is that slot, not the tile.
#[test]
fn padded_slots_step_the_buffer_by_the_slot() {
    let spec = StreamSpec::new(DType::U16, vec![0, 128, 96], vec![2, 32, 32]).unwrap();
    let plan = StreamPlan::new(&spec).unwrap();
    let map = plan.tile_map();
    // 2 x 32 x 32 u16 is 4096 bytes: the slot is 64 bytes more
    assert_eq!(map.slot_elements(), (4096 + 64) / 2);
    assert_eq!(map.buffer_strides(2), (1, 2080));
    assert_eq!(map.buffer_strides(1), (32, 3 * 2080));
    assert_eq!(map.buffer_strides(0), (1024, 12 * 2080));
    assert_eq!(
        map.buffer_offset(&[1, 33, 65]),
        1024 + 32 + 3 * 2080 + 1 + 2 * 2080
    );
}
