//! The CPU engine: fills one epoch of tiles while the sink thread writes the
//! previous one, so memory stays at two epochs whatever the stream's length.

use std::sync::mpsc::{channel, Receiver, TryRecvError};
use std::sync::Arc;
use std::time::Instant;

use retile_plan::{
    epoch_buffer_count, filled, plan_stream, shared_pool, EpochBuffer, Sink, StreamError,
    StreamPlan, StreamSpec, Summary,
};

use crate::permuted::Permuted;
use crate::scatter::Geometry;
use crate::state::{Filler, StreamState};

mod slabs;

/// Most threads a stream tiles with.
///
/// ```
/// use retile_tiler::{thread_pool, MAX_THREADS};
/// assert_eq!(MAX_THREADS, 256);
/// let err = thread_pool(MAX_THREADS + 1).unwrap_err();
/// assert!(err.to_string().contains("to 256 threads"));
/// ```
pub const MAX_THREADS: usize = 256;

/// Appends at least this large are scattered by all threads.
const PARALLEL_BYTES: usize = 1 << 20;

/// How many epoch buffers a stream of `plan` starts with: all it needs,
/// but for an input in slabs held whole, one slab's (the second slab's are
/// made while the first is written, unless the sink gave the first's back
/// by then).
fn epoch_buffers_at_start(plan: &StreamPlan) -> u64 {
    let spec = plan.spec();
    match spec.epochs_in_input_order() || spec.slabs_in_epochs() {
        true => epoch_buffer_count(plan),
        false => plan.tile_counts()[0].min(epoch_buffer_count(plan)),
    }
}

/// The epoch buffers a stream of `plan` starts with, made and filled
/// (every page touched, so that no page fault stalls a real-time source):
/// the first epoch's now; the others, for a stream in input order, on the
/// pool's threads while the first fills, handed on through the receiver
/// (made now too for an input in slabs). Making a buffer costs a page fault
/// per page, and a stream that made them all first started later by as
/// much (0.11 s of a 0.5 s run for two 512 MiB epochs on the 16-core
/// device host).
fn epoch_buffers(
    plan: &StreamPlan,
    fill: &[u8],
    pool: &Arc<rayon::ThreadPool>,
) -> Result<StartBuffers, StreamError> {
    let count = epoch_buffers_at_start(plan);
    let later = match plan.spec().epochs_in_input_order() {
        true => count.saturating_sub(1),
        false => 0,
    };
    let now = pool.install(|| {
        (0..count - later)
            .map(|_| epoch_buffer(plan, fill))
            .collect::<Result<Vec<_>, _>>()
    })?;
    if later == 0 {
        return Ok(StartBuffers {
            now,
            making: None,
            count,
        });
    }
    let (made, making) = channel();
    let (plan, fill) = (plan.clone(), fill.to_vec());
    pool.spawn(move || {
        for _ in 0..later {
            // a stream that ended first needs no more
            if made.send(epoch_buffer(&plan, &fill)).is_err() {
                return;
            }
        }
    });
    Ok(StartBuffers {
        now,
        making: Some(making),
        count,
    })
}

/// The buffers a stream starts with: those made, those being made, and
/// how many in all.
struct StartBuffers {
    now: Vec<EpochBuffer>,
    making: Option<Receiver<Made>>,
    count: u64,
}

/// A buffer made on the pool's threads after the stream started.
type Made = Result<EpochBuffer, StreamError>;

/// One epoch buffer of `plan`, filled with `fill`.
fn epoch_buffer(plan: &StreamPlan, fill: &[u8]) -> Result<EpochBuffer, StreamError> {
    let bytes = usize::try_from(plan.epoch_buffer_bytes()).map_err(|_| {
        StreamError::Invalid(format!(
            "an epoch of {} bytes does not fit this machine's address space",
            plan.epoch_buffer_bytes()
        ))
    })?;
    EpochBuffer::new(bytes, fill)
}

