//! The plan of a stream of 2048 x 2048 u16 frames cut into 64 x 256 x 256
//! tiles: the lifted layout, C, M, the epochs and the memory it holds.
//!
//! `cargo run -p retile-plan --example plan`

use retile_plan::{plan_stream, DType, StreamSpec};

fn main() -> Result<(), retile_plan::StreamError> {
    let spec = StreamSpec::new(DType::U16, vec![0, 2048, 2048], vec![64, 256, 256])?;
    let plan = plan_stream(&spec, &[0, 0])?;
    print!("{plan}");
    let map = plan.tile_map();
    println!(
        "element (70, 300, 600) is in tile {:?}",
        map.locate(&[70, 300, 600]).0
    );
    Ok(())
}
