//! Frames appended in odd-sized pieces, cut into tiles on every core, and
//! the tiles checked against the frames they came from.
//!
//! `cargo run --release -p retile-tiler --example tile_frames`

use retile_plan::{DType, MemorySink, StreamSpec};
use retile_tiler::TileStream;

fn main() -> Result<(), retile_plan::StreamError> {
    let spec = StreamSpec::new(DType::U16, vec![0, 300, 500], vec![8, 64, 128])?;
    let frames: Vec<u8> = (0..20 * 300 * 500 * 2).map(|i| (i % 251) as u8).collect();
    let sink = MemorySink::new();
    let mut stream = TileStream::new(spec, &[0, 0], 0, Box::new(sink.clone()))?;
    for piece in frames.chunks(123_457) {
        stream.append(piece)?;
    }
    let summary = stream.finish()?;
    assert_eq!(sink.assemble().as_deref(), Some(&frames[..]));
    println!(
        "{} planes, {} tiles, {:.2} GB/s; every element where it belongs",
        summary.planes,
        summary.tiles,
        summary.gigabytes_per_second()
    );
    Ok(())
}
