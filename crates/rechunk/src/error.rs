//! What can go wrong re-tiling an array.

use retile_plan::StreamError;

/// An error of [`crate::rechunk`] or [`crate::ZarrSource`]; its message
/// says what to change.
#[derive(Debug, thiserror::Error)]
pub enum RechunkError {
    /// The source cannot be opened or read.
    #[error("source {path}: {why}")]
    Source {
        /// The source's path.
        path: String,
        /// What failed, and what to change.
        why: String,
    },
    /// The memory allowed cannot hold the stream and one slab of the
    /// source's chunks along the first dimension.
    #[error("re-tiling needs at least {needed} bytes of memory (the new array's tile buffers {stream} and two slabs of the source's chunks along the first dimension, {slab} each), and the memory allowed is {allowed}; allow more, or re-chunk the source with shallower first-dimension chunks first")]
    Memory {
        /// The least memory that works.
        needed: u64,
        /// The stream's own buffers.
        stream: u64,
        /// One slab of source chunks.
        slab: u64,
        /// The memory allowed.
        allowed: u64,
    },
    /// Making or writing the new array failed.
    #[error(transparent)]
    Stream(#[from] StreamError),
}
