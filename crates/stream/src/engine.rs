//! The CPU engine: fills one epoch of tiles while the sink thread writes the
//! previous one, so memory stays at two epochs whatever the stream's length.

use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::buffer::{filled, EpochBuffer};
use crate::plan::StreamPlan;
use crate::scatter::Geometry;
use crate::sink::{Epoch, Sink, SinkStats};
use crate::{StreamError, StreamSpec};

/// Most threads a stream tiles with.
pub const MAX_THREADS: usize = 256;

/// Appends at least this large are scattered by all threads.
const PARALLEL_BYTES: usize = 1 << 20;

/// What a finished stream did.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Input bytes taken.
    pub bytes: u64,
    /// Complete planes written.
    pub planes: u64,
    /// Epochs handed to the sink.
    pub epochs: u64,
    /// Tiles handed to the sink.
    pub tiles: u64,
    /// Wall time from creation to the end of `finish`.
    pub seconds: f64,
    /// Time spent copying input into tiles.
    pub scatter_seconds: f64,
    /// Time `append` waited for the sink to return a buffer.
    pub wait_seconds: f64,
    /// Time the sink spent writing epochs.
    pub sink_seconds: f64,
    /// Bytes of tile buffers held at the peak (at most two epochs).
    pub buffer_bytes: u64,
    /// Time spent making and filling the tile buffers, before the first
    /// append (included in `seconds`).
    pub setup_seconds: f64,
    /// What the sink did: bytes stored, compression and write times (of
    /// every level, added up, for a pyramid).
    pub sink: SinkStats,
    /// Every level of a pyramid, level 0 first (empty for a plain stream).
    pub levels: Vec<crate::LevelSummary>,
}

impl Summary {
    /// Input throughput in GB/s (10^9 bytes per second).
    ///
    /// ```
    /// let s = retile_stream::Summary { bytes: 2_000_000_000, seconds: 2.0, ..Default::default() };
    /// assert_eq!(s.gigabytes_per_second(), 1.0);
    /// ```
    pub fn gigabytes_per_second(&self) -> f64 {
        self.bytes as f64 / self.seconds.max(1e-12) / 1e9
    }
}

pub(crate) enum Job<B> {
    Epoch { index: u64, planes: u64, buffer: B },
    Finish { planes: u64 },
}

/// The sink's thread and the channels to it; epochs travel in buffers of
/// type `B` (host memory of the CPU engine, pinned memory of the GPU's).
/// After the sink's first failure no later epoch is written and the sink is
/// not finalised, so a store never claims planes that are not on disk.
pub(crate) struct Worker<B> {
    pub jobs: Sender<Job<B>>,
    pub returned: Receiver<Result<B, StreamError>>,
    pub handle: JoinHandle<Result<(Duration, SinkStats), StreamError>>,
}

