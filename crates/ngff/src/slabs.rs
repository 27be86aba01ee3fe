//! One output written by the tasks of a job at once (a Dask cluster's):
//! the array is cut along its first dimension into slabs of whole rows of
//! files (of every level's files, where the first dimension is halved too),
//! and along the other dimensions too into blocks of whole files of every
//! level; each slab or block is streamed by one task into its files,
//! and the metadata written by the job's caller alone ([`SlabJob::begin`]
//! before any task, [`JobStore::finish`] once every task is done), so that
//! the store never claims a plane that a task has not finished.
//!
//! The caller holds the store's lock for the whole job; the tasks write
//! into the store it made ready without taking the lock (they are part of
//! the caller's job, and their files are disjoint). A task writes every
//! file of its block whole, so a task that fails or is run again leaves,
//! once it succeeds, the same files.

use retile_plan::{Sink, StreamError, StreamPlan, StreamSpec};
use retile_pyramid::{Backend, MultiscaleStream, PyramidOptions};
use retile_store::{Group, StoreRoot, ZarrOptions, ZarrSink};

use crate::open::{Image, Output};

/// An output to be written in slabs: the whole array's stream, its fill,
/// what is written, and the pyramid with every choice made (the levels
/// counted from the whole array), so that every task makes the same levels.
///
/// ```
/// use retile_ngff::{ArrayOptions, SlabJob};
/// use retile_pyramid::Backend;
/// use retile_store::ZarrOptions;
/// let dir = std::env::temp_dir().join(format!("retile-slabs-doc-{}", std::process::id()));
/// let options = ArrayOptions { shape: vec![6, 4], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
/// let store = ZarrOptions { path: dir.join("a.zarr"), overwrite: true, ..Default::default() };
/// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
/// assert_eq!(job.slab_planes(), 2);
/// let store = job.begin()?; // the caller: the store made ready, claiming nothing yet
/// for first in [4, 0, 2] {  // the tasks, in any order, anywhere
///     let data: Vec<u8> = (first as u8 * 4..first as u8 * 4 + 8).collect();
///     job.write_slab(first, &data, Backend::Cpu { threads: 1 })?;
/// }
/// store.finish()?;         // the caller again: every plane claimed
/// let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("a.zarr/zarr.json"))?)?;
/// assert_eq!(meta["shape"], serde_json::json!([6, 4]));
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SlabJob {
    spec: StreamSpec,
    fill: Vec<u8>,
    zarr: ZarrOptions,
    output: Output,
    /// The pyramid resolved (one level without one).
    pyramid: PyramidOptions,
    /// Each level's whole stream.
    levels: Vec<StreamSpec>,
    /// Whether each level halves each dimension.
    halved: Vec<bool>,
}

impl SlabJob {
    /// The job of writing `array` (a bounded array with a store) in slabs.
    pub fn new(array: crate::options::ResolvedArray) -> Result<SlabJob, StreamError> {
        let crate::options::ResolvedArray { spec, fill, output } = array;
        let Some(zarr) = output.zarr.clone() else {
            return Err(StreamError::Invalid(
                "an array written in slabs is written to a store: give its output".into(),
            ));
        };
        if spec.is_unbounded() {
            return Err(StreamError::Invalid(
                "an array written in slabs has a known first extent (its shape's first entry is 0)"
                    .into(),
            ));
        }
        let pyramid = match image_of(&output, &spec, &zarr)? {
            Some(image) => image.pyramid,
            None => PyramidOptions {
                levels: Some(1),
                ..Default::default()
            },
        };
        let levels = pyramid.level_specs(&spec)?;
        let pyramid = PyramidOptions {
            levels: Some(levels.len()),
            ..pyramid
        };
        let halved = match levels.len() {
            1 => vec![false; spec.shape().len()],
            _ => pyramid.halved(&spec)?,
        };
        Ok(SlabJob {
            spec,
            fill,
            zarr,
            output,
            pyramid,
            levels,
            halved,
        })
    }

    /// The planes a slab starts at a multiple of: a row of files (the
    /// tile's first extent times the shard's), times `2^(levels-1)` where
    /// each level halves the first dimension, so that every level's slab
    /// starts a row of its files too.
    pub fn slab_planes(&self) -> u64 {
        self.block_units()[0]
    }

