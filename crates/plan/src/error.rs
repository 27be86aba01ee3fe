//! The errors of a stream: one type for every stage, from the plan to the store.

use thiserror::Error;

/// Errors of planning and streaming, shared by every stage of the pipeline.
///
/// ```
/// use retile_plan::{DType, StreamError, StreamSpec};
/// let err = StreamSpec::new(DType::U8, vec![4, 0], vec![2, 2]).unwrap_err();
/// assert!(matches!(err, StreamError::Invalid(_)));
/// ```
#[derive(Debug, Error)]
pub enum StreamError {
    /// The stream's description is wrong; the message says what to change.
    #[error("{0}")]
    Invalid(String),
    /// The layout algebra rejected the plan.
    #[error("layout: {0}")]
    Layout(#[from] retile_layout::LayoutError),
    /// The sink failed; the message says what it was doing.
    #[error("sink: {0}")]
    Sink(String),
    /// Writing the store failed: what was being written, where, and why
    /// (the underlying error is kept as the source).
    #[error("sink: {doing} in {}: {source}", .path.display())]
    Store {
        /// What was being written.
        doing: String,
        /// The store.
        path: std::path::PathBuf,
        /// The error of the file system, codec or metadata library.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The GPU backend failed or is missing: what it was doing, the CUDA
    /// driver's or compiler's error kept as the source.
    #[error("GPU: {0}")]
    Gpu(#[source] retile_gpu::GpuError),
    /// `append` or `finish` after `finish`.
    #[error("the stream is finished; nothing more can be appended")]
    Finished,
    /// The input ended inside a plane; every complete plane was written.
    #[error("the input ended inside a plane: {bytes} bytes after the {planes} complete planes were dropped; every complete plane was written")]
    PartialPlane {
        /// Complete planes written.
        planes: u64,
        /// Bytes of the incomplete plane.
        bytes: u64,
    },
    /// The input of a stream whose slowest input dimension is not the
    /// stored first ended early: no stored plane was complete.
    #[error("the input ended after {bytes} of {expected} bytes; its slowest dimension is not the stored first, so no stored plane was complete and none was written (the array is 0 planes long)")]
    HeldInput {
        /// Bytes taken.
        bytes: u64,
        /// Bytes the shape promised.
        expected: u64,
    },
    /// A bounded stream ended before its last plane.
    #[error("the input ended after {planes} of {expected} planes; they were written, the array is {planes} planes long")]
    ShortInput {
        /// Planes written.
        planes: u64,
        /// Planes the shape promised.
        expected: u64,
    },
}

impl StreamError {
    /// A GPU error that is retile's own, not the driver's.
    ///
    /// ```
    /// let e = retile_plan::StreamError::gpu("no GPU");
    /// assert_eq!(e.to_string(), "GPU: no GPU");
    /// ```
    pub fn gpu(message: impl Into<String>) -> StreamError {
        StreamError::Gpu(retile_gpu::GpuError::Invalid(message.into()))
    }
}
