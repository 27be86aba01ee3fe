//! The errors of the GPU runtime.

use thiserror::Error;

/// Why the GPU could not be used: it is missing, or a CUDA or NVRTC call failed.
///
/// ```
/// let e = retile_gpu::GpuError::Invalid("no CUDA driver found".into());
/// assert_eq!(e.to_string(), "no CUDA driver found");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GpuError {
    /// The GPU, its driver or its compiler is missing, or retile's own
    /// request is wrong; the message says which.
    #[error("{0}")]
    Invalid(String),
    /// A CUDA call failed.
    #[error("CUDA error while {doing}: {name}")]
    Cuda {
        /// What retile was doing.
        doing: String,
        /// The CUDA error's name and text.
        name: String,
    },
}

/// Result of the GPU runtime.
pub type Result<T> = std::result::Result<T, GpuError>;
