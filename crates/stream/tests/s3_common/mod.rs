//! What the S3 tests share: a local S3 server (moto) on 127.0.0.1, a
//! fault-injecting proxy in front of it (`tests/s3_fault_proxy.py`), the
//! settings that reach them, and readers of what they hold.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as Key;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt};
use retile_stream::*;
use zarrs::array::Array;
use zarrs_object_store::AsyncObjectStore;

pub const BUCKET: &str = "retile-test";

/// A moto S3 server (`tests/moto_server.py`) on 127.0.0.1, stopped when
/// dropped (and when this process ends: it exits when its standard input
/// closes).
pub struct Moto {
    child: Child,
    pub port: u16,
}

impl Moto {
    /// Starts a server with `bucket` made; `auth`: it checks signatures and
    /// knows no key, so that every request is refused for its credentials
    /// (and no bucket is made). The server binds a port the system chooses
    /// and says which, so parallel tests never share one.
    pub fn start(auth: bool, bucket: &str) -> Result<Moto, String> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/moto_server.py");
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let log = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
        let mut command = Command::new(&python);
        command
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log.reopen().map_err(|e| e.to_string())?);
        if auth {
            command.env("INITIAL_NO_AUTH_ACTION_COUNT", "0");
        } else {
            command.args(["--bucket", bucket]);
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run {python}: {e}"))?;
        let stdout = child.stdout.take().expect("its stdout");
        let (tx, first) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let port = match first.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => line
                .trim()
                .strip_prefix("port ")
                .and_then(|p| p.parse().ok()),
            Err(_) => None,
        };
        // dropped on the way out, the server is stopped (killed and reaped)
        let mut moto = Moto { child, port: 0 };
        let Some(port) = port else {
            drop(moto);
            let said = std::fs::read_to_string(log.path()).unwrap_or_default();
            let tail: Vec<&str> = said.lines().rev().take(3).collect();
            return Err(format!(
                "moto_server did not start within 60 s: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            ));
        };
        moto.port = port;
        Ok(moto)
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A client of this server, as a reader would make one.
    pub fn client(&self) -> AmazonS3 {
        AmazonS3Builder::new()
            .with_endpoint(self.endpoint())
            .with_allow_http(true)
            .with_bucket_name(BUCKET)
            .with_region("us-east-1")
            .with_access_key_id("testing")
            .with_secret_access_key("testing")
            .build()
            .expect("a client")
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn raw_request(port: u16, method: &str, target: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("the server");
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .expect("a request");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("an answer");
    answer
}

/// The server with a bucket, or `None` (and why, on stderr) where moto
/// cannot be started; with `RETILE_REQUIRE_S3=1` that is a failure.
pub fn moto(auth: bool) -> Option<Moto> {
    match Moto::start(auth, BUCKET) {
        Ok(m) => Some(m),
        Err(why) => {
            let required = std::env::var("RETILE_REQUIRE_S3").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "RETILE_REQUIRE_S3=1 but the S3 server did not start: {why}"
            );
            eprintln!("S3 tests did not run: {why} (install the server with python3 -m pip install \"moto[server]\")");
            None
        }
    }
}

/// Settings for `endpoint`, retrying briefly.
pub fn s3(endpoint: &str) -> S3Options {
    S3Options {
        allow_http: true,
        retry_timeout: Duration::from_secs(10),
        backoff: Duration::from_millis(20),
        config: [
            ("aws_endpoint", endpoint),
            ("aws_region", "us-east-1"),
            ("aws_access_key_id", "testing"),
            ("aws_secret_access_key", "testing"),
            // no instance metadata service: a closed port of this machine
            ("aws_metadata_endpoint", "http://127.0.0.1:9"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        traffic: Some(Arc::new(S3Traffic::default())),
        ..Default::default()
    }
}

pub fn values(n: u64) -> Vec<u16> {
    (0..n).map(|i| (i * 7 + i / 13 + 1) as u16).collect()
}

pub fn to_bytes(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The key of `name` under `prefix` (either may be empty), byte for byte.
pub fn key(prefix: &str, name: &str) -> Key {
    let full: Vec<&str> = [prefix, name]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect();
    Key::parse(full.join("/")).expect("a key S3 can hold")
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(f)
}

/// Every object under `prefix`: its key below the prefix, size and etag.
pub fn objects(client: &AmazonS3, prefix: &str) -> Vec<(String, u64, String)> {
    let prefix = key(prefix, "");
    let listed: Vec<_> =
        block_on(client.list(Some(&prefix)).try_collect::<Vec<_>>()).expect("a listing");
    let mut out: Vec<_> = listed
        .into_iter()
        .map(|m| {
            let key = m.location.as_ref()[prefix.as_ref().len()..]
                .trim_start_matches('/')
                .to_owned();
            (key, m.size, m.e_tag.unwrap_or_default())
        })
        .collect();
    out.sort();
    out
}

/// Reads the array stored under `prefix` with zarrs, straight from the
/// server through `zarrs_object_store`.
pub fn read_back(client: &AmazonS3, prefix: &str) -> (Vec<u64>, Vec<u16>) {
    let under = PrefixStore::new(client.clone(), key(prefix, ""));
    let store = Arc::new(AsyncObjectStore::new(under));
    block_on(async {
        let array = Array::async_open(store, "/").await.expect("the array");
        let read: Vec<u16> = array
            .async_retrieve_array_subset(&array.subset_all())
            .await
            .expect("the array's elements");
        (array.shape().to_vec(), read)
    })
}

/// Asserts that `read` is `data`, saying how many elements differ and the
/// first of them rather than printing both.
pub fn assert_same(read: &[u16], data: &[u16], what: &str) {
    assert_eq!(read.len(), data.len(), "{what}: lengths differ");
    let wrong: Vec<usize> = (0..read.len()).filter(|&i| read[i] != data[i]).collect();
    assert!(
        wrong.is_empty(),
        "{what}: {} of {} elements differ, the first at {} ({} read, {} written)",
        wrong.len(),
        read.len(),
        wrong[0],
        read[wrong[0]],
        data[wrong[0]]
    );
}

/// The array's first extent as its `zarr.json` claims it.
pub fn claimed_planes(client: &AmazonS3, prefix: &str) -> Option<u64> {
    let bytes =
        block_on(async { client.get(&key(prefix, "zarr.json")).await?.bytes().await }).ok()?;
    let meta: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    meta["shape"][0].as_u64()
}

/// Streams `planes` planes of `shape`/`tile` u16 into `options`, in pieces of `piece` bytes.
pub fn stream(
    shape: Vec<u64>,
    planes: u64,
    tile: Vec<u64>,
    options: ZarrOptions,
    piece: usize,
) -> Result<(Summary, Vec<u16>), StreamError> {
    let mut dims = shape.clone();
    dims[0] = planes;
    let data = values(dims.iter().product());
    let spec = StreamSpec::new(DType::U16, shape, tile)?;
    let mut s = TileStream::new(
        spec,
        &0u16.to_le_bytes(),
        2,
        Box::new(ZarrSink::new(options)),
    )?;
    for p in to_bytes(&data).chunks(piece) {
        s.append(p)?;
    }
    Ok((s.finish()?, data))
}

pub fn options(url: &str, s3: S3Options) -> ZarrOptions {
    ZarrOptions {
        path: url.into(),
        s3,
        ..Default::default()
    }
}

/// The fault-injecting proxy `tests/s3_fault_proxy.py` on 127.0.0.1 in
/// front of the server at `target`, stopped when dropped (it also exits
/// when its standard input closes, after 10 minutes, or 50000 requests).
pub struct FaultProxy {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<String>,
    pub port: u16,
}

impl FaultProxy {
    /// Starts the proxy; hung requests are held `hold` seconds at most.
    pub fn start(target: u16, hold: u32) -> FaultProxy {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/s3_fault_proxy.py");
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let mut child = Command::new(python)
            .args([
                script,
                "--target",
                &target.to_string(),
                "--hold",
                &hold.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the fault proxy starts");
        let stdin = child.stdin.take().expect("its stdin");
        let stdout = child.stdout.take().expect("its stdout");
        let (tx, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut proxy = FaultProxy {
            child,
            stdin,
            answers,
            port: 0,
        };
        let first = proxy.answer();
        proxy.port = first
            .strip_prefix("port ")
            .and_then(|p| p.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the fault proxy said {first:?}"));
        proxy
    }

    fn answer(&self) -> String {
        match self.answers.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("the fault proxy did not answer in 30 s"),
            Err(RecvTimeoutError::Disconnected) => panic!("the fault proxy exited"),
        }
    }

    /// Sends a command (`pass`, `503`, `500`, `drop`, `lose`, `hang`,
    /// `random P SEED`, `only TEXT`) and waits for it to take effect.
    pub fn set(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").expect("the fault proxy takes commands");
        let answer = self.answer();
        assert_eq!(answer, "ok", "the fault proxy refused {command:?}");
    }

    /// How many requests met each action so far (`pass`, `503`, ...).
    pub fn stats(&mut self) -> std::collections::BTreeMap<String, u64> {
        writeln!(self.stdin, "stats").expect("the fault proxy takes commands");
        let answer = self.answer();
        answer
            .strip_prefix("stats")
            .unwrap_or_else(|| panic!("the fault proxy said {answer:?}"))
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.parse().unwrap_or(0)))
            .collect()
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A small deterministic random source for fault schedules (xorshift),
/// seeded from `RETILE_FAULT_SEED` where set, so that a failure can be
/// replayed; the seed is printed.
pub struct Dice(u64);

impl Dice {
    pub fn new(default_seed: u64) -> Dice {
        let seed = std::env::var("RETILE_FAULT_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default_seed);
        eprintln!("fault schedule seed {seed} (RETILE_FAULT_SEED={seed} replays it)");
        Dice(seed.max(1))
    }

    /// The seed it started from.
    pub fn seed(&self) -> u64 {
        self.0
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A duration drawn evenly from `from..to`.
    pub fn between(&mut self, from: Duration, to: Duration) -> Duration {
        let span = to.saturating_sub(from).as_millis().max(1) as u64;
        from + Duration::from_millis(self.next() % span)
    }
}
