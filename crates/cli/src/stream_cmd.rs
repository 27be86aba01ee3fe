//! `retile plan stream` and `retile stream`: the streaming tiler on the
//! command line.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use crate::error::CliError;
use crate::input::{Cut, Input, InputError, Next, Pages};
use crate::print::say;
use crate::signals::{interrupted, second_interrupt, stop_on_interrupt};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use retile_stream::{
    default_axes, open_output, ArrayOptions, Axis, Backend, Codec, CodecOn, Continuation, DType,
    DimRef, Method, MultiscaleStream, NgffOptions, Output, PyramidOptions, S3Options, S3Traffic,
    Shuffle, StreamDType, StreamError, StreamPlan, StreamSpec, Summary, SyncPolicy, UserMetadata,
    ZarrOptions,
};

/// The stream's shape, tile and element type.
#[derive(Args, Clone)]
pub struct ShapeArgs {
    /// Extents, slowest first; 0 first = unbounded (e.g. 0,2048,2048).
    #[arg(long, value_parser = parse_list, required = true)]
    shape: Option<Dims>,
    /// Tile extents, slowest first (e.g. 64,256,256).
    #[arg(long, value_parser = parse_list, required = true)]
    tile: Option<Dims>,
    /// Element type: u8 u16 u32 u64 i8 i16 i32 i64 f16 bf16 f32 f64
    /// (bf16 is stored as Zarr's `bfloat16`, which zarr-python cannot open
    /// yet; u16 stores the same bits as a type every reader opens).
    /// Default u16.
    #[arg(long)]
    dtype: Option<String>,
    /// Memory for tile buffers, e.g. 2G or 1500M: as many epoch buffers
    /// as fit, at least two (the default: two epochs).
    #[arg(long, value_parser = parse_bytes)]
    memory: Option<u64>,
    /// The order in which the elements arrive, slowest first, when it is
    /// not the stored order: --dim-names names (default t,y,x and the
    /// like by rank) or stored indices (e.g. t,x,y, or 0,2,1). An input
    /// whose slowest dimension is not the stored first arrives in slabs of
    /// it, one tile (or shard) thick, each held whole while the one before
    /// is written (the plan says how much memory that takes); the array is
    /// claimed when the input ends.
    #[arg(long, value_delimiter = ',')]
    input_order: Option<Vec<String>>,
}

/// Bytes, with an optional K, M, G or T suffix (powers of 1024; KiB and
/// the like mean the same).
pub(crate) fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let shift = match t[digits.len()..].to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        other => {
            return Err(format!(
                "'{other}' is not a size suffix (write e.g. 1500M or 2G)"
            ))
        }
    };
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("'{t}' is not a size (write e.g. 1500M or 2G)"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{t} is more bytes than 64 bits hold"))
}

/// Arguments of `retile plan stream`.
#[derive(Args)]
#[command(mut_arg("shape", |a| a.required(false).required_unless_present("config")))]
#[command(mut_arg("tile", |a| a.required(false).required_unless_present("config")))]
pub struct PlanArgs {
    #[command(flatten)]
    shape: ShapeArgs,
    /// The memory budget of the arrays a settings file describes (as
    /// `retile stream --config FILE` takes it), and what each array's tile
    /// buffers take; nothing is written.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["shape", "tile", "dtype", "memory", "input_order", "dim_names", "json", "pyramid", "levels", "downsample", "svg", "shard", "output"])]
    config: Option<PathBuf>,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pyramid: PyramidArgs,
    /// Draw the plan as an SVG picture: a frame's tiles, shards, epochs, the
    /// order tiles retire in, and the pyramid's levels.
    #[arg(long)]
    svg: bool,
    /// Tiles per shard, slowest first, ruled off in the picture (e.g. 1,4,4);
    /// an input whose slowest dimension is not the stored first
    /// (--input-order) arrives in slabs of whole shards, and the plan's
    /// memory says so.
    #[arg(long, value_parser = parse_list)]
    shard: Option<Dims>,
    /// Write the picture to this file instead of stdout (implies --svg).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Dimension names, slowest first, as `retile stream` takes them: the
    /// names --input-order uses (default t,y,x and the like by rank).
    #[arg(long, value_delimiter = ',')]
    dim_names: Option<Vec<String>>,
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
    pub(crate) fn options(&self) -> Result<Option<PyramidOptions>, CliError> {
        let Some(method) = &self.pyramid else {
            return match self.levels.is_some() || self.downsample.is_some() {
                true => {
                    Err("--levels and --downsample take effect only with --pyramid METHOD".into())
                }
                false => Ok(None),
            };
        };
        let method: Method = method.parse()?;
        Ok(Some(PyramidOptions {
            method,
            downsample: self.downsample()?,
            levels: self.levels,
        }))
    }