/// A stream of row-major data being cut into tiles.
///
/// `append` takes bytes of any length, split anywhere (even inside an
/// element); `finish` flushes the last, partial epoch, finalises the sink and
/// returns a [`Summary`]. A bounded stream takes exactly its capacity.
///
/// ```
/// use retile_plan::{DType, MemorySink, StreamSpec};
/// use retile_tiler::TileStream;
/// let spec = StreamSpec::new(DType::U8, vec![0, 2, 2], vec![1, 1, 2])?;
/// let sink = MemorySink::new();
/// let mut stream = TileStream::new(spec, &[0], 1, Box::new(sink.clone()))?;
/// stream.append(&[1, 2, 3, 4])?; // one plane: two tiles of one row each
/// assert_eq!(stream.finish()?.tiles, 2);
/// assert_eq!(sink.tile(&[0, 1, 0]), Some(vec![3, 4]));
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub struct TileStream {
    state: StreamState<EpochBuffer>,
    scatter: Scatter,
    fill: Vec<u8>,
    /// The buffer being filled.
    current: Option<EpochBuffer>,
    /// Buffers free for the next epochs.
    spare: Vec<EpochBuffer>,
    /// Buffers still being made on the pool's threads (`None` once all are).
    making: Option<Receiver<Made>>,
    /// The slab being filled, for an input in slabs.
    slab: Option<slabs::Slab>,
    pool: Arc<rayon::ThreadPool>,
}

/// How input bytes reach the tiles: rows of the stored order, or an input
/// in another order through its permuted layout.
enum Scatter {
    Stored(Geometry),
    Permuted(Permuted),
}

impl Scatter {
    fn new(plan: &StreamPlan) -> Scatter {
        match plan.spec().in_stored_order() {
            true => Scatter::Stored(Geometry::new(plan)),
            false => Scatter::Permuted(Permuted::new(plan)),
        }
    }

    /// Copies bytes `[start, start + src.len())` of the epoch into `buf`.
    fn epoch(&self, buf: &mut [u8], start: usize, src: &[u8], parallel: bool) {
        match self {
            Scatter::Stored(g) => g.scatter(buf, start, src, parallel),
            Scatter::Permuted(p) => p.scatter(&mut [buf], start, src, parallel),
        }
    }
}

