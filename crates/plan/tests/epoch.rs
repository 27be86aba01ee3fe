//! An epoch's size against its definition, on random specs of every rank:
//! `tile[0]` planes, whatever the number of epochs (a stream of one epoch,
//! shorter than its tile, once had none: its tile map's epoch stride is
//! arbitrary, and the CUDA backend sized its buffers from it).

use proptest::prelude::*;
use retile_plan::{DType, StreamPlan, StreamSpec};

fn spec() -> impl Strategy<Value = (Vec<u64>, Vec<u64>)> {
    (1usize..=6).prop_flat_map(|rank| {
        (
            prop::collection::vec(0u64..=9, rank),
            prop::collection::vec(1u64..=9, rank),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn an_epoch_holds_a_tiles_planes((mut shape, tile) in spec()) {
        for s in shape.iter_mut().skip(1) {
            *s = (*s).max(1);
        }
        let spec = StreamSpec::new(DType::U16, shape.clone(), tile.clone()).unwrap();
        let plan = StreamPlan::new(&spec).unwrap();
        let plane: u64 = shape[1..].iter().product();
        prop_assert_eq!(plan.epoch_elements(), tile[0] * plane);
        if shape[0] > tile[0] {
            // several epochs: an epoch is also the input's step between them
            prop_assert_eq!(plan.tile_map().input_strides(0).1, plan.epoch_elements());
        }
        if shape[0] > 0 {
            let epochs = shape[0].div_ceil(tile[0]);
            let planes: u64 = (0..epochs).map(|e| plan.epoch_planes(e)).sum();
            prop_assert_eq!(planes, shape[0]);
        }
    }
}
