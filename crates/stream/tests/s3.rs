//! Zarr stores streamed into S3-compatible object storage: a real server
//! (moto, `python3 -m pip install "moto[server]"`) started on 127.0.0.1 by
//! each test, and every byte read back with `zarrs` from what the server
//! holds (through `zarrs_object_store`). Without the server the tests say so and return, unless
//! `RETILE_REQUIRE_S3=1` (CI), where that is a failure.

mod s3_common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use object_store::path::Path as Key;
use object_store::ObjectStoreExt;
use retile_stream::*;
use s3_common::*;

#[test]
fn unsharded_zstd_stream_grows_and_reads_back_identically() {
    let Some(moto) = moto(false) else { return };
    let opts = ZarrOptions {
        codec: Codec::Zstd(3),
        dimension_names: Some(vec!["t".into(), "y".into(), "x".into()]),
        ..options(&format!("s3://{BUCKET}/a/b.zarr"), s3(&moto.endpoint()))
    };
    let (summary, data) = stream(vec![0, 16, 20], 7, vec![3, 8, 8], opts, 1001).unwrap();
    let client = moto.client();
    let (shape, read) = read_back(&client, "a/b.zarr");
    assert_eq!(shape, vec![7, 16, 20]);
    assert_same(&read, &data, "read back");
    // 3 rows of 2 x 3 chunks, each one PUT, and the metadata
    let keys: Vec<String> = objects(&client, "a/b.zarr")
        .into_iter()
        .map(|o| o.0)
        .collect();
    assert_eq!(keys.len(), 3 * 6 + 1, "{keys:?}");
    assert!(keys.contains(&"c/2/1/2".to_string()), "{keys:?}");
    assert_eq!(summary.sink.files, 18);
    assert!(summary.sink.requests >= 18 + 4, "{:?}", summary.sink);
    assert!(
        summary.sink.uploaded_bytes > summary.sink.stored_bytes,
        "{:?}",
        summary.sink
    );
}

#[test]
fn sharded_blosc_stream_of_deep_shards_reads_back_identically() {
    let Some(moto) = moto(false) else { return };
    let opts = ZarrOptions {
        codec: "blosc-zstd:1".parse().unwrap(),
        shard: Some(vec![3, 2, 2]),
        ..options(&format!("s3://{BUCKET}/deep"), s3(&moto.endpoint()))
    };
    // 11 planes: 6 epochs of 2, shards 3 epochs deep, the last row cut short
    let (summary, data) = stream(vec![0, 33, 40], 11, vec![2, 8, 8], opts, 777).unwrap();
    let client = moto.client();
    let (shape, read) = read_back(&client, "deep");
    assert_eq!(shape, vec![11, 33, 40]);
    assert_same(&read, &data, "read back");
    // 2 rows of 3 x 3 shards
    assert_eq!(summary.sink.files, 18);
}

#[test]
fn bounded_gzip_stream_at_the_bucket_root_reads_back_identically() {
    let Some(moto) = moto(false) else { return };
    let opts = ZarrOptions {
        codec: "gzip:1".parse().unwrap(),
        shard: Some(vec![1, 2, 1]),
        ..options(&format!("s3://{BUCKET}"), s3(&moto.endpoint()))
    };
    let (_, data) = stream(vec![5, 9, 14], 5, vec![2, 4, 3], opts, 50).unwrap();
    let (shape, read) = read_back(&moto.client(), "");
    assert_eq!(shape, vec![5, 9, 14]);
    assert_same(&read, &data, "read back");
}

#[test]
fn shards_of_several_parts_go_up_as_multipart_uploads() {
    let Some(moto) = moto(false) else { return };
    // 1 MiB tiles, shards of 3 x 2 x 2 tiles: 12 MiB, uploaded in 8 MiB parts
    // as their three epochs land
    let opts = ZarrOptions {
        shard: Some(vec![3, 2, 2]),
        ..options(&format!("s3://{BUCKET}/big"), s3(&moto.endpoint()))
    };
    let (summary, data) = stream(
        vec![0, 512, 512],
        8 * 3 * 2 + 5,
        vec![8, 256, 256],
        opts,
        1 << 20,
    )
    .unwrap();
    let client = moto.client();
    let listed = objects(&client, "big");
    let big: Vec<_> = listed
        .iter()
        .filter(|(_, size, _)| *size > PART_BYTES as u64)
        .collect();
    assert_eq!(big.len(), 2, "{listed:?}");
    // S3 names a multipart object's etag after its parts: "<md5>-2"
    assert!(
        big.iter()
            .all(|(_, _, etag)| etag.trim_matches('"').ends_with("-2")),
        "{big:?}"
    );
    let (shape, read) = read_back(&client, "big");
    assert_eq!(shape, vec![53, 512, 512]);
    assert_same(&read, &data, "read back");
    assert!(summary.sink.uploaded_bytes >= summary.sink.stored_bytes);
}

#[test]
fn a_dropped_stream_aborts_its_multipart_uploads() {
    let Some(moto) = moto(false) else { return };
    let opts = ZarrOptions {
        shard: Some(vec![16, 1, 1]),
        ..options(&format!("s3://{BUCKET}/dropped"), s3(&moto.endpoint()))
    };
    let spec = StreamSpec::new(DType::U16, vec![0, 512, 512], vec![8, 256, 256]).unwrap();
    let mut s = TileStream::new(spec, &[0, 0], 2, Box::new(ZarrSink::new(opts))).unwrap();
    let uploads = || {
        raw_request(moto.port, "GET", &format!("/{BUCKET}?uploads"))
            .matches("<UploadId>")
            .count()
    };
    // ten epochs of 1 MiB into each of 4 shards 16 epochs deep: every shard
    // has a part up, none is complete
    let data = to_bytes(&values(80 * 512 * 512));
    for p in data.chunks(1 << 20) {
        s.append(p).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while uploads() < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(uploads(), 4, "the shards' multipart uploads should be open");
    drop(s);
    let deadline = Instant::now() + Duration::from_secs(20);
    while uploads() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        uploads(),
        0,
        "a dropped stream left multipart uploads behind"
    );
    assert_eq!(claimed_planes(&moto.client(), "dropped"), Some(0));
}

