//! The errors of register layouts.

use thiserror::Error;

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
///
/// ```
/// use retile_register::{spatial, Result};
/// fn spatial_size(shape: &[i64]) -> Result<i64> {
///     spatial(shape)?.size()
/// }
/// assert_eq!(spatial_size(&[4, 8]).unwrap(), 32);
/// assert!(spatial_size(&[0]).is_err());
/// ```
pub type Result<T> = std::result::Result<T, RegisterError>;
