//! Multiscale pyramids made while streaming: level 0 is the stream, level
//! `k + 1` halves level `k` along the chosen dimensions. Each level is a
//! stream of its own, with its own sink; a [`Halver`] between two levels
//! turns every plane (or pair of planes, when the first dimension is
//! halved) of a level into a plane of the next as soon as it arrives, so
//! memory stays at each level's epoch buffers plus at most two planes,
//! whatever the stream's length.

use std::sync::Arc;
use std::time::Instant;

use retile_halving::{Halver, Method};
use retile_plan::{
    epoch_buffer_count, LevelSummary, Sink, StreamError, StreamPlan, StreamSpec, Summary,
};
use retile_tiler::{thread_pool, TileStream};

use crate::backend::{AnyStream, Backend};
use crate::reorder::FrameReorder;

/// Most levels a pyramid has.
///
/// ```
/// use retile_plan::{DType, StreamSpec};
/// use retile_pyramid::{PyramidOptions, MAX_LEVELS};
/// let spec = StreamSpec::new(DType::U8, vec![0, 8, 8], vec![1, 2, 2])?;
/// let pyramid = PyramidOptions { levels: Some(MAX_LEVELS + 1), ..Default::default() };
/// let err = pyramid.level_specs(&spec).unwrap_err();
/// assert!(err.to_string().contains("1 to 32 levels"));
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub const MAX_LEVELS: usize = 32;

/// The pyramid a stream makes.
///
/// ```
/// use retile_halving::Method;
/// use retile_plan::{DType, StreamSpec};
/// use retile_pyramid::PyramidOptions;
/// let spec = StreamSpec::new(DType::U16, vec![0, 2048, 2048], vec![64, 256, 256])?;
/// let pyramid = PyramidOptions { method: Method::Mean, ..Default::default() };
/// // halving y and x until a level fits in one tile: 2048, 1024, 512, 256
/// let shapes: Vec<_> = pyramid.level_specs(&spec)?.iter().map(|s| s.shape().to_vec()).collect();
/// assert_eq!(shapes.len(), 4);
/// assert_eq!(shapes[3], vec![0, 256, 256]);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PyramidOptions {
    /// How a block becomes one element.
    pub method: Method,
    /// Per dimension (slowest first), whether each level halves it;
    /// `None` = every dimension but the first. Halving the first (append)
    /// dimension gives each level one plane for every two of its parent's.
    pub downsample: Option<Vec<bool>>,
    /// Levels, the stream itself included; `None` = until a level fits in
    /// one tile along every halved dimension (the first dimension of an
    /// unbounded stream aside).
    pub levels: Option<usize>,
}

