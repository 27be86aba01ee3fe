//! Re-tiling an existing Zarr array: the pipeline's other input. A source
//! array (v2 or v3, read with zarrs) is read in slabs of whole source
//! chunks along its first dimension, each slab read on one thread while
//! the one before it goes through the stream (tiler -> halving -> encoder
//! -> shard writer -> store) that [`retile_ngff::open_output`] opens, so a
//! new store is written exactly as `retile stream` writes it, with the same
//! claims and guarantees. Memory stays within what the caller allows: the
//! stream's tile buffers and two slabs.
//!
//! ```
//! use retile_ngff::Output;
//! use retile_pyramid::Backend;
//! use retile_rechunk::{rechunk, Rechunk, ZarrSource};
//! use retile_store::ZarrOptions;
//! let dir = tempfile::tempdir()?;
//! // a source array of 6x4 u8, in chunks 3x2, written by retile itself
//! let first = dir.path().join("first.zarr");
//! let spec = retile_plan::StreamSpec::new(retile_plan::DType::U8, vec![6, 4], vec![3, 2])?;
//! let out = Output { zarr: Some(ZarrOptions { path: first.clone(), ..Default::default() }), ..Default::default() };
//! let mut s = retile_ngff::open_output(spec, &[0], Backend::Cpu { threads: 1 }, &out)?;
//! s.append(&(0..24).collect::<Vec<u8>>())?;
//! s.finish()?;
//! // re-tiled into chunks 2x4
//! let source = ZarrSource::open(&first, &Default::default())?;
//! let second = dir.path().join("second.zarr");
//! let job = Rechunk {
//!     tile: vec![2, 4],
//!     output: Output { zarr: Some(ZarrOptions { path: second.clone(), ..Default::default() }), ..Default::default() },
//!     backend: Backend::Cpu { threads: 1 },
//!     memory: None,
//! };
//! let summary = rechunk(&source, &job, |_| {})?;
//! assert_eq!(summary.planes, 6);
//! assert_eq!(ZarrSource::open(&second, &Default::default())?.read(0..6)?, (0..24).collect::<Vec<u8>>());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod source;

use std::ops::Range;
use std::sync::mpsc;

use retile_ngff::{open_output, Output, ResolvedArray, SlabJob};
use retile_plan::{StreamSpec, Summary};
use retile_pyramid::{Backend, MultiscaleStream, PyramidOptions};

pub use error::RechunkError;
pub use source::ZarrSource;

/// The slab read at a time when no memory limit is given: about this many
/// bytes of whole source chunks (at least one chunk deep).
///
/// ```
/// use retile_ngff::Output;
/// use retile_pyramid::Backend;
/// use retile_rechunk::{read_depth, Rechunk, ZarrSource, DEFAULT_SLAB_BYTES};
/// // `path`: a u8 array of shape 6 x 4 in chunks 3 x 2 holding 0..24, written by retile (hidden)
/// # use retile_store::ZarrOptions;
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("a.zarr");
/// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U8, vec![6, 4], vec![3, 2])?;
/// # let out = Output { zarr: Some(ZarrOptions { path: path.clone(), ..Default::default() }), ..Default::default() };
/// # let mut s = retile_ngff::open_output(spec, &[0], Backend::Cpu { threads: 1 }, &out)?;
/// # s.append(&(0..24).collect::<Vec<u8>>())?;
/// # s.finish()?;
/// assert_eq!(DEFAULT_SLAB_BYTES, 256 << 20);
/// let job = Rechunk { tile: vec![2, 4], output: Output::default(), backend: Backend::Cpu { threads: 1 }, memory: None };
/// // no memory limit: 256 MiB of whole chunks (3 planes, 12 bytes) holds the whole array
/// assert_eq!(read_depth(&ZarrSource::open(&path, &Default::default())?, &job)?, 6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const DEFAULT_SLAB_BYTES: u64 = 256 << 20;

