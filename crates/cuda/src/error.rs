//! The CUDA backend's errors: the GPU runtime's and the driver's, as the
//! stream's [`StreamError::Gpu`].

use retile_gpu::{cuda_error, GpuError};
use retile_plan::StreamError;

/// The stream's error for a GPU runtime error.
pub(crate) fn gpu_error(e: GpuError) -> StreamError {
    StreamError::Gpu(e)
}

/// The stream's error for a failed driver call while `doing`.
pub(crate) fn driver(doing: &'static str) -> impl Fn(cudarc::driver::DriverError) -> StreamError {
    move |e| gpu_error(cuda_error(doing)(e))
}