#[test]
fn an_existing_store_is_refused_and_replaced_whole_with_overwrite() {
    let Some(moto) = moto(false) else { return };
    let url = format!("s3://{BUCKET}/again");
    stream(
        vec![0, 16, 16],
        9,
        vec![2, 8, 8],
        options(&url, s3(&moto.endpoint())),
        512,
    )
    .unwrap();
    let err = stream(
        vec![0, 16, 16],
        2,
        vec![2, 8, 8],
        options(&url, s3(&moto.endpoint())),
        512,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("already holds objects") && err.contains(&url),
        "{err}"
    );
    let opts = ZarrOptions {
        overwrite: true,
        ..options(&url, s3(&moto.endpoint()))
    };
    let (_, data) = stream(vec![0, 16, 16], 2, vec![2, 8, 8], opts, 512).unwrap();
    let client = moto.client();
    let keys: Vec<String> = objects(&client, "again").into_iter().map(|o| o.0).collect();
    assert_eq!(keys.len(), 4 + 1, "old chunks left behind: {keys:?}");
    let (shape, read) = read_back(&client, "again");
    assert_eq!(shape, vec![2, 16, 16]);
    assert_same(&read, &data, "read back");
    // what is not a Zarr store is never deleted
    block_on(client.put(&Key::from("notzarr/x"), vec![1u8].into())).unwrap();
    let opts = ZarrOptions {
        overwrite: true,
        ..options(&format!("s3://{BUCKET}/notzarr"), s3(&moto.endpoint()))
    };
    let err = stream(vec![0, 16, 16], 2, vec![2, 8, 8], opts, 512)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a Zarr store"), "{err}");
}

/// A stream of 16x16 u16 planes into `options`, begun (the store is
/// locked) and not finished.
fn begun(options: ZarrOptions) -> Result<TileStream, StreamError> {
    let spec = StreamSpec::new(DType::U16, vec![0, 16, 16], vec![2, 8, 8])?;
    TileStream::new(
        spec,
        &0u16.to_le_bytes(),
        2,
        Box::new(ZarrSink::new(options)),
    )
}

#[test]
fn one_stream_owns_a_store_and_others_are_refused_naming_it() {
    let Some(moto) = moto(false) else { return };
    let url = format!("s3://{BUCKET}/owned");
    let client = moto.client();
    let mut first = begun(options(&url, s3(&moto.endpoint()))).unwrap();
    first.append(&to_bytes(&values(4 * 256))).unwrap();
    let owner = format!("process {}", std::process::id());
    for overwrite in [false, true] {
        let opts = ZarrOptions {
            overwrite,
            ..options(&url, s3(&moto.endpoint()))
        };
        let err = begun(opts)
            .err()
            .expect("a second writer was let in")
            .to_string();
        assert!(
            err.contains("is being written by another stream") && err.contains(&owner),
            "{err}"
        );
    }
    first.finish().unwrap();
    drop(first);
    // the lock is gone with its stream, and the first store is whole
    let keys: Vec<String> = objects(&client, "owned").into_iter().map(|o| o.0).collect();
    assert!(
        !keys.iter().any(|k| k.ends_with(".retile.lock")),
        "{keys:?}"
    );
    let (shape, read) = read_back(&client, "owned");
    assert_eq!(shape, vec![4, 16, 16]);
    assert_same(&read, &values(4 * 256), "the owner's store");
    // a live lock of another host is refused; a stale one is taken over
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for (refreshed, live) in [(now, true), (now - 3600, false)] {
        let text = format!(
            "pid 4242\nhost elsewhere\nstarted 2026-01-01T00:00:00Z\nrefreshed {refreshed}\n"
        );
        block_on(client.put(&Key::from("held/.retile.lock"), text.into_bytes().into())).unwrap();
        let opened = begun(options(
            &format!("s3://{BUCKET}/held"),
            s3(&moto.endpoint()),
        ));
        match live {
            true => {
                let err = opened.err().expect("a live lock was ignored").to_string();
                assert!(err.contains("process 4242 on host elsewhere"), "{err}");
            }
            false => {
                let mut s = opened.unwrap();
                s.append(&to_bytes(&values(2 * 256))).unwrap();
                s.finish().unwrap();
            }
        }
    }
    let (shape, _) = read_back(&client, "held");
    assert_eq!(shape, vec![2, 16, 16]);
}

#[test]
fn a_pyramid_goes_up_as_an_ome_zarr_image() {
    let Some(moto) = moto(false) else { return };
    let spec = StreamSpec::new(DType::U16, vec![0, 64, 64], vec![4, 16, 16]).unwrap();
    let output = Output {
        zarr: Some(ZarrOptions {
            shard: Some(vec![1, 2, 2]),
            ..options(
                &format!("s3://{BUCKET}/image.ome.zarr"),
                s3(&moto.endpoint()),
            )
        }),
        pyramid: Some(PyramidOptions::default()),
        ngff: None,
    };
    let mut s = open_output(spec, &[0, 0], Backend::Cpu { threads: 1 }, &output).unwrap();
    let data = values(8 * 64 * 64);
    s.append(&to_bytes(&data)).unwrap();
    let summary = s.finish().unwrap();
    assert_eq!(summary.levels.len(), 3);
    assert!(summary.sink.requests > 0);
    // the live counters, shared by the levels, count what every level's
    // sink did, and the group's metadata besides
    let traffic = output
        .zarr
        .as_ref()
        .and_then(|z| z.s3.traffic.clone())
        .unwrap();
    assert_eq!(traffic.requests(), summary.sink.requests + 2);
    assert!(traffic.uploaded_bytes() > summary.sink.uploaded_bytes);
    let client = moto.client();
    let keys: Vec<String> = objects(&client, "image.ome.zarr")
        .into_iter()
        .map(|o| o.0)
        .collect();
    for k in ["zarr.json", "0/zarr.json", "1/zarr.json", "2/zarr.json"] {
        assert!(keys.contains(&k.to_string()), "{k} missing: {keys:?}");
    }
    let (shape, read) = read_back(&client, "image.ome.zarr/0");
    assert_eq!(shape, vec![8, 64, 64]);
    assert_same(&read, &data, "level 0 read back");
}