/// What a re-tiling writes, and with what.
///
/// ```
/// use retile_ngff::Output;
/// use retile_pyramid::Backend;
/// use retile_rechunk::{read_depth, Rechunk, ZarrSource};
/// // `path`: a u8 array of shape 6 x 4 in chunks 3 x 2 holding 0..24, written by retile (hidden)
/// # use retile_store::ZarrOptions;
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("a.zarr");
/// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U8, vec![6, 4], vec![3, 2])?;
/// # let out = Output { zarr: Some(ZarrOptions { path: path.clone(), ..Default::default() }), ..Default::default() };
/// # let mut s = retile_ngff::open_output(spec, &[0], Backend::Cpu { threads: 1 }, &out)?;
/// # s.append(&(0..24).collect::<Vec<u8>>())?;
/// # s.finish()?;
/// let source = ZarrSource::open(&path, &Default::default())?;
/// let job = Rechunk { tile: vec![2, 4], output: Output::default(), backend: Backend::Cpu { threads: 1 }, memory: Some(64 << 20) };
/// assert_eq!(job.tile.len(), source.shape().len());
/// assert!(read_depth(&source, &job)? >= 3); // whole source chunks a slab
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Rechunk {
    /// The new array's tile (chunk) shape.
    pub tile: Vec<u64>,
    /// The new store: shards, codec, pyramid, OME-Zarr metadata, as for a
    /// stream (dimension names default to the source's).
    pub output: Output,
    /// Where the tiles are made.
    pub backend: Backend,
    /// The most memory to use, in bytes (`None`: the stream's buffers and
    /// two slabs of about [`DEFAULT_SLAB_BYTES`]).
    pub memory: Option<u64>,
}

/// Re-tiles `source` as `job` says, calling `progress` with the bytes of
/// each slab once it is taken; returns the new store's summary. A source
/// that fails to read part-way ends the stream with what was written
/// claimed, and its error returned.
///
/// ```
/// use retile_ngff::Output;
/// use retile_pyramid::Backend;
/// use retile_rechunk::{rechunk, Rechunk, ZarrSource};
/// use retile_store::ZarrOptions;
/// // `path`: a u8 array of shape 6 x 4 in chunks 3 x 2 holding 0..24, written by retile (hidden)
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("a.zarr");
/// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U8, vec![6, 4], vec![3, 2])?;
/// # let out = Output { zarr: Some(ZarrOptions { path: path.clone(), ..Default::default() }), ..Default::default() };
/// # let mut s = retile_ngff::open_output(spec, &[0], Backend::Cpu { threads: 1 }, &out)?;
/// # s.append(&(0..24).collect::<Vec<u8>>())?;
/// # s.finish()?;
/// let zarr = ZarrOptions { path: dir.path().join("b.zarr"), ..Default::default() };
/// let job = Rechunk { tile: vec![6, 4], output: Output { zarr: Some(zarr), ..Default::default() }, backend: Backend::Cpu { threads: 1 }, memory: None };
/// let mut read = 0;
/// let summary = rechunk(&ZarrSource::open(&path, &Default::default())?, &job, |bytes| read += bytes)?;
/// assert_eq!((summary.tiles, read), (1, 24));
/// assert!(dir.path().join("b.zarr/zarr.json").is_file());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn rechunk(
    source: &ZarrSource,
    job: &Rechunk,
    progress: impl FnMut(u64),
) -> Result<Summary, RechunkError> {
    let spec = StreamSpec::new(source.dtype(), source.shape().to_vec(), job.tile.clone())?;
    let depth = slab_depth(source, &spec, job)?;
    let mut stream = open_output(spec, &source.fill(), job.backend, &output_of(source, job))?;
    let whole: Vec<Range<u64>> = source.shape().iter().map(|&n| 0..n).collect();
    let read = pump(source, &mut stream, &whole, depth, progress);
    let finished = stream.finish();
    read?;
    Ok(finished?)
}

