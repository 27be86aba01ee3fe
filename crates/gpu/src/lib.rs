//! # retile-gpu: the CUDA runtime retile's GPU code runs on
//!
//! One place for what every GPU stage needs: GPU 0 and its stream, kernels
//! compiled at run time by NVRTC (each source once, cached in the process
//! and on disk between runs), page-locked
//! host memory the GPU copies to and from, and the errors of all of it. The
//! runtime is behind the `cuda` feature (it needs no CUDA to build: the
//! driver and NVRTC are loaded when a GPU is opened); [`GpuError`] is always
//! here, so that the errors of crates built without CUDA can name it.
//!
//! It hands to the next stages: [`Gpu`] to the copy crate's permutes and to
//! the CUDA stream backend (`retile-cuda`), [`PinnedBuffer`] (made ahead by
//! a [`PinnedMaker`]) to the epochs that travel between the GPU and the store.
//!
//! ```
//! use retile_gpu::GpuError;
//! let e = GpuError::Cuda { doing: "opening GPU 0".into(), name: "CUDA_ERROR_NO_DEVICE".into() };
//! assert_eq!(e.to_string(), "CUDA error while opening GPU 0: CUDA_ERROR_NO_DEVICE");
//! ```

mod error;
#[cfg(feature = "cuda")]
mod pinned;
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod ptx_cache;
#[cfg(feature = "cuda")]
mod runtime;
mod source;

pub use error::{GpuError, Result};
#[cfg(feature = "cuda")]
pub use pinned::{PinnedBuffer, PinnedMaker};
#[cfg(feature = "cuda")]
pub use runtime::{compile_only, cuda_error, Gpu};
pub use source::c_type;
