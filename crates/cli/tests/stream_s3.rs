//! `retile stream --output` given what a user types: endpoints that are
//! not URLs, URL schemes retile does not write, `file://` URLs, an empty
//! path; and an S3 stream whose server fails or hangs, interrupted or
//! not, through the fault proxy `tests/s3_fault_proxy.py` (with a moto
//! server it starts, both on 127.0.0.1). Each bad value is one line naming
//! it, never a panic; nothing is made where a path is refused; a stream
//! stops within about a second of its retry budget.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

fn retile() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_retile"));
    // the S3 settings come from what each test sets, not from this machine
    command.env_clear().stdin(Stdio::null());
    command
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The arguments of a small stream into `output`.
fn small(output: &str) -> Vec<String> {
    [
        "stream", "--shape", "0,8,8", "--planes", "4", "--tile", "2,8,8", "--output", output,
    ]
    .map(String::from)
    .to_vec()
}

/// Fails unless `out` failed with one line (no panic) holding every `text`.
fn one_line_naming(out: &Output, texts: &[&str], what: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{what}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    for text in texts {
        assert!(err.contains(text), "{what}: {err} (expected {text:?})");
    }
}

fn is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn a_bad_endpoint_is_one_line_naming_the_variable_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    for (value, why) in [
        ("localhost:9000", "http://"),
        ("", "empty"),
        ("http://127.0.0.1:9000 ", "U+0020"),
        ("http://127.0.0.1:99999", "65535"),
        ("https://", "host"),
        ("http://exämple.org", "URL"),
    ] {
        for variable in ["AWS_ENDPOINT_URL", "AWS_ENDPOINT"] {
            let out = retile()
                .current_dir(dir.path())
                .args(small("s3://retile-cli/x.zarr"))
                .env(variable, value)
                .env("AWS_ACCESS_KEY_ID", "testing")
                .env("AWS_SECRET_ACCESS_KEY", "testing")
                .env("AWS_ALLOW_HTTP", "true")
                .output()
                .unwrap();
            one_line_naming(&out, &[variable, why], &format!("{variable}={value:?}"));
        }
    }
    // without an endpoint, the region names AWS's host
    let out = retile()
        .current_dir(dir.path())
        .args(small("s3://retile-cli/x.zarr"))
        .env("AWS_REGION", "us east 1")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .output()
        .unwrap();
    one_line_naming(&out, &["AWS_REGION"], "AWS_REGION with spaces");
    assert!(is_empty(dir.path()));
}

#[test]
fn other_url_schemes_are_refused_naming_the_scheme_and_nothing_is_made() {
    let dir = tempfile::tempdir().unwrap();
    for (url, scheme) in [
        ("S3://b/run.zarr", "scheme S3:"),
        ("s3a://b/run.zarr", "scheme s3a:"),
        ("s3n://b/run.zarr", "scheme s3n:"),
        ("gs://b/run.zarr", "scheme gs:"),
        ("gcs://b/run.zarr", "scheme gcs:"),
        ("az://container/run.zarr", "scheme az:"),
        (
            "abfss://c@acct.dfs.core.windows.net/run.zarr",
            "scheme abfss:",
        ),
        ("http://example.org/run.zarr", "scheme http:"),
        ("https://example.org/run.zarr", "scheme https:"),
        ("FILE:///tmp/run.zarr", "scheme FILE:"),
        ("memory://run.zarr", "scheme memory:"),
        ("s3:/b/run.zarr", "s3://BUCKET/PREFIX"),
        ("s3:b/run.zarr", "s3://BUCKET/PREFIX"),
        (" s3://b/run.zarr", "a space comes before the scheme s3:"),
    ] {
        let out = retile()
            .current_dir(dir.path())
            .args(small(url))
            .output()
            .unwrap();
        one_line_naming(&out, &[scheme], url);
        assert!(
            is_empty(dir.path()),
            "{url} made {:?}",
            std::fs::read_dir(dir.path()).unwrap().collect::<Vec<_>>()
        );
    }
    // file: URLs that do not name an absolute local path
    for url in [
        "file://otherhost/tmp/run.zarr",
        "file:relative.zarr",
        "file:///tmp/a?b.zarr",
        "file:///tmp/bad%zz",
    ] {
        let out = retile()
            .current_dir(dir.path())
            .args(small(url))
            .output()
            .unwrap();
        one_line_naming(&out, &["file"], url);
        assert!(is_empty(dir.path()), "{url}");
    }
}

