//! The streaming tiler beside its peers in one run: a 2-thread memcpy of the
//! same bytes (measured here) and numpy's tiling (`bench/cpu_anchors.py`),
//! printed as ratios against the targets of the streaming-tiler issue.
//!
//! Run: `cargo bench -p retile-stream --bench tiling` (environment:
//! `RETILE_BENCH_PLANES`, default 1024 planes of 2048x2048 u16 = 8.6 GB).

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use rayon::prelude::*;
use retile_stream::*;

const SIDE: u64 = 2048;
const BLOCK_PLANES: u64 = 64;
/// Chunks in flight, as many as the Zarr sink writes at once by default.
const WRITERS: usize = 16;

fn planes() -> u64 {
    std::env::var("RETILE_BENCH_PLANES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024)
}

/// A block of input planes with distinct values, made once, appended repeatedly.
fn source_block() -> Vec<u8> {
    let n = (BLOCK_PLANES * SIDE * SIDE * 2) as usize;
    (0..n)
        .into_par_iter()
        .map(|i| (i as u32).wrapping_mul(2654435761).to_le_bytes()[2])
        .collect()
}

/// GB/s of a 2-thread memcpy of `planes` planes, block by block.
fn memcpy_gbps(src: &[u8], planes: u64, pool: &rayon::ThreadPool) -> f64 {
    let mut dst = vec![1u8; src.len()];
    let repeats = planes / BLOCK_PLANES;
    let half = src.len() / 2;
    let started = Instant::now();
    for _ in 0..repeats {
        pool.install(|| {
            dst.par_chunks_mut(half)
                .zip(src.par_chunks(half))
                .for_each(|(d, s)| d.copy_from_slice(s));
        });
    }
    (repeats * src.len() as u64) as f64 / started.elapsed().as_secs_f64() / 1e9
}

/// Input GB/s of one stream: from the first append to the end of `finish`
/// (as a camera sees it once the stream is made) and overall (the making
/// of the tile buffers included).
struct Rates {
    steady: f64,
    overall: f64,
    summary: Summary,
}

/// Streams `planes` planes into `tile` tiles, one 8 MB frame per append.
fn tiling(src: &[u8], planes: u64, tile: &[u64], sink: Box<dyn Sink>) -> Rates {
    let spec = StreamSpec::new(DType::U16, vec![0, SIDE, SIDE], tile.to_vec()).expect("valid spec");
    let started = Instant::now();
    let mut stream = TileStream::new(spec, &[0, 0], 2, sink).expect("stream starts");
    let made = Instant::now();
    for _ in 0..planes / BLOCK_PLANES {
        for frame in src.chunks((SIDE * SIDE * 2) as usize) {
            stream.append(frame).expect("append");
        }
    }
    let summary = stream.finish().expect("finish");
    let bytes = summary.bytes as f64;
    Rates {
        steady: bytes / made.elapsed().as_secs_f64() / 1e9,
        overall: bytes / started.elapsed().as_secs_f64() / 1e9,
        summary,
    }
}

/// Writes dirty pages to disk so that one disk measurement does not pay
/// for the previous one's write-back.
fn flush_page_cache() {
    let _ = Command::new("sync").status();
}

/// GB/s of writing `bytes` as files of `chunk` bytes, each synced to the
/// disk, by as many threads as the Zarr sink has writers: the ceiling of
/// any Zarr writer on this file system. With `direct`, the files are
/// written with `O_DIRECT`, as the Zarr sink writes its chunks by default.
fn file_write_gbps(dir: &Path, bytes: u64, chunk: usize, direct: bool) -> f64 {
    use std::os::unix::fs::OpenOptionsExt;
    let page = 4096;
    let buffer = vec![5u8; chunk + page];
    let start = buffer.as_ptr().align_offset(page);
    let data = &buffer[start..start + chunk];
    let files = (bytes / chunk as u64) as usize;
    let writers = rayon::ThreadPoolBuilder::new()
        .num_threads(WRITERS)
        .build()
        .expect("pool");
    let started = Instant::now();
    writers.install(|| {
        (0..files).into_par_iter().for_each(|i| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .custom_flags(if direct { libc::O_DIRECT } else { 0 })
                .open(dir.join(format!("f{i}")))
                .expect("create");
            file.write_all(data).expect("write");
            file.sync_all().expect("sync");
        })
    });
    bytes as f64 / started.elapsed().as_secs_f64() / 1e9
}

