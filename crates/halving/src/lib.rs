//! # retile-halving: how a level of a pyramid becomes the next
//!
//! The halving stage of the write pipeline (tiler -> halving -> encoder ->
//! shard writer -> store). A [`Method`] (mean, min, max, decimate, median)
//! reduces each block of up to two elements per halved dimension to one;
//! [`Halving`] is the geometry of one step (which plane dimensions halve,
//! and the child's extents, `ceil(n / 2)`); [`halve_planes`] runs it on the
//! CPU's SIMD units over a thread pool, for every element type, with
//! integer means rounded half to even and float means summed in a fixed
//! order; a [`Halver`] applies it to planes as they arrive.
//!
//! It hands to the next stage: the child planes, to the next level's tile
//! stream (`retile-pyramid`); the GPU runs the same steps from the same
//! geometry (`retile-cuda`).
//!
//! ```
//! use retile_halving::{halve_planes, Halving, Method};
//! use retile_plan::DType;
//! // a 2 x 3 plane halved along both dimensions: the mean of each block
//! let h = Halving::new(&[2, 3], &[true, true]);
//! let mut child = [0u8; 2];
//! halve_planes(Method::Mean, DType::U8, &h, 1, &[0, 2, 4, 6, 8, 10], &mut child)?;
//! assert_eq!(child, [4, 7]); // mean(0, 2, 6, 8), mean(4, 10)
//! # Ok::<(), retile_plan::StreamError>(())
//! ```

mod halver;
mod reduce;
mod units;

pub use halver::Halver;
pub use reduce::{halve_planes, Halving, Method};
