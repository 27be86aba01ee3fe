//! The calculator commands under hostile input (issue 20): `eval --batch`
//! answers every line exactly once whatever the line holds, and output that
//! cannot be written is an error, not a panic.

use std::fs::OpenOptions;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn retile() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retile"))
}

fn batch(input: &[u8]) -> Output {
    let mut child = retile()
        .args(["eval", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // written from a thread, so that a full stdout pipe cannot deadlock us
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    out
}

#[test]
fn batch_answers_each_line_once_whatever_the_line_holds() {
    let mut input = Vec::new();
    let chain = |first: &str, link: &str, n: usize| format!("{first}{}\n", link.repeat(n));
    input.extend(b"size(4:1)\n");
    input.extend(chain("1", "*1", 10_000).as_bytes());
    input.extend(chain("spatial(1)", ".local(1)", 10_000).as_bytes());
    input.extend(chain("spatial(1)", "/spatial(1)", 10_000).as_bytes());
    input.extend(format!("{}1{}\n", "(".repeat(100_000), ")".repeat(100_000)).as_bytes());
    input.extend(b"ab\xff\xfecd\n");
    input.extend(b"size(\x00)\x1b[31m\n");
    input.extend(vec![b'1'; 3 << 20]);
    input.push(b'\n');
    input.extend(b"reduce(spatial(3, 4), [0], keepdims=1)\n");
    input.extend(b"rank(4:1)\r\n");
    input.extend(b"size(2:1)"); // no newline at the end
    let out = batch(&input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 11, "{:?}", &text[..text.len().min(2000)]);
    assert_eq!(lines[0], "4");
    assert!(
        lines[1].starts_with("error: at column 2: '*' is not defined"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("RegisterLayout(shape=[1]"),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].starts_with("RegisterLayout(shape=[1]"),
        "{}",
        lines[3]
    );
    assert!(lines[4].contains("deeper than 64 levels"), "{}", lines[4]);
    assert!(
        lines[5].starts_with("error: the line is not UTF-8"),
        "{}",
        lines[5]
    );
    assert!(lines[6].contains("U+0000"), "{}", lines[6]);
    assert!(
        lines[7].contains("more than the limit of 1048576 bytes"),
        "{}",
        lines[7]
    );
    assert!(lines[8].contains("True or False"), "{}", lines[8]);
    assert_eq!(lines[9], "1");
    assert_eq!(lines[10], "2");
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "control characters in the output"
    );
}

#[test]
fn a_line_of_many_megabytes_is_skipped_without_reading_it_into_memory() {
    // 64 MiB: kept whole, with the parser's ~150 bytes per byte, this would
    // take gigabytes
    let mut input = vec![b'('; 64 << 20];
    input.extend(b"\nsize(4:1)\n");
    let out = batch(&input);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("67108864 bytes long"), "{}", lines[0]);
    assert_eq!(lines[1], "4");
}

/// `/dev/full`, where every write fails with "no space left".
fn full() -> Option<std::fs::File> {
    OpenOptions::new().write(true).open("/dev/full").ok()
}

#[test]
fn output_that_cannot_be_written_is_a_one_line_error() {
    let commands: [&[&str]; 4] = [
        &["show", "(2,(2,2)):(4,(1,2))"],
        &["show", "local(3, 4).spatial(2, 3)"],
        &[
            "plan",
            "copy",
            "--src",
            "(256,16):(1,256)",
            "--dst",
            "(256,16):(16,1)",
        ],
        &["eval", "size(4:1)"],
    ];
    for args in commands {
        let Some(file) = full() else { return };
        let out = retile().args(args).stdout(file).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("retile: cannot write the output"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn plan_copy_refuses_an_unknown_target_and_names_the_valid_ones() {
    let copy = |target: &str| {
        retile()
            .args([
                "plan",
                "copy",
                "--src",
                "(256,16):(1,256)",
                "--dst",
                "(256,16):(16,1)",
            ])
            .args(["--target", target])
            .output()
            .unwrap()
    };
    let out = copy("garbage");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("unknown target 'garbage'") && stderr.contains("gfx942"),
        "{stderr}"
    );
    let out = copy("gfx950");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("applies=false"));
    let out = copy("gfx942");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("applies=true"));
}

#[test]
fn errors_about_arguments_never_echo_control_characters() {
    let out = retile()
        .args([
            "plan",
            "copy",
            "--src",
            "(256,\u{1b}[2J16)",
            "--dst",
            "(256,16):(16,1)",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    let out = retile().args(["show", "size(\u{7}4:1)"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        !stderr.contains('\u{7}') && stderr.contains("U+0007"),
        "{stderr:?}"
    );
}
