//! Streams synthetic frames through the GPU's tiler into memory and checks
//! them against the CPU's, or says why there is no GPU.
//!
//! `cargo run -p retile-cuda --example cuda_stream`

use retile_cuda::CudaTileStream;
use retile_plan::{DType, MemorySink, StreamSpec};
use retile_tiler::TileStream;

fn main() -> Result<(), retile_plan::StreamError> {
    let spec = StreamSpec::new(DType::U16, vec![0, 300, 500], vec![8, 64, 128])?;
    let frames: Vec<u8> = (0..20 * 300 * 500 * 2)
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let gpu_sink = MemorySink::new();
    let mut gpu = match CudaTileStream::new(spec.clone(), &[0, 0], Box::new(gpu_sink.clone())) {
        Ok(stream) => stream,
        Err(e) => {
            println!("no GPU stream: {e}");
            return Ok(());
        }
    };
    gpu.append(&frames)?;
    let summary = gpu.finish()?;
    let cpu_sink = MemorySink::new();
    let mut cpu = TileStream::new(spec, &[0, 0], 0, Box::new(cpu_sink.clone()))?;
    cpu.append(&frames)?;
    cpu.finish()?;
    assert_eq!(gpu_sink.assemble(), cpu_sink.assemble());
    println!(
        "{} planes tiled on the GPU, equal to the CPU's",
        summary.planes
    );
    Ok(())
}
