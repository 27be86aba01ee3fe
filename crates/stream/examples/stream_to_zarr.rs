//! Streams 32 synthetic 512 x 512 u16 frames, appended one at a time as a
//! camera would deliver them, into a sharded, blosc-compressed Zarr v3 store,
//! and prints what the stream did.
//!
//! ```sh
//! cargo run --release -p retile-stream --example stream_to_zarr -- /tmp/frames.zarr
//! ```

use retile_stream::{DType, StreamError, StreamSpec, TileStream, ZarrOptions, ZarrSink};

fn main() -> Result<(), StreamError> {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        std::env::temp_dir()
            .join(format!("retile-example-{}.zarr", std::process::id()))
            .display()
            .to_string()
    });
    // unbounded along time (extent 0), 8 x 128 x 128 tiles, 1 x 2 x 2 tiles per shard
    let spec = StreamSpec::new(DType::U16, vec![0, 512, 512], vec![8, 128, 128])?;
    let sink = ZarrSink::new(ZarrOptions {
        path: path.clone().into(),
        codec: "blosc-zstd:1".parse()?,
        shard: Some(vec![1, 2, 2]),
        dimension_names: Some(vec!["t".into(), "y".into(), "x".into()]),
        ..Default::default()
    });
    let mut stream = TileStream::new(spec, &0u16.to_le_bytes(), 0, Box::new(sink))?;
    for t in 0..32u16 {
        let frame: Vec<u8> = (0..512 * 512u32)
            .flat_map(|i| (t.wrapping_mul(7) ^ (i % 512) as u16 ^ (i / 512) as u16).to_le_bytes())
            .collect();
        stream.append(&frame)?;
    }
    let summary = stream.finish()?;
    println!(
        "{} planes, {} tiles, {} bytes in {} bytes stored in {} files at {path}",
        summary.planes, summary.tiles, summary.bytes, summary.sink.stored_bytes, summary.sink.files
    );
    Ok(())
}
