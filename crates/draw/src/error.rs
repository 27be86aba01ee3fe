//! What a drawing refuses, and why.

use thiserror::Error;

/// Why a drawing could not be made.
///
/// ```
/// let tv = "(4,4):(1,4)".parse().unwrap();
/// let err = retile_draw::tv_svg(&tv, 2, 2).unwrap_err();
/// assert!(err.to_string().contains("outside the 2x2 tile"), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DrawError {
    /// The layout algebra rejected a step.
    #[error(transparent)]
    Layout(#[from] retile_layout::LayoutError),
    /// A register layout could not be read.
    #[error(transparent)]
    Register(#[from] retile_register::RegisterError),
    /// A copy plan or bank analysis could not be read.
    #[error(transparent)]
    Copy(#[from] retile_copy::CopyError),
    /// The input does not describe a drawing.
    #[error("{0}")]
    Invalid(String),
}

/// Result of the drawings.
pub type Result<T> = std::result::Result<T, DrawError>;

/// Most (thread, value) pairs or accesses a drawing enumerates.
pub const MAX_ITEMS: i64 = 1 << 22;
