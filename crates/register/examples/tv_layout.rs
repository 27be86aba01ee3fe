//! A register layout (which thread holds which element of a tile) and its
//! CuTe thread-value layout: operand C of `mma.m16n8k8`.
//!
//! `cargo run -p retile-register --example tv_layout`

use retile_register::{local, spatial};

fn main() -> Result<(), retile_register::RegisterError> {
    let c = local(&[2, 1])?
        .compose(&spatial(&[8, 4])?)?
        .compose(&local(&[1, 2])?)?;
    println!("{c}");
    println!("TV layout: {}", c.tv_layout()?);
    for coord in [[0, 0], [8, 3], [15, 7]] {
        println!(
            "element {coord:?} is held by (thread, register) {:?}",
            c.holders(&coord)?
        );
    }
    Ok(())
}
