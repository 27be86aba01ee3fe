//! `retile plan stream --svg`: the stream plan as a picture.

use std::path::Path;
use std::process::ExitCode;

use retile_stream::{StreamPlan, StreamSpec};

use crate::calc_cmd::write_stdout;
use crate::error::CliError;

/// Draws the plan of `spec` (with `shard`, tiles per shard, ruled off, and
/// the pyramid's `levels`) to `output`, or to stdout.
pub fn draw(
    spec: &StreamSpec,
    shard: Option<&[u64]>,
    levels: &[StreamPlan],
    output: Option<&Path>,
) -> Result<ExitCode, CliError> {
    let plan = StreamPlan::new(spec)?;
    let svg = retile_draw::stream_svg(&plan, shard, levels)?;
    match output {
        Some(path) => std::fs::write(path, svg)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => write_stdout(&svg)?,
    }
    Ok(ExitCode::SUCCESS)
}