#[test]
fn an_empty_output_is_refused_and_nothing_is_written_here() {
    let dir = tempfile::tempdir().unwrap();
    let out = retile()
        .current_dir(dir.path())
        .args(small(""))
        .output()
        .unwrap();
    // the command line refuses an empty value before the store sees it
    let err = stderr(&out);
    assert!(!out.status.success() && !err.contains("panicked"), "{err}");
    assert!(err.contains("--output"), "{err}");
    assert!(is_empty(dir.path()));
}

#[test]
fn a_file_url_names_the_local_directory_it_spells() {
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let base = dir.path().to_str().unwrap();
    for (url, name) in [
        (format!("file://{base}/a%20b%3F.zarr"), "a b?.zarr"),
        (format!("file://localhost{base}/plain.zarr"), "plain.zarr"),
    ] {
        let out = retile()
            .current_dir(work.path())
            .args(small(&url))
            .output()
            .unwrap();
        assert!(out.status.success(), "{url}: {}", stderr(&out));
        let meta: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.path().join(name).join("zarr.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(meta["shape"], serde_json::json!([4, 8, 8]), "{url}");
        assert!(
            is_empty(work.path()),
            "{url} wrote into the working directory"
        );
    }
}

/// The fault proxy with a moto server behind it (`--moto BUCKET`), stopped
/// when dropped; `None` (and why) where moto cannot start, a failure with
/// `RETILE_REQUIRE_S3=1`.
struct Proxy {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<String>,
    port: u16,
}

impl Proxy {
    fn start(bucket: &str) -> Option<Proxy> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/s3_fault_proxy.py");
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let mut child = Command::new(python)
            .args([
                script,
                "--moto",
                bucket,
                "--hold",
                "60",
                "--lifetime",
                "300",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let stdin = child.stdin.take().unwrap();
        let (tx, answers) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let first = answers
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_default();
        let Some(port) = first
            .strip_prefix("port ")
            .and_then(|p| p.split_whitespace().next())
            .and_then(|p| p.parse().ok())
        else {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            let why = format!(
                "the fault proxy with moto did not start: {first} {}",
                stderr(&out)
            );
            let required = std::env::var("RETILE_REQUIRE_S3").is_ok_and(|v| v == "1");
            assert!(!required, "RETILE_REQUIRE_S3=1 but {why}");
            eprintln!("S3 tests did not run: {why}");
            return None;
        };
        Some(Proxy {
            child,
            stdin,
            answers,
            port,
        })
    }

    fn set(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").unwrap();
        let answer = self.answers.recv_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(answer, "ok", "{command}");
    }

    /// `retile` with the settings that reach the server through the proxy.
    fn retile(&self) -> Command {
        let mut command = retile();
        command
            .env(
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", self.port),
            )
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_REGION", "us-east-1");
        command
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits for `child` at most `limit` (then kills it); its output and how
/// long it took from `since`.
fn wait_at_most(child: Child, limit: Duration, since: Instant) -> (Output, Duration) {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => (out.unwrap(), since.elapsed()),
        Err(_) => {
            // SAFETY: signals our own child, still running (its wait has not returned).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("retile was still running {limit:?} after the fault; killed");
        }
    }
}

/// How SIGINT comes while the server fails: not at all, once (the planes
/// taken are still retried for the budget), or twice (the retries stop).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Interrupt {
    None,
    Once,
    Twice,
}

/// Streams 512 x 1024 u16 planes (1 MiB, 8 chunks each) from a pipe
/// through the proxy with a retry budget of 3 s; after 16 planes (two of
/// the pieces `retile` reads) the server starts failing with `fault` for
/// good while the input goes on, and `interrupt` sends SIGINT 300 ms
/// later (and again 700 ms after that). `retile` must end, failing with one
/// line naming the store: after retrying for `budget` and within about a
/// second more, or, interrupted twice, within about a second of the
/// second SIGINT.
fn ends_within_the_budget(fault: &str, interrupt: Interrupt, budget: u64) {
    let Some(mut proxy) = Proxy::start("retile-cli") else {
        return;
    };
    let url = format!("s3://retile-cli/{fault}-{interrupt:?}.zarr");
    let mut child = proxy
        .retile()
        .args([
            "stream",
            "--shape",
            "0,512,1024",
            "--tile",
            "1,256,256",
            "--dtype",
            "u16",
        ])
        .args([
            "--input",
            "-",
            "--allow-http",
            "--retry-seconds",
            &budget.to_string(),
            "--output",
            &url,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let plane = vec![7u8; 512 * 1024 * 2];
    for _ in 0..16 {
        input.write_all(&plane).unwrap();
    }
    std::thread::sleep(Duration::from_millis(1500));
    proxy.set(fault);
    let failing = Instant::now();
    let feeder = std::thread::spawn(move || {
        // the input goes on until retile stops reading (or 20 s)
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(20) {
            if input.write_all(&plane).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let interrupts = match interrupt {
        Interrupt::None => 0,
        Interrupt::Once => 1,
        Interrupt::Twice => 2,
    };
    for pause in [300, 700].into_iter().take(interrupts) {
        std::thread::sleep(Duration::from_millis(pause));
        // SAFETY: signals our own child, running.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    }
    let limit = Duration::from_secs(budget + 12);
    let (out, took) = wait_at_most(child, limit, failing);
    let _ = feeder.join();
    let err = stderr(&out);
    eprintln!("retile ended {took:?} after the fault; it said: {err}");
    assert!(!out.status.success(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(&url), "{err}");
    let (least, most) = match interrupt {
        // the second SIGINT comes 1 s after the fault
        Interrupt::Twice => (Duration::ZERO, Duration::from_millis(1000 + 2500)),
        _ => (
            Duration::from_millis(budget * 1000 - 500),
            Duration::from_millis(budget * 1000 + 2500),
        ),
    };
    assert!(
        took >= least,
        "{fault} (SIGINT: {interrupt:?}): retile gave up {took:?} after the server failed, within its retry budget of {budget} s"
    );
    assert!(
        took <= most,
        "{fault} (SIGINT: {interrupt:?}): retile took {took:?} to end after the server failed (retry budget {budget} s), more than {most:?}"
    );
}

#[test]
fn a_server_that_keeps_throttling_ends_the_stream_within_a_second_of_the_budget() {
    ends_within_the_budget("503", Interrupt::None, 3);
}

#[test]
fn a_server_that_hangs_ends_the_stream_within_a_second_of_the_budget() {
    ends_within_the_budget("hang", Interrupt::None, 3);
}

#[test]
fn an_interrupt_while_the_server_hangs_ends_the_stream_within_a_second_of_the_budget() {
    ends_within_the_budget("hang", Interrupt::Once, 3);
}

#[test]
fn an_interrupt_while_the_server_drops_connections_ends_the_stream_within_a_second_of_the_budget() {
    ends_within_the_budget("drop", Interrupt::Once, 3);
}

#[test]
fn a_second_interrupt_while_the_server_hangs_stops_the_retries_within_a_second_or_two() {
    ends_within_the_budget("hang", Interrupt::Twice, 30);
}

#[test]
fn a_second_interrupt_while_the_server_throttles_stops_the_retries_within_a_second_or_two() {
    ends_within_the_budget("503", Interrupt::Twice, 30);
}