/// A lock object of a stream on another host, refreshed `ago` seconds
/// before now (live while under 90 s).
fn foreign_lock(ago: u64) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    format!(
        "pid 4242\nhost elsewhere\nstarted 2026-01-01T00:00:00Z\nrefreshed {}\n",
        now - ago
    )
    .into_bytes()
}

#[test]
fn an_image_is_overwritten_only_without_a_live_level_or_a_foreign_object_and_a_failed_start_leaves_nothing(
) {
    let Some(moto) = moto(false) else { return };
    let client = moto.client();
    let put =
        |key: &str, bytes: Vec<u8>| block_on(client.put(&Key::from(key), bytes.into())).unwrap();
    let delete = |key: &str| block_on(client.delete(&Key::from(key))).unwrap();
    let keys = |prefix: &str| -> Vec<String> {
        objects(&client, prefix).into_iter().map(|o| o.0).collect()
    };
    let image = |name: &str, overwrite: bool| {
        let spec = StreamSpec::new(DType::U16, vec![0, 32, 32], vec![2, 16, 16])?;
        let output = Output {
            zarr: Some(ZarrOptions {
                overwrite,
                ..options(&format!("s3://{BUCKET}/{name}"), s3(&moto.endpoint()))
            }),
            pyramid: Some(PyramidOptions::default()),
            ngff: None,
        };
        let mut s = open_output(spec, &[0, 0], Backend::Cpu { threads: 1 }, &output)?;
        s.append(&to_bytes(&values(4 * 32 * 32)))?;
        s.finish()
    };
    image("img", false).unwrap();
    let stored = keys("img");
    // a live stream writes level 1: overwriting the image is refused, naming it
    put("img/1/.retile.lock", foreign_lock(0));
    let err = image("img", true).unwrap_err().to_string();
    assert!(
        err.contains("is being written by another stream")
            && err.contains("process 4242 on host elsewhere")
            && err.contains("img/1"),
        "{err}"
    );
    let mut expected = stored.clone();
    expected.push("1/.retile.lock".into());
    expected.sort();
    assert_eq!(
        keys("img"),
        expected,
        "an overwrite refused deleted objects"
    );
    // a stale lock is no owner; an object that is not the store's is kept
    put("img/1/.retile.lock", foreign_lock(3600));
    put("img/notes.txt", b"mine".to_vec());
    let err = image("img", true).unwrap_err().to_string();
    assert!(
        err.contains("notes.txt") && err.contains("not part of a Zarr store"),
        "{err}"
    );
    assert!(keys("img").contains(&"zarr.json".to_string()));
    delete("img/notes.txt");
    image("img", true).unwrap();
    let (shape, read) = read_back(&client, "img/0");
    assert_eq!(shape, vec![4, 32, 32]);
    assert_same(&read, &values(4 * 32 * 32), "the image overwritten");
    // a start that fails at level 1 leaves nothing that would refuse its
    // retry: no object of the store (its own locks are deleted as it ends,
    // or, where a slow server cuts that short, taken over as stale)
    put("fresh/1/.retile.lock", foreign_lock(0));
    let err = image("fresh", false).unwrap_err().to_string();
    assert!(err.contains("process 4242 on host elsewhere"), "{err}");
    let left: Vec<String> = keys("fresh")
        .into_iter()
        .filter(|k| !k.ends_with(".retile.lock"))
        .collect();
    assert!(left.is_empty(), "a failed start left {left:?}");
    delete("fresh/1/.retile.lock");
    image("fresh", false).unwrap();
    let (shape, _) = read_back(&client, "fresh/0");
    assert_eq!(shape, vec![4, 32, 32]);
}

/// A TCP relay to the server that can answer 503 `SlowDown` to the first
/// request of `throttle` connections (every other one, from the first),
/// and be cut (as a server that died).
struct Relay {
    port: u16,
    cut: Arc<AtomicBool>,
    refuse_chunks: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
    throttled: Arc<AtomicUsize>,
    completes: Arc<AtomicU8>,
    events: Arc<Mutex<Vec<Event>>>,
}

/// What a relay does to `CompleteMultipartUpload` requests.
const PASS: u8 = 0;
/// Holds each back a while before passing it on.
const DELAY: u8 = 1;
/// Refuses each with a server error.
const REFUSE: u8 = 2;
/// Passes completions on, and holds each chunk, part or shard `PUT` back
/// a while.
const SLOW_CHUNKS: u8 = 3;

/// What a watching relay saw, in order.
#[derive(Debug, Clone, PartialEq)]
enum Event {
    /// A completion of a shard of this row arrived.
    Completing(u64),
    /// The server answered a completion of a shard of this row.
    Completed(u64),
    /// A chunk, part or shard `PUT` arrived.
    Uploading,
    /// The server answered a chunk, part or shard `PUT`.
    Uploaded,
    /// A `zarr.json` claiming this many planes was sent on.
    Claimed(u64),
}

