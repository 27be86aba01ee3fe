//! What a command fails with: a library's error, kept whole with its
//! sources, or a message of the command's own. Each prints as one line
//! after `retile: `.

use thiserror::Error;

/// The error of a `retile` command.
#[derive(Debug, Error)]
pub enum CliError {
    /// The command line or its input is wrong; the message says what to change.
    #[error("{0}")]
    Usage(String),
    /// Planning or streaming failed.
    #[error(transparent)]
    Stream(#[from] retile_stream::StreamError),
    /// The calculator refused an expression.
    #[error(transparent)]
    Calc(#[from] retile_calc::CalcError),
    /// The copy planner or a GPU permute failed.
    #[error(transparent)]
    Copy(#[from] retile_copy::CopyError),
    /// The GPU is missing or failed.
    #[error(transparent)]
    Gpu(#[from] retile_gpu::GpuError),
    /// The layout algebra refused a layout.
    #[error(transparent)]
    Layout(#[from] retile_layout::LayoutError),
    /// A drawing could not be made.
    #[error(transparent)]
    Draw(#[from] retile_draw::DrawError),
    /// A plan could not be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Reading the input or writing the output failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The input could not be opened.
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    /// Reading the input failed mid-stream; what was read before was written.
    #[error(
        "{source}; the {planes} complete planes read before it were written and the store closed"
    )]
    InputFailed {
        /// Why reading stopped.
        source: crate::input::InputError,
        /// Complete planes written.
        planes: u64,
    },
    /// A CUDA call of a benchmark failed.
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Driver(#[from] cudarc::driver::DriverError),
}

impl From<String> for CliError {
    fn from(message: String) -> Self {
        CliError::Usage(message)
    }
}

impl From<&str> for CliError {
    fn from(message: &str) -> Self {
        CliError::Usage(message.to_owned())
    }
}