/// Removes what a disk measurement wrote, so the next one starts from the
/// same free space.
fn clear(dir: &Path) {
    for entry in std::fs::read_dir(dir).expect("temp dir").flatten() {
        let path = entry.path();
        let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
    }
}

/// numpy's tiling GB/s of input for `tile` (the anchor prints read+write GB/s).
fn numpy_gbps(root: &Path, shape: &str, tile: &str) -> Option<f64> {
    let out = Command::new("python3")
        .arg(root.join("bench/cpu_anchors.py"))
        .args(["--shape", shape, "--tile", tile, "--dtype", "uint16"])
        .env_remove("OPENBLAS_CORETYPE")
        .env_remove("OPENBLAS_L2_SIZE")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let line = text.lines().find(|l| l.contains("numpy_tiling"))?;
    line.split_whitespace()
        .last()?
        .parse::<f64>()
        .ok()
        .map(|v| v / 2.0)
}

fn row(name: &str, ours: f64, peer: f64, target: f64) {
    let ratio = ours / peer;
    let verdict = if ratio >= target { "meets" } else { "MISSES" };
    println!("{name:<44} {ours:>8.2} {peer:>8.2} {ratio:>7.2}  {verdict} target >= {target}");
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let planes = planes();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("pool");
    let src = source_block();
    let memcpy = memcpy_gbps(&src, planes, &pool);
    println!(
        "{planes} planes of {SIDE}x{SIDE} u16 ({:.1} GB); GB/s of input bytes",
        (planes * SIDE * SIDE * 2) as f64 / 1e9
    );
    println!(
        "{:<44} {:>8} {:>8} {:>7}",
        "case", "retile", "peer", "ratio"
    );
    let cube = [64, 64, 64];
    let thin = [256, 256, 1];
    let cube_rates = tiling(&src, planes, &cube, Box::new(NullSink));
    let cube_gbps = cube_rates.steady;
    row("tiling 64^3 / memcpy (2 threads)", cube_gbps, memcpy, 0.8);
    row(
        "  same, making the buffers included",
        cube_rates.overall,
        memcpy,
        0.8,
    );
    let thin_rates = tiling(&src, planes, &thin, Box::new(NullSink));
    let thin_gbps = thin_rates.steady;
    row(
        "tiling 256x256x1 / memcpy (2 threads)",
        thin_gbps,
        memcpy,
        0.8,
    );
    row(
        "  same, making the buffers included",
        thin_rates.overall,
        memcpy,
        0.8,
    );
    match numpy_gbps(&root, "64,2048,2048", "64,64,64") {
        Some(np) => row("tiling 64^3 / numpy tiling", cube_gbps, np, 1.5),
        None => println!("numpy not measured (pip install numpy)"),
    }
    if let Some(np) = numpy_gbps(&root, "256,2048,2048", "256,256,1") {
        row("tiling 256x256x1 / numpy tiling", thin_gbps, np, 1.5);
    }
    let dir = tempfile::tempdir_in(root.join("target")).expect("temp dir");
    let zarr_planes = planes.min(512);
    let zarr_bytes = zarr_planes * SIDE * SIDE * 2;
    let chunk = 64 * 64 * 64 * 2;
    for buffered_io in [false, true] {
        let io = if buffered_io { "buffered" } else { "direct" };
        flush_page_cache();
        let options = ZarrOptions {
            path: dir.path().join(format!("{io}.zarr")),
            buffered_io,
            writers: Some(WRITERS),
            ..Default::default()
        };
        let zarr = tiling(&src, zarr_planes, &cube, Box::new(ZarrSink::new(options)));
        flush_page_cache();
        let files = file_write_gbps(dir.path(), zarr_bytes, chunk, !buffered_io);
        clear(dir.path());
        row(
            &format!("zarr ({io} I/O, none, {zarr_planes} planes) / memcpy"),
            zarr.overall,
            memcpy,
            0.5,
        );
        row(
            &format!("  same / plain files, {io} I/O, synced"),
            zarr.overall,
            files,
            0.8,
        );
    }
    let short = tiling(&src, planes / 8, &cube, Box::new(NullSink)).summary;
    let long = cube_rates.summary;
    println!(
        "tile buffers at {} planes: {:.1} MB; at {} planes: {:.1} MB",
        planes / 8,
        short.buffer_bytes as f64 / 1e6,
        long.planes,
        long.buffer_bytes as f64 / 1e6
    );
    let _ = thin_rates.summary;
}
