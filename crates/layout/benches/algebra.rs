//! The algebra beside pycute on the same operations: criterion measures
//! retile, `bench/pycute_algebra.py` measures pycute in the same run, and
//! the ratio is printed. Run: `cargo bench -p retile-layout --bench algebra`.

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

use criterion::Criterion;
use retile_layout::*;

type Op = Box<dyn Fn() -> Result<Layout>>;

fn l(text: &str) -> Layout {
    text.parse().expect("benchmark layouts parse")
}

fn t(text: &str) -> Tiler {
    text.parse().expect("benchmark tilers parse")
}

fn cases() -> Vec<(&'static str, Op)> {
    let (a1, a2, b2) = (l("(2,(1,6)):(1,(6,2))"), l("(6,2):(8,2)"), l("(4,3):(3,1)"));
    let (a3, a4, t4) = (l("(2,2):(1,4)"), l("(4,2,3):(2,1,8)"), t("4:2"));
    let (a5, t5) = (l("(9,(4,8)):(59,(13,1))"), t("<3:3,(2,4):(1,8)>"));
    let (a6, t6) = (l("(2,2):(1,2)"), t("(2,2):(1,2)"));
    let (a7, a8) = (l("(4,2):(2,1)"), l("(4,2):(1,5)"));
    let (a9, b9) = (l("(2,5):(5,1)"), l("(3,4):(1,3)"));
    let (a10, b10) = (a9.clone(), b9.clone());
    let a11 = l("(2,4):(1,8)");
    vec![
        ("coalesce", Box::new(move || coalesce(black_box(&a1)))),
        (
            "composition",
            Box::new(move || composition(black_box(&a2), black_box(&b2))),
        ),
        (
            "complement",
            Box::new(move || complement(black_box(&a3), &IntTuple::Int(24))),
        ),
        (
            "logical_divide",
            Box::new(move || logical_divide(black_box(&a4), black_box(&t4))),
        ),
        (
            "zipped_divide",
            Box::new(move || zipped_divide(black_box(&a5), black_box(&t5))),
        ),
        (
            "logical_product",
            Box::new(move || logical_product(black_box(&a6), black_box(&t6))),
        ),
        (
            "right_inverse",
            Box::new(move || right_inverse(black_box(&a7))),
        ),
        (
            "left_inverse",
            Box::new(move || left_inverse(black_box(&a8))),
        ),
        (
            "left_inverse_tiled",
            Box::new(move || left_inverse(black_box(&a11))),
        ),
        (
            "blocked_product",
            Box::new(move || blocked_product(black_box(&a9), black_box(&b9))),
        ),
        (
            "raked_product",
            Box::new(move || raked_product(black_box(&a10), black_box(&b10))),
        ),
    ]
}

/// Criterion's mean estimate for a benchmark, in ns.
fn criterion_mean(target: &Path, name: &str) -> Option<f64> {
    let text = std::fs::read_to_string(
        target
            .join("criterion/algebra")
            .join(name)
            .join("new/estimates.json"),
    )
    .ok()?;
    let key = "\"mean\":{\"confidence_interval\":";
    let after = &text[text.find(key)?..];
    let point = &after[after.find("\"point_estimate\":")? + 17..];
    point[..point.find(',')?].parse().ok()
}

/// pycute's ns per op for each case, measured now.
fn pycute_figures(root: &Path) -> Option<Vec<(String, f64)>> {
    let out = Command::new("python3")
        .arg(root.join("bench/pycute_algebra.py"))
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "pycute not measured: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(
        text.trim()
            .trim_matches(|c| c == '{' || c == '}')
            .split(", ")
            .filter_map(|kv| {
                let (k, v) = kv.split_once(": ")?;
                Some((k.trim_matches('"').to_string(), v.parse().ok()?))
            })
            .collect(),
    )
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("algebra");
    for (name, op) in cases() {
        group.bench_function(name, |b| {
            b.iter(|| op().expect("benchmark cases are valid"))
        });
    }
    group.finish();
    c.final_summary();

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or(root.join("target"), Into::into);
    let Some(peer) = pycute_figures(&root) else {
        eprintln!("install pycute (pip install nvidia-cutlass) to see the ratio");
        return;
    };
    println!(
        "\n{:<16} {:>12} {:>12} {:>10}",
        "operation", "retile ns", "pycute ns", "speed-up"
    );
    for (name, _) in cases() {
        let ours = criterion_mean(&target, name);
        let theirs = peer.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        if let (Some(ours), Some(theirs)) = (ours, theirs) {
            println!(
                "{name:<16} {ours:>12.1} {theirs:>12.1} {:>9.0}x",
                theirs / ours
            );
        }
    }
}