impl TileStream {
    /// A stream of `spec` filled with `fill` (the bytes of one element) where
    /// tiles are padded, using `threads` threads (0 = all cores), writing to `sink`.
    ///
    /// ```
    /// use retile_plan::{DType, MemorySink, StreamSpec};
    /// use retile_tiler::TileStream;
    /// let spec = StreamSpec::new(DType::U8, vec![1, 3], vec![1, 2])?;
    /// let sink = MemorySink::new();
    /// let mut stream = TileStream::new(spec, &[9], 0, Box::new(sink.clone()))?;
    /// stream.append(&[1, 2, 3])?;
    /// stream.finish()?;
    /// // the second tile is padded with the fill value
    /// assert_eq!(sink.tile(&[0, 1]), Some(vec![3, 9]));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn new(
        spec: StreamSpec,
        fill: &[u8],
        threads: usize,
        sink: Box<dyn Sink>,
    ) -> Result<TileStream, StreamError> {
        TileStream::with_pool(spec, fill, thread_pool(threads)?, sink)
    }

    /// [`TileStream::new`] tiling on `pool`, which other streams may share
    /// (the levels of a pyramid do: one set of threads, none idle-spinning
    /// while another set works).
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_tiler::{thread_pool, TileStream};
    /// let pool = thread_pool(2)?;
    /// let spec = StreamSpec::new(DType::U8, vec![0, 8], vec![2, 4])?;
    /// let mut a = TileStream::with_pool(spec.clone(), &[0], pool.clone(), Box::new(NullSink))?;
    /// let mut b = TileStream::with_pool(spec, &[0], pool, Box::new(NullSink))?;
    /// a.append(&[1; 16])?;
    /// b.append(&[2; 8])?;
    /// assert_eq!((a.finish()?.planes, b.finish()?.planes), (2, 1));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn with_pool(
        spec: StreamSpec,
        fill: &[u8],
        pool: Arc<rayon::ThreadPool>,
        sink: Box<dyn Sink>,
    ) -> Result<TileStream, StreamError> {
        let plan = plan_stream(&spec, fill)?;
        let scatter = Scatter::new(&plan);
        let mut state = StreamState::start(plan, fill, sink)?;
        let buffers = epoch_buffers(&state.plan, fill, &pool)?;
        state.summary.buffer_bytes = buffers.count * state.plan.epoch_buffer_bytes();
        state.summary.setup_seconds = state.started.elapsed().as_secs_f64();
        Ok(TileStream {
            state,
            scatter,
            fill: fill.to_vec(),
            current: None,
            spare: buffers.now,
            making: buffers.making,
            slab: None,
            pool,
        })
    }

    /// The plan the stream follows.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_tiler::TileStream;
    /// let spec = StreamSpec::new(DType::U16, vec![4, 4, 6], vec![2, 2, 3])?;
    /// let stream = TileStream::new(spec, &[0, 0], 1, Box::new(NullSink))?;
    /// assert_eq!(stream.plan().tile_counts(), &[2, 2, 2]);
    /// assert_eq!(stream.plan().tile_bytes(), 24);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn plan(&self) -> &StreamPlan {
        &self.state.plan
    }

    /// Input bytes taken so far.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_tiler::TileStream;
    /// let spec = StreamSpec::new(DType::U8, vec![2, 4], vec![1, 4])?;
    /// let mut stream = TileStream::new(spec, &[0], 1, Box::new(NullSink))?;
    /// stream.append(&[0; 3])?;
    /// stream.append(&[0; 10])?; // a bounded stream takes 5 more
    /// assert_eq!(stream.bytes_taken(), 8);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn bytes_taken(&self) -> u64 {
        self.state.taken
    }

    /// How many of `len` bytes [`TileStream::append`] takes now: all of
    /// them, or what is left of a bounded stream; an error once the stream
    /// has finished.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamSpec};
    /// use retile_tiler::TileStream;
    /// let spec = StreamSpec::new(DType::U8, vec![3, 4], vec![2, 4])?;
    /// let mut s = TileStream::new(spec, &[0], 1, Box::new(NullSink))?;
    /// s.append(&[1; 8])?;
    /// assert_eq!(s.accepts(100)?, 4); // one plane of four bytes is left
    /// assert_eq!(s.append(&[1; 100])?, 4);
    /// assert_eq!(s.accepts(100)?, 0);
    /// s.finish()?;
    /// assert!(s.accepts(1).is_err());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn accepts(&self, len: usize) -> Result<usize, StreamError> {
        self.state.accepted(len)
    }

    /// Appends input; returns how many bytes were taken (fewer than given only
    /// when a bounded stream is full). An error means data may be lost: the
    /// sink failed, and the stream cannot go on.
    ///
    /// ```
    /// use retile_plan::{DType, MemorySink, StreamSpec};
    /// use retile_tiler::TileStream;
    /// let spec = StreamSpec::new(DType::U16, vec![0, 2], vec![1, 2])?;
    /// let sink = MemorySink::new();
    /// let mut stream = TileStream::new(spec, &[0, 0], 1, Box::new(sink.clone()))?;
    /// // split inside an element: the bytes are joined all the same
    /// assert_eq!(stream.append(&[1, 0, 2])?, 3);
    /// assert_eq!(stream.append(&[0])?, 1);
    /// stream.finish()?;
    /// assert_eq!(sink.tile(&[0, 0]), Some(vec![1, 0, 2, 0]));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn append(&mut self, data: &[u8]) -> Result<usize, StreamError> {
        let take = self.state.accepted(data.len())?;
        let src = &data[..take];
        if !self.state.plan.spec().epochs_in_input_order() {
            self.append_in_slabs(src)?;
            return Ok(take);
        }
        self.in_epochs(take as u64, |stream, at, n| {
            let part = &src[at as usize..(at + n) as usize];
            let mut buf = stream.take_buffer()?;
            let started = Instant::now();
            let (scatter, cursor) = (&stream.scatter, stream.state.cursor as usize);
            stream
                .pool
                .install(|| scatter.epoch(&mut buf, cursor, part, part.len() >= PARALLEL_BYTES));
            stream.current = Some(buf);
            stream.state.summary.scatter_seconds += started.elapsed().as_secs_f64();
            Ok(())
        })?;
        Ok(take)
    }

    /// The buffer of the current epoch: the one being filled, or a free
    /// one (a buffer made meanwhile, or one the sink gave back, or the
    /// first of those to come).
    fn take_buffer(&mut self) -> Result<EpochBuffer, StreamError> {
        if let Some(buf) = self.current.take() {
            return Ok(buf);
        }
        self.collect_made(false)?;
        if let Some(buf) = self.state.free_buffer_now(&mut self.spare)? {
            return Ok(buf);
        }
        if self.making.is_some() {
            self.collect_made(true)?;
        }
        self.state.free_buffer(&mut self.spare)
    }

    /// Adds the buffers made on the pool's threads since to the spare
    /// ones; with `wait`, waits for the next one first (the wait is
    /// counted).
    fn collect_made(&mut self, wait: bool) -> Result<(), StreamError> {
        let Some(making) = &self.making else {
            return Ok(());
        };
        if wait {
            let waited = Instant::now();
            let next = making.recv();
            self.state.summary.wait_seconds += waited.elapsed().as_secs_f64();
            match next {
                Ok(made) => self.spare.push(made?),
                Err(_) => {
                    self.making = None;
                    return Ok(());
                }
            }
        }
        loop {
            match making.try_recv() {
                Ok(made) => self.spare.push(made?),
                Err(TryRecvError::Empty) => return Ok(()),
                Err(TryRecvError::Disconnected) => {
                    self.making = None;
                    return Ok(());
                }
            }
        }
    }

    /// Flushes the last epoch, finalises the sink and returns the summary.
    /// Input that ended inside a plane, or a bounded stream that ended
    /// early, is an error reported after every complete plane was written.
    ///
    /// ```
    /// use retile_plan::{DType, NullSink, StreamError, StreamSpec};
    /// use retile_tiler::TileStream;
    /// let spec = StreamSpec::new(DType::U8, vec![0, 4], vec![1, 4])?;
    /// let mut stream = TileStream::new(spec, &[0], 1, Box::new(NullSink))?;
    /// stream.append(&[7; 10])?; // two planes and half of a third
    /// let err = stream.finish().unwrap_err();
    /// assert!(matches!(err, StreamError::PartialPlane { planes: 2, bytes: 2 }));
    /// assert!(matches!(stream.finish(), Err(StreamError::Finished)));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn finish(&mut self) -> Result<Summary, StreamError> {
        if self.state.finished() {
            return Err(StreamError::Finished);
        }
        if !self.state.plan.spec().epochs_in_input_order() {
            let (summary, _) = self.state.finish(Ok(()), 0)?;
            return Ok(summary);
        }
        let (shipped, partial) = match self.ship_last() {
            Ok(partial) => (Ok(()), partial),
            Err(e) => (Err(e), 0),
        };
        let (summary, _) = self.state.finish(shipped, partial)?;
        Ok(summary)
    }
}

