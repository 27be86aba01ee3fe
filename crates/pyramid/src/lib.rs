//! # retile-pyramid: the stream that runs, with its multiscale pyramid
//!
//! Where the tiling backends meet the halving stage of the write pipeline
//! (tiler -> halving -> encoder -> shard writer -> store). A
//! [`MultiscaleStream`] is every level of a pyramid as a tile stream of its
//! own, on the CPU ([`retile_tiler::TileStream`], all levels sharing one
//! thread pool) or the GPU (`retile-cuda`, feature `cuda`, halving on the
//! device), each level fed with its parent's planes halved as they arrive
//! ([`retile_halving::Halver`]); a stream without a pyramid is a one-level
//! one. [`PyramidOptions`] say which dimensions halve and how many levels
//! there are, and what memory they hold; [`AnyStream`] is one level's
//! stream on the [`Backend`] chosen.
//!
//! It hands to the next stage: each level's complete epochs, to that
//! level's [`Sink`](retile_plan::Sink) (a Zarr array of `retile-store`).
//!
//! ```
//! use retile_plan::{DType, MemorySink, StreamSpec};
//! use retile_pyramid::{Backend, MultiscaleStream, PyramidOptions};
//! let spec = StreamSpec::new(DType::U8, vec![0, 8, 8], vec![1, 4, 4])?;
//! let sinks = [MemorySink::new(), MemorySink::new()];
//! let mut stream = MultiscaleStream::new(spec, &[0], Backend::Cpu { threads: 1 }, &PyramidOptions::default(), |level, _| {
//!     Ok(Box::new(sinks[level].clone()))
//! })?;
//! stream.append(&[2; 64])?;
//! assert_eq!(stream.finish()?.levels[1].shape, vec![1, 4, 4]);
//! assert_eq!(sinks[1].assemble().unwrap(), vec![2; 16]);
//! # Ok::<(), retile_plan::StreamError>(())
//! ```

mod backend;
mod pyramid;
mod reorder;

pub use backend::{AnyStream, Backend};
pub use pyramid::{MultiscaleStream, PyramidOptions, MAX_LEVELS};
pub use reorder::FrameReorder;