    /// The elements a block starts at a multiple of, along each dimension:
    /// a file (the tile's extent times the shard's), times `2^(levels-1)`
    /// where the levels halve the dimension, so that the block is whole
    /// files of every level.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![6, 10], tile: vec![2, 4], dtype: "u8".into(),
    ///                              shard: Some(vec![1, 2]), ..Default::default() };
    /// let store = ZarrOptions { path: std::env::temp_dir().join("retile-units-doc"), ..Default::default() };
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// assert_eq!(job.block_units(), vec![2, 8]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn block_units(&self) -> Vec<u64> {
        let shard = self.zarr.shard.as_deref();
        (0..self.spec.shape().len())
            .map(|d| {
                let file = self.spec.tile()[d]
                    .saturating_mul(shard.and_then(|s| s.get(d).copied()).unwrap_or(1));
                match self.halved[d] {
                    true => file.saturating_mul(1 << (self.levels.len() - 1).min(62)),
                    false => file,
                }
            })
            .collect()
    }

    /// Whether the levels halve each dimension (none without a pyramid). A
    /// block of a pyramid is at least a unit (or the array's extent) wide
    /// along a halved dimension below the first.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![6, 10], tile: vec![2, 4], dtype: "u8".into(),
    ///                              pyramid: Some("mean".into()), levels: Some(2), ..Default::default() };
    /// let store = ZarrOptions { path: std::env::temp_dir().join("retile-halved-doc"), ..Default::default() };
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// assert_eq!(job.halved(), &[false, true]);
    /// assert_eq!(job.block_units(), vec![2, 8]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn halved(&self) -> &[bool] {
        &self.halved
    }

    /// The array's element type.
    pub fn dtype(&self) -> retile_plan::DType {
        self.spec.dtype()
    }

    /// The whole array's shape.
    pub fn shape(&self) -> &[u64] {
        self.spec.shape()
    }

    /// Each level's shape, level 0 first.
    pub fn level_shapes(&self) -> Vec<Vec<u64>> {
        self.levels.iter().map(|s| s.shape().to_vec()).collect()
    }

    /// The bytes of one plane of level 0.
    pub fn plane_bytes(&self) -> u64 {
        let plane: u64 = self.spec.shape()[1..].iter().product();
        plane.saturating_mul(self.spec.dtype().size() as u64)
    }

    /// Bytes of memory a slab's stream holds besides its input: every
    /// level's epoch buffers and what passes between levels.
    pub fn stream_memory(&self) -> Result<u64, StreamError> {
        self.pyramid
            .memory_bytes(&self.block_spec(self.spec.shape())?)
    }

    /// The caller's start: the store made ready and locked (new, or
    /// overwritten where its options allow), every level's array made
    /// with a first extent of 0 (and an image's group after them). Nothing
    /// is claimed until [`JobStore::finish`]; dropped unfinished, the store
    /// claims nothing and is unlocked.
    pub fn begin(&self) -> Result<JobStore, StreamError> {
        // the caller writes metadata alone: one writer thread per level
        let zarr = ZarrOptions {
            writers: Some(1),
            ..self.zarr.clone()
        };
        match image_of(&self.output, &self.spec, &zarr)? {
            Some(image) => {
                let group = Group::create(&zarr)?;
                let begun = self.begin_levels(|k| image.level_sink(&group, &zarr, k));
                let begun = begun.and_then(|store| image.put_group(&group, &zarr).map(|()| store));
                if begun.is_err() {
                    group.root().abandon();
                }
                begun
            }
            None => {
                let root = StoreRoot::open(&zarr)?;
                let begun = self.begin_levels(|_| ZarrSink::in_root(&root, "", zarr.clone()));
                if begun.is_err() {
                    root.abandon();
                }
                begun
            }
        }
    }

    /// Begins the sink of every level, each made by `sink`.
    fn begin_levels(
        &self,
        mut sink: impl FnMut(usize) -> ZarrSink,
    ) -> Result<JobStore, StreamError> {
        let mut levels = Vec::with_capacity(self.levels.len());
        for (k, spec) in self.levels.iter().enumerate() {
            let mut level = sink(k);
            level.begin(&StreamPlan::new(spec)?, &self.fill)?;
            levels.push((level, spec.shape()[0]));
        }
        Ok(JobStore { levels })
    }

    /// A task's work: `data` (whole planes, C order, native byte order)
    /// as planes `first_plane..` of the array, with every level's matching
    /// planes, written into the store the caller made ready. Refused
    /// unless the slab starts at a multiple of [`SlabJob::slab_planes`]
    /// and ends at one or at the array's end. Returns the slab's summary.
    pub fn write_slab(
        &self,
        first_plane: u64,
        data: &[u8],
        backend: Backend,
    ) -> Result<retile_plan::Summary, StreamError> {
        let plane = self.plane_bytes().max(1);
        if !(data.len() as u64).is_multiple_of(plane) {
            return Err(StreamError::Invalid(format!(
                "a slab is whole planes of {plane} bytes; {} bytes were given",
                data.len()
            )));
        }
        let (origin, shape) = self.slab_box(first_plane, data.len() as u64 / plane);
        self.write_block(&origin, &shape, data, backend)
    }

    /// A task's work when the array is cut along more than its first
    /// dimension: `data` (C order, native byte order) as the box of shape
    /// `shape` at element `origin` of the array, with every level's
    /// matching box, written into the store the caller made ready.
    /// Refused unless the box starts at a multiple of
    /// [`SlabJob::block_units`] along every dimension and ends at one or
    /// at the array's end. Returns the block's summary.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let dir = std::env::temp_dir().join(format!("retile-blocks-doc-{}", std::process::id()));
    /// let options = ArrayOptions { shape: vec![4, 6], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// let store = ZarrOptions { path: dir.join("a.zarr"), overwrite: true, ..Default::default() };
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// let store = job.begin()?;
    /// for (origin, shape) in [([0, 4], [2, 2]), ([2, 0], [2, 6]), ([0, 0], [2, 4])] {
    ///     let data = vec![origin[0] as u8 + 1; (shape[0] * shape[1]) as usize];
    ///     job.write_block(&origin, &shape, &data, Backend::Cpu { threads: 1 })?;
    /// }
    /// store.finish()?;
    /// assert!(dir.join("a.zarr/c/0/1").is_file() && dir.join("a.zarr/c/1/1").is_file());
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_block(
        &self,
        origin: &[u64],
        shape: &[u64],
        data: &[u8],
        backend: Backend,
    ) -> Result<retile_plan::Summary, StreamError> {
        let elements = shape.iter().try_fold(1u64, |n, &e| n.checked_mul(e));
        let bytes = elements.and_then(|n| n.checked_mul(self.spec.dtype().size() as u64));
        if bytes != Some(data.len() as u64) {
            return Err(StreamError::Invalid(format!(
                "a block of shape {shape:?} is {} bytes; {} bytes were given",
                bytes.map_or("too many".to_string(), |b| b.to_string()),
                data.len()
            )));
        }
        let mut stream = self.open_block(origin, shape, backend)?;
        stream.append(data)?;
        stream.finish()
    }

    /// A task's stream of `planes` planes from `first_plane` on, for the
    /// task to append them to and finish (in pieces, where its input comes
    /// in pieces); checked as [`SlabJob::write_slab`] says.
    pub fn open_slab(
        &self,
        first_plane: u64,
        planes: u64,
        backend: Backend,
    ) -> Result<MultiscaleStream, StreamError> {
        let (origin, shape) = self.slab_box(first_plane, planes);
        self.open_block(&origin, &shape, backend)
    }

    /// The block of `planes` whole planes from `first_plane` on: its
    /// origin and shape.
    fn slab_box(&self, first_plane: u64, planes: u64) -> (Vec<u64>, Vec<u64>) {
        let mut shape = self.spec.shape().to_vec();
        shape[0] = planes;
        let mut origin = vec![0; shape.len()];
        origin[0] = first_plane;
        (origin, shape)
    }

    /// A task's stream of the box of shape `shape` at element `origin`,
    /// for the task to append its planes to and finish; checked as
    /// [`SlabJob::write_block`] says.
    fn open_block(
        &self,
        origin: &[u64],
        shape: &[u64],
        backend: Backend,
    ) -> Result<MultiscaleStream, StreamError> {
        self.check_block(origin, shape)?;
        let spec = self.block_spec(shape)?;
        let origin_of = |k: usize| -> Vec<u64> {
            origin
                .iter()
                .zip(&self.halved)
                .map(|(&o, &h)| if h { o >> k.min(63) } else { o })
                .collect()
        };
        let image = image_of(&self.output, &self.spec, &self.zarr)?;
        MultiscaleStream::new(spec, &self.fill, backend, &self.pyramid, |k, _| {
            let options = match &image {
                Some(image) => image.slab_options(&self.zarr, k),
                None => ZarrOptions {
                    user: None,
                    ..self.zarr.clone()
                },
            };
            Ok(Box::new(ZarrSink::new(options).block(origin_of(k))))
        })
    }

    /// The stream of a block of shape `shape`: bounded without a pyramid
    /// (so that a block of one epoch holds one epoch buffer), unbounded
    /// with one (a slab's levels are counted from the whole array, not
    /// from the slab).
    fn block_spec(&self, shape: &[u64]) -> Result<StreamSpec, StreamError> {
        let mut shape = shape.to_vec();
        if self.levels.len() > 1 {
            shape[0] = 0;
        }
        StreamSpec::new(self.spec.dtype(), shape, self.spec.tile().to_vec())?
            .with_epoch_buffers(self.spec.epoch_buffers())
    }

    /// Refuses a block that does not start (and end, unless at the
    /// array's end) at a multiple of [`SlabJob::block_units`] along every
    /// dimension, is empty, or goes beyond the array.
    fn check_block(&self, origin: &[u64], shape: &[u64]) -> Result<(), StreamError> {
        let (units, total) = (self.block_units(), self.spec.shape());
        if origin.len() != total.len() || shape.len() != total.len() {
            return Err(StreamError::Invalid(format!(
                "a block of the array's {} dimensions has an origin and a shape of {} each, not {} and {}",
                total.len(),
                total.len(),
                origin.len(),
                shape.len()
            )));
        }
        for d in 0..total.len() {
            let (first, unit, whole) = (origin[d], units[d], total[d]);
            let end = first.saturating_add(shape[d]);
            let what = match d {
                0 => "planes",
                _ => "elements",
            };
            if shape[d] == 0 || end > whole {
                return Err(StreamError::Invalid(format!(
                    "a block of {what} {first}..{end} along dimension {d} is not a non-empty part of the array's {whole}"
                )));
            }
            if !first.is_multiple_of(unit) || (!end.is_multiple_of(unit) && end != whole) {
                let (part, files) = match d {
                    0 => ("a slab", "a row of shards"),
                    _ => ("a block", "a shard"),
                };
                return Err(StreamError::Invalid(format!(
                    "{part} starts and ends at a multiple of {unit} {what} along dimension {d} ({files} of every level), or at the array's end ({whole}); {what} {first}..{end} do not"
                )));
            }
            // a block narrower than a unit along a halved dimension could
            // reach an extent of 1 before the last level, which halves nothing
            if d > 0 && self.halved[d] && shape[d] < unit.min(whole) {
                return Err(StreamError::Invalid(format!(
                    "a block of a pyramid is at least {} elements along dimension {d}, which its levels halve; {} were given",
                    unit.min(whole),
                    shape[d]
                )));
            }
        }
        Ok(())
    }
}

