//! A permuted input's frames put back in stored order for the halver:
//! random ranks 2 to 5, shapes, element sizes and permutations that keep
//! the stored first dimension slowest, the input pushed in random pieces;
//! every plane against a reference placed element by element.

use proptest::prelude::*;
use retile_plan::{unravel, DType, StreamSpec};
use retile_pyramid::FrameReorder;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn frames_come_back_in_stored_order(
        shape in prop::collection::vec(1u64..6, 2..=5),
        dtype in prop::sample::select(vec![DType::U8, DType::U16, DType::U32, DType::U64]),
        seed in any::<u64>(),
        pieces in prop::collection::vec(1usize..300, 1..6),
    ) {
        let rank = shape.len();
        let mut rest: Vec<usize> = (1..rank).collect();
        let mut s = seed;
        for i in (1..rest.len()).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            rest.swap(i, (s >> 33) as usize % (i + 1));
        }
        let order: Vec<usize> = [&[0][..], &rest].concat();
        let spec = StreamSpec::new(dtype, shape.clone(), vec![1; rank])
            .and_then(|sp| sp.with_input_order(order.clone()))
            .unwrap();
        let es = dtype.size();
        let total: u64 = shape.iter().product();
        let input: Vec<u8> = (0..total as usize * es).map(|k| (k * 131 + k / 251) as u8).collect();
        let mut reorder = match FrameReorder::new(&spec) {
            Some(r) => r,
            None => {
                prop_assert!(spec.in_stored_order());
                return Ok(());
            }
        };
        let mut out = Vec::new();
        let mut at = 0;
        for &n in pieces.iter().cycle() {
            if at >= input.len() {
                break;
            }
            let n = n.min(input.len() - at);
            out.extend_from_slice(reorder.push(&input[at..at + n]));
            at += n;
        }
        prop_assert_eq!(out.len(), input.len());
        let input_shape: Vec<u64> = order.iter().map(|&d| shape[d]).collect();
        for i in 0..total {
            let coords = unravel(i, &shape);
            let j = order.iter().fold(0, |a, &d| a * shape[d] + coords[d]);
            prop_assert!(j < input_shape.iter().product());
            let (i, j) = (i as usize * es, j as usize * es);
            prop_assert_eq!(&out[i..i + es], &input[j..j + es], "element {:?} of {:?} in order {:?}", coords, shape, order);
        }
    }
}