impl<B: AsRef<[u8]> + Send + 'static> Worker<B> {
    pub fn spawn(plan: StreamPlan, mut sink: Box<dyn Sink>) -> Worker<B> {
        let (jobs, job_rx) = channel::<Job<B>>();
        let (back, returned) = channel();
        let handle = std::thread::spawn(move || {
            let mut busy = Duration::ZERO;
            let mut failure: Option<String> = None;
            while let Ok(job) = job_rx.recv() {
                match job {
                    Job::Epoch {
                        index,
                        planes,
                        buffer,
                    } => {
                        let started = Instant::now();
                        let result = match &failure {
                            Some(reason) => Err(StreamError::Sink(format!(
                                "epoch {index} was not written after an earlier failure: {reason}"
                            ))),
                            None => sink.write_epoch(&Epoch {
                                index,
                                planes,
                                tiles: buffer.as_ref(),
                                plan: &plan,
                            }),
                        };
                        busy += started.elapsed();
                        if failure.is_none() {
                            failure = result.as_ref().err().map(ToString::to_string);
                        }
                        if back.send(result.map(|()| buffer)).is_err() {
                            break;
                        }
                    }
                    Job::Finish { planes } => {
                        return match failure {
                            Some(reason) => Err(StreamError::Sink(format!(
                                "the output was not finalised after a failed write: {reason}"
                            ))),
                            None => sink.finish(planes).map(|()| (busy, sink.stats())),
                        }
                    }
                }
            }
            Err(StreamError::Sink(
                "the stream was dropped before finish".into(),
            ))
        });
        Worker {
            jobs,
            returned,
            handle,
        }
    }

    /// Hands epoch `index` (`planes` complete planes) to the sink.
    pub fn send(&self, index: u64, planes: u64, buffer: B) -> Result<(), StreamError> {
        self.jobs
            .send(Job::Epoch {
                index,
                planes,
                buffer,
            })
            .map_err(|_| StreamError::Sink("the sink thread stopped".into()))
    }

    /// Finalises the sink after `planes` planes and returns the time it
    /// spent writing and the buffers it gave back (the caller decides when
    /// to free them); every error the sink met on the way is reported.
    pub fn close(self, planes: u64) -> Result<(Duration, SinkStats, Vec<B>), StreamError> {
        let sent = self.jobs.send(Job::Finish { planes });
        let joined = self
            .handle
            .join()
            .map_err(|_| StreamError::Sink("the sink thread panicked".into()));
        let mut buffers = Vec::new();
        while let Ok(result) = self.returned.try_recv() {
            buffers.push(result?);
        }
        sent.map_err(|_| StreamError::Sink("the sink thread stopped".into()))?;
        let (busy, stats) = joined??;
        Ok((busy, stats, buffers))
    }
}

/// The epoch buffers a stream of `plan` needs, made and filled before the
/// first append so that no page fault stalls a real-time source: two (one
/// filled while the sink writes the other), one for a bounded stream of a
/// single epoch.
fn epoch_buffers(plan: &StreamPlan, fill: &[u8]) -> Result<Vec<EpochBuffer>, StreamError> {
    let bytes = usize::try_from(plan.epoch_buffer_bytes()).map_err(|_| {
        StreamError::Invalid(format!(
            "an epoch of {} bytes does not fit this machine's address space",
            plan.epoch_buffer_bytes()
        ))
    })?;
    (0..epoch_buffer_count(plan))
        .map(|_| EpochBuffer::new(bytes, fill))
        .collect()
}

/// How many epoch buffers a stream of `plan` holds.
pub(crate) fn epoch_buffer_count(plan: &StreamPlan) -> u64 {
    let spec = plan.spec();
    match spec.is_unbounded() {
        true => 2,
        false => spec.shape()[0].div_ceil(spec.tile()[0]).min(2),
    }
}

/// Refuses a plan whose epoch buffers need more memory than the machine
/// has available, before anything is made.
pub(crate) fn check_memory(plan: &StreamPlan) -> Result<(), StreamError> {
    let needed = plan
        .epoch_buffer_bytes()
        .saturating_mul(epoch_buffer_count(plan));
    match crate::buffer::available_memory() {
        Some(available) if needed > available => Err(StreamError::Invalid(format!(
            "the stream needs {needed} bytes of tile buffers (two epochs of {} tiles of {} bytes) but this machine has {available} bytes available; use a smaller first tile extent or smaller tiles",
            plan.m(),
            plan.slot_bytes()
        ))),
        _ => Ok(()),
    }
}

/// A stream of row-major data being cut into tiles.
///
/// `append` takes bytes of any length, split anywhere (even inside an
/// element); `finish` flushes the last, partial epoch, finalises the sink and
/// returns a [`Summary`]. A bounded stream takes exactly its capacity.
pub struct TileStream {
    plan: StreamPlan,
    geometry: Geometry,
    fill: Vec<u8>,
    current: Option<EpochBuffer>,
    spare: Vec<EpochBuffer>,
    cursor: usize,
    epoch: u64,
    taken: u64,
    capacity: Option<u64>,
    pool: Arc<rayon::ThreadPool>,
    worker: Option<Worker<EpochBuffer>>,
    started: Instant,
    summary: Summary,
}

