//! `retile`: a layout calculator, copy and stream plans, and the streaming
//! tiler that writes row-major data into tiled Zarr v3 arrays.

mod acquire_cmd;
mod banks_cmd;
#[cfg(feature = "cuda")]
mod bench_cmd;
mod calc_cmd;
mod copy_cmd;
mod error;
mod input;
mod plan_draw;
mod print;
mod rechunk_cmd;
mod settings;
mod signals;
mod stream_cmd;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Tensor layouts and moving data between them, fast.
#[derive(Parser)]
#[command(name = "retile", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate layout expressions, e.g. `retile eval 'logical_divide((4,2,3):(2,1,8), 4:2)'`.
    Eval(calc_cmd::EvalArgs),
    /// Draw a layout as a grid of offsets, e.g. `retile show '(4,8):(8,1)'`, or as SVG (`--svg`).
    Show(calc_cmd::ShowArgs),
    /// Shared-memory bank conflicts of an access pattern, and the swizzle that removes them,
    /// e.g. `retile banks '(32,32):(32,1)' --threads '(32,32):(1,32)' --element-bytes 4`.
    Banks(banks_cmd::BanksArgs),
    /// Print a plan, e.g. `retile plan stream --shape 4,4,6 --tile 2,2,3`.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Stream row-major data into tiles (a Zarr v3 array); the main job.
    Stream(Box<stream_cmd::StreamArgs>),
    /// Re-tile an existing Zarr array (v2 or v3) into a new store, e.g.
    /// `retile rechunk in.zarr out.zarr --tile 1,512,512 --shard 1,4,4 --memory 4G`.
    Rechunk(Box<rechunk_cmd::RechunkArgs>),
    /// GPU benchmarks (a build with `--features cuda`): permutes, the device scatter, pinned streaming.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Every GPU figure, each beside the device-to-device copy of the same run.
    #[cfg(feature = "cuda")]
    Gpu(bench_cmd::BenchArgs),
    /// Every GPU figure (this build has no CUDA: it says so).
    #[cfg(not(feature = "cuda"))]
    Gpu,
    /// One N-dimensional GPU permute, checked against the CPU reference and
    /// timed beside the device-to-device copy.
    #[cfg(feature = "cuda")]
    Permute(bench_cmd::PermuteArgs),
    /// One GPU permute (this build has no CUDA: it says so).
    #[cfg(not(feature = "cuda"))]
    Permute,
}

#[derive(Subcommand)]
enum PlanCommand {
    /// The tile-stream plan: tile counts, lifted layout, C, M, epochs, tiles.
    Stream(stream_cmd::PlanArgs),
    /// An in-thread transpose plan: widths, counts, shuffle, each thread's accesses.
    Copy(copy_cmd::PlanCopyArgs),
}

/// What the GPU commands say in a build without CUDA.
#[cfg(not(feature = "cuda"))]
const NO_CUDA: &str =
    "this retile was built without CUDA; rebuild with `cargo build --release --features cuda`";

fn main() -> ExitCode {
    // before parsing: `retile --help | head` ends quietly too
    signals::end_quietly_on_closed_pipes();
    let cli = Cli::parse();
    if matches!(cli.command, Some(Command::Stream(_))) {
        // a dropped connection to object storage is an error the stream
        // reports (after its retries), not a silent SIGPIPE
        signals::report_closed_pipes();
    }
    let result = match cli.command {
        Some(Command::Eval(args)) => calc_cmd::eval(&args),
        Some(Command::Show(args)) => calc_cmd::show(&args),
        Some(Command::Banks(args)) => banks_cmd::banks(&args),
        Some(Command::Plan(PlanCommand::Stream(args))) => stream_cmd::plan(&args),
        Some(Command::Plan(PlanCommand::Copy(args))) => copy_cmd::plan(&args),
        Some(Command::Stream(args)) => stream_cmd::stream(&args),
        Some(Command::Rechunk(args)) => rechunk_cmd::run(&args),
        #[cfg(feature = "cuda")]
        Some(Command::Bench(BenchCommand::Gpu(args))) => bench_cmd::bench(&args),
        #[cfg(feature = "cuda")]
        Some(Command::Bench(BenchCommand::Permute(args))) => bench_cmd::bench_one(&args),
        #[cfg(not(feature = "cuda"))]
        Some(Command::Bench(BenchCommand::Gpu | BenchCommand::Permute)) => Err(NO_CUDA.into()),
        None => stream_cmd::demo(),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            // one write, so that a line another thread writes meanwhile (a
            // library's, a writer's still closing its files) cannot land
            // inside it; a closed or full stderr leaves nowhere to say it:
            // the exit status does
            let _ = std::io::stderr().write_all(format!("retile: {message}\n").as_bytes());
            ExitCode::FAILURE
        }
    }
}
