//! Drawings from the command line: `retile show --svg`, `--output`,
//! `--tile`, `retile banks`, and `retile plan copy --svg` with its bank
//! summary; run as a user runs them.

use std::process::Command;

fn retile() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retile"))
}

fn run(args: &[&str]) -> (bool, String, String) {
    let out = retile().args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn show_svg_draws_layouts_swizzles_and_thread_value_layouts() {
    let (ok, svg, err) = run(&["show", "--svg", "Sw<3,3,3> o (8,64):(64,1)"]);
    assert!(ok, "{err}");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(
        svg.contains(r#"data-row="1" data-col="0" data-offset="72""#),
        "{svg}"
    );
    assert_eq!(svg.matches("data-offset=").count(), 512);
    let (ok, svg, _) = run(&[
        "show",
        "--svg",
        "--tile",
        "16,8",
        "((4,8),(2,2)):((32,1),(16,8))",
    ]);
    assert!(ok);
    assert!(svg.contains(r#"data-row="8" data-col="2" data-thread="1" data-value="2""#));
    let (ok, svg, _) = run(&["show", "--svg", "local(2, 1).spatial(8, 4).local(1, 2)"]);
    assert!(ok && svg.contains("data-thread="));
    // the same drawing twice is the same bytes
    assert_eq!(
        run(&["show", "--svg", "(128,32,32)"]).1,
        run(&["show", "--svg", "(128,32,32)"]).1
    );
}

#[test]
fn show_writes_its_drawing_to_a_file_as_svg_or_text() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("l.svg");
    let (ok, out, err) = run(&["show", "(2,3):(3,1)", "--output", svg.to_str().unwrap()]);
    assert!(ok && out.is_empty(), "{err}");
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let txt = dir.path().join("l.txt");
    let (ok, _, _) = run(&["show", "(2,3):(3,1)", "--output", txt.to_str().unwrap()]);
    assert!(ok);
    assert!(std::fs::read_to_string(&txt)
        .unwrap()
        .contains(" 1  | 3 | 4 | 5 |"));
    let (ok, _, err) = run(&["show", "(2,3):(3,1)", "--output", "/nonexistent/dir/l.svg"]);
    assert!(
        !ok && err.contains("cannot write /nonexistent/dir/l.svg"),
        "{err}"
    );
}

#[test]
fn show_refuses_what_it_cannot_draw_with_a_reason() {
    for (args, says) in [
        (vec!["show", "--tile", "4,4", "(4,4):(1,4)"], "SVG only"),
        (
            vec!["show", "--svg", "--tile", "2,2", "(4,4):(1,4)"],
            "outside the 2x2 tile",
        ),
        (
            vec!["show", "--svg", "--tile", "0,2", "(4,4):(1,4)"],
            "positive",
        ),
        (
            vec!["show", "--svg", "device_layout([3, 70], float32)"],
            "text only",
        ),
        (vec!["show", "--svg", "Sw<3,4,2> o 8:1"], "|S| >= B"),
    ] {
        let (ok, _, err) = run(&args);
        assert!(!ok && err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn banks_reports_the_conflicts_and_the_swizzle_that_removes_them() {
    let (ok, text, err) = run(&[
        "banks",
        "(32,32):(32,1)",
        "--threads",
        "(32,32):(1,32)",
        "--element-bytes",
        "4",
    ]);
    assert!(ok, "{err}");
    assert!(
        text.contains(
            "32 instructions, 1024 wavefronts for 32 ideal (992 conflicts, up to 32-way)"
        ),
        "{text}"
    );
    assert!(text.contains("suggested swizzle: Sw<5,0,5>"), "{text}");
    assert!(
        text.contains("32 instructions, 32 wavefronts for 32 ideal (0 conflicts, up to 1-way)"),
        "{text}"
    );
    let (ok, svg, _) = run(&[
        "banks",
        "(32,32):(32,1)",
        "--threads",
        "32",
        "--element-bytes",
        "4",
        "--svg",
    ]);
    assert!(ok && svg.contains("data-bank="));
    let (ok, _, err) = run(&[
        "banks",
        "(8,8):(8,1)",
        "--threads",
        "8",
        "--element-bytes",
        "4",
        "--vector-bytes",
        "8",
    ]);
    assert!(!ok && err.contains("not contiguous"), "{err}");
}

#[test]
fn plan_copy_states_the_bank_conflicts_before_and_after_and_draws_the_plan() {
    let args = [
        "plan",
        "copy",
        "--src",
        "(256,16):(1,256)",
        "--dst",
        "(256,16):(16,1)",
    ];
    let (ok, text, err) = run(&args);
    assert!(ok, "{err}");
    assert!(
        text.contains("stores to the destination: 16 instructions"),
        "{text}"
    );
    assert!(text.contains("; with Sw<"), "{text}");
    let (ok, svg, _) = run(&[&args[..], &["--svg"]].concat());
    assert!(ok && svg.contains(r#"data-side="load""#) && svg.contains(r#"data-side="store""#));
}

#[test]
fn plan_stream_svg_draws_a_frame_its_shards_epochs_and_pyramid_levels() {
    let (ok, svg, err) = run(&[
        "plan",
        "stream",
        "--shape",
        "0,2048,2048",
        "--tile",
        "64,256,256",
        "--shard",
        "1,4,4",
        "--pyramid",
        "mean",
        "--svg",
    ]);
    assert!(ok, "{err}");
    assert_eq!(
        svg.matches("data-retire=").count(),
        64,
        "an 8x8 frame of tiles"
    );
    assert!(
        svg.contains(r#"data-row="7" data-col="7" data-slot="63" data-retire="63" data-shard="3""#)
    );
    assert!(svg.contains("data-epoch=\"5\""), "six epochs drawn");
    assert!(
        svg.contains(r#"data-level="3""#),
        "four levels: 2048, 1024, 512, 256"
    );
    let (ok, _, err) = run(&[
        "plan", "stream", "--shape", "0,64", "--tile", "8,8", "--shard", "1,2",
    ]);
    assert!(!ok && err.contains("add --svg"), "{err}");
    let (ok, _, err) = run(&[
        "plan", "stream", "--shape", "0,64,64", "--tile", "8,8,8", "--shard", "1,2", "--svg",
    ]);
    assert!(!ok && err.contains("3 of them"), "{err}");
}
