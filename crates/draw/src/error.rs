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
///
/// ```
/// use retile_draw::{tv_svg, Result};
/// fn cells(tv: &str, rows: i64, cols: i64) -> Result<usize> {
///     Ok(tv_svg(&tv.parse()?, rows, cols)?.matches("data-thread=").count())
/// }
/// assert_eq!(cells("(4,2):(1,4)", 4, 2).unwrap(), 8);
/// assert!(cells("(4,2):(1,4)", 2, 2).is_err());
/// ```
pub type Result<T> = std::result::Result<T, DrawError>;

/// Most (thread, value) pairs or accesses a drawing enumerates.
///
/// ```
/// use retile_draw::{tv_svg, MAX_ITEMS};
/// let tv = "(4,4):(1,4)".parse()?;
/// assert!(tv_svg(&tv, 4, 4).is_ok());
/// // a 4096 x 2048 tile has 2^23 elements, more than MAX_ITEMS = 2^22
/// let err = tv_svg(&tv, 4096, 2048).unwrap_err();
/// assert!(err.to_string().contains(&format!("at most {MAX_ITEMS} pairs")), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_ITEMS: i64 = 1 << 22;
