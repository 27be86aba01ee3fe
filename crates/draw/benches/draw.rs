//! How long drawings take, and how large they are: a 128x32x32 layout
//! (plain and swizzled; elided to its first and last blocks of columns),
//! a 128x128 layout drawn whole beside its text grid (`render_grid`, the
//! drawing `retile show` printed before, as the reference in the same
//! run), the thread-value layout of a 128x32 tile, and the bank picture of
//! an in-thread transpose's stores. Run: `cargo bench -p retile-draw --bench draw`.

use std::hint::black_box;

use criterion::Criterion;
use retile_copy::{Banks, TransposeRequest};
use retile_layout::{ComposedLayout, Layout};

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let plain: ComposedLayout = "(128,32,32):(1,128,4096)".parse().expect("a layout");
    let swizzled: ComposedLayout = "Sw<3,4,3> o (128,32,32):(32,1,4096)"
        .parse()
        .expect("a layout");
    let full: ComposedLayout = "(128,128):(128,1)".parse().expect("a layout");
    // 128 threads, 32 values each, over a 128x32 tile (CuTe's TV convention)
    let tv: Layout = "((4,32),(2,4,4)):((256,1),(128,32,1024))"
        .parse()
        .expect("a layout");
    let request = TransposeRequest::new(
        256,
        16,
        128,
        "(256,16):(1,256)".parse().expect("a layout"),
        "(256,16):(16,1)".parse().expect("a layout"),
    );
    let banks = request
        .banks(32, Banks::default())
        .expect("the plan")
        .expect("the transpose applies")
        .stores;
    let sizes = [
        ("layout 128x32x32", retile_draw::layout_svg(&plain)),
        ("swizzled 128x32x32", retile_draw::layout_svg(&swizzled)),
        (
            "layout 128x128 (every cell)",
            retile_draw::layout_svg(&full),
        ),
        (
            "tv 128 threads x 32 values",
            retile_draw::tv_svg(&tv, 128, 32),
        ),
        ("banks 256x16 stores", retile_draw::banks_svg(&banks)),
    ];
    for (name, svg) in &sizes {
        let svg = svg.as_ref().expect("drawn");
        println!("{name}: {} bytes", svg.len());
    }
    c.bench_function("layout 128x32x32", |b| {
        b.iter(|| retile_draw::layout_svg(black_box(&plain)))
    });
    c.bench_function("swizzled 128x32x32", |b| {
        b.iter(|| retile_draw::layout_svg(black_box(&swizzled)))
    });
    c.bench_function("layout 128x128 (every cell)", |b| {
        b.iter(|| retile_draw::layout_svg(black_box(&full)))
    });
    let full_plain: Layout = "(128,128):(128,1)".parse().expect("a layout");
    c.bench_function("text grid 128x128 (render_grid)", |b| {
        b.iter(|| retile_layout::render_grid(black_box(&full_plain)))
    });
    c.bench_function("tv 128 threads x 32 values", |b| {
        b.iter(|| retile_draw::tv_svg(black_box(&tv), 128, 32))
    });
    c.bench_function("banks 256x16 stores", |b| {
        b.iter(|| retile_draw::banks_svg(black_box(&banks)))
    });
    c.final_summary();
}