/// The job of re-tiling `source` as `job` says by the tasks of a cluster,
/// each a slab of whole rows of the new array's shards ([`SlabJob`]): the
/// caller begins and finishes it, each task calls [`rechunk_slab`].
///
/// ```
/// use retile_ngff::Output;
/// use retile_pyramid::Backend;
/// use retile_rechunk::{rechunk_slab, slab_job, Rechunk, ZarrSource};
/// use retile_store::ZarrOptions;
/// let dir = tempfile::tempdir()?;
/// let first = dir.path().join("first.zarr");
/// let spec = retile_plan::StreamSpec::new(retile_plan::DType::U8, vec![6, 4], vec![3, 2])?;
/// let out = Output { zarr: Some(ZarrOptions { path: first.clone(), ..Default::default() }), ..Default::default() };
/// let mut s = retile_ngff::open_output(spec, &[0], Backend::Cpu { threads: 1 }, &out)?;
/// s.append(&(0..24).collect::<Vec<u8>>())?;
/// s.finish()?;
/// let source = ZarrSource::open(&first, &Default::default())?;
/// let second = dir.path().join("second.zarr");
/// let job = Rechunk {
///     tile: vec![2, 4],
///     output: Output { zarr: Some(ZarrOptions { path: second.clone(), ..Default::default() }), ..Default::default() },
///     backend: Backend::Cpu { threads: 1 },
///     memory: None,
/// };
/// let slabs = slab_job(&source, &job)?;
/// let store = slabs.begin()?;
/// for first in [2, 0, 4] {
///     rechunk_slab(&source, &job, &slabs, first..first + 2, |_| {})?;
/// }
/// store.finish()?;
/// assert_eq!(ZarrSource::open(&second, &Default::default())?.read(0..6)?, (0..24).collect::<Vec<u8>>());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn slab_job(source: &ZarrSource, job: &Rechunk) -> Result<SlabJob, RechunkError> {
    let spec = StreamSpec::new(source.dtype(), source.shape().to_vec(), job.tile.clone())?;
    Ok(SlabJob::new(ResolvedArray {
        spec,
        fill: source.fill(),
        output: output_of(source, job),
    })?)
}

/// One task's part of a [`slab_job`]: the planes `planes` of `source`
/// (a slab [`SlabJob::slab_planes`] allows) re-tiled into `slabs`' store,
/// read in slabs of whole source chunks within `job.memory` (the task's
/// stream and two of them); returns the slab's summary.
///
/// ```
/// use retile_ngff::Output;
/// use retile_pyramid::Backend;
/// use retile_rechunk::{rechunk_slab, slab_job, Rechunk, ZarrSource};
/// use retile_store::ZarrOptions;
/// // `path`: a u8 array of shape 6 x 4 in chunks 3 x 2 holding 0..24, written by retile (hidden)
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("a.zarr");
/// # let spec = retile_plan::StreamSpec::new(retile_plan::DType::U8, vec![6, 4], vec![3, 2])?;
/// # let out = Output { zarr: Some(ZarrOptions { path: path.clone(), ..Default::default() }), ..Default::default() };
/// # let mut s = retile_ngff::open_output(spec, &[0], Backend::Cpu { threads: 1 }, &out)?;
/// # s.append(&(0..24).collect::<Vec<u8>>())?;
/// # s.finish()?;
/// let source = ZarrSource::open(&path, &Default::default())?;
/// let zarr = ZarrOptions { path: dir.path().join("b.zarr"), ..Default::default() };
/// let job = Rechunk { tile: vec![3, 4], output: Output { zarr: Some(zarr), ..Default::default() }, backend: Backend::Cpu { threads: 1 }, memory: None };
/// let slabs = slab_job(&source, &job)?;
/// let store = slabs.begin()?;
/// let second = rechunk_slab(&source, &job, &slabs, 3..6, |_| {})?; // one task's slab
/// assert_eq!(second.planes, 3);
/// # rechunk_slab(&source, &job, &slabs, 0..3, |_| {})?;
/// # store.finish()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn rechunk_slab(
    source: &ZarrSource,
    job: &Rechunk,
    slabs: &SlabJob,
    planes: Range<u64>,
    progress: impl FnMut(u64),
) -> Result<Summary, RechunkError> {
    let mut origin = vec![0; source.shape().len()];
    origin[0] = planes.start;
    let mut shape = source.shape().to_vec();
    shape[0] = planes.end.saturating_sub(planes.start);
    rechunk_block(source, job, slabs, &origin, &shape, progress)
}

