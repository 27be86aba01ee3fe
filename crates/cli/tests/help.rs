//! `retile stream --help` reads like a manual: its options are grouped under
//! headings, each heading opens with an example, and the example uses the
//! options listed under it.

use std::process::Command;

/// The headings of `retile stream --help`, in the order they appear.
const HEADINGS: [&str; 5] = [
    "Input",
    "Store and S3",
    "Chunks and codecs",
    "OME-Zarr",
    "Performance",
];

/// One heading of a help text: its line and the options listed under it.
struct Section {
    heading: String,
    options: Vec<String>,
}

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_retile"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The sections of a help text: a heading is an unindented line ending in
/// ':'; an option is an indented line whose first word starts with '-'.
fn sections(help: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            sections.push(Section {
                heading: line.trim_end_matches(':').to_string(),
                options: Vec::new(),
            });
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(section) = sections.last_mut() else {
            continue;
        };
        if line.starts_with("  ") && words.first().is_some_and(|w| w.starts_with('-')) {
            // "-h, --help" and "--shape <SHAPE>": the long name
            let long = words.iter().find(|w| w.starts_with("--")).unwrap();
            section.options.push(long.trim_end_matches(',').to_string());
        }
    }
    sections
}

/// The options an example names (`--shape 0,2048,2048 --dtype u16` names
/// `--shape` and `--dtype`).
fn named_options(example: &str) -> Vec<String> {
    example
        .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
        .filter(|w| w.starts_with("--"))
        .map(str::to_string)
        .collect()
}

#[test]
fn stream_help_groups_every_option_under_a_heading_that_opens_with_an_example() {
    let text = help(&["stream", "--help"]);
    let sections = sections(&text);
    // `Options:` holds clap's own --help and nothing else: every option of
    // the command is under a heading of its own
    let plain = sections.iter().find(|s| s.heading == "Options").unwrap();
    assert_eq!(plain.options, ["--help"], "{text}");
    let grouped: Vec<&Section> = sections.iter().filter(|s| s.heading != "Options").collect();
    assert_eq!(grouped.len(), HEADINGS.len(), "{text}");
    for (section, name) in grouped.iter().zip(HEADINGS) {
        let example = section
            .heading
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(" (e.g. "))
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{:?} is not \"{name} (e.g. ...)\"", section.heading));
        let named = named_options(example);
        assert!(!named.is_empty(), "{:?} names no option", section.heading);
        for option in named {
            assert!(
                section.options.contains(&option),
                "the example of {:?} uses {option}, which is not listed under it: {:?}",
                section.heading,
                section.options
            );
        }
    }
}

#[test]
fn plan_stream_help_keeps_its_options_together() {
    let text = help(&["plan", "stream", "--help"]);
    let sections = sections(&text);
    let names: Vec<&str> = sections.iter().map(|s| s.heading.as_str()).collect();
    assert_eq!(names, ["Options"], "{text}");
    let options = &sections[0].options;
    for option in [
        "--shape",
        "--tile",
        "--dtype",
        "--json",
        "--pyramid",
        "--levels",
    ] {
        assert!(options.contains(&option.to_string()), "{option}: {text}");
    }
}