impl TileStream {
    /// A stream of `spec` filled with `fill` (the bytes of one element) where
    /// tiles are padded, using `threads` threads (0 = all cores), writing to `sink`.
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
    pub(crate) fn with_pool(
        spec: StreamSpec,
        fill: &[u8],
        pool: Arc<rayon::ThreadPool>,
        mut sink: Box<dyn Sink>,
    ) -> Result<TileStream, StreamError> {
        let esize = spec.dtype().size();
        if fill.len() != esize {
            return Err(StreamError::Invalid(format!(
                "the fill value has {} bytes; a {} element has {esize}",
                fill.len(),
                spec.dtype()
            )));
        }
        let plan = StreamPlan::new(&spec)?;
        let geometry = Geometry::new(&plan);
        let plane_bytes = spec.plane_elements()? * esize as u64;
        let capacity = (!spec.is_unbounded()).then(|| spec.shape()[0] * plane_bytes);
        check_memory(&plan)?;
        let started = Instant::now();
        sink.begin(&plan, fill)?;
        let spare = pool.install(|| epoch_buffers(&plan, fill))?;
        let summary = Summary {
            buffer_bytes: spare.iter().map(|b| b.len() as u64).sum(),
            setup_seconds: started.elapsed().as_secs_f64(),
            ..Summary::default()
        };
        let worker = Worker::spawn(plan.clone(), sink);
        Ok(TileStream {
            plan,
            geometry,
            fill: fill.to_vec(),
            current: None,
            spare,
            cursor: 0,
            epoch: 0,
            taken: 0,
            capacity,
            pool,
            worker: Some(worker),
            started,
            summary,
        })
    }

    /// The plan the stream follows.
    pub fn plan(&self) -> &StreamPlan {
        &self.plan
    }

    /// Input bytes taken so far.
    pub fn bytes_taken(&self) -> u64 {
        self.taken
    }

    fn plane_bytes(&self) -> u64 {
        self.geometry.epoch_bytes() as u64 / self.plan.spec().tile()[0]
    }

    /// Appends input; returns how many bytes were taken (fewer than given only
    /// when a bounded stream is full). An error means data may be lost: the
    /// sink failed, and the stream cannot go on.
    pub fn append(&mut self, data: &[u8]) -> Result<usize, StreamError> {
        if self.worker.is_none() {
            return Err(StreamError::Finished);
        }
        let take = accepted(self.capacity, self.taken, data.len());
        let mut src = &data[..take];
        while !src.is_empty() {
            let limit = (self.plan.epoch_planes(self.epoch) * self.plane_bytes()) as usize;
            let n = (limit - self.cursor).min(src.len());
            let mut buf = self.take_buffer()?;
            let started = Instant::now();
            let (geometry, cursor) = (&self.geometry, self.cursor);
            self.pool
                .install(|| geometry.scatter(&mut buf, cursor, &src[..n], n >= PARALLEL_BYTES));
            self.current = Some(buf);
            self.summary.scatter_seconds += started.elapsed().as_secs_f64();
            self.cursor += n;
            self.taken += n as u64;
            src = &src[n..];
            if self.cursor == limit {
                self.ship(self.plan.epoch_planes(self.epoch))?;
            }
        }
        Ok(take)
    }

    /// The buffer of the current epoch: the one being filled, a returned one,
    /// a spare one, or the next the sink gives back.
    fn take_buffer(&mut self) -> Result<EpochBuffer, StreamError> {
        if let Some(buf) = self.current.take() {
            return Ok(buf);
        }
        let worker = self.worker.as_ref().ok_or(StreamError::Finished)?;
        match worker.returned.try_recv() {
            Ok(result) => return result,
            Err(TryRecvError::Disconnected) => {
                return Err(StreamError::Sink("the sink thread stopped".into()))
            }
            Err(TryRecvError::Empty) => {}
        }
        if let Some(buf) = self.spare.pop() {
            return Ok(buf);
        }
        let waited = Instant::now();
        let result = worker
            .returned
            .recv()
            .map_err(|_| StreamError::Sink("the sink thread stopped".into()))?;
        self.summary.wait_seconds += waited.elapsed().as_secs_f64();
        result
    }

