//! `retile plan copy`: an in-thread transpose plan for people.

use crate::error::CliError;
use std::process::ExitCode;

use clap::Args;
use retile_copy::{Access, Transpose, TransposePlan, TransposeRequest};
use retile_layout::Layout;

/// Arguments of `retile plan copy`.
#[derive(Args)]
pub struct PlanCopyArgs {
    /// Tile coordinate -> source offset, e.g. `(256,16):(1,256)`.
    #[arg(long)]
    src: String,
    /// Tile coordinate -> destination offset, e.g. `(256,16):(16,1)`.
    #[arg(long)]
    dst: String,
    /// Threads moving the tile.
    #[arg(long, default_value_t = 256)]
    threads: i64,
    /// Bits per element.
    #[arg(long, default_value_t = 16)]
    element_bits: i64,
    /// Bits of the widest access.
    #[arg(long, default_value_t = 128)]
    max_bits: i64,
    /// GPU architecture: an AMD gfx name (gfx90a, gfx942, gfx950, ...) or an NVIDIA sm_ name (sm_80, sm_90a, ...).
    #[arg(long)]
    target: Option<String>,
    /// How many threads' accesses to list (at most 1024).
    #[arg(long, default_value_t = 2)]
    show_threads: i64,
    /// Lanes per warp, for the shared-memory bank conflicts.
    #[arg(long, default_value_t = 32)]
    warp: i64,
    /// Draw the plan as an SVG picture: which thread loads and stores which vector.
    #[arg(long)]
    svg: bool,
    /// Write the plan (or its picture) to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
}

/// The most threads whose accesses `--show-threads` lists.
const MAX_SHOWN_THREADS: i64 = 1024;

/// `text` with control characters (and other invisible ones) written as
/// `U+XXXX`, so that an error never echoes them raw to the terminal.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() || (!c.is_ascii() && c.is_alphanumeric()) {
                c.to_string()
            } else {
                format!("U+{:04X}", c as u32)
            }
        })
        .collect()
}

fn layout(option: &str, text: &str) -> Result<Layout, CliError> {
    text.parse()
        .map_err(|e| printable(&format!("{option} {text}: {e}")).into())
}

fn list(accesses: &[Access]) -> String {
    let items: Vec<String> = accesses
        .iter()
        .map(|a| format!("{:?}x{}", a.coord, a.width))
        .collect();
    items.join(" ")
}

fn describe(t: &Transpose, show: i64) -> Result<String, CliError> {
    let mut out = format!(
        "tile {:?}: loads run along dimension {}, stores along dimension {}\n\
         each thread: a {:?} block; {:?} blocks ({} for {} threads); {}\n\
         register shuffle (load register -> store register): {}\n",
        t.shape,
        t.src_fast,
        t.dst_fast,
        t.block,
        t.grid,
        t.blocks(),
        t.threads,
        if t.predicated {
            "predicated at the tile's edge or for idle threads"
        } else {
            "no predication"
        },
        t.shuffle
    );
    if t.loads + t.stores > 4096 {
        return Ok(out + "(each thread makes over 4096 accesses; not listed)\n");
    }
    for thread in 0..show.min(t.threads) {
        let loads = t.loads_of(thread)?;
        let stores = t.stores_of(thread)?;
        out += &format!(
            "thread {thread}: loads {}\n          stores {}\n",
            list(&loads),
            list(&stores)
        );
    }
    Ok(out)
}

/// `retile plan copy`.
pub fn plan(args: &PlanCopyArgs) -> Result<ExitCode, CliError> {
    if !(0..=MAX_SHOWN_THREADS).contains(&args.show_threads) {
        return Err(format!(
            "--show-threads: give 0 to {MAX_SHOWN_THREADS}, got {}",
            args.show_threads
        )
        .into());
    }
    let mut request = TransposeRequest::new(
        args.threads,
        args.element_bits,
        args.max_bits,
        layout("--src", &args.src)?,
        layout("--dst", &args.dst)?,
    );
    if let Some(target) = &args.target {
        retile_calc::copy::check_target(target)
            .map_err(|e| printable(&format!("--target: {e}")))?;
        request = request.with_target(target);
    }
    let plan = request.plan()?;
    let text = match (&plan, args.svg) {
        (TransposePlan::Applies(t), true) => {
            retile_draw::copy_svg(t).map_err(|e| CliError::Calc(retile_calc::CalcError::from(e)))?
        }
        (_, true) => return Err(format!("{plan}: there is no plan to draw").into()),
        (TransposePlan::Applies(t), false) => format!(
            "{plan}\n{}{}",
            describe(t, args.show_threads)?,
            crate::banks_cmd::plan_summary(&request, args.warp)?
        ),
        (_, false) => format!("{plan}\n"),
    };
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => crate::calc_cmd::write_stdout(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}
