//! A stream with a 3-level mean pyramid, every level kept in memory, and
//! each level's shape and first values printed.
//!
//! `cargo run -p retile-pyramid --example pyramid`

use retile_halving::Method;
use retile_plan::{DType, MemorySink, StreamSpec};
use retile_pyramid::{Backend, MultiscaleStream, PyramidOptions};

fn main() -> Result<(), retile_plan::StreamError> {
    let spec = StreamSpec::new(DType::U8, vec![0, 16, 16], vec![2, 4, 4])?;
    let sinks: Vec<MemorySink> = (0..3).map(|_| MemorySink::new()).collect();
    let pyramid = PyramidOptions {
        method: Method::Mean,
        levels: Some(3),
        ..Default::default()
    };
    let mut stream =
        MultiscaleStream::new(spec, &[0], Backend::Cpu { threads: 0 }, &pyramid, |k, _| {
            Ok(Box::new(sinks[k].clone()))
        })?;
    let frames: Vec<u8> = (0..4 * 16 * 16).map(|i| (i % 256) as u8).collect();
    stream.append(&frames)?;
    let summary = stream.finish()?;
    for (level, sink) in summary.levels.iter().zip(&sinks) {
        let data = sink.assemble().unwrap_or_default();
        println!(
            "level shape {:?}: {:?} ...",
            level.shape,
            &data[..4.min(data.len())]
        );
    }
    Ok(())
}
