//! What can go wrong re-tiling an array.

use retile_plan::StreamError;

/// An error of [`crate::rechunk`] or [`crate::ZarrSource`]; its message
/// says what to change.
///
/// ```
/// use retile_ngff::Output;
/// use retile_pyramid::Backend;
/// use retile_rechunk::{read_depth, Rechunk, RechunkError, ZarrSource};
/// let err = ZarrSource::open("/no/such.zarr".as_ref(), &Default::default()).unwrap_err();
/// assert!(matches!(err, RechunkError::Source { .. }));
/// // `path`: u8 array of shape 6 x 4 in chunks 3 x 2 holding 0..24, written by retile (hidden)
/// # use retile_store::ZarrOptions;
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("a.zarr");
/// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U8, vec![6, 4], vec![3, 2])?;
/// # let out = Output { zarr: Some(ZarrOptions { path: path.clone(), ..Default::default() }), ..Default::default() };
/// # let mut s = retile_ngff::open_output(spec, &[0], Backend::Cpu { threads: 1 }, &out)?;
/// # s.append(&(0..24).collect::<Vec<u8>>())?;
/// # s.finish()?;
/// let job = Rechunk { tile: vec![3, 4], output: Output::default(), backend: Backend::Cpu { threads: 1 }, memory: Some(10) };
/// let err = read_depth(&ZarrSource::open(&path, &Default::default())?, &job).unwrap_err();
/// assert!(matches!(err, RechunkError::Memory { allowed: 10, .. }));
/// assert!(err.to_string().contains("the memory allowed is 10"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
