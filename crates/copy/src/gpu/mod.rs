//! N-dimensional permutes on a CUDA GPU (feature `cuda`): kernels generated
//! from the permute's shape with every extent and stride baked in, compiled
//! at run time with NVRTC, and the CUDA plumbing the streaming tiler shares.
//!
//! Two kernels cover every permute. When the fastest dimension stays the
//! fastest, rows are copied with the widest vector both sides allow (up to
//! 16 bytes). Otherwise a block stages a square tile through shared memory:
//! it loads along the input's contiguous dimension, packs `P` elements per
//! unit (up to 8 bytes, where the copy planner plans one thread's `P x P`
//! transpose as `P` loads and `P` stores), swizzles unit columns by row so that neither the
//! loads nor the column reads conflict on banks, transposes `P x P` units in
//! registers (the in-thread transpose) and stores along the output's
//! contiguous dimension; tiles shrink to extents smaller than 32 units, and
//! where the output's fastest dimension is shorter than a tile, tile rows
//! run on into the output's next dimension (contiguous after it).
//! Index arithmetic is 32-bit when the tensor fits.
//!
//! The module is split by job: the runtime (`retile-gpu`) opens the GPU,
//! compiles and caches kernels and holds pinned host memory (the plumbing
//! the streaming tiler shares); [`kernels`] generates the permute kernels' source;
//! [`launch`] runs them; [`timing`] measures them.

pub mod kernels;
pub mod launch;
pub mod timing;

pub use kernels::{permute_kernel, Kernel};
pub use launch::{permute, CompiledPermute};
/// The CUDA runtime these permutes run on (`retile-gpu`), under its old path.
pub use retile_gpu::{c_type, compile_only, cuda_error, Gpu, PinnedBuffer};
pub use timing::{bench_permute, time_median};