impl PyramidOptions {
    /// Which dimensions of `spec` each level halves.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// use retile_pyramid::PyramidOptions;
    /// let spec = StreamSpec::new(DType::U8, vec![0, 8, 8], vec![1, 2, 2])?;
    /// // by default every dimension but the first
    /// assert_eq!(PyramidOptions::default().halved(&spec)?, [false, true, true]);
    /// let wrong = PyramidOptions { downsample: Some(vec![true, true]), ..Default::default() };
    /// assert!(wrong.halved(&spec).unwrap_err().to_string().contains("has 2 dimensions"));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn halved(&self, spec: &StreamSpec) -> Result<Vec<bool>, StreamError> {
        let rank = spec.shape().len();
        let halve = match &self.downsample {
            Some(h) => h.clone(),
            None => (0..rank).map(|d| d > 0).collect(),
        };
        if halve.len() != rank {
            return Err(StreamError::Invalid(format!(
                "the downsampling has {} dimensions but the stream has {rank}",
                halve.len()
            )));
        }
        // one level halves nothing: a stream of any rank is a one-level pyramid
        if rank < 2 && self.levels != Some(1) {
            return Err(StreamError::Invalid(
                "a pyramid needs at least 2 dimensions (planes of at least one dimension); a 1-D stream can be written without one".into(),
            ));
        }
        Ok(halve)
    }

    /// The stream of every level, level 0 first: the same element type,
    /// tile and first-dimension boundedness as `spec`, each halved extent
    /// `ceil(n / 2)` of its parent's.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// use retile_pyramid::PyramidOptions;
    /// let spec = StreamSpec::new(DType::U8, vec![10, 5, 9], vec![4, 4, 4])?;
    /// let pyramid = PyramidOptions { levels: Some(3), ..Default::default() };
    /// let shapes: Vec<_> = pyramid.level_specs(&spec)?.iter().map(|s| s.shape().to_vec()).collect();
    /// assert_eq!(shapes, [vec![10, 5, 9], vec![10, 3, 5], vec![10, 2, 3]]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn level_specs(&self, spec: &StreamSpec) -> Result<Vec<StreamSpec>, StreamError> {
        let halve = self.halved(spec)?;
        if !halve.contains(&true) && self.levels.is_none_or(|n| n > 1) {
            return Err(StreamError::Invalid(
                "a pyramid must halve at least one dimension".into(),
            ));
        }
        if self.levels == Some(0) || self.levels.is_some_and(|n| n > MAX_LEVELS) {
            return Err(StreamError::Invalid(format!(
                "a pyramid has 1 to {MAX_LEVELS} levels, not {}",
                self.levels.unwrap_or(0)
            )));
        }
        let fits = |shape: &[u64]| {
            (0..shape.len())
                .all(|d| !halve[d] || (d == 0 && shape[0] == 0) || shape[d] <= spec.tile()[d])
        };
        if self.levels.is_none()
            && halve[0]
            && spec.is_unbounded()
            && halve[1..].iter().all(|&h| !h)
        {
            return Err(StreamError::Invalid(
                "an unbounded stream halved only along its first dimension never fits one tile: give the number of levels".into(),
            ));
        }
        let mut specs = vec![spec.clone()];
        let mut shape = spec.shape().to_vec();
        loop {
            let done = match self.levels {
                Some(n) => specs.len() == n,
                None => fits(&shape),
            };
            if done && specs.len() > 1 && !spec.epochs_in_input_order() {
                return Err(StreamError::Invalid(format!(
                    "a pyramid halves stored planes as they complete, but the input order {:?} completes none before it ends (its slowest dimension is not the stored first); stream without a pyramid (levels=1), or put the stored first dimension slowest",
                    spec.input_order()
                )));
            }
            if done {
                return Ok(specs);
            }
            if specs.len() == MAX_LEVELS {
                return Err(StreamError::Invalid(format!(
                    "a pyramid has at most {MAX_LEVELS} levels; give fewer"
                )));
            }
            let next: Vec<u64> = shape
                .iter()
                .zip(&halve)
                .map(|(&n, &h)| if h { n.div_ceil(2) } else { n })
                .collect();
            if next == shape && !(halve[0] && spec.is_unbounded()) {
                return Err(StreamError::Invalid(format!(
                    "level {} would be the same as level {} (every halved extent is already 1); ask for fewer levels",
                    specs.len(),
                    specs.len() - 1
                )));
            }
            shape = next;
            specs.push(
                StreamSpec::new(spec.dtype(), shape.clone(), spec.tile().to_vec())?
                    .with_epoch_buffers(spec.epoch_buffers())?,
            );
        }
    }
}

