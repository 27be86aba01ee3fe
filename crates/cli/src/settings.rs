//! The settings the CLI takes from its environment rather than its flags:
//! tuning for a machine, which a script sets once.

use crate::error::CliError;

/// `RETILE_DIRECT_IO_MIN_CHUNK`, where it is set: the smallest chunk, in
/// bytes, that every command writing a local store writes with direct I/O
/// (0: every chunk; unset: 64 KiB).
pub fn direct_io_min_chunk() -> Result<Option<u64>, CliError> {
    const NAME: &str = "RETILE_DIRECT_IO_MIN_CHUNK";
    match std::env::var(NAME) {
        Err(_) => Ok(None),
        Ok(text) => text.trim().parse().map(Some).map_err(|_| {
            format!("{NAME} is {text:?}: set it to a number of bytes (0: write every chunk with direct I/O), or unset it").into()
        }),
    }
}
