//! # retile-register: which thread holds which element
//!
//! A [`RegisterLayout`] distributes the elements of a tile over the threads
//! of a block and the local registers of each thread, the system of tilus.
//! Each dimension of the tile's `shape` splits into *modes* (`mode_shape`,
//! row-major within the dimension); some modes index threads
//! (`spatial_modes`, negative entries `-k` replicate over `k` threads) and
//! the others index registers (`local_modes`). Both index lists are
//! row-major: the first entry is the slowest.
//!
//! ```
//! use retile_register::{local, spatial};
//! // operand C of mma.m16n8k8: local(2, 1).spatial(8, 4).local(1, 2)
//! let c = local(&[2, 1])?.compose(&spatial(&[8, 4])?)?.compose(&local(&[1, 2])?)?;
//! assert_eq!(
//!     c.to_string(),
//!     "RegisterLayout(shape=[16, 8], mode_shape=[2, 8, 4, 2], spatial_modes=[1, 2], local_modes=[0, 3])"
//! );
//! assert_eq!(c.holders(&[8, 3])?, vec![(1, 3)]);
//! assert_eq!(c.tv_layout()?.to_string(), "((4,8),(2,2)):((32,1),(16,8))");
//! # Ok::<(), retile_register::RegisterError>(())
//! ```

mod build;
mod divide;
mod error;
mod ints;
mod layout;
mod mapping;
mod ops;
mod tv;
mod visualize;

pub use build::{
    auto_local_spatial, column_local, column_spatial, local, local_ranked, replicated, spatial,
    spatial_ranked,
};
pub use error::{RegisterError, Result};
pub use layout::RegisterLayout;