impl PyramidOptions {
    /// The plan of every level, level 0 first.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// use retile_pyramid::PyramidOptions;
    /// let spec = StreamSpec::new(DType::U8, vec![0, 64, 64], vec![8, 16, 16])?;
    /// let plans = PyramidOptions::default().level_plans(&spec)?;
    /// assert_eq!(plans.iter().map(|p| p.m()).collect::<Vec<_>>(), [16, 4, 1]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn level_plans(&self, spec: &StreamSpec) -> Result<Vec<StreamPlan>, StreamError> {
        self.level_specs(spec)?
            .iter()
            .map(StreamPlan::new)
            .collect()
    }

    /// Bytes of host memory the pyramid's streams hold on the CPU, whatever
    /// the stream's length: every level's epoch buffers and, between two
    /// levels, what a [`retile_halving::Halver`] holds (at most the first
    /// plane of a pair, a unit of a plane cut by an append and one batch of
    /// child planes).
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// use retile_pyramid::PyramidOptions;
    /// let spec = StreamSpec::new(DType::U16, vec![0, 2048, 2048], vec![64, 256, 256])?;
    /// let alone = 2 * StreamPlan::new(&spec)?.epoch_buffer_bytes();
    /// let with = PyramidOptions::default().memory_bytes(&spec)?;
    /// assert!(with > alone && with < alone * 3 / 2);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn memory_bytes(&self, spec: &StreamSpec) -> Result<u64, StreamError> {
        let halve = self.halved(spec)?;
        let specs = self.level_specs(spec)?;
        let mut total: u64 = 0;
        for (k, level) in specs.iter().enumerate() {
            let plan = StreamPlan::new(level)?;
            let buffers = epoch_buffer_count(&plan).saturating_mul(plan.epoch_buffer_bytes());
            total = total.saturating_add(buffers);
            if k + 1 < specs.len() {
                total = total.saturating_add(Halver::held_bytes_of(level, &halve));
                total = total.saturating_add(FrameReorder::held_bytes_of(level));
            }
        }
        Ok(total)
    }
}

/// One level: its stream, and the halver making the next level.
struct Level {
    stream: AnyStream,
    halver: Option<Halver>,
}

/// A stream with its multiscale pyramid: every level a stream of its own,
/// fed from its parent's planes as they arrive.
///
/// ```
/// use retile_halving::Method;
/// use retile_plan::{DType, MemorySink, StreamSpec};
/// use retile_pyramid::{Backend, MultiscaleStream, PyramidOptions};
/// let spec = StreamSpec::new(DType::U8, vec![0, 4, 4], vec![1, 2, 2])?;
/// let sinks = [MemorySink::new(), MemorySink::new(), MemorySink::new()];
/// let pyramid = PyramidOptions { method: Method::Max, ..Default::default() };
/// let mut stream = MultiscaleStream::new(spec, &[0], Backend::Cpu { threads: 1 }, &pyramid, |level, _| {
///     Ok(Box::new(sinks[level].clone()))
/// })?;
/// stream.append(&(0..32).collect::<Vec<u8>>())?;
/// let summary = stream.finish()?;
/// assert_eq!(summary.levels.len(), 2);
/// // level 1 of plane 0 is the max of each 2 x 2 block of 0..16
/// assert_eq!(sinks[1].assemble().unwrap()[..4], [5, 7, 13, 15]);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub struct MultiscaleStream {
    levels: Vec<Level>,
    /// Level 0's frames in stored order for its halver, when they arrive in another.
    reorder: Option<FrameReorder>,
    /// Each level's CUDA stream halves into the next on the GPU.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    on_device: bool,
    pool: Arc<rayon::ThreadPool>,
    started: Instant,
    finished: bool,
    /// The bytes of one element of the fill value.
    fill: Vec<u8>,
    /// Planes of fill added by [`MultiscaleStream::skip`].
    skipped: u64,
}

/// Bytes of fill a skip appends at once (at least one plane): a long gap
/// goes through the tiler in pieces of bounded memory.
const SKIP_PIECE_BYTES: u64 = 4 << 20;

/// Epochs of fill a skip appends at once, at most: where tiles are small,
/// an epoch's fixed cost (its claim) and not its bytes takes the time, and
/// [`MultiscaleStream::skip_while`] asks its question at least this often.
const SKIP_PIECE_EPOCHS: u64 = 64;

/// The most elements an array may hold: Zarr readers (numpy, zarr-python,
/// tensorstore) index elements and bytes with signed 64-bit integers.
const MAX_ELEMENTS: u64 = i64::MAX as u64;

