//! # retile-store: tiles encoded, gathered into shards and stored as Zarr
//!
//! The last stages of the write pipeline (tiler -> halving -> encoder ->
//! shard writer -> store). A [`ZarrSink`] takes complete epochs of tiles
//! and writes each tile as one chunk of a Zarr v3 array: encoded on the
//! writer threads straight from the epoch buffer ([`Codec`]: zstd, gzip,
//! blosc with its shuffles, through `zarrs`), written as its own file or
//! gathered into `sharding_indexed` shards (a shard deeper than one epoch
//! is appended to as its epochs land), and stored in a local directory
//! (aligned direct I/O) or in S3-compatible object storage (multipart
//! uploads fed as epochs land, through `object_store`). The array's
//! `zarr.json` is replaced atomically as rows of files complete, so the
//! store never claims what is not stored. A [`Group`] holds several arrays.
//! One stream writes a store: its root ([`StoreRoot`]) is locked while the
//! stream lives, and the levels of a pyramid chain their claims
//! ([`ClaimChain`]) so that no level claims more than its parent. The
//! user's attributes and per-plane records ([`UserMetadata`]) are written
//! with the claims.
//!
//! It is the end of the pipeline: it reports what it stored as
//! [`SinkStats`](retile_plan::SinkStats).
//!
//! ```
//! use retile_plan::{DType, Epoch, Sink, StreamPlan, StreamSpec};
//! use retile_store::{ZarrOptions, ZarrSink};
//! let dir = std::env::temp_dir().join(format!("retile-store-doc-{}", std::process::id()));
//! let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4, 4], vec![2, 2, 4])?)?;
//! let mut sink = ZarrSink::new(ZarrOptions { path: dir.clone(), codec: "zstd:1".parse()?, overwrite: true, ..Default::default() });
//! sink.begin(&plan, &[0])?;
//! let tiles = vec![5u8; plan.epoch_buffer_bytes() as usize];
//! sink.write_epoch(&Epoch { index: 0, planes: 2, tiles: &tiles, plan: &plan })?;
//! sink.finish(2)?;
//! assert_eq!(sink.stats().files, 2);
//! assert!(dir.join("c/0/1/0").is_file());
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), retile_plan::StreamError>(())
//! ```

mod chain;
mod codec;
mod dest;
mod directory;
mod error;
mod files;
mod group;
mod lock;
mod object;
mod options;
mod records;
mod retry;
mod root;
mod settings;
mod shard;
mod user;
mod writer;
mod zarr;

pub use chain::{ChainLink, ClaimChain};
pub use codec::{BloscKind, Codec, Shuffle};
pub use dest::{StorePath, MAX_PREFIX_BYTES};
pub use files::DIRECT_IO_MIN_CHUNK;
pub use group::Group;
pub use object::{s3_client, S3Options, S3Traffic, IN_FLIGHT_PARTS, PART_BYTES, ROWS_COMPLETING};
pub use options::{Resume, SyncPolicy, ZarrOptions, MAX_WRITERS};
pub use retry::{Cancel, STOP_GRACE};
pub use root::StoreRoot;
pub use user::{UserMetadata, FRAME_CHUNK, FRAME_METADATA, RESERVED_ATTRIBUTES};
pub use zarr::ZarrSink;