impl Relay {
    fn start(target: u16, throttle: usize) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let refuse_chunks = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let throttled = Arc::new(AtomicUsize::new(0));
        let completes = Arc::new(AtomicU8::new(PASS));
        let events: Arc<Mutex<Vec<Event>>> = Arc::default();
        let (c, o, t, r) = (
            cut.clone(),
            open.clone(),
            throttled.clone(),
            refuse_chunks.clone(),
        );
        let (w, e) = (completes.clone(), events.clone());
        std::thread::spawn(move || {
            for (n, conn) in listener.incoming().enumerate() {
                if c.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = conn else { continue };
                if n < 2 * throttle && n % 2 == 0 {
                    t.fetch_add(1, Ordering::SeqCst);
                    std::thread::spawn(move || slow_down(client));
                    continue;
                }
                if r.load(Ordering::SeqCst) {
                    std::thread::spawn(move || refuse_chunk(client, target));
                    continue;
                }
                let mode = w.load(Ordering::SeqCst);
                if mode != PASS {
                    let events = e.clone();
                    std::thread::spawn(move || watch(client, target, mode, &events));
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let mut open = o.lock().unwrap();
                for s in [&client, &server] {
                    if let Ok(s) = s.try_clone() {
                        open.push(s);
                    }
                }
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Write);
                    });
                }
            }
        });
        Relay {
            port,
            cut,
            refuse_chunks,
            open,
            throttled,
            completes,
            events,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Refuses every chunk or shard from now on (not the metadata).
    fn refuse_chunks(&self) {
        self.refuse_chunks.store(true, Ordering::SeqCst);
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Cuts every connection and refuses new ones.
    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// One request: its head (request line and headers) and body.
fn read_request(client: &mut TcpStream) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let length: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = Vec::new();
    (&*client).take(length).read_to_end(&mut body).ok()?;
    Some((head, body))
}

fn answer_error(client: &mut TcpStream, status: &str, code: &str, message: &str) {
    let body = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{message}</Message></Error>");
    let _ = write!(
        client,
        "HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Reads one request and answers it as a throttled S3 does.
fn slow_down(mut client: TcpStream) {
    if read_request(&mut client).is_some() {
        answer_error(
            &mut client,
            "503 Slow Down",
            "SlowDown",
            "Please reduce your request rate.",
        );
    }
}

/// The request line of `head`.
fn request_line(head: &[u8]) -> String {
    let head = String::from_utf8_lossy(head);
    head.lines().next().unwrap_or_default().to_owned()
}

fn refuse(client: &mut TcpStream) {
    answer_error(
        client,
        "500 Internal Server Error",
        "InternalError",
        "We encountered an internal error. Please try again.",
    );
}

/// Refuses a request for a chunk or shard (`.../c/...`) with a server
/// error, as a failing disk behind the server would; passes anything else on.
fn refuse_chunk(mut client: TcpStream, target: u16) {
    let Some((head, body)) = read_request(&mut client) else {
        return;
    };
    if request_line(&head).contains("/c/") {
        return refuse(&mut client);
    }
    forward(&mut client, target, &head, &body);
}

/// Passes one request on to the server and its answer back; false if the
/// server could not be reached.
fn forward(client: &mut TcpStream, target: u16, head: &[u8], body: &[u8]) -> bool {
    ask(target, head, body).is_some_and(|answer| client.write_all(&answer).is_ok())
}

/// The server's whole answer to one request.
fn ask(target: u16, head: &[u8], body: &[u8]) -> Option<Vec<u8>> {
    let mut server = TcpStream::connect(("127.0.0.1", target)).ok()?;
    // one request a connection: the relay reads no second one
    let at = head.windows(2).position(|w| w == b"\r\n").unwrap_or(0) + 2;
    let mut forwarded = head[..at].to_vec();
    forwarded.extend_from_slice(b"Connection: close\r\n");
    forwarded.extend_from_slice(&head[at..]);
    forwarded.extend_from_slice(body);
    server.write_all(&forwarded).ok()?;
    let mut answer = Vec::new();
    server.read_to_end(&mut answer).ok()?;
    Some(answer)
}

/// The row of the shard a request line names (`PUT /bucket/p/c/ROW/...`).
fn shard_row(line: &str) -> Option<u64> {
    let (_, rest) = line.split_once("/c/")?;
    rest.split(['/', '?', ' ']).next()?.parse().ok()
}

/// Passes one request on, delaying (`DELAY`) or refusing (`REFUSE`) the
/// completions of multipart uploads or delaying chunk uploads
/// (`SLOW_CHUNKS`), and notes each completion and upload arriving and
/// answered and each `zarr.json` sent on, in order.
fn watch(mut client: TcpStream, target: u16, mode: u8, events: &Mutex<Vec<Event>>) {
    let Some((head, body)) = read_request(&mut client) else {
        return;
    };
    let line = request_line(&head);
    let completion = line.starts_with("POST ") && line.contains("uploadId=");
    let upload = line.starts_with("PUT ") && line.contains("/c/");
    if completion && mode == REFUSE {
        return refuse(&mut client);
    }
    if let (true, Some(row)) = (completion, shard_row(&line)) {
        events.lock().unwrap().push(Event::Completing(row));
    }
    if completion && mode == DELAY {
        std::thread::sleep(Duration::from_secs(1));
    }
    if upload {
        events.lock().unwrap().push(Event::Uploading);
    }
    if upload && mode == SLOW_CHUNKS {
        std::thread::sleep(Duration::from_millis(100));
    }
    if line.starts_with("PUT ") && line.contains("/zarr.json") {
        let meta: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let planes = meta["shape"][0].as_u64().unwrap_or(u64::MAX);
        events.lock().unwrap().push(Event::Claimed(planes));
    }
    let Some(answer) = ask(target, &head, &body) else {
        return;
    };
    // noted before the client can see the answer
    if let (true, Some(row)) = (completion, shard_row(&line)) {
        events.lock().unwrap().push(Event::Completed(row));
    }
    if upload {
        events.lock().unwrap().push(Event::Uploaded);
    }
    let _ = client.write_all(&answer);
}

/// The most rows that had completions under way at once in `events`.
fn most_rows_completing(events: &[Event]) -> usize {
    let mut under_way = std::collections::BTreeMap::<u64, usize>::new();
    let mut most = 0;
    for event in events {
        match *event {
            Event::Completing(row) => *under_way.entry(row).or_default() += 1,
            Event::Completed(row) => *under_way.entry(row).or_default() -= 1,
            _ => continue,
        }
        most = most.max(under_way.values().filter(|&&n| n > 0).count());
    }
    most
}

/// The most chunk, part or shard uploads under way at once in `events`.
fn most_uploads_at_once(events: &[Event]) -> usize {
    let (mut now, mut most) = (0usize, 0);
    for event in events {
        match event {
            Event::Uploading => now += 1,
            Event::Uploaded => now = now.saturating_sub(1),
            _ => continue,
        }
        most = most.max(now);
    }
    most
}

#[test]
fn throttled_requests_are_retried() {
    let Some(moto) = moto(false) else { return };
    let relay = Relay::start(moto.port, 3);
    let opts = ZarrOptions {
        shard: Some(vec![2, 1, 2]),
        codec: Codec::Zstd(1),
        ..options(&format!("s3://{BUCKET}/throttled"), s3(&relay.endpoint()))
    };
    let (_, data) = stream(vec![0, 16, 40], 9, vec![2, 8, 8], opts, 640).unwrap();
    assert!(relay.throttled.load(Ordering::SeqCst) > 0);
    let (shape, read) = read_back(&moto.client(), "throttled");
    assert_eq!(shape, vec![9, 16, 40]);
    assert_same(&read, &data, "read back");
}

/// Streams through a relay that `fail`s after 5 rows of shards are up:
/// the stream must fail naming the store, and whatever the metadata then
/// claims must be stored, every byte.
fn fails_mid_stream_claiming_only_what_is_stored(fail: fn(&Relay), name: &str) {
    let Some(moto) = moto(false) else { return };
    let relay = Relay::start(moto.port, 0);
    let mut s3 = s3(&relay.endpoint());
    s3.retry_timeout = Duration::from_secs(2);
    let url = format!("s3://{BUCKET}/{name}");
    let opts = ZarrOptions {
        shard: Some(vec![2, 2, 2]),
        ..options(&url, s3)
    };
    let spec = StreamSpec::new(DType::U16, vec![0, 32, 32], vec![2, 8, 8]).unwrap();
    let mut s = TileStream::new(spec, &[0, 0], 2, Box::new(ZarrSink::new(opts))).unwrap();
    let data = values(400 * 32 * 32);
    let bytes = to_bytes(&data);
    let mut planes = bytes.chunks(32 * 32 * 2);
    let client = moto.client();
    // 5 rows of shards (2 epochs of 2 planes each) go up and are claimed
    for p in planes.by_ref().take(20) {
        s.append(p).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    // every plane appended is stored and claimed: the sink is idle
    while claimed_planes(&client, name).unwrap_or(0) < 20 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = claimed_planes(&client, name).unwrap_or(0);
    assert_eq!(before, 20, "the planes claimed before the failure");
    fail(&relay);
    let mut failed = None;
    for p in planes {
        if let Err(e) = s.append(p) {
            failed = Some(e);
            break;
        }
    }
    let err = match failed {
        Some(e) => e,
        None => s
            .finish()
            .expect_err("the stream went on without its server"),
    }
    .to_string();
    eprintln!("the stream's error: {err}");
    assert!(err.contains(&url), "{err}");
    assert!(!err.contains('\n'), "{err}");
    let claimed = claimed_planes(&client, name).unwrap();
    assert!(claimed >= before && claimed < 400, "{claimed}");
    let (shape, read) = read_back(&client, name);
    assert_eq!(shape, vec![claimed, 32, 32]);
    assert_same(
        &read,
        &data[..(claimed * 32 * 32) as usize],
        "the metadata claims data that is not stored",
    );
}

#[test]
fn a_server_lost_mid_stream_fails_the_stream_and_nothing_unstored_is_claimed() {
    fails_mid_stream_claiming_only_what_is_stored(Relay::cut, "lost");
}

#[test]
fn shards_refused_mid_stream_fail_the_stream_and_the_metadata_claims_only_what_is_stored() {
    fails_mid_stream_claiming_only_what_is_stored(Relay::refuse_chunks, "refused");
}

/// Shards of 12 MiB (two parts each), two a row, rows of 24 planes,
/// retried for `budget` (a request's tries end with it: it must outlast
/// an 8 MiB part through the relay and moto on a loaded machine).
fn multipart_rows(url: &str, relay: &Relay, budget: Duration) -> (ZarrOptions, StreamSpec) {
    let mut s3 = s3(&relay.endpoint());
    s3.retry_timeout = budget;
    let opts = ZarrOptions {
        shard: Some(vec![1, 2, 2]),
        ..options(url, s3)
    };
    let spec = StreamSpec::new(DType::U16, vec![0, 512, 1024], vec![24, 256, 256]).unwrap();
    (opts, spec)
}

#[test]
fn a_row_is_claimed_only_after_every_multipart_upload_of_it_and_above_it_is_complete() {
    let Some(moto) = moto(false) else { return };
    let relay = Relay::start(moto.port, 0);
    // every completion answered a second late: a claim that did not wait
    // for them would reach the server first, and later rows upload meanwhile
    relay.completes.store(DELAY, Ordering::SeqCst);
    let (opts, spec) = multipart_rows(
        &format!("s3://{BUCKET}/ordered"),
        &relay,
        Duration::from_secs(10),
    );
    let mut s = TileStream::new(spec, &[0, 0], 2, Box::new(ZarrSink::new(opts))).unwrap();
    let rows = 8;
    let data = values(rows * 24 * 512 * 1024);
    for p in to_bytes(&data).chunks(1 << 20) {
        s.append(p).unwrap();
    }
    s.finish().unwrap();
    let events = relay.events.lock().unwrap().clone();
    let mut completed = vec![0; rows as usize];
    let mut claims = 0;
    for event in &events {
        match *event {
            Event::Completed(row) => completed[row as usize] += 1,
            Event::Claimed(planes) => {
                claims += 1;
                let rows = planes.div_ceil(24) as usize;
                assert!(
                    completed[..rows].iter().all(|&n| n == 2),
                    "{planes} planes claimed before their shards were complete: {events:?}"
                );
            }
            _ => {}
        }
    }
    assert_eq!(completed, vec![2; rows as usize], "{events:?}");
    assert!(claims > rows, "{events:?}");
    // slow completions do not stall the stream: later rows go up and close
    // meanwhile, as many as the store lets complete at once (and the row
    // being written)
    let most = most_rows_completing(&events);
    assert!(
        (2..=ROWS_COMPLETING + 1).contains(&most),
        "{most} rows completing at once: {events:?}"
    );
    let (shape, read) = read_back(&moto.client(), "ordered");
    assert_eq!(shape, vec![rows * 24, 512, 1024]);
    assert_same(&read, &data, "read back");
}

#[test]
fn uploads_in_flight_are_bounded_by_the_store_not_by_the_writer_threads() {
    let Some(moto) = moto(false) else { return };
    let relay = Relay::start(moto.port, 0);
    // each chunk held 100 ms: uploads pile up to the store's bound
    relay.completes.store(SLOW_CHUNKS, Ordering::SeqCst);
    let url = format!("s3://{BUCKET}/in-flight");
    let writers = 4;
    let opts = ZarrOptions {
        writers: Some(writers),
        ..options(&url, s3(&relay.endpoint()))
    };
    // 64 chunks of 64 KiB a row, 8 rows: single `PUT`s
    let spec = StreamSpec::new(DType::U16, vec![0, 512, 512], vec![8, 64, 64]).unwrap();
    let mut s = TileStream::new(spec, &[0, 0], 2, Box::new(ZarrSink::new(opts))).unwrap();
    let data = values(64 * 512 * 512);
    for p in to_bytes(&data).chunks(1 << 20) {
        s.append(p).unwrap();
    }
    s.finish().unwrap();
    let events = relay.events.lock().unwrap().clone();
    let puts = events.iter().filter(|e| **e == Event::Uploaded).count();
    assert_eq!(puts, 8 * 64);
    let most = most_uploads_at_once(&events);
    assert!(
        most > writers,
        "{most} uploads at once with {writers} writers"
    );
    assert_eq!(most, IN_FLIGHT_PARTS, "the most uploads at once");
    let (shape, read) = read_back(&moto.client(), "in-flight");
    assert_eq!(shape, vec![64, 512, 512]);
    assert_same(&read, &data, "read back");
}

#[test]
fn a_refused_completion_fails_the_stream_while_the_next_row_uploads() {
    let Some(moto) = moto(false) else { return };
    let relay = Relay::start(moto.port, 0);
    relay.completes.store(REFUSE, Ordering::SeqCst);
    let url = format!("s3://{BUCKET}/uncompleted");
    // refused completions fail once retried for 3 s, well before the end
    let (opts, spec) = multipart_rows(&url, &relay, Duration::from_secs(3));
    let mut s = TileStream::new(spec, &[0, 0], 2, Box::new(ZarrSink::new(opts))).unwrap();
    // ten rows: the refused completions must stop the stream before its
    // end, not only at `finish` (whichever row's completion gives up first
    // is named: rows upload at once, and their retries' pauses are random)
    let data = to_bytes(&values(10 * 24 * 512 * 1024));
    let failed = data.chunks(1 << 20).find_map(|p| s.append(p).err());
    let err = failed
        .expect("a refused completion went unreported while the next rows uploaded")
        .to_string();
    eprintln!("the stream's error: {err}");
    assert!(err.contains(&url), "{err}");
    assert!(
        err.contains("completing the multipart upload of uncompleted/c/"),
        "{err}"
    );
    assert!(err.contains("InternalError"), "{err}");
    assert!(!err.contains('\n'), "{err}");
    drop(s);
    let client = moto.client();
    assert_eq!(claimed_planes(&client, "uncompleted"), Some(0));
    // the keys of the multipart uploads still open
    let uploads = || {
        let listing = raw_request(moto.port, "GET", &format!("/{BUCKET}?uploads"));
        let keys = listing.split("<Key>").skip(1);
        keys.filter_map(|k| Some(k.split_once("</Key>")?.0.to_owned()))
            .collect::<Vec<_>>()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !uploads().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = uploads();
    assert!(
        left.is_empty(),
        "a failed stream left multipart uploads behind: {left:?}"
    );
}

#[test]
fn bad_credentials_are_one_clear_line() {
    let Some(moto) = moto(true) else { return };
    let mut s3 = s3(&moto.endpoint());
    s3.config.retain(|(k, _)| k != "aws_access_key_id");
    s3.config
        .push(("aws_access_key_id".into(), "AKIANOTAKEY".into()));
    let err = stream(
        vec![0, 8, 8],
        2,
        vec![2, 8, 8],
        options(&format!("s3://{BUCKET}/x"), s3),
        64,
    )
    .unwrap_err()
    .to_string();
    eprintln!("the stream's error: {err}");
    assert!(
        err.contains("refused the credentials") && err.contains("AWS_ACCESS_KEY_ID"),
        "{err}"
    );
    assert!(
        err.contains("InvalidAccessKeyId") || err.contains("403"),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn plain_http_and_missing_credentials_are_refused_before_anything_is_sent() {
    let mut plain = s3("http://127.0.0.1:9");
    plain.allow_http = false;
    let err = stream(
        vec![0, 8, 8],
        2,
        vec![2, 8, 8],
        options("s3://b/p", plain),
        64,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("allow_http") && err.contains("AWS_ALLOW_HTTP"),
        "{err}"
    );
    let mut anonymous = s3("http://127.0.0.1:9");
    anonymous.config.retain(|(k, _)| !k.contains("key"));
    let err = stream(
        vec![0, 8, 8],
        2,
        vec![2, 8, 8],
        options("s3://b/p", anonymous),
        64,
    )
    .unwrap_err()
    .to_string();
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        assert!(err.contains("no credentials"), "{err}");
    }
    let err = stream(
        vec![0, 8, 8],
        2,
        vec![2, 8, 8],
        options("s3:///p", s3("http://127.0.0.1:9")),
        64,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("s3://BUCKET/PREFIX"), "{err}");
}

#[test]
fn deep_shards_that_would_hold_too_many_parts_in_memory_are_refused_before_anything_is_sent() {
    // 512 x 512 shards a row, 64 epochs deep, each holding up to 128 KiB
    // between epochs: 32 GiB
    let spec = StreamSpec::new(DType::U8, vec![0, 16384, 16384], vec![2, 32, 32]).unwrap();
    let opts = ZarrOptions {
        shard: Some(vec![64, 1, 1]),
        ..options("s3://b/p", s3("http://127.0.0.1:9"))
    };
    let err = TileStream::new(spec, &[0], 1, Box::new(ZarrSink::new(opts)))
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("unfinished upload parts in memory"), "{err}");
}

#[test]
fn a_chunk_of_exactly_one_part_is_one_put() {
    let Some(moto) = moto(false) else { return };
    // 2 x 1024 x 2048 u16 tiles: 8 MiB, one part
    let opts = options(&format!("s3://{BUCKET}/onepart"), s3(&moto.endpoint()));
    let (summary, data) =
        stream(vec![0, 1024, 2048], 4, vec![2, 1024, 2048], opts, 1 << 20).unwrap();
    let client = moto.client();
    let listed = objects(&client, "onepart");
    let chunks: Vec<_> = listed
        .iter()
        .filter(|(k, _, _)| k.starts_with("c/"))
        .collect();
    assert_eq!(chunks.len(), 2, "{listed:?}");
    assert!(
        chunks
            .iter()
            .all(|(_, size, etag)| *size == PART_BYTES as u64 && !etag.contains('-')),
        "{chunks:?}"
    );
    // a listing, the chunks and the metadata: begun, after each epoch, finished
    assert_eq!(summary.sink.requests, 1 + 2 + 4, "{:?}", summary.sink);
    let (shape, read) = read_back(&client, "onepart");
    assert_eq!(shape, vec![4, 1024, 2048]);
    assert_same(&read, &data, "read back");
    // a shard of 8 MiB of chunks and its index: one PUT too
    let opts = ZarrOptions {
        shard: Some(vec![1, 2, 1]),
        ..options(&format!("s3://{BUCKET}/onepartshard"), s3(&moto.endpoint()))
    };
    let (_, data) = stream(vec![0, 1024, 2048], 2, vec![2, 512, 2048], opts, 1 << 20).unwrap();
    let listed = objects(&client, "onepartshard");
    assert!(
        listed.iter().any(|(k, size, etag)| k == "c/0/0/0"
            && *size == PART_BYTES as u64 + 36
            && !etag.contains('-')),
        "{listed:?}"
    );
    let (_, read) = read_back(&client, "onepartshard");
    assert_same(&read, &data, "read back");
}

/// An EC2 instance metadata service on 127.0.0.1 that hands out the role
/// credentials `testing`/`testing` (IMDSv2: a token, the role's name, its
/// credentials), serving at most 64 requests; counts the credentials
/// fetched.
struct MetadataService {
    port: u16,
    fetched: Arc<AtomicUsize>,
}

impl MetadataService {
    fn start() -> MetadataService {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let fetched = Arc::new(AtomicUsize::new(0));
        let counter = fetched.clone();
        std::thread::spawn(move || {
            for mut client in listener.incoming().take(64).flatten() {
                let Some((head, _)) = read_request(&mut client) else {
                    continue;
                };
                let line = request_line(&head);
                let body = if line.starts_with("PUT /latest/api/token") {
                    "a-token".to_string()
                } else if line.starts_with("GET /latest/meta-data/iam/security-credentials/ ") {
                    "a-role".to_string()
                } else if line.starts_with("GET /latest/meta-data/iam/security-credentials/a-role")
                {
                    counter.fetch_add(1, Ordering::SeqCst);
                    r#"{"Code":"Success","AccessKeyId":"testing","SecretAccessKey":"testing","Token":"a-session","Expiration":"2099-01-01T00:00:00Z"}"#.to_string()
                } else {
                    answer_error(&mut client, "404 Not Found", "NotFound", "no such path");
                    continue;
                };
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = client.write_all(answer.as_bytes());
            }
        });
        MetadataService { port, fetched }
    }
}

#[test]
fn without_keys_an_instance_role_from_the_metadata_service_signs_the_requests() {
    let Some(moto) = moto(false) else { return };
    let service = MetadataService::start();
    let mut role = s3(&moto.endpoint());
    role.config
        .retain(|(k, _)| !k.contains("key") && k != "aws_metadata_endpoint");
    role.config.push((
        "aws_metadata_endpoint".into(),
        format!("http://127.0.0.1:{}", service.port),
    ));
    let url = format!("s3://{BUCKET}/role.zarr");
    let (summary, data) = stream(vec![0, 8, 8], 4, vec![2, 8, 8], options(&url, role), 64).unwrap();
    assert_eq!(summary.planes, 4);
    let (shape, read) = read_back(&moto.client(), "role.zarr");
    assert_eq!(shape, vec![4, 8, 8]);
    assert_same(&read, &data, "read back");
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        assert!(
            service.fetched.load(Ordering::SeqCst) >= 1,
            "the credentials did not come from the metadata service"
        );
    }
}

/// The keys the server itself lists under `prefix` (its XML, unescaped).
fn listed_keys(port: u16, prefix: &str) -> Vec<String> {
    let listing = raw_request(
        port,
        "GET",
        &format!("/{BUCKET}?list-type=2&prefix={prefix}"),
    );
    listing
        .split("<Key>")
        .skip(1)
        .filter_map(|k| k.split_once("</Key>"))
        .map(|(k, _)| {
            k.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&")
        })
        .collect()
}

#[test]
fn keys_are_stored_byte_for_byte_as_given_not_percent_encoded() {
    let Some(moto) = moto(false) else { return };
    for prefix in [
        "unicodé/run?1.zarr",
        "a b/ü+%41#x/[1]~;=&.zarr",
        "日本/データ.zarr",
    ] {
        let url = format!("s3://{BUCKET}/{prefix}");
        let (_, data) = stream(
            vec![0, 8, 16],
            4,
            vec![2, 8, 8],
            options(&url, s3(&moto.endpoint())),
            100,
        )
        .unwrap_or_else(|e| panic!("{url}: {e}"));
        // what the server holds, as its own listing says
        let first = prefix.split('/').next().unwrap();
        let ascii: String = first
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect();
        let keys = listed_keys(moto.port, &ascii);
        for name in ["zarr.json", "c/0/0/0", "c/1/0/1"] {
            let expected = format!("{prefix}/{name}");
            assert!(keys.contains(&expected), "{expected} not in {keys:?}");
        }
        assert!(
            keys.iter()
                .all(|k| !k.contains("%C3") && !k.contains("%3F") && !k.contains("%20")),
            "{keys:?}"
        );
        let (shape, read) = read_back(&moto.client(), prefix);
        assert_eq!(shape, vec![4, 8, 16]);
        assert_same(&read, &data, url.as_str());
        // listed, found to be a Zarr store and deleted whole by --overwrite
        let again = ZarrOptions {
            overwrite: true,
            ..options(&url, s3(&moto.endpoint()))
        };
        let (_, data) = stream(vec![0, 8, 16], 2, vec![2, 8, 8], again, 100).unwrap();
        let (shape, read) = read_back(&moto.client(), prefix);
        assert_eq!(shape, vec![2, 8, 16]);
        assert_same(&read, &data, "overwritten");
    }
}

/// The error of a stream into `url` with `s3`, made before anything is sent.
fn refusal(url: &str, s3: S3Options) -> String {
    let spec = StreamSpec::new(DType::U8, vec![0, 8, 8], vec![2, 8, 8]).unwrap();
    let caught = std::panic::catch_unwind(|| {
        TileStream::new(spec, &[0], 1, Box::new(ZarrSink::new(options(url, s3))))
            .err()
            .map(|e| e.to_string())
    });
    match caught {
        Ok(Some(err)) => err,
        Ok(None) => panic!("{url} was taken"),
        Err(_) => panic!("{url}: a panic, not an error"),
    }
}

#[test]
fn prefixes_s3_cannot_hold_are_refused_naming_the_rule_before_anything_is_sent() {
    let long = format!("s3://b/{}", "x".repeat(MAX_PREFIX_BYTES + 1));
    for (url, rule) in [
        ("s3://b/a//b.zarr", "empty segment"),
        ("s3://b//a.zarr", "empty segment"),
        ("s3://b/a/./b.zarr", "'.' segment"),
        ("s3://b/a/../b.zarr", "'..' segment"),
        ("s3://b/..", "'..' segment"),
        ("s3://b/a\u{1}b.zarr", "U+0001"),
        ("s3://b/a\nb.zarr", "U+000A"),
        ("s3://b/a\u{7f}.zarr", "U+007F"),
        ("s3://b/a\u{85}.zarr", "U+0085"),
        ("s3://b c/a.zarr", "U+0020"),
        ("s3:///a.zarr", "s3://BUCKET/PREFIX"),
        (long.as_str(), "bytes long"),
    ] {
        let mut s3 = s3("http://127.0.0.1:9");
        // a server that would answer: a refusal must come before any request
        s3.retry_timeout = Duration::from_secs(30);
        let started = Instant::now();
        let err = refusal(url, s3);
        assert!(err.contains(rule), "{url:?}: {err}");
        assert!(!err.contains('\n'), "{url:?}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{url:?} was sent"
        );
    }
}

#[test]
fn endpoints_the_client_cannot_use_are_one_line_naming_the_setting_not_a_panic() {
    for key in ["aws_endpoint", "endpoint_url", "aws_endpoint_url_s3"] {
        for (value, why) in [
            ("localhost:9000", "http://"),
            ("", "empty"),
            ("http://127.0.0.1:9000 ", "U+0020"),
            (" http://127.0.0.1:9000", "U+0020"),
            ("http://127.0.0.1:99999", "65535"),
            ("http://127.0.0.1:0", "65535"),
            ("https://", "host"),
            ("http://exämple.org", "URL"),
            ("http://127.0.0.1:9000/?a=b", "query"),
        ] {
            let mut s3 = s3("http://127.0.0.1:9");
            s3.config.push((key.into(), value.into()));
            let err = refusal("s3://b/p", s3);
            assert!(
                err.contains(&format!("'{key}'")) && err.contains(why),
                "{key}={value:?}: {err}"
            );
            assert!(!err.contains('\n'), "{err}");
        }
    }
    // a region that must name AWS's host, or go in a header; keys that go in headers
    let mut aws = s3("http://127.0.0.1:9");
    aws.config
        .retain(|(k, _)| k != "aws_endpoint" && k != "aws_region");
    for (key, value) in [
        ("aws_region", "us east 1"),
        ("aws_region", "région"),
        ("aws_access_key_id", "AKIA\u{e9}"),
        ("aws_session_token", "tok\nen"),
    ] {
        let mut s3 = aws.clone();
        s3.config.push((key.into(), value.into()));
        let err = refusal("s3://b/p", s3);
        assert!(err.contains(&format!("'{key}'")), "{key}={value:?}: {err}");
    }
}

#[test]
fn a_file_url_is_the_local_directory_it_names_and_other_schemes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}/run%203%3F.zarr", dir.path().display());
    let spec = StreamSpec::new(DType::U8, vec![0, 8, 8], vec![2, 8, 8]).unwrap();
    let opts = ZarrOptions {
        path: url.clone().into(),
        ..Default::default()
    };
    let mut s = TileStream::new(spec, &[0], 1, Box::new(ZarrSink::new(opts))).unwrap();
    s.append(&[3u8; 4 * 64]).unwrap();
    s.finish().unwrap();
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("run 3?.zarr").join("zarr.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["shape"], serde_json::json!([4, 8, 8]), "{url}");
    for (url, named) in [
        ("gs://retile-lib-test/a.zarr", "scheme gs:"),
        ("S3://retile-lib-test/a.zarr", "scheme S3:"),
        ("s3a://retile-lib-test/a.zarr", "scheme s3a:"),
        (
            "file://elsewhere/retile-lib-test.zarr",
            "absolute local path",
        ),
        ("", "empty"),
    ] {
        let err = refusal(url, s3("http://127.0.0.1:9"));
        assert!(err.contains(named), "{url:?}: {err}");
        let made = url.split('/').next().unwrap_or_default();
        assert!(
            made.is_empty() || !std::path::Path::new(made).exists(),
            "{url} made {made}"
        );
    }
}
