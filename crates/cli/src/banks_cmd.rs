//! `retile banks`: the shared-memory bank conflicts of an access pattern,
//! and the swizzle that removes them; and the bank summary of `retile plan
//! copy`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use retile_calc::evaluate;
use retile_calc::show::{drawing, Format};
use retile_copy::{BankAnalysis, Banks, TransposeRequest};

use crate::calc_cmd::write_stdout;
use crate::error::CliError;

/// Arguments of `retile banks`.
#[derive(Args)]
pub struct BanksArgs {
    /// The shared-memory layout, tile index -> element offset: `(32,32):(32,1)`,
    /// or a swizzled one, `Sw<3,2,3> o (32,32):(32,1)`.
    layout: String,
    /// Who accesses what: a thread count (thread t reads vectors t, t + threads, ...), a
    /// thread-value layout `(thread, value) -> tile index`, or a register layout.
    #[arg(long)]
    threads: String,
    /// Bytes per element.
    #[arg(long)]
    element_bytes: i64,
    /// Bytes each thread reads at once (default: one element).
    #[arg(long)]
    vector_bytes: Option<i64>,
    /// Banks of shared memory.
    #[arg(long, default_value_t = 32)]
    banks: i64,
    /// Bytes per bank word.
    #[arg(long, default_value_t = 4)]
    bank_bytes: i64,
    /// Lanes per warp (instruction).
    #[arg(long, default_value_t = 32)]
    warp: i64,
    /// Draw an SVG picture (cells coloured by bank, before and after the swizzle).
    #[arg(long)]
    svg: bool,
    /// Write the report or picture to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// `retile banks`: evaluates `bank_conflicts(...)` and prints its report or picture.
pub fn banks(args: &BanksArgs) -> Result<ExitCode, CliError> {
    let vector = args
        .vector_bytes
        .map(|v| format!(", vector_bytes={v}"))
        .unwrap_or_default();
    let expression = format!(
        "bank_conflicts({}, threads={}, element_bytes={}{vector}, banks={}, bank_bytes={}, warp={})",
        args.layout, args.threads, args.element_bytes, args.banks, args.bank_bytes, args.warp
    );
    let svg = args.svg
        || args
            .output
            .as_ref()
            .is_some_and(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg")));
    let format = if svg { Format::Svg } else { Format::Text };
    let text = evaluate(&expression).and_then(|v| drawing(&v, format, None))?;
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => write_stdout(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// One side of a transpose in a line: its conflicts, and the swizzle's.
fn side(name: &str, a: &BankAnalysis) -> String {
    let after = match &a.suggestion {
        Some(s) => format!("; with {}: {}", s.swizzle, s.report),
        None if a.report.conflict_free() => String::new(),
        None => "; no swizzle lowers it".into(),
    };
    format!("  {name}: {}{after}\n", a.report)
}

/// The bank conflicts of a plan's loads and stores, were either side in
/// shared memory, before and after the suggested swizzle.
pub fn plan_summary(request: &TransposeRequest, warp: i64) -> Result<String, CliError> {
    let Some(b) = request.banks(warp, Banks::default())? else {
        return Ok(String::new());
    };
    Ok(format!(
        "shared-memory banks (32 of 4 bytes, warps of {warp}), were a side in shared memory:\n{}{}",
        side("loads from the source", &b.loads),
        side("stores to the destination", &b.stores)
    ))
}
