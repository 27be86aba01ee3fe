//! `retile rechunk SRC DST`: an existing Zarr array (v2 or v3) re-tiled into
//! a new store, written as `retile stream` writes one, within a memory
//! limit, with a progress bar.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use retile_rechunk::{rechunk, Rechunk, ZarrSource};
use retile_stream::{Backend, Codec, Output, S3Options, ZarrOptions};

use crate::error::CliError;
use crate::stream_cmd::{parse_bytes, parse_list, progress_bar, Dims, PyramidArgs};

/// Arguments of `retile rechunk`.
#[derive(Args)]
pub struct RechunkArgs {
    /// The Zarr array to read (v2 or v3): a directory, or s3://BUCKET/PREFIX.
    src: PathBuf,
    /// The new store (a directory, or s3://BUCKET/PREFIX).
    dst: PathBuf,
    /// The new tile (chunk) shape, slowest first, e.g. 1,512,512.
    #[arg(long, value_parser = parse_list)]
    tile: Dims,
    /// Tiles per shard along each dimension (default: no shards).
    #[arg(long, value_parser = parse_list)]
    shard: Option<Dims>,
    /// none, zstd:L, gzip:L, blosc-lz4:L, blosc-zstd:L (as for `retile stream`).
    #[arg(long, default_value = "none")]
    codec: String,
    #[command(flatten)]
    pyramid: PyramidArgs,
    /// The most memory to use (e.g. 4G): the new array's tile buffers and
    /// two slabs of the source's chunks; refused, with the figure, when
    /// one slab cannot fit (default: slabs of about 256 MiB).
    #[arg(long, value_parser = parse_bytes)]
    memory: Option<u64>,
    /// Replace a Zarr store already at DST.
    #[arg(long)]
    overwrite: bool,
    /// Allow plain-HTTP S3 endpoints (a local server), for SRC and DST.
    #[arg(long)]
    allow_http: bool,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

/// Runs `retile rechunk`.
pub fn run(args: &RechunkArgs) -> Result<ExitCode, CliError> {
    let s3 = S3Options {
        allow_http: args.allow_http,
        ..Default::default()
    };
    let source = ZarrSource::open(&args.src, &s3).map_err(|e| e.to_string())?;
    let pyramid = args.pyramid.options()?;
    let job = Rechunk {
        tile: args.tile.0.clone(),
        output: Output {
            zarr: Some(ZarrOptions {
                path: args.dst.clone(),
                codec: args.codec.parse::<Codec>()?,
                shard: args.shard.as_ref().map(|d| d.0.clone()),
                overwrite: args.overwrite,
                s3,
                direct_io_min_chunk: crate::settings::direct_io_min_chunk()?,
                ..Default::default()
            }),
            ngff: None,
            pyramid,
        },
        backend: Backend::Cpu {
            threads: args.threads,
        },
        memory: args.memory,
    };
    let total = source.plane_bytes() * source.shape()[0];
    let bar = progress_bar(Some(total));
    let summary = rechunk(&source, &job, |bytes| bar.inc(bytes));
    bar.finish_and_clear();
    let summary = summary.map_err(|e| e.to_string())?;
    println!(
        "re-tiled {} planes ({} bytes) of {} into {} in {:.2} s",
        summary.planes,
        summary.bytes,
        args.src.display(),
        args.dst.display(),
        summary.seconds
    );
    Ok(ExitCode::SUCCESS)
}
