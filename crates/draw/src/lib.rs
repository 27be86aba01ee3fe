//! # retile-draw: layouts you can see
//!
//! SVG drawings of CuTe layouts and swizzled layouts (a grid of cells
//! labelled with their offsets, hierarchical modes ruled off), thread-value
//! and register layouts (cells coloured by thread, labelled `T<t>V<v>`),
//! copy plans (which thread loads and stores which vector) and bank
//! conflicts (cells coloured by bank, before and after the suggested
//! swizzle).
//!
//! Every drawing is deterministic (the same input gives the same bytes),
//! its text is `<text>` a reader can select, its colours keep apart in
//! grey (eight steps of lightness, and hatchings beyond eight), and every
//! cell carries what it shows as `data-*` attributes (`data-row`,
//! `data-col`, `data-offset`, `data-thread`, ...). Axes longer than
//! [`MAX_SHOWN`] keep their first and last blocks and say what they elide.
//!
//! ```
//! let layout = "((2,2),(2,4)):((1,8),(2,16))".parse()?;
//! let svg = retile_draw::layout_svg(&layout)?;
//! assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
//! assert!(svg.contains(r#"data-row="3" data-col="7" data-offset="59""#));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod banks;
mod copy;
mod grid;
mod layout;
mod page;
mod palette;
mod svg;
mod tv;

use thiserror::Error;

pub use banks::banks_svg;
pub use copy::copy_svg;
pub use grid::MAX_SHOWN;
pub use layout::layout_svg;
pub use tv::{register_svg, tv_svg};

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
