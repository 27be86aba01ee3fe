//! # retile-stream: row-major data in, tiles out, with bounded memory
//!
//! A tensor arrives in row-major order in pieces of any length (a camera, a
//! file, a pipe) and leaves as tiles (Zarr chunks). The [`StreamPlan`] says,
//! with the layout algebra, which tile every element belongs to and when each
//! tile is complete; a [`TileStream`] executes it on the CPU, holding at most
//! two epochs of tiles, and hands complete epochs to a [`Sink`].
//!
//! ```
//! use retile_stream::{DType, MemorySink, StreamSpec, TileStream};
//! let spec = StreamSpec::new(DType::U8, vec![4, 4, 6], vec![2, 2, 3])?;
//! let sink = MemorySink::new();
//! let mut stream = TileStream::new(spec, &[0], 1, Box::new(sink.clone()))?;
//! let data: Vec<u8> = (0..96).collect();
//! assert_eq!(stream.append(&data[..10])?, 10);
//! assert_eq!(stream.append(&data[10..])?, 86);
//! let summary = stream.finish()?;
//! assert_eq!(summary.tiles, 8);
//! // Tile (0,0,1) holds rows 0..2 of planes 0..2, columns 3..6.
//! assert_eq!(&sink.tile(&[0, 0, 1]).unwrap()[..3], &[3, 4, 5]);
//! # Ok::<(), retile_stream::StreamError>(())
//! ```

mod backend;
mod buffer;
mod codec;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "cuda")]
mod cuda_pyramid;
mod dest;
mod dtype;
mod engine;
mod files;
#[cfg(any(feature = "cuda", test))]
mod halve_kernel;
mod kernels;
mod ngff;
mod object;
mod plan;
mod pyramid;
mod reduce;
mod scatter;
mod shard;
mod sink;
mod state;
mod tile_map;
mod zarr;

use thiserror::Error;

pub use backend::{AnyStream, Backend};
pub use codec::{BloscKind, Codec, Shuffle};
pub use dtype::{DType, StreamDType};
pub use engine::{Summary, TileStream, MAX_THREADS};
pub use ngff::{default_axes, open_ngff, open_output, Axis, NgffOptions, Output, NGFF_VERSION};
pub use object::{S3Options, S3Traffic, IN_FLIGHT_PARTS, PART_BYTES, ROWS_COMPLETING};
pub use plan::{StreamPlan, StreamSpec, TileSpan, MAX_LISTED_TILES};
pub use pyramid::{LevelSummary, MultiscaleStream, PyramidOptions, MAX_LEVELS};
pub use reduce::Method;
pub use sink::{Epoch, MemorySink, NullSink, Sink, SinkStats};
pub use tile_map::TileMap;
pub use zarr::{ZarrOptions, ZarrSink, MAX_WRITERS};

impl StreamError {
    /// A GPU error that is retile's own, not the driver's.
    pub(crate) fn gpu(message: impl Into<String>) -> StreamError {
        StreamError::Gpu(retile_copy::CopyError::Invalid(message.into()))
    }
}

/// Errors of planning and streaming.
#[derive(Debug, Error)]
pub enum StreamError {
    /// The stream's description is wrong; the message says what to change.
    #[error("{0}")]
    Invalid(String),
    /// The layout algebra rejected the plan.
    #[error("layout: {0}")]
    Layout(#[from] retile_layout::LayoutError),
    /// The sink failed; the message says what it was doing.
    #[error("sink: {0}")]
    Sink(String),
    /// Writing the store failed: what was being written, where, and why
    /// (the underlying error is kept as the source).
    #[error("sink: {doing} in {}: {source}", .path.display())]
    Store {
        /// What was being written.
        doing: String,
        /// The store.
        path: std::path::PathBuf,
        /// The error of the file system, codec or metadata library.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The GPU backend failed or is missing: what it was doing, the CUDA
    /// driver's or compiler's error kept as the source.
    #[error("GPU: {0}")]
    Gpu(#[source] retile_copy::CopyError),
    /// `append` or `finish` after `finish`.
    #[error("the stream is finished; nothing more can be appended")]
    Finished,
    /// The input ended inside a plane; every complete plane was written.
    #[error("the input ended inside a plane: {bytes} bytes after the {planes} complete planes were dropped; every complete plane was written")]
    PartialPlane {
        /// Complete planes written.
        planes: u64,
        /// Bytes of the incomplete plane.
        bytes: u64,
    },
    /// A bounded stream ended before its last plane.
    #[error("the input ended after {planes} of {expected} planes; they were written, the array is {planes} planes long")]
    ShortInput {
        /// Planes written.
        planes: u64,
        /// Planes the shape promised.
        expected: u64,
    },
}
