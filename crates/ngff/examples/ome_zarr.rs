//! A small OME-Zarr image with a mean pyramid, written into a temporary
//! directory, and its group metadata printed.
//!
//! `cargo run -p retile-ngff --example ome_zarr`

use retile_ngff::{open_ngff, NgffOptions};
use retile_plan::{DType, StreamSpec};
use retile_pyramid::{Backend, PyramidOptions};
use retile_store::ZarrOptions;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("retile-ngff-example-{}", std::process::id()));
    let spec = StreamSpec::new(DType::U16, vec![0, 128, 128], vec![4, 32, 32])?;
    let zarr = ZarrOptions {
        path: dir.clone(),
        overwrite: true,
        ..Default::default()
    };
    let mut stream = open_ngff(
        spec,
        &[0, 0],
        Backend::Cpu { threads: 0 },
        zarr,
        &PyramidOptions::default(),
        &NgffOptions::default(),
    )?;
    stream.append(&vec![3u8; 8 * 128 * 128 * 2])?;
    let summary = stream.finish()?;
    println!(
        "{} levels: {:?}",
        summary.levels.len(),
        summary.levels.iter().map(|l| &l.shape).collect::<Vec<_>>()
    );
    println!("{}", std::fs::read_to_string(dir.join("zarr.json"))?);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