    /// Hands the current epoch to the sink, its rows past `planes` reset to the fill value.
    fn ship(&mut self, planes: u64) -> Result<(), StreamError> {
        let mut buffer = self.take_buffer()?;
        let n0 = self.plan.spec().tile()[0];
        if planes < n0 {
            let tile_bytes = self.geometry.tile_bytes;
            let keep = tile_bytes / n0 as usize * planes as usize;
            let tail = filled(tile_bytes - keep, &self.fill);
            for slot in buffer.chunks_exact_mut(self.geometry.slot_bytes) {
                slot[keep..tile_bytes].copy_from_slice(&tail);
            }
        }
        let worker = self.worker.as_ref().ok_or(StreamError::Finished)?;
        worker.send(self.epoch, planes, buffer)?;
        self.summary.epochs += 1;
        self.summary.tiles += self.plan.m();
        self.epoch += 1;
        self.cursor = 0;
        Ok(())
    }

    /// Flushes the last epoch, finalises the sink and returns the summary.
    /// Input that ended inside a plane, or a bounded stream that ended
    /// early, is an error reported after every complete plane was written.
    pub fn finish(&mut self) -> Result<Summary, StreamError> {
        if self.worker.is_none() {
            return Err(StreamError::Finished);
        }
        let plane_bytes = self.plane_bytes();
        let partial = self.cursor as u64 % plane_bytes;
        let planes_here = self.cursor as u64 / plane_bytes;
        let shipped = if planes_here > 0 {
            self.ship(planes_here)
        } else {
            Ok(())
        };
        let planes = self.taken / plane_bytes;
        let worker = self.worker.take().ok_or(StreamError::Finished)?;
        let closed = worker.close(planes);
        shipped?;
        let (busy, stats, _) = closed?;
        self.summary.sink_seconds = busy.as_secs_f64();
        self.summary.sink = stats;
        self.summary.bytes = self.taken;
        self.summary.planes = planes;
        self.summary.seconds = self.started.elapsed().as_secs_f64();
        check_complete(&self.plan, planes, partial)?;
        Ok(self.summary.clone())
    }
}

/// The threads a stream tiles with: `threads` of them, or one per core for 0.
pub(crate) fn thread_pool(threads: usize) -> Result<Arc<rayon::ThreadPool>, StreamError> {
    if threads > MAX_THREADS {
        return Err(StreamError::Invalid(format!(
            "a stream tiles with 0 (all cores) to {MAX_THREADS} threads, not {threads}"
        )));
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map(Arc::new)
        .map_err(|e| StreamError::Invalid(format!("cannot start {threads} threads: {e}")))
}

/// How many of `len` bytes a stream that took `taken` accepts: all, or
/// what is left of a bounded stream's `capacity`.
pub(crate) fn accepted(capacity: Option<u64>, taken: u64, len: usize) -> usize {
    capacity.map_or(len, |cap| len.min(cap.saturating_sub(taken) as usize))
}

/// The errors of a stream that ended with `partial` bytes past its last
/// complete plane, or before a bounded shape's last plane.
pub(crate) fn check_complete(
    plan: &StreamPlan,
    planes: u64,
    partial: u64,
) -> Result<(), StreamError> {
    if partial > 0 {
        return Err(StreamError::PartialPlane {
            planes,
            bytes: partial,
        });
    }
    let spec = plan.spec();
    if !spec.is_unbounded() && planes < spec.shape()[0] {
        return Err(StreamError::ShortInput {
            planes,
            expected: spec.shape()[0],
        });
    }
    Ok(())
}
