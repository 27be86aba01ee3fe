//! `retile plan stream` and `retile stream`: the streaming tiler on the
//! command line.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::error::CliError;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use retile_stream::{
    default_axes, open_output, Axis, Backend, Codec, CodecOn, DType, Method, MultiscaleStream, NgffOptions,
    Output, PyramidOptions, S3Options, S3Traffic, Shuffle, StreamDType, StreamPlan, StreamSpec,
    Summary, ZarrOptions,
};

/// Bytes read from the input per append.
const PIECE_BYTES: usize = 8 << 20;

/// The stream's shape, tile and element type.
#[derive(Args, Clone)]
pub struct ShapeArgs {
    /// Extents, slowest first; 0 first = unbounded (e.g. 0,2048,2048).
    #[arg(long, value_parser = parse_list)]
    shape: Dims,
    /// Tile extents, slowest first (e.g. 64,256,256).
    #[arg(long, value_parser = parse_list)]
    tile: Dims,
    /// Element type: u8 u16 u32 u64 i8 i16 i32 i64 f16 bf16 f32 f64
    /// (bf16 is stored as Zarr's `bfloat16`, which zarr-python cannot open
    /// yet; u16 stores the same bits as a type every reader opens).
    #[arg(long, default_value = "u16")]
    dtype: String,
}

/// Arguments of `retile plan stream`.
#[derive(Args)]
pub struct PlanArgs {
    #[command(flatten)]
    shape: ShapeArgs,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pyramid: PyramidArgs,
}

/// The multiscale pyramid made while streaming.
#[derive(Args, Clone, Default)]
pub struct PyramidArgs {
    /// Make a multiscale pyramid (an OME-Zarr image) with this method:
    /// mean, min, max, decimate or median.
    #[arg(long)]
    pyramid: Option<String>,
    /// Levels of the pyramid, the stream included (default: until a level
    /// fits in one tile along every halved dimension).
    #[arg(long)]
    levels: Option<usize>,
    /// Which dimensions each level halves, slowest first, as 0 or 1
    /// (default: every dimension but the first and a channel axis, e.g. 0,1,1).
    #[arg(long, value_parser = parse_list)]
    downsample: Option<Dims>,
}

impl PyramidArgs {
    /// The pyramid asked for; `--levels` or `--downsample` without `--pyramid` is an error.
    fn options(&self) -> Result<Option<PyramidOptions>, CliError> {
        let Some(method) = &self.pyramid else {
            return match self.levels.is_some() || self.downsample.is_some() {
                true => {
                    Err("--levels and --downsample take effect only with --pyramid METHOD".into())
                }
                false => Ok(None),
            };
        };
        let method: Method = method.parse()?;
        let downsample = match &self.downsample {
            Some(d) => Some(
                d.0.iter()
                    .map(|&v| match v {
                        0 => Ok(false),
                        1 => Ok(true),
                        _ => Err(format!("--downsample takes 0 or 1 per dimension, not {v}")),
                    })
                    .collect::<Result<Vec<bool>, String>>()?,
            ),
            None => None,
        };
        Ok(Some(PyramidOptions {
            method,
            downsample,
            levels: self.levels,
        }))
    }
}

/// The headings `retile stream --help` groups its options under, each
/// opening with an example.
mod heading {
    /// The stream's shape, element type and where its bytes come from.
    pub const INPUT: &str = "Input (e.g. --shape 0,2048,2048 --dtype u16 --input data.raw)";
    /// How the array is cut into chunks and shards, and how they are encoded.
    pub const CHUNKS: &str =
        "Chunks and codecs (e.g. --tile 64,256,256 --shard 1,4,4 --codec blosc-zstd:1)";
    /// Where the store goes: a directory, or S3-compatible object storage.
    pub const STORE: &str =
        "Store and S3 (e.g. --output out.zarr, or --output s3://bucket/run3.zarr)";
    /// The OME-Zarr image: pyramid and axes.
    pub const OME_ZARR: &str =
        "OME-Zarr (e.g. --pyramid mean --units second,micrometer,micrometer --scale 0.05,0.65,0.65)";
    /// Threads, writers, I/O and the backend.
    pub const PERFORMANCE: &str = "Performance (e.g. --writers 32 --threads 8, or --backend cuda)";
}

