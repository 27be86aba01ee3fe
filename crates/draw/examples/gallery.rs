//! Writes a few drawings into a directory (default `gallery/`):
//! `cargo run -p retile-draw --example gallery -- DIR`.

use retile_copy::{AccessPattern, BankAnalysis, Banks, TransposePlan, TransposeRequest};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "gallery".into());
    std::fs::create_dir_all(&dir)?;
    let write = |name: &str, svg: String| std::fs::write(format!("{dir}/{name}.svg"), svg);
    write(
        "layout",
        retile_draw::layout_svg(&"((2,4),(2,4)):((8,1),(4,16))".parse()?)?,
    )?;
    write(
        "swizzle",
        retile_draw::layout_svg(&"Sw<3,3,3> o (8,64):(64,1)".parse()?)?,
    )?;
    write(
        "big",
        retile_draw::layout_svg(&"(128,32,32):(1,128,4096)".parse()?)?,
    )?;
    write(
        "tv",
        retile_draw::tv_svg(&"((4,8),(2,2)):((32,1),(16,8))".parse()?, 16, 8)?,
    )?;
    let r = TransposeRequest::new(
        16,
        16,
        128,
        "(16,16):(1,16)".parse()?,
        "(16,16):(16,1)".parse()?,
    );
    if let TransposePlan::Applies(t) = r.plan()? {
        write("copy", retile_draw::copy_svg(&t)?)?;
    }
    let rows = AccessPattern::from_tv(&"(32,32):(1,32)".parse()?, 1, 32)?;
    let a = BankAnalysis::new("(32,32):(32,1)".parse()?, rows, 32, Banks::default())?;
    write("banks", retile_draw::banks_svg(&a)?)?;
    let r = TransposeRequest::new(
        256,
        16,
        128,
        "(256,16):(1,256)".parse()?,
        "(256,16):(16,1)".parse()?,
    );
    if let Some(b) = r.banks(64, Banks::default())? {
        write("plan_banks", retile_draw::banks_svg(&b.stores)?)?;
    }
    Ok(())
}
