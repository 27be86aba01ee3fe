//! # retile-stream: row-major data in, tiles out, with bounded memory
//!
//! The facade over the write pipeline's crates, so that one dependency
//! gives the whole public API under one name:
//!
//! | stage | crate | what it hands on |
//! | --- | --- | --- |
//! | plan | `retile-plan` | the [`StreamPlan`], its [`TileMap`], the [`Sink`] contract, [`StreamError`] |
//! | tiler | `retile-tiler` (CPU), `retile-cuda` (GPU, feature `cuda`) | complete epochs of tiles |
//! | halving | `retile-halving` | each level's planes, halved from its parent's |
//! | pyramid | `retile-pyramid` | every level a stream: the [`MultiscaleStream`] |
//! | encoder, shard writer, store | `retile-store` | Zarr v3 chunks and shards on disk or in S3 |
//! | OME-Zarr | `retile-ngff` | the image's group and the stream's output opened |
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

pub use retile_halving::Method;
pub use retile_ngff::{
    backend_named, check_key, default_axes, groups_of, open_ngff, open_output, pyramid_named,
    resolve_input_order, Acquisition, AcquisitionSettings, ArrayOptions, Axis, Budget,
    Continuation, DimRef, JobStore, NgffOptions, Output, Plate, ResolvedArray, SlabJob,
    NGFF_VERSION, RECORD_VERSION,
};
pub use retile_plan::{
    CodecOn, DType, DeviceCodec, EncodedChunks, Epoch, LevelSummary, MemorySink, NullSink,
    SharedEpoch, Sink, SinkStats, StreamDType, StreamError, StreamPlan, StreamSpec, Summary,
    TileMap, TileSpan, MAX_EPOCH_BUFFERS, MAX_LISTED_TILES,
};
pub use retile_pyramid::{AnyStream, Backend, MultiscaleStream, PyramidOptions, MAX_LEVELS};
pub use retile_store::{
    BloscKind, Cancel, ClaimChain, Codec, Group, Resume, S3Options, S3Traffic, Shuffle, StorePath,
    StoreRoot, SyncPolicy, UserMetadata, ZarrOptions, ZarrSink, FRAME_CHUNK, FRAME_METADATA,
    IN_FLIGHT_PARTS, MAX_PREFIX_BYTES, MAX_WRITERS, PART_BYTES, RESERVED_ATTRIBUTES,
    ROWS_COMPLETING, STOP_GRACE,
};
pub use retile_tiler::{TileStream, MAX_THREADS};

/// The CUDA backend (feature `cuda`): the stream's tiling and halving on
/// the GPU (`retile-cuda`).
#[cfg(feature = "cuda")]
pub mod cuda {
    pub use retile_cuda::*;
}
