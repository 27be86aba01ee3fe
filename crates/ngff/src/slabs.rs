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

use retile_halving::{halve_planes, Halving};
use retile_plan::{Sink, StreamError, StreamPlan, StreamSpec};
use retile_pyramid::{Backend, MultiscaleStream, PyramidOptions};
use retile_store::{Group, StoreRoot, ZarrOptions, ZarrSink};
use retile_tiler::thread_pool;

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
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let cpu = Backend::Cpu { threads: 1 };
    /// let store = ZarrOptions { path: std::env::temp_dir().join("retile-new-doc"), ..Default::default() }; // nothing written
    /// let bounded = ArrayOptions { shape: vec![6, 4], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// assert_eq!(SlabJob::new(bounded.resolve(Some(store.clone()), cpu)?)?.shape(), &[6, 4]);
    /// let unbounded = ArrayOptions { shape: vec![0, 4], ..bounded.clone() };
    /// let err = SlabJob::new(unbounded.resolve(Some(store), cpu)?).unwrap_err();
    /// assert!(err.to_string().contains("known first extent"));
    /// assert!(SlabJob::new(bounded.resolve(None, cpu)?).is_err()); // no store
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
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
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![12, 4], tile: vec![2, 4], dtype: "u8".into(), shard: Some(vec![3, 1]), ..Default::default() };
    /// let store = ZarrOptions { path: std::env::temp_dir().join("retile-slab-planes-doc"), ..Default::default() }; // nothing written
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// assert_eq!(job.slab_planes(), 6); // a row of shards: 2 x 3 planes
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
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
        self.level_units(0)
    }

    /// The elements, of level `level`, a box written from that level on
    /// ([`SlabJob::write_levels`]) starts at a multiple of: a file, times
    /// `2^(levels-1-level)` along the halved dimensions, so that the box
    /// is whole files of every level from `level` on.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![6, 64], tile: vec![2, 4], dtype: "u8".into(),
    ///                              pyramid: Some("mean".into()), levels: Some(3), ..Default::default() };
    /// let store = ZarrOptions { path: std::env::temp_dir().join("retile-level-units-doc"), ..Default::default() };
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// assert_eq!((job.level_units(0), job.level_units(1), job.level_units(2)), (vec![2, 16], vec![2, 8], vec![2, 4]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn level_units(&self, level: usize) -> Vec<u64> {
        let below = self.levels.len().saturating_sub(level + 1).min(62);
        self.files()
            .into_iter()
            .zip(&self.halved)
            .map(|(file, &h)| match h {
                true => file.saturating_mul(1 << below),
                false => file,
            })
            .collect()
    }

    /// The elements a block of level 0 alone ([`SlabJob::write_top`])
    /// starts at a multiple of: a file, made even along the halved
    /// dimensions, so that the block halves as the whole array does.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![6, 64], tile: vec![3, 5], dtype: "u8".into(),
    ///                              pyramid: Some("mean".into()), levels: Some(3), ..Default::default() };
    /// let store = ZarrOptions { path: std::env::temp_dir().join("retile-top-units-doc"), ..Default::default() };
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// assert_eq!(job.top_units(), vec![3, 10]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn top_units(&self) -> Vec<u64> {
        self.files()
            .into_iter()
            .zip(&self.halved)
            .map(|(file, &h)| match h && file % 2 == 1 {
                true => file.saturating_mul(2),
                false => file,
            })
            .collect()
    }

    /// The elements of one file (the tile times the shard) along each
    /// dimension.
    fn files(&self) -> Vec<u64> {
        let shard = self.zarr.shard.as_deref();
        (0..self.spec.shape().len())
            .map(|d| {
                self.spec.tile()[d]
                    .saturating_mul(shard.and_then(|s| s.get(d).copied()).unwrap_or(1))
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
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![6, 10], tile: vec![2, 4], dtype: "uint16".into(), ..Default::default() };
    /// let store = ZarrOptions { path: std::env::temp_dir().join("retile-dtype-doc"), ..Default::default() }; // nothing written
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// assert_eq!(job.dtype(), retile_plan::DType::U16);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn dtype(&self) -> retile_plan::DType {
        self.spec.dtype()
    }

    /// The whole array's shape.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![6, 10], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// let store = ZarrOptions { path: std::env::temp_dir().join("retile-shape-doc"), ..Default::default() }; // nothing written
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// assert_eq!(job.shape(), &[6, 10]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn shape(&self) -> &[u64] {
        self.spec.shape()
    }

    /// Each level's shape, level 0 first.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![6, 64], tile: vec![2, 4], dtype: "u8".into(),
    ///     pyramid: Some("mean".into()), levels: Some(3), ..Default::default() };
    /// let store = ZarrOptions { path: std::env::temp_dir().join("retile-level-shapes-doc"), ..Default::default() }; // nothing written
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// assert_eq!(job.level_shapes(), [vec![6, 64], vec![6, 32], vec![6, 16]]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn level_shapes(&self) -> Vec<Vec<u64>> {
        self.levels.iter().map(|s| s.shape().to_vec()).collect()
    }

    /// The bytes of one plane of level 0.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![6, 10], tile: vec![2, 4], dtype: "u16".into(), ..Default::default() };
    /// let store = ZarrOptions { path: std::env::temp_dir().join("retile-plane-bytes-doc"), ..Default::default() }; // nothing written
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// assert_eq!(job.plane_bytes(), 20); // 10 elements of 2 bytes
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn plane_bytes(&self) -> u64 {
        let plane: u64 = self.spec.shape()[1..].iter().product();
        plane.saturating_mul(self.spec.dtype().size() as u64)
    }

    /// Bytes of memory a slab's stream holds besides its input: every
    /// level's epoch buffers and what passes between levels.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_plan::{DType, StreamSpec};
    /// use retile_pyramid::{Backend, PyramidOptions};
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![6, 64], tile: vec![2, 16], dtype: "u8".into(), ..Default::default() };
    /// let store = ZarrOptions { path: std::env::temp_dir().join("retile-stream-memory-doc"), ..Default::default() }; // nothing written
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// let one_level = PyramidOptions { levels: Some(1), ..Default::default() };
    /// let spec = StreamSpec::new(DType::U8, vec![6, 64], vec![2, 16])?;
    /// assert_eq!(job.stream_memory()?, one_level.memory_bytes(&spec)?);
    /// assert!(job.stream_memory()? >= 2 * 16); // an epoch of 4 tiles of 32 bytes at least
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn stream_memory(&self) -> Result<u64, StreamError> {
        self.pyramid
            .memory_bytes(&self.block_spec(self.spec.shape(), self.levels.len())?)
    }

    /// The caller's start: the store made ready and locked (new, or
    /// overwritten where its options allow), every level's array made
    /// with a first extent of 0 (and an image's group after them). Nothing
    /// is claimed until [`JobStore::finish`]; dropped unfinished, the store
    /// claims nothing and is unlocked.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![6, 4], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// let dir = std::env::temp_dir().join(format!("retile-begin-doc-{}", std::process::id()));
    /// let store = ZarrOptions { path: dir.join("a.zarr"), overwrite: true, ..Default::default() };
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// let store = job.begin()?;
    /// let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("a.zarr/zarr.json"))?)?;
    /// assert_eq!(meta["shape"], serde_json::json!([0, 4])); // made, claiming nothing yet
    /// # drop(store);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// # use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![6, 4], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// # let dir = std::env::temp_dir().join(format!("retile-write-slab-doc-{}", std::process::id()));
    /// # let store = ZarrOptions { path: dir.join("a.zarr"), overwrite: true, ..Default::default() };
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// let store = job.begin()?;
    /// let summary = job.write_slab(2, &[7; 8], Backend::Cpu { threads: 1 })?; // planes 2 and 3
    /// assert_eq!(summary.planes, 2);
    /// assert!(dir.join("a.zarr/c/1/0").is_file());
    /// let err = job.write_slab(1, &[7; 8], Backend::Cpu { threads: 1 }).unwrap_err();
    /// assert!(err.to_string().contains("multiple of 2 planes"), "{err}");
    /// # drop(store);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
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
        self.write_levels(0, origin, shape, data, backend)
    }

    /// A task's work in the second phase of a pyramid written in two
    /// (after [`SlabJob::write_top`]): `data` (C order, native byte order)
    /// as the box of shape `shape` at element `origin` of level `level`,
    /// with every level below it, written into the store the caller made
    /// ready. Refused unless the box starts at a multiple of
    /// [`SlabJob::level_units`] of that level along every dimension and
    /// ends at one or at the level's end. Returns the box's summary, its
    /// levels from `level` on.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let dir = std::env::temp_dir().join(format!("retile-levels-doc-{}", std::process::id()));
    /// let options = ArrayOptions { shape: vec![2, 8], tile: vec![1, 2], dtype: "u8".into(),
    ///                              pyramid: Some("mean".into()), levels: Some(3), ..Default::default() };
    /// let store = ZarrOptions { path: dir.join("a.zarr"), overwrite: true, ..Default::default() };
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// let store = job.begin()?;
    /// let cpu = Backend::Cpu { threads: 1 };
    /// let mut level1 = Vec::new();
    /// for first in [0, 4] { // phase one: level 0 in blocks, each handing on its level 1
    ///     let data: Vec<u8> = (0..8).map(|i| (i % 4 + first) as u8 * 2).collect();
    ///     level1.push(job.halve_top(&[0, first], &[2, 4], &data, cpu)?);
    ///     job.write_top(&[0, first], &[2, 4], &data, cpu)?;
    /// }
    /// // phase two: level 1's box (whole rows here), and level 2 from it
    /// let rows: Vec<u8> = [&level1[0][..2], &level1[1][..2], &level1[0][2..], &level1[1][2..]].concat();
    /// assert_eq!(rows, [1, 5, 9, 13, 1, 5, 9, 13]);
    /// let summary = job.write_levels(1, &[0, 0], &[2, 4], &rows, cpu)?;
    /// assert_eq!(summary.levels.len(), 2);
    /// store.finish()?;
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_levels(
        &self,
        level: usize,
        origin: &[u64],
        shape: &[u64],
        data: &[u8],
        backend: Backend,
    ) -> Result<retile_plan::Summary, StreamError> {
        if level >= self.levels.len() {
            return Err(StreamError::Invalid(format!(
                "the job's levels are 0 to {}; it has no level {level}",
                self.levels.len() - 1
            )));
        }
        self.check_box(level, origin, shape, &self.level_units(level), true)?;
        self.check_bytes(shape, data)?;
        let levels = self.levels.len() - level;
        let mut stream = self.open_levels(level, levels, origin, shape, backend)?;
        stream.append(data)?;
        stream.finish()
    }

    /// A task's work in the first phase of a pyramid written in two: `data`
    /// (C order, native byte order) as the box of shape `shape` at element
    /// `origin` of level 0, written there alone; [`SlabJob::halve_top`]
    /// makes its level 1 for [`SlabJob::write_levels`] to write the levels
    /// below. A block of level 0 alone needs to be whole files of that
    /// level only ([`SlabJob::top_units`]), so a pyramid can be cut into as
    /// many blocks as its array has shards. Refused for a job of one
    /// level. Returns the block's summary (level 0 only). See
    /// [`SlabJob::write_levels`] for an example.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![2, 8], tile: vec![1, 2], dtype: "u8".into(),
    ///     pyramid: Some("mean".into()), levels: Some(3), ..Default::default() };
    /// let dir = std::env::temp_dir().join(format!("retile-write-top-doc-{}", std::process::id()));
    /// let store = ZarrOptions { path: dir.join("a.zarr"), overwrite: true, ..Default::default() };
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// let store = job.begin()?;
    /// let summary = job.write_top(&[0, 4], &[2, 4], &[3; 8], Backend::Cpu { threads: 1 })?;
    /// assert_eq!((summary.planes, summary.tiles), (2, 4)); // level 0 alone
    /// assert!(dir.join("a.zarr/0/c/1/3").is_file() && !dir.join("a.zarr/1/c/0/1").exists());
    /// # drop(store);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn write_top(
        &self,
        origin: &[u64],
        shape: &[u64],
        data: &[u8],
        backend: Backend,
    ) -> Result<retile_plan::Summary, StreamError> {
        self.check_top(origin, shape, data)?;
        let mut stream = self.open_levels(0, 1, origin, shape, backend)?;
        stream.append(data)?;
        stream.finish()
    }

    /// The first phase's other part: the block of level 0 that
    /// [`SlabJob::write_top`] takes, halved into level 1 (C order, its
    /// shape that of `shape` halved along the halved dimensions, rounded
    /// up). It needs nothing written, so a job can hand level 1 on before
    /// level 0 is stored. Checked as [`SlabJob::write_top`] is.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![2, 8], tile: vec![1, 2], dtype: "u8".into(),
    ///     pyramid: Some("mean".into()), levels: Some(3), ..Default::default() };
    /// let store = ZarrOptions { path: std::env::temp_dir().join("retile-halve-top-doc"), ..Default::default() }; // nothing written
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// let data = [0, 2, 4, 6, 8, 10, 12, 14]; // a 2 x 4 block of level 0
    /// let level1 = job.halve_top(&[0, 0], &[2, 4], &data, Backend::Cpu { threads: 1 })?;
    /// assert_eq!(level1, [1, 5, 9, 13]); // 2 x 2: each pair's mean
    /// assert!(job.halve_top(&[0, 0], &[2, 4], &data[..6], Backend::Cpu { threads: 1 }).is_err());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn halve_top(
        &self,
        origin: &[u64],
        shape: &[u64],
        data: &[u8],
        backend: Backend,
    ) -> Result<Vec<u8>, StreamError> {
        self.check_top(origin, shape, data)?;
        self.halved_block(shape, data, backend)
    }

    /// Refuses a first-phase block: for a job of one level, or as
    /// [`SlabJob::check_box`] does with [`SlabJob::top_units`], or of the
    /// wrong size.
    fn check_top(&self, origin: &[u64], shape: &[u64], data: &[u8]) -> Result<(), StreamError> {
        if self.levels.len() < 2 {
            return Err(StreamError::Invalid(
                "a job of one level has no level 1 to hand on: write its blocks with write_block"
                    .into(),
            ));
        }
        self.check_box(0, origin, shape, &self.top_units(), false)?;
        self.check_bytes(shape, data)
    }

    /// Level 1 of the level-0 box of shape `shape` holding `data`.
    fn halved_block(
        &self,
        shape: &[u64],
        data: &[u8],
        backend: Backend,
    ) -> Result<Vec<u8>, StreamError> {
        let halving = Halving::new(&shape[1..], &self.halved[1..]);
        let per_group: u64 = if self.halved[0] { 2 } else { 1 };
        let size = self.spec.dtype().size();
        let len = (shape[0].div_ceil(per_group) as usize)
            .saturating_mul(halving.child_elements())
            .saturating_mul(size);
        let mut child = vec![0u64; len.div_ceil(8)];
        let dst = &mut bytemuck::cast_slice_mut::<u64, u8>(&mut child)[..len];
        // the halving reads elements: a misaligned buffer is copied first
        let copy: Vec<u64>;
        let src = match (data.as_ptr() as usize).is_multiple_of(size) {
            true => data,
            false => {
                let mut words = vec![0u64; data.len().div_ceil(8)];
                bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..data.len()].copy_from_slice(data);
                copy = words;
                &bytemuck::cast_slice::<u64, u8>(&copy)[..data.len()]
            }
        };
        let threads = match backend {
            Backend::Cpu { threads } => threads,
            Backend::Cuda => 0,
        };
        let method = self.pyramid.method;
        let dtype = self.spec.dtype();
        thread_pool(threads)?
            .install(|| halve_planes(method, dtype, &halving, per_group as usize, src, dst))?;
        Ok(dst.to_vec())
    }

    /// A task's stream of `planes` planes from `first_plane` on, for the
    /// task to append them to and finish (in pieces, where its input comes
    /// in pieces); checked as [`SlabJob::write_slab`] says.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// # use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![6, 4], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// # let dir = std::env::temp_dir().join(format!("retile-open-slab-doc-{}", std::process::id()));
    /// # let store = ZarrOptions { path: dir.join("a.zarr"), overwrite: true, ..Default::default() };
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// let store = job.begin()?;
    /// let mut stream = job.open_slab(4, 2, Backend::Cpu { threads: 1 })?;
    /// stream.append(&[1; 4])?; // the task's input, a plane at a time
    /// stream.append(&[2; 4])?;
    /// assert_eq!(stream.finish()?.planes, 2);
    /// assert!(dir.join("a.zarr/c/2/0").is_file());
    /// # drop(store);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn open_slab(
        &self,
        first_plane: u64,
        planes: u64,
        backend: Backend,
    ) -> Result<MultiscaleStream, StreamError> {
        let (origin, shape) = self.slab_box(first_plane, planes);
        self.open_block(&origin, &shape, backend)
    }

    /// A task's stream of the box of shape `shape` at element `origin`,
    /// every level of it, for the task to append the box's elements to (in
    /// pieces of whole planes, where its input comes in pieces) and finish;
    /// checked as [`SlabJob::write_block`] says.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// # use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![4, 6], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// # let dir = std::env::temp_dir().join(format!("retile-open-block-doc-{}", std::process::id()));
    /// # let store = ZarrOptions { path: dir.join("a.zarr"), overwrite: true, ..Default::default() };
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// let store = job.begin()?;
    /// let mut stream = job.open_block(&[2, 4], &[2, 2], Backend::Cpu { threads: 1 })?;
    /// stream.append(&[9; 4])?;
    /// stream.finish()?;
    /// assert!(dir.join("a.zarr/c/1/1").is_file());
    /// assert!(job.open_block(&[0, 2], &[2, 2], Backend::Cpu { threads: 1 }).is_err()); // not at a shard
    /// # drop(store);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn open_block(
        &self,
        origin: &[u64],
        shape: &[u64],
        backend: Backend,
    ) -> Result<MultiscaleStream, StreamError> {
        self.check_box(0, origin, shape, &self.block_units(), true)?;
        self.open_levels(0, self.levels.len(), origin, shape, backend)
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

    /// A task's stream of the box of shape `shape` at element `origin` of
    /// level `level`, writing `levels` levels from it on, for the task to
    /// append the box's elements to and finish.
    fn open_levels(
        &self,
        level: usize,
        levels: usize,
        origin: &[u64],
        shape: &[u64],
        backend: Backend,
    ) -> Result<MultiscaleStream, StreamError> {
        let spec = self.block_spec(shape, levels)?;
        let pyramid = PyramidOptions {
            levels: Some(levels),
            downsample: Some(self.halved.clone()),
            ..self.pyramid.clone()
        };
        let origin_of = |k: usize| -> Vec<u64> {
            origin
                .iter()
                .zip(&self.halved)
                .map(|(&o, &h)| if h { o >> k.min(63) } else { o })
                .collect()
        };
        let image = image_of(&self.output, &self.spec, &self.zarr)?;
        MultiscaleStream::new(spec, &self.fill, backend, &pyramid, |k, _| {
            let options = match &image {
                Some(image) => image.slab_options(&self.zarr, level + k),
                None => ZarrOptions {
                    user: None,
                    ..self.zarr.clone()
                },
            };
            Ok(Box::new(ZarrSink::new(options).block(origin_of(k))))
        })
    }

    /// The stream of a box of shape `shape` writing `levels` levels:
    /// bounded for one level (so that a block of one epoch holds one epoch
    /// buffer), unbounded for more (a box's levels are counted from the
    /// whole array, not from the box).
    fn block_spec(&self, shape: &[u64], levels: usize) -> Result<StreamSpec, StreamError> {
        let mut shape = shape.to_vec();
        if levels > 1 {
            shape[0] = 0;
        }
        StreamSpec::new(self.spec.dtype(), shape, self.spec.tile().to_vec())?
            .with_epoch_buffers(self.spec.epoch_buffers())
    }

    /// Refuses `data` unless it is the bytes of a box of shape `shape`.
    fn check_bytes(&self, shape: &[u64], data: &[u8]) -> Result<(), StreamError> {
        let elements = shape.iter().try_fold(1u64, |n, &e| n.checked_mul(e));
        let bytes = elements.and_then(|n| n.checked_mul(self.spec.dtype().size() as u64));
        match bytes == Some(data.len() as u64) {
            true => Ok(()),
            false => Err(StreamError::Invalid(format!(
                "a block of shape {shape:?} is {} bytes; {} bytes were given",
                bytes.map_or("too many".to_string(), |b| b.to_string()),
                data.len()
            ))),
        }
    }

    /// Refuses a box of level `level` that does not start (and end, unless
    /// at the level's end) at a multiple of `units` along every dimension,
    /// is empty, or goes beyond the level; and, where `narrow` is refused,
    /// one narrower than a unit along a halved dimension below the first.
    fn check_box(
        &self,
        level: usize,
        origin: &[u64],
        shape: &[u64],
        units: &[u64],
        narrow: bool,
    ) -> Result<(), StreamError> {
        let total = self.levels[level].shape();
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
                    "a block of {what} {first}..{end} along dimension {d} is not a non-empty part of the {} {whole}",
                    match level {
                        0 => "array's".to_string(),
                        _ => format!("level {level}'s"),
                    }
                )));
            }
            if !first.is_multiple_of(unit) || (!end.is_multiple_of(unit) && end != whole) {
                let (part, files) = match d {
                    0 => ("a slab", "a row of shards"),
                    _ => ("a block", "a shard"),
                };
                return Err(StreamError::Invalid(format!(
                    "{part} starts and ends at a multiple of {unit} {what} along dimension {d} ({files} of every level it writes), or at the end ({whole}); {what} {first}..{end} do not"
                )));
            }
            // a block narrower than a unit along a halved dimension could
            // reach an extent of 1 before the last level, which halves nothing
            if narrow && d > 0 && self.halved[d] && shape[d] < unit.min(whole) {
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
///
/// ```
/// use retile_ngff::{ArrayOptions, SlabJob};
/// use retile_pyramid::Backend;
/// use retile_store::ZarrOptions;
/// let options = ArrayOptions { shape: vec![4, 4], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
/// let dir = std::env::temp_dir().join(format!("retile-job-store-doc-{}", std::process::id()));
/// let store = ZarrOptions { path: dir.join("a.zarr"), overwrite: true, ..Default::default() };
/// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
/// let store = job.begin()?;
/// job.write_slab(0, &[1; 16], Backend::Cpu { threads: 1 })?;
/// drop(store); // dropped unfinished: nothing is claimed
/// let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("a.zarr/zarr.json"))?)?;
/// assert_eq!(meta["shape"], serde_json::json!([0, 4]));
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct JobStore {
    /// Each level's sink (writing only metadata) and its whole extent.
    levels: Vec<(ZarrSink, u64)>,
}

impl JobStore {
    /// Claims every plane of every level, level 0 first, once every slab
    /// is written (the caller's last step); the store is unlocked after.
    ///
    /// ```
    /// use retile_ngff::{ArrayOptions, SlabJob};
    /// use retile_pyramid::Backend;
    /// use retile_store::ZarrOptions;
    /// let options = ArrayOptions { shape: vec![4, 4], tile: vec![2, 4], dtype: "u8".into(), ..Default::default() };
    /// let dir = std::env::temp_dir().join(format!("retile-job-finish-doc-{}", std::process::id()));
    /// let store = ZarrOptions { path: dir.join("a.zarr"), overwrite: true, ..Default::default() };
    /// let job = SlabJob::new(options.resolve(Some(store), Backend::Cpu { threads: 1 })?)?;
    /// let store = job.begin()?;
    /// job.write_slab(0, &[1; 16], Backend::Cpu { threads: 1 })?;
    /// store.finish()?;
    /// let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("a.zarr/zarr.json"))?)?;
    /// assert_eq!(meta["shape"], serde_json::json!([4, 4])); // every plane claimed
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
