//! What the commands print on stdout.

use std::io::Write;

use crate::error::CliError;

/// Writes `text` to stdout; a closed or full stdout is an error, not a panic.
pub fn say(text: std::fmt::Arguments<'_>) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_fmt(text)
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to stdout: {e}").into())
}
