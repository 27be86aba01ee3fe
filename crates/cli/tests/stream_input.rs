//! `retile stream`'s input and its signals as a user meets them: a slow
//! producer on a pipe, a file cut short while it is streamed, a dropped
//! connection to object storage, Ctrl-C in the middle of a plane. Whatever
//! happens, every plane the store claims holds the input's bytes, the
//! planes taken are kept, and the process ends with a message and the
//! documented status, never a signal.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zarrs::array::Array;
use zarrs::filesystem::FilesystemStore;

mod common;
use common::claimed;

fn retile() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retile"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `n` u16 elements of a stream, element `i` holding `i` truncated.
fn pattern(start: u64, n: u64) -> Vec<u8> {
    (start..start + n)
        .flat_map(|i| (i as u16).to_le_bytes())
        .collect()
}

/// `n` bytes of a xorshift sequence from `seed`.
fn noise(mut seed: u64, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        out.extend_from_slice(&seed.to_le_bytes());
    }
    out.truncate(n);
    out
}

/// Every byte the u16 store at `path` holds, read back by zarrs.
fn stored(path: &Path) -> Vec<u8> {
    let store = Arc::new(FilesystemStore::new(path).unwrap());
    let array = Array::open(store, "/").unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let values: Vec<u16> = array.retrieve_array_subset(&array.subset_all()).unwrap();
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Waits (at most a minute) until `done()`.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what} within a minute"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: sends a signal to our own child, which has not been waited for.
    unsafe { libc::kill(child.id() as i32, sig) };
}