/// The image `output` describes, if it is one (a pyramid, or OME-Zarr
/// metadata asked for).
fn image_of(
    output: &Output,
    spec: &StreamSpec,
    zarr: &ZarrOptions,
) -> Result<Option<Image>, StreamError> {
    if output.pyramid.is_none() && output.ngff.is_none() {
        return Ok(None);
    }
    let one_level = PyramidOptions {
        levels: Some(1),
        ..Default::default()
    };
    let pyramid = output.pyramid.as_ref().unwrap_or(&one_level);
    let ngff = output.ngff.clone().unwrap_or_default();
    Image::describe(spec, zarr, pyramid, &ngff).map(Some)
}

/// The store of a job, held by its caller: locked, every level's array
/// made, nothing claimed until [`JobStore::finish`].
pub struct JobStore {
    /// Each level's sink (writing only metadata) and its whole extent.
    levels: Vec<(ZarrSink, u64)>,
}

impl JobStore {
    /// Claims every plane of every level, level 0 first, once every slab
    /// is written (the caller's last step); the store is unlocked after.
    pub fn finish(mut self) -> Result<(), StreamError> {
        for (sink, planes) in &mut self.levels {
            sink.finish(*planes)?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for JobStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobStore")
            .field("levels", &self.levels.len())
            .finish()
    }
}
