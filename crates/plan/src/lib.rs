//! # retile-plan: what a tile stream is, before the first byte arrives
//!
//! The first stage of the write pipeline (tiler -> halving -> encoder ->
//! shard writer -> store), and the contract every later stage shares. A
//! [`StreamSpec`] names the element type, the extents and the tile
//! extents; its [`StreamPlan`] says, with the layout algebra, where every
//! element lives in the input and in the epoch buffers (the [`TileMap`]),
//! how many tiles an epoch holds and how much memory the stream needs
//! ([`plan_stream`] refuses what the machine cannot hold).
//!
//! It hands to the next stages: the plan to the tiler (`retile-tiler`,
//! `retile-cuda`), which fills [`EpochBuffer`]s and hands each complete
//! [`Epoch`] to a [`Sink`]; the sinks (`retile-store`) write them and
//! report [`SinkStats`]; the stream reports a [`Summary`]. Every stage
//! fails with a [`StreamError`].
//!
//! ```
//! use retile_plan::{DType, StreamPlan, StreamSpec};
//! let spec = StreamSpec::new(DType::U16, vec![4, 4, 6], vec![2, 2, 3])?;
//! let plan = StreamPlan::new(&spec)?;
//! // an epoch is the 4 tiles sharing the slowest tile coordinate
//! assert_eq!((plan.c(), plan.m(), plan.epoch_elements()), (32, 4, 48));
//! # Ok::<(), retile_plan::StreamError>(())
//! ```

mod budget;
mod buffer;
mod dtype;
mod error;
mod plan;
mod pool;
mod sink;
mod summary;
mod tile_map;

pub use budget::{epoch_buffer_count, plan_stream};
pub use buffer::{available_memory, filled, EpochBuffer};
pub use dtype::{DType, StreamDType};
pub use error::StreamError;
pub use plan::{
    ravel, unravel, StreamPlan, StreamSpec, TileSpan, MAX_EPOCH_BUFFERS, MAX_LISTED_TILES,
};
pub use pool::shared_pool;
pub use sink::{
    CodecOn, DeviceCodec, EncodedChunks, Epoch, MemorySink, NullSink, SharedEpoch, Sink, SinkStats,
    TileBytes,
};
pub use summary::{LevelSummary, Summary};
pub use tile_map::TileMap;
