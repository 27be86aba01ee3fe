//! The CuTe algebra in a few lines: a divide, a composition, a complement,
//! and a layout drawn as a grid.
//!
//! `cargo run -p retile-layout --example algebra`

use retile_layout::{
    complement, composition, logical_divide, render_grid, IntTuple, Layout, Tiler,
};

fn main() -> Result<(), retile_layout::LayoutError> {
    let a: Layout = "(4,2,3):(2,1,8)".parse()?;
    let tile: Tiler = "4:2".parse()?;
    println!("A                       = {a}");
    println!("logical_divide(A, 4:2)  = {}", logical_divide(&a, &tile)?);
    let left: Layout = "(6,2):(8,2)".parse()?;
    let right: Layout = "(4,3):(3,1)".parse()?;
    println!("composition             = {}", composition(&left, &right)?);
    let injective: Layout = "(2,2):(1,4)".parse()?;
    println!(
        "complement(.., 24)      = {}",
        complement(&injective, &IntTuple::Int(24))?
    );
    println!("{}", render_grid(&"(2,(2,2)):(4,(1,2))".parse()?)?);
    Ok(())
}