/// Arguments of `retile stream`.
#[derive(Args)]
#[command(mut_arg("tile", |tile| tile.help_heading(heading::CHUNKS)))]
pub struct StreamArgs {
    #[command(flatten, next_help_heading = heading::INPUT)]
    shape: ShapeArgs,
    /// Raw row-major input file, or - for stdin; without it a synthetic
    /// pattern whose values encode their linear index is streamed.
    #[arg(long, help_heading = heading::INPUT)]
    input: Option<String>,
    /// Planes of synthetic input when the shape is unbounded (default 256);
    /// a bounded shape says how many itself.
    #[arg(long, help_heading = heading::INPUT)]
    planes: Option<u64>,
    /// Zarr v3 directory to write, or s3://BUCKET/PREFIX for S3-compatible
    /// object storage (endpoint, region and credentials from AWS_ENDPOINT_URL,
    /// AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...); without it
    /// the tiler is only measured.
    #[arg(long, help_heading = heading::STORE)]
    output: Option<PathBuf>,
    /// Allow a plain http:// object storage endpoint (unencrypted), as
    /// AWS_ALLOW_HTTP=true does.
    #[arg(long, help_heading = heading::STORE)]
    allow_http: bool,
    /// How long a request to object storage that keeps failing (throttled,
    /// server errors, dropped connections) is retried, with backoff, before
    /// the stream fails.
    #[arg(long, help_heading = heading::STORE, default_value_t = 120.0)]
    retry_seconds: f64,
    /// Replace the Zarr store at --output if there is one (it is deleted first).
    #[arg(long, help_heading = heading::STORE)]
    overwrite: bool,
    /// Tiles per shard per dimension, slowest first (e.g. 1,4,4); a first
    /// count above 1 makes shards span several epochs.
    #[arg(long, help_heading = heading::CHUNKS, value_parser = parse_list)]
    shard: Option<Dims>,
    /// Chunk codec: none, zstd[:1-22], gzip[:0-9], blosc-lz4[:0-9],
    /// blosc-lz4hc[:0-9], blosc-zstd[:0-9] or blosc-zlib[:0-9].
    #[arg(long, help_heading = heading::CHUNKS, default_value = "none")]
    codec: String,
    /// Shuffle of the blosc codecs: none, byte (the default) or bit.
    #[arg(long, help_heading = heading::CHUNKS)]
    shuffle: Option<String>,
    /// Value of padding in edge tiles, in the element type (e.g. 0, -1, 1.5, nan).
    #[arg(long, help_heading = heading::CHUNKS, default_value = "0", allow_hyphen_values = true)]
    fill: String,
    #[command(flatten, next_help_heading = heading::OME_ZARR)]
    pyramid: PyramidArgs,
    /// Write an OME-Zarr (NGFF 0.5) image even without a pyramid (a
    /// one-level image); --pyramid always writes one.
    #[arg(long, help_heading = heading::OME_ZARR)]
    ngff: bool,
    /// Dimension names, slowest first (e.g. t,y,x); in an OME-Zarr image,
    /// the axes' names (default t,y,x and the like).
    #[arg(long, help_heading = heading::OME_ZARR, value_delimiter = ',')]
    dim_names: Option<Vec<String>>,
    /// OME-Zarr axis types, slowest first: time, channel or space
    /// (default: by rank, e.g. time,space,space).
    #[arg(long, help_heading = heading::OME_ZARR, value_delimiter = ',')]
    dim_types: Option<Vec<String>>,
    /// OME-Zarr axis units, slowest first; empty for none
    /// (e.g. second,micrometer,micrometer or ,micrometer,micrometer).
    #[arg(long, help_heading = heading::OME_ZARR, value_delimiter = ',')]
    units: Option<Vec<String>>,
    /// Physical size of one element of level 0 along each axis, slowest
    /// first (e.g. 1,0.5,0.5; default 1).
    #[arg(long, help_heading = heading::OME_ZARR, value_delimiter = ',')]
    scale: Option<Vec<f64>>,
    /// Write chunks through the page cache instead of with direct I/O
    /// (direct I/O is used wherever the output's file system takes it).
    #[arg(long, help_heading = heading::PERFORMANCE)]
    buffered_io: bool,
    /// Files encoded and written at once (1 to 256; default 16 without
    /// compression, two per core, 4 to 16, with it).
    #[arg(long, help_heading = heading::PERFORMANCE)]
    writers: Option<usize>,
    /// Threads for tiling (0 = all cores).
    #[arg(long, help_heading = heading::PERFORMANCE, default_value_t = 0)]
    threads: usize,
    /// Where tiles are cut: cpu, or cuda (a build with `--features cuda` and a GPU).
    #[arg(long, help_heading = heading::PERFORMANCE, default_value = "cpu", value_parser = ["cpu", "cuda"])]
    backend: String,
    /// Where a --backend cuda stream compresses zstd, blosc-lz4 and
    /// blosc-zstd chunks: gpu (nvCOMP, found through RETILE_NVCOMP, the
    /// nvidia-libnvcomp-cu13 wheel or the system), cpu, or auto (both
    /// measured on the first epoch, the faster kept); the summary says which.
    #[arg(long, help_heading = heading::PERFORMANCE, value_parser = ["auto", "gpu", "cpu"])]
    codec_on: Option<String>,
}