#[test]
fn a_slow_producer_s_planes_are_claimed_as_they_arrive_and_survive_sigkill() {
    // 200 frames of 64x64 u16 over 2 s: 1.6 MB in all, far less than any read-ahead
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slow.zarr");
    let mut child = retile()
        .args([
            "stream", "--shape", "0,64,64", "--tile", "4,64,64", "--dtype", "u16",
        ])
        .args(["--input", "-", "--output", path.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let producer = std::thread::spawn(move || {
        for frame in 0..200u64 {
            if stdin.write_all(&pattern(frame * 4096, 4096)).is_err() {
                return frame; // killed
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        200
    });
    let started = Instant::now();
    let mut seen = 0;
    while started.elapsed() < Duration::from_millis(1500) {
        seen = seen.max(claimed(&path));
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let sent = producer.join().unwrap();
    assert!(
        sent < 200,
        "the producer ended before the kill; the test proves nothing"
    );
    assert!(
        seen >= 40,
        "a live reader saw {seen} planes claimed after 1.5 s of a producer sending 100 planes a second"
    );
    let kept = claimed(&path);
    assert!(
        kept >= seen,
        "{seen} planes were claimed, {kept} kept after SIGKILL"
    );
    assert_eq!(
        stored(&path),
        pattern(0, kept * 4096),
        "the {kept} planes kept"
    );
}

#[test]
fn an_input_file_cut_short_while_it_is_streamed_is_an_error_keeping_every_plane_read() {
    // a slow sink (gzip:9 on noise, one writer) keeps the input being read
    // when the file is cut to a third, mid-plane
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.raw");
    let plane = 64 * 64 * 2;
    let data = noise(0x9E3779B97F4A7C15, 96 << 20);
    std::fs::write(&input, &data).unwrap();
    let path = dir.path().join("cut.zarr");
    let child = retile()
        .args([
            "stream", "--shape", "0,64,64", "--tile", "4,64,64", "--dtype", "u16",
        ])
        .args(["--codec", "gzip:9", "--writers", "1"])
        .args([
            "--input",
            input.to_str().unwrap(),
            "--output",
            path.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("a plane claimed", || claimed(&path) > 0);
    let seen = claimed(&path);
    let cut = data.len() / 3 + plane / 2;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&input)
        .unwrap()
        .set_len(cut as u64)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.signal(), None, "killed by a signal: {err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("truncated") && err.contains("were written"),
        "{err}"
    );
    let kept = claimed(&path);
    assert!(
        kept >= seen,
        "{seen} planes were claimed before the cut, {kept} after"
    );
    assert!(kept as usize * plane <= data.len(), "{kept} planes claimed");
    assert_eq!(
        stored(&path),
        data[..kept as usize * plane],
        "the {kept} planes kept"
    );
}

#[test]
fn stdin_that_is_a_file_is_streamed_from_where_it_stands() {
    // `retile stream --input - < file` after someone read a plane of it
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.raw");
    let planes = 1100; // 9 MB: more than one read buffer
    std::fs::write(&input, pattern(0, planes * 4096)).unwrap();
    let mut file = std::fs::File::open(&input).unwrap();
    file.read_exact(&mut [0u8; 8192]).unwrap();
    let path = dir.path().join("stdin.zarr");
    let out = retile()
        .args([
            "stream", "--shape", "0,64,64", "--tile", "8,32,64", "--dtype", "u16",
        ])
        .args(["--input", "-", "--output", path.to_str().unwrap()])
        .stdin(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(claimed(&path), planes - 1);
    assert_eq!(stored(&path), pattern(4096, (planes - 1) * 4096));
}

#[test]
fn an_interrupt_in_the_middle_of_a_plane_exits_130_with_every_complete_plane_written() {
    let dir = tempfile::tempdir().unwrap();
    let plane = 256u64;
    // (shape, elements sent, signal, planes kept, what stderr says of the rest)
    let cases = [
        (
            "0,16,16",
            10 * plane + plane / 2,
            libc::SIGINT,
            10,
            "incomplete plane",
        ),
        (
            "0,16,16",
            10 * plane + 3,
            libc::SIGTERM,
            10,
            "incomplete plane",
        ),
        (
            "20,16,16",
            10 * plane,
            libc::SIGTERM,
            10,
            "of the shape's 20 planes",
        ),
        (
            "20,16,16",
            10 * plane + 7,
            libc::SIGINT,
            10,
            "incomplete plane",
        ),
        ("0,16,16", 12 * plane, libc::SIGINT, 12, "closed"),
    ];
    for (k, (shape, elements, sig, planes, says)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("i{k}.zarr"));
        let mut child = retile()
            .args([
                "stream", "--shape", shape, "--tile", "4,16,16", "--dtype", "u16",
            ])
            .args([
                "--shard",
                "2,1,1",
                "--input",
                "-",
                "--output",
                path.to_str().unwrap(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&pattern(0, elements)).unwrap();
        stdin.flush().unwrap();
        // the first shard row (8 planes) is claimed once the input was taken
        wait_until("8 planes claimed", || claimed(&path) >= 8);
        std::thread::sleep(Duration::from_millis(100));
        signal(&child, sig);
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(130), "case {k}: {err}");
        assert!(
            err.contains("interrupted") && err.contains(says),
            "case {k}: {err}"
        );
        assert_eq!(claimed(&path), planes, "case {k}");
        assert_eq!(stored(&path), pattern(0, planes * plane), "case {k}");
    }
}

/// A server speaking just enough S3 for a stream (an empty listing, PUTs
/// answered 200) that drops every request whose body is larger than 1 MiB
/// the way a failing load balancer does: the response side closed at once,
/// the connection reset once the body keeps coming.
struct DroppingS3 {
    port: u16,
}

impl DroppingS3 {
    fn start() -> DroppingS3 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                std::thread::spawn(move || serve(client));
            }
        });
        DroppingS3 { port }
    }
}

/// Answers the requests of one connection until it drops one.
fn serve(mut client: TcpStream) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(30)));
    loop {
        let Some((head, length)) = read_head(&mut client) else {
            return;
        };
        if length > 1 << 20 {
            let _ = client.shutdown(Shutdown::Write);
            std::thread::sleep(Duration::from_millis(50));
            return; // closed with the body unread: a reset
        }
        let mut body = vec![0u8; length];
        if client.read_exact(&mut body).is_err() {
            return;
        }
        let answer = match head.starts_with("GET") {
            true => "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>",
            false => "",
        };
        let reply = format!(
            "HTTP/1.1 200 OK\r\nETag: \"e\"\r\nContent-Length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if client.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// A request's head (request line and headers) and its Content-Length.
fn read_head(client: &mut TcpStream) -> Option<(String, usize)> {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    Some((head, length))
}

#[test]
fn a_dropped_object_storage_connection_is_an_error_with_a_message_not_sigpipe() {
    let server = DroppingS3::start();
    let out = retile()
        .args([
            "stream",
            "--shape",
            "0,2048,2048",
            "--tile",
            "1,2048,2048",
            "--dtype",
            "u16",
        ])
        .args(["--planes", "2", "--output", "s3://b/p.zarr", "--allow-http"])
        .args(["--retry-seconds", "1"])
        .env(
            "AWS_ENDPOINT_URL",
            format!("http://127.0.0.1:{}", server.port),
        )
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.signal(), None, "killed by a signal: {err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("p.zarr/c/") && err.contains("PUT"), "{err}");
}