    /// `--downsample`: whether each dimension is halved (`None`: not given).
    fn downsample(&self) -> Result<Option<Vec<bool>>, CliError> {
        let Some(d) = &self.downsample else {
            return Ok(None);
        };
        let halved = d.0.iter().map(|&v| match v {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(format!("--downsample takes 0 or 1 per dimension, not {v}")),
        });
        Ok(Some(halved.collect::<Result<Vec<bool>, String>>()?))
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
#[command(mut_arg("memory", |memory| memory.help_heading(heading::PERFORMANCE)))]
#[command(mut_arg("shape", |a| a.required(false).required_unless_present_any(["config", "append"])))]
#[command(mut_arg("tile", |a| a.required(false).required_unless_present_any(["config", "append"])))]
pub struct StreamArgs {
    #[command(flatten, next_help_heading = heading::INPUT)]
    shape: ShapeArgs,
    /// Raw row-major input file, or - for stdin; without it a synthetic
    /// pattern whose values encode their linear index is streamed. With
    /// --config, one KEY=FILE per array (e.g. --input cam0=cam0.raw).
    #[arg(long, help_heading = heading::INPUT)]
    input: Vec<String>,
    /// Several arrays (or an HCS plate) at once, described by a settings
    /// file with retile.Stream's keys: JSON, or TOML for a .toml file (e.g.
    /// {"output": "acq.zarr", "arrays": {"cam0": {"shape": [0, 512, 512],
    /// "tile": [16, 128, 128], "dtype": "u16"}}}); frames from --input KEY=FILE.
    #[arg(long, help_heading = heading::INPUT, value_name = "FILE", conflicts_with_all = ["shape", "tile", "dtype", "memory", "input_order", "planes", "output", "shard", "codec", "shuffle", "fill", "pyramid", "levels", "downsample", "ngff", "dim_names", "dim_types", "units", "scale", "buffered_io", "writers", "codec_on", "sync", "backend", "threads"])]
    config: Option<PathBuf>,
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
    /// Replace the Zarr store at --output if there is one (it is deleted
    /// first; anything there that is not part of a Zarr store is refused,
    /// and so is a store another stream is writing).
    #[arg(long, help_heading = heading::STORE)]
    overwrite: bool,
    /// Continue the store retile wrote at --output from its last claimed
    /// plane (after a restart or a crash): shape, dtype, tile, shards,
    /// codec, fill and pyramid come from the store (one given that
    /// contradicts it is an error). It prints the plane it continues from:
    /// --input holds the planes from that one on.
    #[arg(long, help_heading = heading::STORE, conflicts_with_all = ["overwrite", "config", "planes"])]
    append: bool,
    /// When a local store reaches the disk: end (every file synced once,
    /// before the last claim) or rows (every row of files synced before it
    /// is claimed, so that every claim survives a power loss; slower).
    /// Default end.
    #[arg(long, help_heading = heading::STORE, value_parser = parse_sync)]
    sync: Option<SyncPolicy>,
    /// User attributes of the array (of an image: its group), a JSON
    /// object inline or @FILE holding one (e.g. '{"sample": "mouse 7"}');
    /// the keys ome and retile are retile's own and refused.
    #[arg(long, help_heading = heading::STORE, value_name = "JSON|@FILE")]
    attributes: Option<String>,
    /// Tiles per shard per dimension, slowest first (e.g. 1,4,4); a first
    /// count above 1 makes shards span several epochs.
    #[arg(long, help_heading = heading::CHUNKS, value_parser = parse_list)]
    shard: Option<Dims>,
    /// Chunk codec: none, zstd[:1-22], gzip[:0-9], blosc-lz4[:0-9],
    /// blosc-lz4hc[:0-9], blosc-zstd[:0-9] or blosc-zlib[:0-9]. Default none.
    #[arg(long, help_heading = heading::CHUNKS)]
    codec: Option<String>,
    /// Shuffle of the blosc codecs: none, byte (the default) or bit.
    #[arg(long, help_heading = heading::CHUNKS)]
    shuffle: Option<String>,
    /// Value of padding in edge tiles, in the element type (e.g. 0, -1,
    /// 1.5, nan). Default 0.
    #[arg(long, help_heading = heading::CHUNKS, allow_hyphen_values = true)]
    fill: Option<String>,
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
    /// (direct I/O is used for chunks of 64 KiB or more wherever the
    /// output's file system takes it).
    #[arg(long, help_heading = heading::PERFORMANCE)]
    buffered_io: bool,
    /// Writer threads: tiles encoded and written at once (1 to 256;
    /// default one per core with compression, one per core but at least 16
    /// without).
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
pub struct Dims(pub(crate) Vec<u64>);

/// `--sync`'s policy, with the reason where it is none.
fn parse_sync(text: &str) -> Result<SyncPolicy, String> {
    text.parse()
        .map_err(|e: retile_stream::StreamError| e.to_string())
}

/// `--attributes`: a JSON object, inline or `@FILE`.
fn attributes(text: &str) -> Result<UserMetadata, CliError> {
    Ok(UserMetadata::new(attributes_json(text)?).map_err(|e| format!("--attributes: {e}"))?)
}

/// The JSON of `--attributes JSON|@FILE`.
fn attributes_json(text: &str) -> Result<serde_json::Value, CliError> {
    let (json, from) = match text.strip_prefix('@') {
        Some(file) => (
            std::fs::read_to_string(file)
                .map_err(|e| format!("--attributes @{file}: cannot read the file: {e}"))?,
            format!("the file {file}"),
        ),
        None => (text.to_owned(), "--attributes".to_owned()),
    };
    let value: serde_json::Value = serde_json::from_str(&json)
        .map_err(|e| format!("{from} does not hold JSON ({e}); write a JSON object, e.g. '{{\"sample\": \"mouse 7\"}}', or @FILE"))?;
    Ok(value)
}

/// The array the flags describe, as `retile.Stream` names its options:
/// only what was given (the defaults left out), so that a stream appending
/// to a store checks exactly what its user said against the store.
fn described(args: &StreamArgs) -> Result<ArrayOptions, CliError> {
    let dims = |d: &Option<Dims>| d.as_ref().map(|d| d.0.clone());
    let pyramid = &args.pyramid;
    let downsample = pyramid.downsample()?;
    Ok(ArrayOptions {
        shape: dims(&args.shape.shape).unwrap_or_default(),
        tile: dims(&args.shape.tile).unwrap_or_default(),
        dtype: args.shape.dtype.clone().unwrap_or_default(),
        input_order: args
            .shape
            .input_order
            .as_ref()
            .map(|order| order.iter().map(|d| DimRef::from(d.as_str())).collect()),
        shard: dims(&args.shard),
        codec: args.codec.clone(),
        fill: args.fill.clone().map(serde_json::Value::String),
        dim_names: args.dim_names.clone(),
        shuffle: args.shuffle.clone(),
        writers: args.writers,
        buffered_io: args.buffered_io,
        pyramid: pyramid.pyramid.clone(),
        levels: pyramid.levels,
        downsample,
        ngff: args.ngff,
        dim_types: args.dim_types.clone(),
        units: args.units.as_ref().map(|units| {
            units
                .iter()
                .map(|u| Some(u.clone()).filter(|u| !u.is_empty()))
                .collect()
        }),
        scale: args.scale.clone(),
        codec_on: args.codec_on.clone(),
        memory: args.shape.memory,
        sync: args.sync.map(|s| s.to_string()),
        attributes: args
            .attributes
            .as_deref()
            .map(attributes_json)
            .transpose()?,
    })
}

pub(crate) fn parse_list(text: &str) -> Result<Dims, String> {
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
    /// The stream's spec; `names` are the dimensions' names `--input-order`
    /// uses, `shard` the shards (an input in slabs takes whole ones).
    fn spec(&self, names: Option<&[String]>, shard: Option<&Dims>) -> Result<StreamSpec, CliError> {
        let (Some(shape), Some(tile)) = (&self.shape, &self.tile) else {
            return Err("give --shape and --tile (or --config FILE for several arrays)".into());
        };
        let options = ArrayOptions {
            shape: shape.0.clone(),
            tile: tile.0.clone(),
            dtype: self.dtype.clone().unwrap_or_else(|| "u16".into()),
            input_order: self
                .input_order
                .as_ref()
                .map(|order| order.iter().map(|d| DimRef::from(d.as_str())).collect()),
            dim_names: names.map(<[String]>::to_vec),
            shard: shard.map(|d| d.0.clone()),
            memory: self.memory,
            ..Default::default()
        };
        let named_as_flags = |e| match e {
            StreamError::Invalid(m) => {
                StreamError::Invalid(m.replacen("input_order", "--input-order", 1))
            }
            e => e,
        };
        Ok(options.spec().map_err(named_as_flags)?)
    }
}

/// `retile plan stream`.
pub fn plan(args: &PlanArgs) -> Result<ExitCode, CliError> {
    if let Some(config) = &args.config {
        let budget = crate::acquire_cmd::read_settings(config)?.budget(Default::default())?;
        return say(format_args!("{budget}")).map(|()| ExitCode::SUCCESS);
    }
    let spec = args
        .shape
        .spec(args.dim_names.as_deref(), args.shard.as_ref())?;
    if args.svg || args.output.is_some() {
        let levels = match args.pyramid.options()? {
            Some(pyramid) => pyramid.level_plans(&spec)?,
            None => Vec::new(),
        };
        let shard = args.shard.as_ref().map(|d| d.0.as_slice());
        return crate::plan_draw::draw(&spec, shard, &levels, args.output.as_deref());
    }
    if args.shard.is_some() && spec.input_slab().is_none() {
        return Err("--shard is drawn in the picture (add --svg), and sets the slabs of an input whose slowest dimension is not the stored first (--input-order); neither is asked for here".into());
    }
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

/// What `args` ask to write; options that need `--output` without it are
/// an error, not silently ignored.
fn output(args: &StreamArgs, rank: usize) -> Result<Output, CliError> {
    let mut codec = args.codec.as_deref().unwrap_or("none").parse::<Codec>()?;
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
            (args.sync.is_some_and(|s| s != SyncPolicy::End), "--sync"),
            (args.attributes.is_some(), "--attributes"),
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
        direct_io_min_chunk: crate::settings::direct_io_min_chunk()?,
        writers: args.writers,
        overwrite: args.overwrite,
        sync: args.sync.unwrap_or_default(),
        s3: S3Options {
            allow_http: args.allow_http,
            retry_timeout: retry_timeout(args.retry_seconds)?,
            traffic: Some(std::sync::Arc::new(S3Traffic::default())),
            cancel: second_interrupt(),
            ..Default::default()
        },
        codec_on: args
            .codec_on
            .as_deref()
            .unwrap_or("auto")
            .parse::<CodecOn>()?,
        user: args.attributes.as_deref().map(attributes).transpose()?,
        // the array as written, defaults included: what a later --append reads
        record: Some(
            ArrayOptions {
                dtype: args.shape.dtype.clone().unwrap_or_else(|| "u16".into()),
                ..described(args)?
            }
            .record(),
        ),
        resume: None,
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

/// `--retry-seconds` as a duration.
fn retry_timeout(seconds: f64) -> Result<std::time::Duration, CliError> {
    std::time::Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("--retry-seconds takes a number of seconds, not {seconds}").into())
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
    if let Some(config) = &args.config {
        let store = S3Options {
            allow_http: args.allow_http,
            retry_timeout: retry_timeout(args.retry_seconds)?,
            traffic: Some(std::sync::Arc::new(S3Traffic::default())),
            ..Default::default()
        };
        return crate::acquire_cmd::stream(config, &args.input, store, args.overwrite);
    }
    let input = match args.input.as_slice() {
        [] => None,
        [one] => Some(one.as_str()),
        _ => return Err(
            "one --input without --config (several arrays take --config FILE, each input KEY=FILE)"
                .into(),
        ),
    };
    if args.append {
        return append(args, input);
    }
    let spec = args
        .shape
        .spec(args.dim_names.as_deref(), args.shard.as_ref())?;
    let esize = spec.dtype().size();
    let fill = spec
        .dtype()
        .parse_value(args.fill.as_deref().unwrap_or("0"))
        .map_err(|e| format!("--fill: {e}"))?;
    let plane_bytes = spec
        .plane_elements()
        .ok()
        .and_then(|n| n.checked_mul(esize as u64))
        .ok_or("a plane of this shape does not fit in 64 bits of bytes")?;
    let planes = match (spec.is_unbounded(), args.planes, input) {
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
    let cut = Cut::for_stream(plane_bytes, output.pyramid.is_some());
    let (input, expected) = match input {
        None => (
            Input::synthetic(total / esize as u64, esize, cut),
            Some(total),
        ),
        Some(path) => (
            Input::open(
                path,
                cut,
                Pages::for_store(output.zarr.as_ref().map(|z| z.path.as_path())),
            )?,
            (!spec.is_unbounded()).then_some(total),
        ),
    };
    // from here on an interrupt stops the input and the store is closed
    stop_on_interrupt();
    let mut tiles = open_output(spec, &fill, backend, &output)?;
    let traffic = output.zarr.as_ref().and_then(|z| z.s3.traffic.clone());
    run(
        &mut tiles,
        input,
        expected,
        args.output.as_ref(),
        traffic.as_deref(),
    )
}

/// `retile stream --append`: the store at `--output` continued from its
/// last claimed plane with the planes of `input`, which must hold the
/// recording from that plane on (the plane is printed first). The claimed
/// planes of the row of files the claim ends in are read back from the
/// store and taken again first, so that the row is rewritten whole.
fn append(args: &StreamArgs, input: Option<&str>) -> Result<ExitCode, CliError> {
    let Some(path) = &args.output else {
        return Err("--append continues the store at --output: give it".into());
    };
    let Some(input) = input else {
        return Err("--append continues a recording: give its planes from the last claimed one on with --input FILE (or - for stdin)".into());
    };
    let backend = match args.backend.as_str() {
        "cuda" => Backend::Cuda,
        _ => Backend::Cpu {
            threads: args.threads,
        },
    };
    let store = ZarrOptions {
        s3: S3Options {
            allow_http: args.allow_http,
            retry_timeout: retry_timeout(args.retry_seconds)?,
            cancel: second_interrupt(),
            ..Default::default()
        },
        direct_io_min_chunk: crate::settings::direct_io_min_chunk()?,
        ..Default::default()
    };
    let continuation = Continuation::open(path, &described(args)?, store, backend)?;
    let spec = &continuation.array.spec;
    let plane_bytes = spec.plane_elements()? * spec.dtype().size() as u64;
    let replayed = continuation.claimed - continuation.first_plane;
    let expected =
        (!spec.is_unbounded()).then(|| (spec.shape()[0] - replayed).saturating_mul(plane_bytes));
    let _ = writeln!(
        std::io::stderr(),
        "retile: appending to {}: it claims {} planes, so the input is taken as plane {} on ({replayed} claimed planes of the row it ends in are rewritten from the store first, and counted below)",
        path.display(),
        continuation.claimed,
        continuation.claimed
    );
    let pyramid = continuation.array.output.pyramid.is_some();
    let cut = Cut::for_stream(plane_bytes, pyramid);
    let input = Input::open(input, cut, Pages::for_store(Some(path)))?;
    stop_on_interrupt();
    let mut tiles = continuation.open_stream(backend)?;
    run(&mut tiles, input, expected, Some(path), None)
}

pub(crate) fn progress_bar(expected: Option<u64>) -> ProgressBar {
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
    /// Reading it failed.
    Failed(InputError),
}

/// Streams `input` into `tiles`; whatever happens to the input, every
/// byte taken is written and the store closed before an error is returned.
/// The progress bar counts the input, and with `traffic` (object storage)
/// the bytes uploaded and requests made.
fn run(
    tiles: &mut MultiscaleStream,
    mut input: Input,
    expected: Option<u64>,
    output: Option<&PathBuf>,
    traffic: Option<&S3Traffic>,
) -> Result<ExitCode, CliError> {
    let bar = progress_bar(expected);
    let mut busy = 0.0;
    let ending = loop {
        if interrupted() {
            break Ending::Interrupted;
        }
        let piece = match input.next(interrupted) {
            Ok(Next::Piece(piece)) => piece,
            Ok(Next::End) if !interrupted() => break Ending::Done,
            Ok(Next::End | Next::Stopped) => break Ending::Interrupted,
            Err(e) => break Ending::Failed(e),
        };
        let started = Instant::now();
        let taken = tiles.append(piece.bytes())?;
        busy += started.elapsed().as_secs_f64();
        bar.inc(taken as u64);
        if let Some(t) = traffic.filter(|t| t.requests() > 0) {
            bar.set_message(format!(
                "uploaded {} in {} requests",
                indicatif::HumanBytes(t.uploaded_bytes()),
                t.requests()
            ));
        }
        let refused = taken < piece.bytes().len();
        input.give_back(piece);
        if refused {
            break Ending::Excess;
        }
    };
    let started = Instant::now();
    let finished = tiles.finish();
    busy += started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    match ending {
        Ending::Done if interrupted() => stopped(finished, busy, output),
        Ending::Done => report(&finished?, busy, output).map(|()| ExitCode::SUCCESS),
        Ending::Excess => {
            let summary = finished?;
            report(&summary, busy, output)?;
            Err(format!(
                "the input is longer than the shape: its {} planes were written and the rest was refused",
                summary.planes
            ).into())
        }
        Ending::Interrupted => stopped(finished, busy, output),
        Ending::Failed(error) => Err(CliError::InputFailed {
            planes: match finished {
                Ok(summary) => {
                    report(&summary, busy, output)?;
                    summary.planes
                }
                Err(
                    StreamError::PartialPlane { planes, .. }
                    | StreamError::ShortInput { planes, .. },
                ) => planes,
                Err(StreamError::HeldInput { .. }) => 0,
                Err(e) => return Err(format!("{error}; then closing the store failed: {e}").into()),
            },
            source: error,
        }),
    }
}

/// The end of a stream stopped by SIGINT or SIGTERM: whatever the input
/// held (an incomplete plane is dropped, a bounded shape may be short),
/// exit status 130 once every complete plane is written and the store
/// closed; a failure to close it is an error.
fn stopped(
    finished: Result<Summary, StreamError>,
    busy: f64,
    output: Option<&PathBuf>,
) -> Result<ExitCode, CliError> {
    let (planes, dropped) = match finished {
        Ok(summary) => {
            // the summary is a courtesy: a closed stdout does not change the status
            let _ = report(&summary, busy, output);
            (summary.planes, String::new())
        }
        Err(StreamError::PartialPlane { planes, bytes }) => (
            planes,
            format!("; the {bytes} bytes of the incomplete plane after them were dropped"),
        ),
        Err(StreamError::ShortInput { planes, expected }) => (
            planes,
            format!("; the array is {planes} of the shape's {expected} planes long"),
        ),
        Err(StreamError::HeldInput { bytes, expected }) => (
            0,
            format!("; the input order's slowest dimension is not the stored first, so the {bytes} of {expected} bytes taken completed no stored plane"),
        ),
        Err(e) => return Err(format!("interrupted, and closing the store failed: {e}").into()),
    };
    let _ = writeln!(
        std::io::stderr(),
        "retile: interrupted: the {planes} complete planes taken were written and the store closed{dropped}"
    );
    Ok(ExitCode::from(130))
}

/// Prints what a finished stream did and where its time went.
fn report(summary: &Summary, busy: f64, output: Option<&PathBuf>) -> Result<(), CliError> {
    let gb = summary.bytes as f64 / 1e9;
    say(format_args!(
        "retile: {:.3} GB in {} tiles ({} planes, {} epochs) in {:.2} s: {:.2} GB/s of input ({:.2} GB/s counting the source)\n",
        gb, summary.tiles, summary.planes, summary.epochs, summary.seconds, gb / busy.max(1e-9), summary.gigabytes_per_second()
    ))?;
    // a backend that names its setup's parts has a line of its own for them
    let started = match summary.setup_detail {
        Some(_) => String::new(),
        None => format!(
            " (started in {:.2} s: the first epoch's made before the first frame, the others meanwhile)",
            summary.setup_seconds
        ),
    };
    say(format_args!(
        "  tiling {:.2} s, waiting for the sink {:.2} s, sink {:.2} s; tile buffers {:.1} MB{started}, peak memory {:.1} MB\n",
        summary.scatter_seconds, summary.wait_seconds, summary.sink_seconds, summary.buffer_bytes as f64 / 1e6,
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
    if let Some(detail) = &summary.setup_detail {
        say(format_args!(
            "  setup {:.2} s: {detail}\n",
            summary.setup_seconds
        ))?;
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
        Input::synthetic(
            total,
            2,
            Cut::for_stream(1024 * 1024 * 2, output.pyramid.is_some()),
        ),
        Some(total * 2),
        Some(&path),
        None,
    )?;
    say(format_args!("\nmore: retile --help; retile stream --help; retile eval 'logical_divide((4,2,3):(2,1,8), 4:2)'\n"))?;
    Ok(code)
}