/// Refuses a skip of `planes` after `whole` planes of `plane_elements`
/// elements (`plane_bytes` bytes) that would make an array no reader can
/// index, or one whose bytes a 64-bit count cannot hold; nothing is added.
fn check_indexable(
    whole: u64,
    planes: u64,
    plane_elements: u64,
    plane_bytes: u64,
) -> Result<(), StreamError> {
    let total = whole.checked_add(planes);
    let fits = |per_plane: u64| {
        total
            .and_then(|t| t.checked_mul(per_plane))
            .is_some_and(|n| n <= MAX_ELEMENTS)
    };
    if fits(plane_elements) && fits(plane_bytes) {
        return Ok(());
    }
    Err(StreamError::Invalid(format!(
        "skipping {planes} planes after {whole} would make an array of more than 2^63 - 1 elements or bytes \
         ({plane_elements} elements, {plane_bytes} bytes a plane), which Zarr readers cannot index: skip at most {} planes",
        (MAX_ELEMENTS / plane_bytes.max(plane_elements).max(1)).saturating_sub(whole)
    )))
}

impl MultiscaleStream {
    /// Opens the streams of every level of `pyramid` over `spec` on
    /// `backend`, level `k` writing to `sink(k, &its spec)`.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_pyramid::{Backend, MultiscaleStream, PyramidOptions};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 16, 16], vec![1, 4, 4])?;
    /// let mut shapes = Vec::new();
    /// let stream = MultiscaleStream::new(spec, &[0], Backend::Cpu { threads: 1 }, &PyramidOptions::default(), |_, level| {
    ///     shapes.push(level.shape().to_vec());
    ///     Ok(Box::new(NullSink))
    /// })?;
    /// assert_eq!(shapes, [vec![0, 16, 16], vec![0, 8, 8], vec![0, 4, 4]]);
    /// # drop(stream);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn new(
        spec: StreamSpec,
        fill: &[u8],
        backend: Backend,
        pyramid: &PyramidOptions,
        mut sink: impl FnMut(usize, &StreamSpec) -> Result<Box<dyn Sink>, StreamError>,
    ) -> Result<MultiscaleStream, StreamError> {
        let started = Instant::now();
        let halve = pyramid.halved(&spec)?;
        let specs = pyramid.level_specs(&spec)?;
        let reorder = match specs.len() > 1 {
            true => FrameReorder::new(&spec),
            false => None,
        };
        let on_device = backend == Backend::Cuda && specs.len() > 1;
        // one pool for every level's tiling and the halving (the GPU halves
        // on its own): pools of their own would spin while another works
        let pool = match backend {
            Backend::Cpu { threads } => thread_pool(threads)?,
            Backend::Cuda => thread_pool(1)?,
        };
        let mut levels = Vec::with_capacity(specs.len());
        for (k, level) in specs.iter().enumerate() {
            let sink = sink(k, level)?;
            #[cfg_attr(not(feature = "cuda"), allow(unused_mut))]
            let mut stream = match backend {
                Backend::Cpu { .. } => AnyStream::Cpu(Box::new(TileStream::with_pool(
                    level.clone(),
                    fill,
                    pool.clone(),
                    sink,
                )?)),
                Backend::Cuda => AnyStream::open(level.clone(), fill, backend, sink)?,
            };
            let parent = k + 1 < specs.len();
            // child planes go on in batches: a few large appends, which
            // every thread of the pool tiles, rather than one small one
            // per plane, which one thread tiles
            let halver = match parent && !on_device {
                true => Some(Halver::new(pyramid.method, level, &halve)?.holding_batches()),
                false => None,
            };
            #[cfg(feature = "cuda")]
            if let (true, Some(s)) = (parent && on_device, stream.as_cuda_mut()) {
                s.attach_halver(pyramid.method, &halve)?;
            }
            levels.push(Level { stream, halver });
        }
        Ok(MultiscaleStream {
            levels,
            reorder,
            on_device,
            pool,
            started,
            finished: false,
            fill: fill.to_vec(),
            skipped: 0,
        })
    }

    /// A stream of one level: `spec` into `sink`, no pyramid.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_pyramid::{Backend, MultiscaleStream};
    /// let spec = StreamSpec::new(DType::U8, vec![2, 4], vec![1, 2])?;
    /// let mut s = MultiscaleStream::single(spec, &[0], Backend::Cpu { threads: 1 }, Box::new(NullSink))?;
    /// assert_eq!(s.append(&[1; 8])?, 8);
    /// assert_eq!(s.finish()?.planes, 2);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn single(
        spec: StreamSpec,
        fill: &[u8],
        backend: Backend,
        sink: Box<dyn Sink>,
    ) -> Result<MultiscaleStream, StreamError> {
        let pyramid = PyramidOptions {
            levels: Some(1),
            ..Default::default()
        };
        let mut sink = Some(sink);
        MultiscaleStream::new(spec, fill, backend, &pyramid, |_, _| {
            sink.take()
                .ok_or_else(|| StreamError::Invalid("one level has one sink".into()))
        })
    }

    /// The plan of level 0 (the stream itself).
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_pyramid::{Backend, MultiscaleStream};
    /// let spec = StreamSpec::new(DType::U16, vec![0, 8, 8], vec![2, 4, 4])?;
    /// let s = MultiscaleStream::single(spec, &[0, 0], Backend::Cpu { threads: 1 }, Box::new(NullSink))?;
    /// assert_eq!(s.plan().spec().shape(), &[0, 8, 8]);
    /// assert_eq!(s.plan().tile_bytes(), 64);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn plan(&self) -> &StreamPlan {
        self.levels[0].stream.plan()
    }

    /// The plans of every level, level 0 first.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_pyramid::{Backend, MultiscaleStream, PyramidOptions};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 8, 8], vec![1, 4, 4])?;
    /// let s = MultiscaleStream::new(spec, &[0], Backend::Cpu { threads: 1 }, &PyramidOptions::default(), |_, _| {
    ///     Ok(Box::new(NullSink))
    /// })?;
    /// let tiles: Vec<u64> = s.level_plans().iter().map(|p| p.m()).collect();
    /// assert_eq!(tiles, [4, 1]); // tiles in an epoch of each level
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn level_plans(&self) -> Vec<&StreamPlan> {
        self.levels.iter().map(|l| l.stream.plan()).collect()
    }

    /// Input bytes taken so far.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_pyramid::{Backend, MultiscaleStream};
    /// let spec = StreamSpec::new(DType::U8, vec![2, 4], vec![1, 4])?;
    /// let mut s = MultiscaleStream::single(spec, &[0], Backend::Cpu { threads: 1 }, Box::new(NullSink))?;
    /// s.append(&[1; 5])?;
    /// s.append(&[1; 5])?; // the bounded stream takes 3 of these
    /// assert_eq!(s.bytes_taken(), 8);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn bytes_taken(&self) -> u64 {
        self.levels[0].stream.bytes_taken()
    }

    /// Appends input; returns how many bytes were taken (fewer only when a
    /// bounded stream is full). Level 0 receives its planes before this
    /// returns; the levels below it receive theirs 2 MiB or more at a time
    /// (see [`Halver::holding_batches`]), and every one by
    /// [`MultiscaleStream::finish`].
    ///
    /// ```
    /// use retile_plan::{DType, MemorySink, StreamSpec};
    /// use retile_pyramid::{Backend, MultiscaleStream, PyramidOptions};
    /// let spec = StreamSpec::new(DType::U8, vec![1, 2, 2], vec![1, 2, 2])?;
    /// let sinks = [MemorySink::new(), MemorySink::new()];
    /// let pyramid = PyramidOptions { levels: Some(2), ..Default::default() };
    /// let mut s = MultiscaleStream::new(spec, &[0], Backend::Cpu { threads: 1 }, &pyramid, |k, _| Ok(Box::new(sinks[k].clone())))?;
    /// assert_eq!(s.append(&[1, 3, 5, 7, 9])?, 4); // one plane fills the bounded stream
    /// s.finish()?;
    /// assert_eq!(sinks[1].assemble().unwrap(), [4]); // the mean of the plane
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn append(&mut self, data: &[u8]) -> Result<usize, StreamError> {
        if self.finished {
            return Err(StreamError::Finished);
        }
        #[cfg(feature = "cuda")]
        if self.on_device {
            return retile_cuda::append_levels(&mut self.device_levels()?, data);
        }
        if self.reorder.is_none() {
            return self.append_halving_beside(data);
        }
        let (first, rest) = self.levels.split_first_mut().ok_or(StreamError::Finished)?;
        let taken = first.stream.append(data)?;
        if let (Some(halver), Some(reorder)) = (&mut first.halver, &mut self.reorder) {
            let pool = &self.pool;
            let planes = reorder.push(&data[..taken]);
            halver.push(planes, pool, &mut |planes| feed(rest, planes, pool))?;
        }
        Ok(taken)
    }

    /// Appends input in stored order: level 0 tiles it on this thread
    /// (with the pool) while a task of the pool reduces it into level 1's
    /// planes ([`Halver::reduce_ahead`], which never waits), and then this
    /// thread hands them on down, so that every wait for a sink or a
    /// buffer stays on the caller's thread and the pool's threads never
    /// block, however many streams share them.
    fn append_halving_beside(&mut self, data: &[u8]) -> Result<usize, StreamError> {
        let (first, rest) = self.levels.split_first_mut().ok_or(StreamError::Finished)?;
        let Some(halver) = &mut first.halver else {
            return first.stream.append(data);
        };
        let offered = first.stream.accepts(data.len())?;
        let pool = &self.pool;
        let mut ahead = Ok(0);
        let taken = pool.in_place_scope(|scope| {
            scope.spawn(|_| ahead = halver.reduce_ahead(&data[..offered], pool));
            first.stream.append(data)
        });
        let taken = match taken {
            Ok(taken) => taken,
            Err(e) => {
                // level 0 refused the bytes: so does every level below
                halver.rewind(*ahead.as_ref().unwrap_or(&0));
                return Err(e);
            }
        };
        // level 0 takes what it accepted; were it fewer bytes, those are reduced anew
        let ahead = match ahead? {
            ahead if ahead <= taken => ahead,
            ahead => {
                halver.rewind(ahead);
                0
            }
        };
        halver.push(&data[ahead..taken], pool, &mut |planes| {
            feed(rest, planes, pool)
        })?;
        Ok(taken)
    }

    /// Adds `planes` planes of the fill value (frames a camera dropped),
    /// through every level as appended planes go; the chunks they fill
    /// alone are left out of the store. Refused, adding nothing, inside a
    /// plane (after part of one was appended), past the end of a bounded
    /// shape, or past 2^63 - 1 elements or bytes (what Zarr readers can
    /// index). A skip takes time in proportion to its planes, at the
    /// stream's speed (it costs no disk).
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_pyramid::{Backend, MultiscaleStream};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 4], vec![1, 2])?;
    /// let mut s = MultiscaleStream::single(spec, &[0], Backend::Cpu { threads: 1 }, Box::new(NullSink))?;
    /// s.append(&[1; 4])?;
    /// s.skip(3)?;
    /// assert!(s.append(&[1; 2]).is_ok() && s.skip(1).is_err()); // inside plane 4
    /// s.append(&[1; 2])?;
    /// assert!(s.skip(u64::MAX / 4).is_err()); // 2^64 bytes: no reader can index them
    /// let summary = s.finish()?;
    /// assert_eq!((summary.planes, summary.skipped_planes), (5, 3));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn skip(&mut self, planes: u64) -> Result<(), StreamError> {
        self.skip_while(planes, || true).map(|_| ())
    }

    /// [`MultiscaleStream::skip`] that asks `go_on` before each piece of
    /// at most 4 MiB and 64 epochs of fill, and stops, adding no more, when it answers
    /// false (a caller's interrupt); returns the planes added, each counted
    /// in the summary's `skipped_planes` as a whole skip's are. The
    /// refusals are decided before any plane is added.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_pyramid::{Backend, MultiscaleStream};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 1 << 20], vec![1, 1 << 20])?;
    /// let mut s = MultiscaleStream::single(spec, &[0], Backend::Cpu { threads: 1 }, Box::new(NullSink))?;
    /// let mut asked = 0;
    /// let added = s.skip_while(100, || { asked += 1; asked <= 2 })?; // 4 planes a piece
    /// assert_eq!(added, 8);
    /// assert_eq!(s.finish()?.skipped_planes, 8);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn skip_while(
        &mut self,
        planes: u64,
        mut go_on: impl FnMut() -> bool,
    ) -> Result<u64, StreamError> {
        if self.finished {
            return Err(StreamError::Finished);
        }
        let spec = self.plan().spec().clone();
        if !spec.epochs_in_input_order() {
            return Err(StreamError::Invalid(format!(
                "skip adds planes of the stored first dimension, but the input order {:?} is slowest along dimension {}: append its frames of the fill value instead",
                spec.input_order(),
                spec.input_order()[0]
            )));
        }
        let plane_bytes = spec
            .plane_elements()?
            .checked_mul(self.fill.len() as u64)
            .ok_or_else(|| StreamError::Invalid("a plane has more than 2^64 bytes".into()))?;
        let taken = self.bytes_taken();
        let (whole, partial) = (taken / plane_bytes, taken % plane_bytes);
        if partial != 0 {
            return Err(StreamError::Invalid(format!(
                "skip adds whole planes, but plane {whole} is partly appended ({partial} of its {plane_bytes} bytes): append the rest of it first"
            )));
        }
        if !spec.is_unbounded() && whole.saturating_add(planes) > spec.shape()[0] {
            return Err(StreamError::Invalid(format!(
                "skipping {planes} planes after {whole} would go past the {} planes of the bounded shape",
                spec.shape()[0]
            )));
        }
        check_indexable(whole, planes, spec.plane_elements()?, plane_bytes)?;
        let per_piece = (SKIP_PIECE_BYTES / plane_bytes)
            .min(SKIP_PIECE_EPOCHS.saturating_mul(spec.tile()[0]))
            .max(1);
        let piece = self
            .fill
            .repeat((per_piece.min(planes) * plane_bytes / self.fill.len() as u64) as usize);
        let mut left = planes;
        while left > 0 && go_on() {
            let now = left.min(per_piece);
            self.append(&piece[..(now * plane_bytes) as usize])?;
            self.skipped += now;
            left -= now;
        }
        Ok(planes - left)
    }

    /// Flushes every level (a last odd plane of a halved first dimension
    /// becomes its child's last plane), finalises every sink and returns
    /// level 0's summary with every level's in [`Summary::levels`]; the
    /// first error (level 0's first) after every level was finished.
    ///
    /// ```
    /// use retile_halving::Method;
    /// use retile_plan::{DType, MemorySink, StreamSpec};
    /// use retile_pyramid::{Backend, MultiscaleStream, PyramidOptions};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 2], vec![1, 1])?;
    /// let sinks = [MemorySink::new(), MemorySink::new()];
    /// let pyramid = PyramidOptions { method: Method::Max, downsample: Some(vec![true, true]), levels: Some(2) };
    /// let mut s = MultiscaleStream::new(spec, &[0], Backend::Cpu { threads: 1 }, &pyramid, |k, _| Ok(Box::new(sinks[k].clone())))?;
    /// s.append(&[1, 2, 3, 4, 5, 6])?; // three planes: a pair and a lone one
    /// let summary = s.finish()?;
    /// assert_eq!(summary.levels[1].shape, vec![2, 1]);
    /// assert_eq!(sinks[1].assemble().unwrap(), [4, 6]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn finish(&mut self) -> Result<Summary, StreamError> {
        if self.finished {
            return Err(StreamError::Finished);
        }
        self.finished = true;
        #[cfg(feature = "cuda")]
        if self.on_device {
            let results = retile_cuda::finish_levels(&mut self.device_levels()?);
            return self.first_error_or_combined(results);
        }
        let mut first_error = None;
        for k in 0..self.levels.len() {
            let (head, rest) = self.levels.split_at_mut(k + 1);
            if let Some(halver) = &mut head[k].halver {
                let pool = &self.pool;
                if let Err(e) = halver.flush(pool, &mut |planes| feed(rest, planes, pool)) {
                    first_error.get_or_insert(e);
                }
            }
        }
        let results: Vec<_> = self.levels.iter_mut().map(|l| l.stream.finish()).collect();
        match first_error {
            Some(e) => Err(e),
            None => self.first_error_or_combined(results),
        }
    }

    /// The first level's error, or the levels' summaries combined.
    fn first_error_or_combined(
        &self,
        results: Vec<Result<Summary, StreamError>>,
    ) -> Result<Summary, StreamError> {
        let summaries = results.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(self.combine(summaries))
    }

    /// Every level's CUDA stream, level 0 first.
    #[cfg(feature = "cuda")]
    fn device_levels(&mut self) -> Result<Vec<&mut retile_cuda::CudaTileStream>, StreamError> {
        self.levels
            .iter_mut()
            .map(|l| l.stream.as_cuda_mut())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| StreamError::gpu("a pyramid level is not on the GPU"))
    }

    /// Level 0's summary, with the levels' sinks added up and listed.
    fn combine(&self, summaries: Vec<Summary>) -> Summary {
        let mut total = summaries[0].clone();
        total.levels = summaries
            .iter()
            .zip(&self.levels)
            .map(|(s, l)| {
                let mut shape = l.stream.plan().spec().shape().to_vec();
                shape[0] = s.planes;
                LevelSummary {
                    shape,
                    tiles: s.tiles,
                    sink: s.sink.clone(),
                }
            })
            .collect();
        for level in &summaries[1..] {
            let (t, s) = (&mut total.sink, &level.sink);
            t.stored_bytes += s.stored_bytes;
            t.files += s.files;
            t.omitted_chunks += s.omitted_chunks;
            t.encode_seconds += s.encode_seconds;
            t.write_seconds += s.write_seconds;
            t.uploaded_bytes += s.uploaded_bytes;
            t.requests += s.requests;
            total.buffer_bytes += level.buffer_bytes;
            total.tiles += level.tiles;
        }
        total.buffer_bytes += self
            .levels
            .iter()
            .filter_map(|l| l.halver.as_ref().map(Halver::held_bytes))
            .sum::<u64>();
        total.seconds = self.started.elapsed().as_secs_f64();
        total.skipped_planes = self.skipped;
        total
    }
}

/// Appends child planes to the first of `levels` and passes its own
/// children on down.
fn feed(levels: &mut [Level], planes: &[u8], pool: &rayon::ThreadPool) -> Result<(), StreamError> {
    let Some((first, rest)) = levels.split_first_mut() else {
        return Ok(());
    };
    let taken = first.stream.append(planes)?;
    if taken < planes.len() {
        return Err(StreamError::Invalid(format!(
            "a pyramid level refused {} of its parent's bytes; its shape does not match its parent's",
            planes.len() - taken
        )));
    }
    match &mut first.halver {
        Some(halver) => halver.push(planes, pool, &mut |next| feed(rest, next, pool)),
        None => Ok(()),
    }
}
