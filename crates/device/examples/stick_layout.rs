//! A device (stick) layout for a float16 host tensor: the device array, the
//! host coordinate of a few device coordinates, and the CuTe layout.
//!
//! `cargo run -p retile-device --example stick_layout`

use retile_device::{DType, DeviceLayout};

fn main() -> Result<(), retile_device::DeviceError> {
    let layout = DeviceLayout::with_dim_order(&[512, 256], DType::F16, &[0, 1, -1])?;
    println!("{layout}");
    for device in [[0, 0, 0], [3, 7, 0], [3, 7, 1]] {
        match layout.host_coord(&device)? {
            Some(host) => println!("device {device:?} holds host element {host:?}"),
            None => println!("device {device:?} is padding"),
        }
    }
    Ok(())
}