/// A comma-separated list of extents, slowest first.
#[derive(Clone, Debug)]
pub struct Dims(Vec<u64>);

fn parse_list(text: &str) -> Result<Dims, String> {
    text.split(',')
        .map(|v| {
            v.trim().parse::<u64>().map_err(|_| {
                format!("'{v}' is not a non-negative integer (write e.g. 0,2048,2048)")
            })
        })
        .collect::<Result<_, _>>()
        .map(Dims)
}

impl ShapeArgs {
    fn spec(&self) -> Result<StreamSpec, CliError> {
        let dtype: DType = self.dtype.parse()?;
        Ok(StreamSpec::new(
            dtype,
            self.shape.0.clone(),
            self.tile.0.clone(),
        )?)
    }
}

/// `retile plan stream`.
pub fn plan(args: &PlanArgs) -> Result<ExitCode, CliError> {
    let spec = args.shape.spec()?;
    let Some(pyramid) = args.pyramid.options()? else {
        let plan = StreamPlan::new(&spec)?;
        let text = match args.json {
            true => serde_json::to_string(&plan.to_json())? + "\n",
            false => plan.to_string(),
        };
        return say(format_args!("{text}")).map(|()| ExitCode::SUCCESS);
    };
    let levels = pyramid.level_plans(&spec)?;
    if args.json {
        let json: Vec<serde_json::Value> = levels.iter().map(StreamPlan::to_json).collect();
        let text = serde_json::to_string(&serde_json::json!({
            "method": pyramid.method.to_string(),
            "levels": json,
            "memory_bytes": pyramid.memory_bytes(&spec)?,
        }))?;
        return say(format_args!("{text}\n")).map(|()| ExitCode::SUCCESS);
    }
    for (k, level) in levels.iter().enumerate() {
        say(format_args!(
            "level {k}: {}, {} tiles per epoch, epoch buffers {:.1} MB\n",
            shape_text(level.spec().shape()),
            level.m(),
            level.epoch_buffer_bytes() as f64 * 2.0 / 1e6
        ))?;
    }
    let memory = pyramid.memory_bytes(&spec)?;
    say(format_args!(
        "{} pyramid of {} levels: {:.1} MB of buffers in all, whatever the stream's length\n",
        pyramid.method,
        levels.len(),
        memory as f64 / 1e6
    ))?;
    Ok(ExitCode::SUCCESS)
}

fn shape_text(shape: &[u64]) -> String {
    let parts: Vec<String> = shape
        .iter()
        .enumerate()
        .map(|(d, &n)| match (d, n) {
            (0, 0) => "unbounded".to_string(),
            _ => n.to_string(),
        })
        .collect();
    parts.join(" x ")
}

/// Where input comes from.
enum Source {
    Reader(Box<dyn Read>),
    /// A regular file, mapped: the tiler reads the page cache directly,
    /// saving a copy of every byte into a read buffer.
    Mapped {
        map: memmap2::Mmap,
        at: usize,
    },
    Synthetic {
        index: u64,
        total: u64,
        esize: usize,
    },
}

