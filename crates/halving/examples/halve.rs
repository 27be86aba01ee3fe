//! One plane halved with each method, the child planes printed.
//!
//! `cargo run -p retile-halving --example halve`

use retile_halving::{halve_planes, Halving, Method};
use retile_plan::DType;

fn main() -> Result<(), retile_plan::StreamError> {
    // a 3 x 5 plane of u8: the edge blocks hold fewer elements
    let plane: Vec<u8> = (0..15).map(|i| i * 10).collect();
    let halving = Halving::new(&[3, 5], &[true, true]);
    for method in [
        Method::Mean,
        Method::Min,
        Method::Max,
        Method::Decimate,
        Method::Median,
    ] {
        let mut child = vec![0u8; halving.child_elements()];
        halve_planes(method, DType::U8, &halving, 1, &plane, &mut child)?;
        println!("{method:<8} {:?} -> {child:?}", halving.child());
    }
    Ok(())
}
