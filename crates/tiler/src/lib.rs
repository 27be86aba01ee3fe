//! # retile-tiler: row-major input cut into tiles on every core
//!
//! The tiling stage of the write pipeline (tiler -> halving -> encoder ->
//! shard writer -> store). A [`TileStream`] takes row-major bytes of any
//! length, split anywhere, and scatters them with the plan's tile map into
//! epoch buffers: wide copies and in-register transposes (`kernels`,
//! chosen at run time for the CPU that runs them) spread over a thread
//! pool. The [`StreamState`] machine, which the GPU backend shares through
//! [`Filler`], counts what was taken, walks the epochs and owns the sink's
//! thread.
//!
//! It hands to the next stage: each complete epoch, as an
//! [`Epoch`](retile_plan::Epoch), to the stream's
//! [`Sink`](retile_plan::Sink) on the sink's thread, while it fills the next.
//!
//! ```
//! use retile_plan::{DType, MemorySink, StreamSpec};
//! use retile_tiler::TileStream;
//! let spec = StreamSpec::new(DType::U8, vec![4, 4, 6], vec![2, 2, 3])?;
//! let sink = MemorySink::new();
//! let mut stream = TileStream::new(spec, &[0], 1, Box::new(sink.clone()))?;
//! let data: Vec<u8> = (0..96).collect();
//! assert_eq!(stream.append(&data[..10])?, 10);
//! assert_eq!(stream.append(&data[10..])?, 86);
//! assert_eq!(stream.finish()?.tiles, 8);
//! // Tile (0,0,1) holds rows 0..2 of planes 0..2, columns 3..6.
//! assert_eq!(&sink.tile(&[0, 0, 1]).unwrap()[..3], &[3, 4, 5]);
//! # Ok::<(), retile_plan::StreamError>(())
//! ```

mod engine;
mod kernels;
mod permuted;
mod scatter;
mod state;

pub use engine::{thread_pool, TileStream, MAX_THREADS};
pub use state::{Filler, StreamState};
