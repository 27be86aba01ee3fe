//! The errors of the copy planner and the GPU permutes.

use thiserror::Error;

/// Why a copy could not be planned or run.
///
/// ```
/// use retile_copy::TransposeRequest;
/// let err = TransposeRequest::new(0, 16, 128, "4:1".parse().unwrap(), "4:1".parse().unwrap()).plan().unwrap_err();
/// assert!(err.to_string().contains("threads"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CopyError {
    /// The request itself is malformed.
    #[error("{0}")]
    Invalid(String),
    /// The layout algebra rejected a step.
    #[error(transparent)]
    Layout(#[from] retile_layout::LayoutError),
    /// The GPU failed or is missing (the `cuda` feature's permutes).
    #[error(transparent)]
    Gpu(#[from] retile_gpu::GpuError),
}

/// Result of the copy planner.
///
/// ```
/// use retile_copy::{Result, TransposeRequest};
/// fn extracts(units: i64) -> Result<i64> {
///     let plan = TransposeRequest::square(units, 32, 128)?.plan()?;
///     Ok(match plan { retile_copy::TransposePlan::Applies(t) => t.extracts, _ => 0 })
/// }
/// assert_eq!(extracts(4).unwrap(), 16);
/// ```
pub type Result<T> = std::result::Result<T, CopyError>;
