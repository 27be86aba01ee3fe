//! The manual's examples are true: every `$ retile ...` line of a `console`
//! block in README.md and docs/*.md is run, and prints exactly the lines
//! shown under it (an example shown without output must succeed; one whose
//! output has an `error:` line must fail).

use std::path::{Path, PathBuf};
use std::process::Command;

/// One example: where it is, the command's arguments and what it prints.
struct Example {
    place: String,
    args: Vec<String>,
    expected: Vec<String>,
}

/// The repository's root (this crate is `crates/cli`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and every page of docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root().join("README.md"));
    pages
}

/// The words of a shell command line: single and double quotes group,
/// a backslash escapes the next character, an unquoted `#` starting a word
/// begins a comment.
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&q| q != c));
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The examples of one page's `console` blocks.
fn examples(page: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(page).unwrap();
    let name = page.file_name().unwrap().to_string_lossy().into_owned();
    let mut examples: Vec<Example> = Vec::new();
    let mut in_console = false;
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line.starts_with("```") {
            in_console = line.trim() == "```console";
            continue;
        }
        if !in_console {
            continue;
        }
        let Some(command) = line.strip_prefix("$ ") else {
            if let Some(example) = examples.last_mut() {
                example.expected.push(line.to_string());
            }
            continue;
        };
        let mut command = command.to_string();
        while command.ends_with('\\') {
            command.pop();
            command.push_str(lines.next().map_or("", |(_, l)| l));
        }
        let words = shell_words(&command);
        assert_eq!(
            words.first().map(String::as_str),
            Some("retile"),
            "{name}:{}: a console example runs retile",
            n + 1
        );
        examples.push(Example {
            place: format!("{name}:{}", n + 1),
            args: words[1..].to_vec(),
            expected: Vec::new(),
        });
    }
    examples
}

/// What is wrong with running `example`, if anything.
fn check(example: &Example) -> Option<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_retile"))
        .args(&example.args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let printed: Vec<&str> = stdout.lines().map(str::trim_end).collect();
    let expected: Vec<&str> = example.expected.iter().map(|l| l.trim_end()).collect();
    let fails = expected.iter().any(|l| l.starts_with("error:"));
    if out.status.success() == fails {
        return Some(format!(
            "{}: retile {:?} exited with {} (expected {}): {}",
            example.place,
            example.args,
            out.status,
            if fails { "failure" } else { "success" },
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    (!expected.is_empty() && printed != expected).then(|| {
        format!(
            "{}: retile {:?} printed\n{}\nbut the page shows\n{}",
            example.place,
            example.args,
            printed.join("\n"),
            expected.join("\n")
        )
    })
}

#[test]
fn every_console_example_prints_what_the_page_shows() {
    let examples: Vec<Example> = pages().iter().flat_map(|p| examples(p)).collect();
    assert!(
        examples.len() >= 40,
        "only {} examples found",
        examples.len()
    );
    let wrong: Vec<String> = examples.iter().filter_map(check).collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn shell_words_follow_the_shell() {
    assert_eq!(
        shell_words(r#"retile eval 'a b' "c'd" e\ f   # a comment 'x'"#),
        ["retile", "eval", "a b", "c'd", "e f"]
    );
    assert_eq!(
        shell_words("retile show 'x#y' #"),
        ["retile", "show", "x#y"]
    );
}
