//! Where and how a Zarr array is written: the options every sink of the
//! store takes.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use retile_plan::{CodecOn, StreamError};

use crate::codec::Codec;
use crate::object::S3Options;
use crate::user::UserMetadata;

/// Most writer threads a sink starts.
///
/// ```
/// use retile_plan::{DType, Sink, StreamPlan, StreamSpec};
/// use retile_store::{ZarrOptions, ZarrSink, MAX_WRITERS};
/// let dir = tempfile::tempdir()?;
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 4])?)?;
/// let options = ZarrOptions { path: dir.path().to_owned(), writers: Some(MAX_WRITERS + 1), ..Default::default() };
/// let err = ZarrSink::new(options).begin(&plan, &[0]).unwrap_err().to_string();
/// assert!(err.contains("1 to 256 writer threads"), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_WRITERS: usize = 256;

/// Where and how the Zarr array is written.
///
/// ```
/// use retile_store::{Codec, ZarrOptions};
/// let options = ZarrOptions {
///     path: "out.zarr".into(),
///     codec: "blosc-zstd:1".parse::<Codec>()?,
///     shard: Some(vec![1, 4, 4]),
///     ..Default::default()
/// };
/// assert_eq!(options.codec.to_string(), "blosc-zstd:1");
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ZarrOptions {
    /// The directory of the store (created if missing), or
    /// `s3://BUCKET/PREFIX` for a store in S3-compatible object storage
    /// (reached as [`S3Options`] and the `AWS_*` environment variables say).
    pub path: PathBuf,
    /// Compression of each chunk.
    pub codec: Codec,
    /// Tiles per shard per dimension (slowest first); `None` = no sharding.
    /// A shard deeper than one epoch along the first dimension is appended
    /// to as its epochs land.
    pub shard: Option<Vec<u64>>,
    /// Names of the dimensions, slowest first.
    pub dimension_names: Option<Vec<String>>,
    /// Write chunks through the page cache. By default chunks of at least
    /// 64 KiB are written with direct I/O (`O_DIRECT`) wherever the store's
    /// file system takes it: the page cache's fresh pages cost more than
    /// the disk's bandwidth on many machines, and a recording is not read
    /// back soon. Smaller chunks go through the page cache, which gathers
    /// their writes (see `direct_io_min_chunk`).
    pub buffered_io: bool,
    /// The smallest chunk, in uncompressed bytes, written with direct I/O
    /// (where `buffered_io` is false and the file system takes it): `None`
    /// for [`DIRECT_IO_MIN_CHUNK`](crate::DIRECT_IO_MIN_CHUNK) (64 KiB); `Some(0)` writes every chunk
    /// with direct I/O, however small. The CLI takes it from the
    /// environment variable `RETILE_DIRECT_IO_MIN_CHUNK`.
    ///
    /// ```
    /// use retile_store::{ZarrOptions, DIRECT_IO_MIN_CHUNK};
    /// let options = ZarrOptions { direct_io_min_chunk: Some(0), ..Default::default() };
    /// assert_eq!(options.direct_io_min_chunk.unwrap_or(DIRECT_IO_MIN_CHUNK), 0);
    /// assert_eq!(ZarrOptions::default().direct_io_min_chunk, None); // 64 KiB
    /// ```
    pub direct_io_min_chunk: Option<u64>,
    /// Writer threads: how many tiles are encoded and written at once (1 to
    /// [`MAX_WRITERS`]); `None` = one per core with compression
    /// (compression keeps each writer on a core), one per core but at least
    /// 16 without (a write waits on the disk, so more writes than cores keep
    /// it busy). Sinks asking for as many share one set of threads.
    pub writers: Option<usize>,
    /// Replace a Zarr store already at `path` (deleting it first). Without
    /// it, a path that exists and is not an empty directory (or a prefix
    /// holding objects) is refused.
    pub overwrite: bool,
    /// How an `s3://` path is reached (ignored for a local directory).
    pub s3: S3Options,
    /// When a local store's files are synced to the disk (objects in S3
    /// are stored once their upload completes).
    pub sync: SyncPolicy,
    /// Where chunks are compressed when the stream runs on a GPU that can
    /// write the codec itself (`zstd`, `blosc-lz4`, `blosc-zstd` through
    /// nvCOMP): measured and chosen (`Auto`), the GPU, or the CPU. A CPU
    /// stream always compresses on the CPU.
    pub codec_on: CodecOn,
    /// The user's attributes and per-plane records, written with the
    /// array's claims (`None`: none). The levels of an OME-Zarr image
    /// share level 0's: they describe the image.
    pub user: Option<UserMetadata>,
    /// Continue the array already at `path` instead of making a new one
    /// (`None`: a new store). Its metadata must describe the array these
    /// options and the stream's plan make; see [`Resume`].
    pub resume: Option<Resume>,
    /// retile's own record of the array (how it was asked for), written as
    /// the `retile` attribute of the array's `zarr.json`, from which a
    /// later stream appending to it learns its options (`None`: none).
    pub record: Option<serde_json::Value>,
}

/// Where a stream appending to an existing array continues: its first
/// plane is the array's plane `first_plane`, which begins a row of files
/// (a multiple of the tile's first extent times the shard's) within the
/// planes the array claims (read from its `zarr.json` once the store is
/// locked).
///
/// The files of the rows that hold claimed planes are written beside and
/// renamed over the old ones (one left with nothing to store is removed,
/// its claimed planes being fill), so that a claimed plane never reads
/// differently, whenever the stream stops; the files of the rows past the
/// claim (a killed stream's unclaimed rows) are removed first. The claim
/// never shrinks: the stream claims again once its planes go past it.
///
/// ```
/// use retile_store::{Resume, ZarrOptions};
/// let options = ZarrOptions {
///     path: "out.zarr".into(),
///     resume: Some(Resume { first_plane: 8 }),
///     ..Default::default()
/// };
/// assert_eq!(options.resume.unwrap().first_plane, 8);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resume {
    /// The array's plane that the stream's first plane is.
    pub first_plane: u64,
}

/// When a local store's data reaches the disk, and so which claims survive
/// a power loss.
///
/// ```
/// use retile_store::SyncPolicy;
/// assert_eq!("rows".parse::<SyncPolicy>()?, SyncPolicy::Rows);
/// assert_eq!(SyncPolicy::default().to_string(), "end");
/// assert!("always".parse::<SyncPolicy>().is_err());
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SyncPolicy {
    /// Once, when the stream finishes: every file and directory synced
    /// before the last claim, so that a finished store survives a power
    /// loss whole; the claims made while it runs may then be ahead of the
    /// data that reached the disk.
    #[default]
    End,
    /// Every row of files, and its directories, synced before the row is
    /// claimed, and each claim synced too: every claim survives a power
    /// loss, at the cost of a sync per file (`BENCHMARKS.md`).
    Rows,
}

impl fmt::Display for SyncPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SyncPolicy::End => "end",
            SyncPolicy::Rows => "rows",
        })
    }
}

impl FromStr for SyncPolicy {
    type Err = StreamError;
    fn from_str(text: &str) -> Result<SyncPolicy, StreamError> {
        match text {
            "end" => Ok(SyncPolicy::End),
            "rows" => Ok(SyncPolicy::Rows),
            _ => Err(StreamError::Invalid(format!(
                "unknown sync policy '{text}'; use end (sync once when the stream finishes) or rows (sync every row before it is claimed)"
            ))),
        }
    }
}