/// One task's part of a [`slab_job`] cut along more than the first
/// dimension: the box of shape `shape` at element `origin` of `source` (a
/// block [`SlabJob::block_units`] allows) re-tiled into `slabs`' store,
/// read in slabs of whole source chunks along the first dimension, as
/// [`rechunk_slab`] reads; returns the block's summary.
///
/// ```
/// use retile_ngff::Output;
/// use retile_pyramid::Backend;
/// use retile_rechunk::{rechunk_block, slab_job, Rechunk, ZarrSource};
/// use retile_store::ZarrOptions;
/// let dir = tempfile::tempdir()?;
/// let first = dir.path().join("first.zarr");
/// let spec = retile_plan::StreamSpec::new(retile_plan::DType::U8, vec![2, 6], vec![1, 3])?;
/// let out = Output { zarr: Some(ZarrOptions { path: first.clone(), ..Default::default() }), ..Default::default() };
/// let mut s = retile_ngff::open_output(spec, &[0], Backend::Cpu { threads: 1 }, &out)?;
/// s.append(&(0..12).collect::<Vec<u8>>())?;
/// s.finish()?;
/// let source = ZarrSource::open(&first, &Default::default())?;
/// let second = dir.path().join("second.zarr");
/// let job = Rechunk {
///     tile: vec![2, 2],
///     output: Output { zarr: Some(ZarrOptions { path: second.clone(), ..Default::default() }), ..Default::default() },
///     backend: Backend::Cpu { threads: 1 },
///     memory: None,
/// };
/// let blocks = slab_job(&source, &job)?;
/// let store = blocks.begin()?;
/// for x in [4, 0, 2] {
///     rechunk_block(&source, &job, &blocks, &[0, x], &[2, 2], |_| {})?;
/// }
/// store.finish()?;
/// assert_eq!(ZarrSource::open(&second, &Default::default())?.read(0..2)?, (0..12).collect::<Vec<u8>>());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn rechunk_block(
    source: &ZarrSource,
    job: &Rechunk,
    slabs: &SlabJob,
    origin: &[u64],
    shape: &[u64],
    progress: impl FnMut(u64),
) -> Result<Summary, RechunkError> {
    let spec = StreamSpec::new(source.dtype(), source.shape().to_vec(), job.tile.clone())?;
    let depth = slab_depth(source, &spec, job)?;
    let mut stream = slabs.open_block(origin, shape, job.backend)?;
    let boxed: Vec<Range<u64>> = origin
        .iter()
        .zip(shape)
        .map(|(&o, &n)| o..o.saturating_add(n))
        .collect();
    let read = pump(source, &mut stream, &boxed, depth, progress);
    let finished = stream.finish();
    read?;
    Ok(finished?)
}

/// What `job` writes, dimension names defaulting to the source's (an
/// OME-Zarr image's arrays are named by its axes instead).
fn output_of(source: &ZarrSource, job: &Rechunk) -> Output {
    let mut output = job.output.clone();
    let image = output.pyramid.is_some() || output.ngff.is_some();
    if let Some(zarr) = output
        .zarr
        .as_mut()
        .filter(|z| z.dimension_names.is_none() && !image)
    {
        zarr.dimension_names = source.dimension_names();
    }
    output
}

