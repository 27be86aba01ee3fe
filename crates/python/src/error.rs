//! How the library's errors reach Python: each as the exception of its kind.

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::PyErr;
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