impl Filler for TileStream {
    type Buffer = EpochBuffer;

    fn state(&mut self) -> &mut StreamState<EpochBuffer> {
        &mut self.state
    }

    /// Hands the current epoch to the sink, its rows past `planes` reset to the fill value.
    fn ship_epoch(&mut self, planes: u64) -> Result<(), StreamError> {
        let mut buffer = self.take_buffer()?;
        let n0 = self.state.plan.spec().tile()[0];
        if planes < n0 {
            let (tile_bytes, slot_bytes) = (
                self.state.plan.tile_bytes() as usize,
                self.state.plan.slot_bytes() as usize,
            );
            let keep = tile_bytes / n0 as usize * planes as usize;
            let tail = filled(tile_bytes - keep, &self.fill);
            for slot in buffer.chunks_exact_mut(slot_bytes) {
                slot[keep..tile_bytes].copy_from_slice(&tail);
            }
        }
        self.state.send(self.state.epoch, planes, buffer)
    }
}

/// The threads a stream tiles with: `threads` of them, or one per core for
/// 0, shared by every stream of the process that asks for as many while one
/// is alive (the arrays of an acquisition): one set of threads, none
/// spinning while another set works.
///
/// ```
/// let pool = retile_tiler::thread_pool(3)?;
/// assert_eq!(pool.current_num_threads(), 3);
/// assert!(std::sync::Arc::ptr_eq(&pool, &retile_tiler::thread_pool(3)?));
/// assert!(retile_tiler::thread_pool(retile_tiler::MAX_THREADS + 1).is_err());
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub fn thread_pool(threads: usize) -> Result<Arc<rayon::ThreadPool>, StreamError> {
    if threads > MAX_THREADS {
        return Err(StreamError::Invalid(format!(
            "a stream tiles with 0 (all cores) to {MAX_THREADS} threads, not {threads}"
        )));
    }
    shared_pool("retile-tiler", threads)
        .map_err(|e| StreamError::Invalid(format!("cannot start {threads} threads: {e}")))
}
