//! How the library's errors reach Python: each as the exception of its kind.

use pyo3::exceptions::{PyMemoryError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::PyErr;
use retile_rechunk::RechunkError;
use retile_stream::StreamError;

/// A stream error as the Python exception of its kind, with the same one-line message.
pub fn stream_err(e: StreamError) -> PyErr {
    let message = e.to_string();
    match e {
        StreamError::Invalid(_) | StreamError::Layout(_) => PyValueError::new_err(message),
        StreamError::Sink(_) | StreamError::Store { .. } => PyOSError::new_err(message),
        _ => PyRuntimeError::new_err(message),
    }
}

/// A re-tiling's error as Python's: memory it cannot have is a
/// `MemoryError`, a stream's error as a stream's, the rest `ValueError`.
pub(crate) fn rechunk_err(e: RechunkError) -> PyErr {
    match e {
        RechunkError::Stream(e) => stream_err(e),
        e @ RechunkError::Memory { .. } => PyMemoryError::new_err(e.to_string()),
        e @ RechunkError::Source { .. } => PyValueError::new_err(e.to_string()),
    }
}
