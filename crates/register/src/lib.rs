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
mod layout;
mod mapping;
mod ops;
mod tv;
mod visualize;

use thiserror::Error;

pub use build::{
    auto_local_spatial, column_local, column_spatial, local, local_ranked, replicated, spatial,
    spatial_ranked,
};
pub use layout::RegisterLayout;

/// Why a register layout could not be built or transformed.
///
/// ```
/// let err = retile_register::spatial(&[0]).unwrap_err();
/// assert_eq!(err.to_string(), "Shape must only be positive integers, got [0]");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RegisterError {
    /// The four attributes do not describe a layout.
    #[error("{0}")]
    Invalid(String),
    /// The operation has no result for these operands.
    #[error("{0}")]
    Operation(String),
    /// A size does not fit in a signed 64-bit integer.
    #[error("arithmetic overflow: {0} does not fit in 64 bits")]
    Overflow(String),
}

/// Result of register-layout operations.
pub type Result<T> = std::result::Result<T, RegisterError>;

/// Writes integers as Python writes a list: `[1, 2]`.
pub(crate) fn py_list(items: &[i64]) -> String {
    let parts: Vec<String> = items.iter().map(i64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// Whether some value occurs twice in `items`.
pub(crate) fn has_repeats(items: &[i64]) -> bool {
    let mut sorted = items.to_vec();
    sorted.sort_unstable();
    sorted.windows(2).any(|w| w[0] == w[1])
}

/// The product of `items`, or an overflow error naming `what`.
pub(crate) fn product(items: impl IntoIterator<Item = i64>, what: &str) -> Result<i64> {
    items.into_iter().try_fold(1i64, |acc, x| {
        acc.checked_mul(x)
            .ok_or_else(|| RegisterError::Overflow(what.to_string()))
    })
}