/// Reads the box `ranges` of `source` in slabs of `depth` planes (aligned
/// to whole source chunks), each read on a thread of its own while the one
/// before it goes through `stream`; calls `progress` with each slab's bytes.
fn pump(
    source: &ZarrSource,
    stream: &mut MultiscaleStream,
    ranges: &[Range<u64>],
    depth: u64,
    mut progress: impl FnMut(u64),
) -> Result<(), RechunkError> {
    let planes = ranges[0].clone();
    // a rendezvous: one slab read while the one before it is appended, never a third
    let (slabs, taken) = mpsc::sync_channel(0);
    let depth = depth.max(1);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut start = planes.start;
            while start < planes.end {
                // the next boundary of whole slabs, counted from plane 0
                let end = ((start / depth + 1) * depth).min(planes.end);
                let mut slab_box = ranges.to_vec();
                slab_box[0] = start..end;
                let slab = source.read_box(&slab_box);
                let failed = slab.is_err();
                if slabs.send(slab).is_err() || failed {
                    return;
                }
                start = end;
            }
        });
        for slab in taken {
            let slab = slab?;
            stream.append(&slab)?;
            progress(slab.len() as u64);
        }
        Ok::<(), RechunkError>(())
    })
}

/// How many planes of `source` `job` reads at a time (whole source chunks
/// within its memory); a [`RechunkError::Memory`] where the memory allowed
/// cannot hold the new array's buffers and two slabs of one source chunk.
///
/// ```
/// use retile_ngff::Output;
/// use retile_pyramid::Backend;
/// use retile_rechunk::{read_depth, Rechunk, ZarrSource};
/// use retile_store::ZarrOptions;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("a.zarr");
/// let spec = retile_plan::StreamSpec::new(retile_plan::DType::U8, vec![8, 4], vec![2, 4])?;
/// let out = Output { zarr: Some(ZarrOptions { path: path.clone(), ..Default::default() }), ..Default::default() };
/// let mut s = retile_ngff::open_output(spec, &[0], Backend::Cpu { threads: 1 }, &out)?;
/// s.append(&[1; 32])?;
/// s.finish()?;
/// let job = Rechunk { tile: vec![1, 4], output: Output::default(), backend: Backend::Cpu { threads: 1 }, memory: Some(1) };
/// assert!(read_depth(&ZarrSource::open(&path, &Default::default())?, &job).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_depth(source: &ZarrSource, job: &Rechunk) -> Result<u64, RechunkError> {
    let spec = StreamSpec::new(source.dtype(), source.shape().to_vec(), job.tile.clone())?;
    slab_depth(source, &spec, job)
}

/// How many planes a slab holds: whole source chunks, as many as the
/// memory allows beside the stream's buffers, at most the whole array.
fn slab_depth(source: &ZarrSource, spec: &StreamSpec, job: &Rechunk) -> Result<u64, RechunkError> {
    let chunk = source.chunk_depth().max(1);
    let chunk_bytes = chunk.saturating_mul(source.plane_bytes()).max(1);
    let whole = source.shape()[0].div_ceil(chunk).max(1);
    let chunks = match job.memory {
        None => (DEFAULT_SLAB_BYTES / chunk_bytes).max(1),
        Some(allowed) => {
            let one_level = PyramidOptions {
                levels: Some(1),
                ..Default::default()
            };
            let pyramid = job.output.pyramid.as_ref().unwrap_or(&one_level);
            let stream = pyramid.memory_bytes(spec)?;
            let needed = stream.saturating_add(chunk_bytes.saturating_mul(2));
            if needed > allowed {
                return Err(RechunkError::Memory {
                    needed,
                    stream,
                    slab: chunk_bytes,
                    allowed,
                });
            }
            (allowed - stream) / 2 / chunk_bytes
        }
    };
    Ok(chunks.min(whole) * chunk)
}
