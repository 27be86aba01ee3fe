//! # retile-cuda: the stream's tiling and halving on a CUDA GPU
//!
//! The GPU's version of the tiling and halving stages of the write
//! pipeline (tiler -> halving -> encoder -> shard writer -> store). A
//! [`CudaTileStream`] keeps the tile ring on the GPU: each epoch's input
//! goes host to device on one CUDA stream, a [`ScatterKernel`] generated
//! from the plan's tile map cuts it into padded tiles on a second, and the
//! tiles come back on a third, ordered by events, byte-identical to the
//! CPU's tiler; it shares the CPU's state machine
//! ([`retile_tiler::StreamState`]). For a pyramid, each level's stream
//! halves the epochs it ships on the device, with a kernel written from the
//! same steps as the CPU's reduction (its source is compiled and checked on
//! the host by the tests, so every machine checks it), and
//! [`append_levels`] / [`finish_levels`] drive the levels from level 0 down.
//!
//! It hands to the next stage: complete epochs of tiles in pinned host
//! memory, to the stream's [`Sink`](retile_plan::Sink). It needs no CUDA to
//! build: the driver and NVRTC are loaded when a stream opens the GPU
//! (`retile-gpu`), and a machine without one gets a clear error.
//!
//! ```
//! use retile_cuda::ScatterKernel;
//! use retile_plan::{DType, StreamPlan, StreamSpec};
//! let plan = StreamPlan::new(&StreamSpec::new(DType::U16, vec![0, 64, 64], vec![8, 32, 32])?)?;
//! // the kernel's source, generated with the plan's numbers baked in
//! assert!(ScatterKernel::new(&plan, &[0, 0], 16).source_text().contains("retile_scatter"));
//! # Ok::<(), retile_plan::StreamError>(())
//! ```

mod codec_kernel;
mod compress;
mod error;
mod frames;
mod halve_kernel;
mod halver;
mod levels;
mod nvcomp;
mod staging;
mod stream;

pub use levels::{append_levels, finish_levels};
pub use nvcomp::{Algorithm, BatchSizes, Nvcomp, NVCOMP_MAJOR};
pub use retile_gpu::PinnedBuffer;
pub use stream::{scatter_device, CudaTileStream, ScatterKernel};