impl Source {
    /// The next piece of input, at most `buf.len()` bytes (empty = end).
    fn next<'a>(&'a mut self, buf: &'a mut [u8]) -> Result<&'a [u8], CliError> {
        if let Source::Mapped { map, at } = self {
            // The piece before is tiled: unmap its pages (they stay in the
            // page cache), so that the process holds one piece of the file,
            // not all of it. Pieces are `buf.len()` long, a whole number of pages.
            let before = at.saturating_sub(buf.len());
            // SAFETY: the range was read and is never read again.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, before, *at - before)
            };
            let piece = &map[*at..(*at + buf.len()).min(map.len())];
            *at += piece.len();
            return Ok(piece);
        }
        let n = self.read(buf)?;
        Ok(&buf[..n])
    }

    /// Opens `path`: mapped if it is a regular file that maps, read otherwise.
    fn file(path: &str) -> Result<Source, CliError> {
        let file =
            std::fs::File::open(path).map_err(|e| format!("cannot open input {path}: {e}"))?;
        let kind = file.metadata().map(|m| m.file_type());
        if kind.as_ref().is_ok_and(|k| k.is_dir()) {
            return Err(format!("the input {path} is a directory, not a file").into());
        }
        let regular = kind.is_ok_and(|k| k.is_file());
        // SAFETY: the map is only read; a file truncated by another process
        // while it is streamed would fault, as with any reader of a mapping.
        match regular.then(|| unsafe { memmap2::Mmap::map(&file) }) {
            Some(Ok(map)) => {
                let _ = map.advise(memmap2::Advice::Sequential);
                Ok(Source::Mapped { map, at: 0 })
            }
            _ => Ok(Source::Reader(Box::new(file))),
        }
    }

    /// Fills `buf` with the next input; returns how many bytes (0 = end).
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, CliError> {
        match self {
            Source::Mapped { .. } => Ok(0),
            Source::Reader(r) => {
                let mut filled = 0;
                while filled < buf.len() {
                    match r.read(&mut buf[filled..]) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                            if interrupted() {
                                break;
                            }
                        }
                        Err(e) => return Err(format!("cannot read the input: {e}").into()),
                    }
                }
                Ok(filled)
            }
            Source::Synthetic {
                index,
                total,
                esize,
            } => {
                let n = ((*total - *index) as usize).min(buf.len() / *esize);
                let out = &mut buf[..n * *esize];
                match *esize {
                    1 => pattern::<1>(out, *index),
                    2 => pattern::<2>(out, *index),
                    4 => pattern::<4>(out, *index),
                    _ => pattern::<8>(out, *index),
                }
                *index += n as u64;
                Ok(n * *esize)
            }
        }
    }
}

/// Writes elements of `N` bytes holding their index from `start` on, truncated.
fn pattern<const N: usize>(out: &mut [u8], start: u64) {
    for (k, element) in out.chunks_exact_mut(N).enumerate() {
        let bytes = (start + k as u64).to_le_bytes();
        element.copy_from_slice(&bytes[..N]);
    }
}

/// The peak resident memory of this process, from /proc (Linux).
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

/// Writes `text` to stdout; a closed or full stdout is an error, not a panic.
fn say(text: std::fmt::Arguments<'_>) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_fmt(text)
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to stdout: {e}").into())
}

/// Set by SIGINT or SIGTERM: stop reading, write what was taken, close the store.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Lets SIGINT and SIGTERM end the stream cleanly: the first one stops the
/// input (a blocked read returns), the epochs taken are written and the
/// store is closed; a second one acts as usual.
fn finish_cleanly_on_interrupt() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe;
    // the sigaction struct is zeroed and then filled as sigaction(2) says.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
    }
}

