//! The `retile` binary's calculator commands, run as a user runs them.

use std::io::Write;
use std::process::{Command, Stdio};

fn retile() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retile"))
}

#[test]
fn batch_writes_one_line_per_input_line_and_exits_zero() {
    let mut child = retile()
        .args(["eval", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input = "coalesce((2,(1,6)):(1,(6,2)))\n\ncomposition((4,3):(1,5), 6:1)\nidx2crd(9, (2,4))\nsize((2,3)\n";
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert_eq!(lines[0], "12:1");
    assert!(lines[1].starts_with("error: "));
    assert!(lines[2].starts_with("error: ") && lines[2].contains("Shape Divisibility"));
    assert_eq!(lines[3], "(1,4)");
    assert!(lines[4].starts_with("error: at column 11"), "{}", lines[4]);
}

#[test]
fn eval_prints_each_result_and_fails_on_an_error() {
    let out = retile()
        .args(["eval", "complement(4:2, 24)", "rank((2,3):(1,2))"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "(2,3):(1,8)\n2\n");
    let out = retile()
        .args(["eval", "complement((2,2):(1,1), 8)"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn show_draws_a_grid_and_folds_higher_ranks() {
    let out = retile().args(["show", "(2,3):(3,1)"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(" 1  | 3 | 4 | 5 |"), "{text}");
    let out = retile().args(["show", "(2,2,2):(1,2,4)"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("rank 3 drawn as rank 2"), "{text}");
    let out = retile().args(["show", "(2,2:(1,2)"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr).unwrap().contains('^'));
}
