//! `retile plan copy`: an in-thread transpose plan for people.

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
    /// GPU architecture (e.g. gfx942), when it matters.
    #[arg(long)]
    target: Option<String>,
    /// How many threads' accesses to list.
    #[arg(long, default_value_t = 2)]
    show_threads: i64,
}

fn layout(text: &str) -> Result<Layout, String> {
    text.parse().map_err(|e| format!("{text}: {e}"))
}

fn list(accesses: &[Access]) -> String {
    let items: Vec<String> = accesses
        .iter()
        .map(|a| format!("{:?}x{}", a.coord, a.width))
        .collect();
    items.join(" ")
}

fn describe(t: &Transpose, show: i64) -> Result<String, String> {
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
        let loads = t.loads_of(thread).map_err(|e| e.to_string())?;
        let stores = t.stores_of(thread).map_err(|e| e.to_string())?;
        out += &format!(
            "thread {thread}: loads {}\n          stores {}\n",
            list(&loads),
            list(&stores)
        );
    }
    Ok(out)
}

/// `retile plan copy`.
pub fn plan(args: &PlanCopyArgs) -> Result<ExitCode, String> {
    let mut request = TransposeRequest::new(
        args.threads,
        args.element_bits,
        args.max_bits,
        layout(&args.src)?,
        layout(&args.dst)?,
    );
    if let Some(target) = &args.target {
        request = request.with_target(target);
    }
    let plan = request.plan().map_err(|e| e.to_string())?;
    println!("{plan}");
    if let TransposePlan::Applies(t) = &plan {
        print!("{}", describe(t, args.show_threads)?);
    }
    Ok(ExitCode::SUCCESS)
}