/// What `args` ask to write; options that need `--output` without it are
/// an error, not silently ignored.
fn output(args: &StreamArgs, rank: usize) -> Result<Output, CliError> {
    let mut codec = args.codec.parse::<Codec>()?;
    if let Some(shuffle) = &args.shuffle {
        let shuffle = shuffle.parse::<Shuffle>()?;
        codec = codec.with_shuffle(shuffle)?;
    }
    let pyramid = args.pyramid.options()?;
    let ngff = args.ngff || pyramid.is_some();
    let Some(path) = &args.output else {
        let given: Vec<&str> = [
            (args.shard.is_some(), "--shard"),
            (codec != Codec::None, "--codec"),
            (args.shuffle.is_some(), "--shuffle"),
            (args.writers.is_some(), "--writers"),
            (args.dim_names.is_some(), "--dim-names"),
            (args.buffered_io, "--buffered-io"),
            (args.overwrite, "--overwrite"),
            (args.ngff, "--ngff"),
            (args.dim_types.is_some(), "--dim-types"),
            (args.units.is_some(), "--units"),
            (args.scale.is_some(), "--scale"),
            (args.allow_http, "--allow-http"),
            (args.codec_on.is_some(), "--codec-on"),
        ]
        .into_iter()
        .filter_map(|(given, name)| given.then_some(name))
        .collect();
        return match given.is_empty() {
            true => Ok(Output {
                pyramid,
                ..Default::default()
            }),
            false => Err(format!(
                "{} take effect only with --output (without it the tiler is only measured)",
                given.join(", ")
            )
            .into()),
        };
    };
    let zarr = ZarrOptions {
        path: path.clone(),
        codec,
        shard: args.shard.as_ref().map(|d| d.0.clone()),
        dimension_names: args.dim_names.clone().filter(|_| !ngff),
        buffered_io: args.buffered_io,
        writers: args.writers,
        overwrite: args.overwrite,
        s3: S3Options {
            allow_http: args.allow_http,
            retry_timeout: std::time::Duration::try_from_secs_f64(args.retry_seconds).map_err(
                |_| {
                    format!(
                        "--retry-seconds takes a number of seconds, not {}",
                        args.retry_seconds
                    )
                },
            )?,
            traffic: Some(std::sync::Arc::new(S3Traffic::default())),
            ..Default::default()
        },
        codec_on: args.codec_on.as_deref().unwrap_or("auto").parse::<CodecOn>()?,
    };
    if args.codec_on.as_deref() == Some("gpu") && args.backend != "cuda" {
        return Err("--codec-on gpu compresses on the GPU of --backend cuda".into());
    }
    if !ngff {
        if let Some(flag) = [
            (args.dim_types.is_some(), "--dim-types"),
            (args.units.is_some(), "--units"),
            (args.scale.is_some(), "--scale"),
        ]
        .iter()
        .find_map(|(given, name)| given.then_some(name))
        {
            return Err(format!(
                "{flag} describes an OME-Zarr image: add --ngff or --pyramid METHOD"
            )
            .into());
        }
        return Ok(Output {
            zarr: Some(zarr),
            ..Default::default()
        });
    }
    Ok(Output {
        zarr: Some(zarr),
        pyramid,
        ngff: Some(ngff_options(args, rank)?),
    })
}

/// The OME-Zarr axes and scale of `--dim-names`, `--dim-types`, `--units` and `--scale`.
fn ngff_options(args: &StreamArgs, rank: usize) -> Result<NgffOptions, CliError> {
    let defaults = default_axes(rank)?;
    let count = |flag: &str, n: usize| match n == rank {
        true => Ok(()),
        false => Err(format!("{flag} has {n} entries for {rank} dimensions")),
    };
    let names = args
        .dim_names
        .clone()
        .unwrap_or_else(|| defaults.iter().map(|a| a.name.clone()).collect());
    count("--dim-names", names.len())?;
    let kinds = args
        .dim_types
        .clone()
        .unwrap_or_else(|| defaults.iter().map(|a| a.kind.clone()).collect());
    count("--dim-types", kinds.len())?;
    let units = args
        .units
        .clone()
        .unwrap_or_else(|| vec![String::new(); rank]);
    count("--units", units.len())?;
    let axes = (0..rank)
        .map(|d| {
            Axis::new(
                &names[d],
                &kinds[d],
                Some(units[d].as_str()).filter(|u| !u.is_empty()),
            )
        })
        .collect();
    Ok(NgffOptions {
        axes: Some(axes),
        scale: args.scale.clone(),
    })
}

