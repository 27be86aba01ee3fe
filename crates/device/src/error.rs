//! The errors of device layouts.

use thiserror::Error;

/// Errors of device layouts.
///
/// ```
/// let e = retile_device::DeviceError::Invalid("a stick holds 64 elements".into());
/// assert_eq!(e.to_string(), "a stick holds 64 elements");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DeviceError {
    /// The layout or the request is invalid; the message says what to change.
    #[error("{0}")]
    Invalid(String),
    /// The layout algebra rejected a conversion.
    #[error("layout: {0}")]
    Layout(#[from] retile_layout::LayoutError),
}
