//! Epochs of tiles written as a sharded, compressed Zarr v3 array into a
//! temporary directory, and what the store holds afterwards.
//!
//! `cargo run -p retile-store --example zarr_array`

use retile_plan::{DType, Epoch, Sink, StreamPlan, StreamSpec};
use retile_store::{ZarrOptions, ZarrSink};

fn main() -> Result<(), retile_plan::StreamError> {
    let dir = std::env::temp_dir().join(format!("retile-store-example-{}", std::process::id()));
    let plan = StreamPlan::new(&StreamSpec::new(
        DType::U16,
        vec![0, 64, 64],
        vec![4, 16, 16],
    )?)?;
    let mut sink = ZarrSink::new(ZarrOptions {
        path: dir.clone(),
        codec: "blosc-zstd:1".parse()?,
        shard: Some(vec![1, 2, 2]),
        overwrite: true,
        ..Default::default()
    });
    sink.begin(&plan, &[0, 0])?;
    let tiles: Vec<u8> = (0..plan.epoch_buffer_bytes())
        .map(|i| (i % 7) as u8)
        .collect();
    for index in 0..3 {
        sink.write_epoch(&Epoch {
            index,
            planes: 4,
            tiles: &tiles,
            plan: &plan,
        })?;
    }
    sink.finish(12)?;
    let stats = sink.stats();
    println!(
        "{}: {} shard files, {} bytes stored",
        dir.display(),
        stats.files,
        stats.stored_bytes
    );
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