/// `retile stream`.
pub fn stream(args: &StreamArgs) -> Result<ExitCode, CliError> {
    let spec = args.shape.spec()?;
    let esize = spec.dtype().size();
    let fill = spec
        .dtype()
        .parse_value(&args.fill)
        .map_err(|e| format!("--fill: {e}"))?;
    let plane_bytes = spec
        .plane_elements()
        .ok()
        .and_then(|n| n.checked_mul(esize as u64))
        .ok_or("a plane of this shape does not fit in 64 bits of bytes")?;
    let planes = match (spec.is_unbounded(), args.planes, &args.input) {
        (true, planes, None) => planes.unwrap_or(256),
        (_, Some(_), Some(_)) => return Err("--planes sets the length of the synthetic input; with --input the input's length decides".into()),
        (false, Some(p), _) if p != spec.shape()[0] => {
            return Err(format!(
                "--planes {p} contradicts the shape, whose first extent is {}; give --planes only with an unbounded shape (first extent 0)",
                spec.shape()[0]
            ).into())
        }
        _ => spec.shape()[0],
    };
    let total = planes.checked_mul(plane_bytes).ok_or_else(|| {
        format!("{planes} planes of {plane_bytes} bytes do not fit in 64 bits of bytes; stream fewer planes")
    })?;
    let output = output(args, spec.shape().len())?;
    let backend = match args.backend.as_str() {
        "cuda" => Backend::Cuda,
        _ => Backend::Cpu {
            threads: args.threads,
        },
    };
    let (source, expected) = match args.input.as_deref() {
        None => (
            Source::Synthetic {
                index: 0,
                total: total / esize as u64,
                esize,
            },
            Some(total),
        ),
        Some("-") => (
            Source::Reader(Box::new(std::io::stdin().lock())),
            (!spec.is_unbounded()).then_some(total),
        ),
        Some(path) => (Source::file(path)?, (!spec.is_unbounded()).then_some(total)),
    };
    let mut tiles = open_output(spec, &fill, backend, &output)?;
    finish_cleanly_on_interrupt();
    let traffic = output.zarr.as_ref().and_then(|z| z.s3.traffic.clone());
    run(
        &mut tiles,
        source,
        expected,
        args.output.as_ref(),
        traffic.as_deref(),
    )
}

fn progress_bar(expected: Option<u64>) -> ProgressBar {
    let bar = match expected {
        Some(total) => ProgressBar::new(total),
        None => ProgressBar::no_length(),
    };
    let style = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {binary_bytes_per_sec} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

/// How the input ended.
enum Ending {
    /// It ran out.
    Done,
    /// A bounded stream was offered more than its shape.
    Excess,
    /// SIGINT or SIGTERM.
    Interrupted,
}

/// Streams `source` into `tiles`; whatever happens to the input, every
/// byte taken is written and the store closed before an error is returned.
/// The progress bar counts the input, and with `traffic` (object storage)
/// the bytes uploaded and requests made.
fn run(
    tiles: &mut MultiscaleStream,
    mut source: Source,
    expected: Option<u64>,
    output: Option<&PathBuf>,
    traffic: Option<&S3Traffic>,
) -> Result<ExitCode, CliError> {
    let bar = progress_bar(expected);
    let mut buf = vec![0u8; PIECE_BYTES];
    let mut busy = 0.0;
    let ending = loop {
        if interrupted() {
            break Ending::Interrupted;
        }
        let piece = source.next(&mut buf)?;
        let n = piece.len();
        if n == 0 {
            break match interrupted() {
                true => Ending::Interrupted,
                false => Ending::Done,
            };
        }
        let started = Instant::now();
        let taken = tiles.append(piece)?;
        busy += started.elapsed().as_secs_f64();
        bar.inc(taken as u64);
        if let Some(t) = traffic.filter(|t| t.requests() > 0) {
            bar.set_message(format!(
                "uploaded {} in {} requests",
                indicatif::HumanBytes(t.uploaded_bytes()),
                t.requests()
            ));
        }
        if taken < n {
            break Ending::Excess;
        }
    };
    let started = Instant::now();
    let finished = tiles.finish();
    busy += started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    match ending {
        Ending::Done => report(&finished?, busy, output).map(|()| ExitCode::SUCCESS),
        Ending::Excess => {
            let summary = finished?;
            report(&summary, busy, output)?;
            Err(format!(
                "the input is longer than the shape: its {} planes were written and the rest was refused",
                summary.planes
            ).into())
        }
        Ending::Interrupted => {
            let summary = finished.map_err(|e| format!("interrupted: {e}"))?;
            report(&summary, busy, output)?;
            let _ = writeln!(
                std::io::stderr(),
                "retile: interrupted: the {} planes taken were written and the store closed",
                summary.planes
            );
            Ok(ExitCode::from(130))
        }
    }
}

/// Prints what a finished stream did and where its time went.
fn report(summary: &Summary, busy: f64, output: Option<&PathBuf>) -> Result<(), CliError> {
    let gb = summary.bytes as f64 / 1e9;
    say(format_args!(
        "retile: {:.3} GB in {} tiles ({} planes, {} epochs) in {:.2} s: {:.2} GB/s of input ({:.2} GB/s counting the source)\n",
        gb, summary.tiles, summary.planes, summary.epochs, summary.seconds, gb / busy.max(1e-9), summary.gigabytes_per_second()
    ))?;
    say(format_args!(
        "  tiling {:.2} s, waiting for the sink {:.2} s, sink {:.2} s; tile buffers {:.1} MB (made in {:.2} s, before the first frame), peak memory {:.1} MB\n",
        summary.scatter_seconds, summary.wait_seconds, summary.sink_seconds, summary.buffer_bytes as f64 / 1e6,
        summary.setup_seconds,
        peak_rss_bytes().unwrap_or(0) as f64 / 1e6
    ))?;
    let sink = &summary.sink;
    if sink.threads > 0 {
        say(format_args!(
            "  stored {:.3} GB in {} files ({:.2}x smaller); {} writer threads spent {:.2} s of CPU encoding and {:.2} s writing; {} chunks of fill alone left out\n",
            sink.stored_bytes as f64 / 1e9, sink.files, summary.bytes as f64 / (sink.stored_bytes.max(1)) as f64,
            sink.threads, sink.encode_seconds, sink.write_seconds, sink.omitted_chunks
        ))?;
    }
    if let Some(note) = &summary.codec_on {
        say(format_args!("  chunks compressed on the {note}\n"))?;
    }
    let (uploaded, requests) = (sink.uploaded_bytes, sink.requests);
    if requests > 0 {
        let gb = uploaded as f64 / 1e9;
        say(format_args!(
            "  uploaded {gb:.3} GB in {requests} requests ({:.0} requests per GB), {:.2} GB/s of upload\n",
            requests as f64 / gb.max(1e-9),
            gb / busy.max(1e-9)
        ))?;
    }
    for (k, level) in summary
        .levels
        .iter()
        .enumerate()
        .filter(|_| summary.levels.len() > 1)
    {
        say(format_args!(
            "  level {k}: {}, {:.3} GB in {} files\n",
            shape_text(&level.shape),
            level.sink.stored_bytes as f64 / 1e9,
            level.sink.files
        ))?;
    }
    match output {
        Some(path) => say(format_args!("  wrote {}\n", path.display())),
        None => say(format_args!(
            "  measured only (give --output DIR to write a Zarr store)\n"
        )),
    }
}

/// `retile` with no arguments: stream a synthetic 512 MB camera recording
/// into a compressed Zarr store in the temporary directory.
pub fn demo() -> Result<ExitCode, CliError> {
    let path = std::env::temp_dir().join(format!("retile-demo-{}.zarr", std::process::id()));
    say(format_args!("retile demo: streaming 256 synthetic 1024x1024 u16 frames (512 MB) into 64x128x128 tiles, shards of 1x4x4 tiles, blosc-zstd:1, with a mean pyramid (an OME-Zarr image)\n"))?;
    let spec = StreamSpec::new(DType::U16, vec![0, 1024, 1024], vec![64, 128, 128])?;
    let output = Output {
        zarr: Some(ZarrOptions {
            path: path.clone(),
            codec: "blosc-zstd:1".parse()?,
            shard: Some(vec![1, 4, 4]),
            ..Default::default()
        }),
        pyramid: Some(PyramidOptions::default()),
        ngff: Some(NgffOptions::default()),
    };
    let mut tiles = open_output(spec, &[0, 0], Backend::Cpu { threads: 0 }, &output)?;
    let total = 256 * 1024 * 1024u64;
    let code = run(
        &mut tiles,
        Source::Synthetic {
            index: 0,
            total,
            esize: 2,
        },
        Some(total * 2),
        Some(&path),
        None,
    )?;
    say(format_args!("\nmore: retile --help; retile stream --help; retile eval 'logical_divide((4,2,3):(2,1,8), 4:2)'\n"))?;
    Ok(code)
}
