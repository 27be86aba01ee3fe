//! The state machine both backends share: what a stream has taken, where
//! its cursor stands in the current epoch, the epoch loop of `append`, the
//! sink's thread, and `finish`. A backend supplies only how bytes are put
//! at the cursor and how a full epoch is shipped ([`Filler`]).

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use retile_plan::{
    EncodedChunks, Epoch, SharedEpoch, Sink, SinkStats, StreamError, StreamPlan, Summary, TileBytes,
};

enum Job<B> {
    Epoch {
        index: u64,
        planes: u64,
        buffer: B,
        encoded: Option<EncodedChunks>,
    },
    Finish {
        planes: u64,
    },
    /// The epochs that follow are those of a region of the array
    /// ([`Sink::begin_region`]), planned by `plan`.
    Region {
        plan: Box<StreamPlan>,
        dim: usize,
        first: u64,
    },
    /// How fast the sink encodes these tiles; the buffer comes back with the answer.
    Rate {
        index: u64,
        planes: u64,
        buffer: B,
        reply: Sender<(Option<f64>, B)>,
    },
}

/// A buffer lent to the sink: the stream gets it back when the sink drops
/// the last handle of its epoch, however long it kept it.
struct Lease<B: AsRef<[u8]> + Send> {
    buffer: Option<B>,
    back: Sender<Result<B, StreamError>>,
}

impl<B: AsRef<[u8]> + Send + Sync> TileBytes for Lease<B> {
    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref().map_or(&[], |b| b.as_ref())
    }
}

impl<B: AsRef<[u8]> + Send> Drop for Lease<B> {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take() {
            // a stream that is gone needs no buffer back
            let _ = self.back.send(Ok(buffer));
        }
    }
}

/// The sink's thread and the channels to it; epochs travel in buffers of
/// type `B` (host memory of the CPU engine, pinned memory of the GPU's),
/// lent to the sink until it is done with them. After the sink's first
/// failure no later epoch is written and the sink is not finalised, so a
/// store never claims planes that are not on disk.
struct Worker<B> {
    jobs: Sender<Job<B>>,
    returned: Receiver<Result<B, StreamError>>,
    handle: JoinHandle<Result<(Duration, SinkStats), StreamError>>,
}

impl<B: AsRef<[u8]> + Send + Sync + 'static> Worker<B> {
    fn spawn(plan: StreamPlan, mut sink: Box<dyn Sink>) -> Worker<B> {
        let (jobs, job_rx) = channel::<Job<B>>();
        let (back, returned) = channel();
        let mut plan = Arc::new(plan);
        let handle = std::thread::spawn(move || {
            let mut busy = Duration::ZERO;
            let mut failure: Option<String> = None;
            while let Ok(job) = job_rx.recv() {
                match job {
                    Job::Epoch {
                        index,
                        planes,
                        buffer,
                        encoded,
                    } => {
                        let started = Instant::now();
                        let lease = Lease {
                            buffer: Some(buffer),
                            back: back.clone(),
                        };
                        let mut epoch =
                            SharedEpoch::new(index, planes, Arc::new(lease), plan.clone());
                        if let Some(encoded) = encoded {
                            epoch = epoch.with_encoded(encoded);
                        }
                        let result = match &failure {
                            Some(reason) => Err(StreamError::Sink(format!(
                                "epoch {index} was not written after an earlier failure: {reason}"
                            ))),
                            None => sink.submit(epoch),
                        };
                        busy += started.elapsed();
                        if let Err(e) = result {
                            failure.get_or_insert_with(|| e.to_string());
                            if back.send(Err(e)).is_err() {
                                break;
                            }
                        }
                    }
                    Job::Region {
                        plan: region,
                        dim,
                        first,
                    } => {
                        if failure.is_none() {
                            if let Err(e) = sink.begin_region(&region, dim, first) {
                                failure.get_or_insert_with(|| e.to_string());
                                if back.send(Err(e)).is_err() {
                                    break;
                                }
                            }
                        }
                        plan = Arc::new(*region);
                    }
                    Job::Rate {
                        index,
                        planes,
                        buffer,
                        reply,
                    } => {
                        let epoch = Epoch {
                            index,
                            planes,
                            tiles: buffer.as_ref(),
                            plan: &plan,
                        };
                        let rate = sink.encode_rate(&epoch);
                        let _ = reply.send((rate, buffer));
                    }
                    Job::Finish { planes } => {
                        let started = Instant::now();
                        let finished = match failure {
                            Some(reason) => Err(StreamError::Sink(format!(
                                "the output was not finalised after a failed write: {reason}"
                            ))),
                            None => sink.finish(planes),
                        };
                        busy += started.elapsed();
                        return finished.map(|()| (busy, sink.stats()));
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

    /// Finalises the sink after `planes` planes and returns the time it
    /// spent writing and the buffers it gave back (the caller decides when
    /// to free them); every error the sink met on the way is reported.
    fn close(self, planes: u64) -> Result<(Duration, SinkStats, Vec<B>), StreamError> {
        let sent = self.jobs.send(Job::Finish { planes });
        let joined = self
            .handle
            .join()
            .map_err(|_| StreamError::Sink("the sink thread panicked".into()));
        let mut buffers = Vec::new();
        let mut failed = None;
        while let Ok(result) = self.returned.try_recv() {
            match result {
                Ok(buffer) => buffers.push(buffer),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        sent.map_err(|_| StreamError::Sink("the sink thread stopped".into()))?;
        let (busy, stats) = joined??;
        if let Some(e) = failed {
            return Err(e);
        }
        Ok((busy, stats, buffers))
    }
}

/// Where a stream stands: bytes taken, the cursor in the current epoch,
/// the epoch, the sink's thread and the summary so far. Every backend
/// (the CPU's [`TileStream`](crate::TileStream), the GPU's in
/// `retile-cuda`) holds one and drives it through [`Filler`].
///
/// ```
/// use retile_plan::{DType, NullSink, StreamPlan, StreamSpec};
/// use retile_tiler::StreamState;
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 4])?)?;
/// let mut state: StreamState<Vec<u8>> = StreamState::start(plan, &[0], Box::new(NullSink))?;
/// assert_eq!(state.accepted(10)?, 10);
/// assert_eq!(state.bytes_to_epoch_end(), 8);
/// let (summary, _) = state.finish(Ok(()), 0)?;
/// assert_eq!(summary.planes, 0);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub struct StreamState<B> {
    /// The plan the stream follows.
    pub plan: StreamPlan,
    plane_bytes: u64,
    capacity: Option<u64>,
    /// Input bytes of the current epoch taken so far.
    pub cursor: u64,
    /// The current epoch.
    pub epoch: u64,
    /// Input bytes taken so far.
    pub taken: u64,
    worker: Option<Worker<B>>,
    /// When the stream was made.
    pub started: Instant,
    /// What the stream did so far.
    pub summary: Summary,
}

impl<B: AsRef<[u8]> + Send + Sync + 'static> StreamState<B> {
    /// Begins `sink` with `plan` and `fill` and starts its thread.
    pub fn start(
        plan: StreamPlan,
        fill: &[u8],
        mut sink: Box<dyn Sink>,
    ) -> Result<StreamState<B>, StreamError> {
        let spec = plan.spec();
        let plane_bytes = spec.plane_elements()? * spec.dtype().size() as u64;
        let capacity = (!spec.is_unbounded()).then(|| spec.shape()[0] * plane_bytes);
        let started = Instant::now();
        sink.begin(&plan, fill)?;
        let worker = Worker::spawn(plan.clone(), sink);
        Ok(StreamState {
            plan,
            plane_bytes,
            capacity,
            cursor: 0,
            epoch: 0,
            taken: 0,
            worker: Some(worker),
            started,
            summary: Summary::default(),
        })
    }

    /// How many of `len` bytes the stream takes: all, or what is left of a
    /// bounded stream; an error once it has finished.
    pub fn accepted(&self, len: usize) -> Result<usize, StreamError> {
        if self.worker.is_none() {
            return Err(StreamError::Finished);
        }
        Ok(self
            .capacity
            .map_or(len, |cap| len.min(cap.saturating_sub(self.taken) as usize)))
    }

    /// Input bytes a bounded stream takes in all (`None`: unbounded).
    pub fn capacity(&self) -> Option<u64> {
        self.capacity
    }

    /// Input bytes until the current epoch is complete.
    pub fn bytes_to_epoch_end(&self) -> u64 {
        self.plan.epoch_planes(self.epoch) * self.plane_bytes - self.cursor
    }

    /// Tells the sink that the epochs sent next (numbered from 0) are
    /// those of `region`, a slab of the array along `dim` whose element 0
    /// is the array's element `first` ([`Sink::begin_region`]).
    pub fn send_region(
        &self,
        region: StreamPlan,
        dim: usize,
        first: u64,
    ) -> Result<(), StreamError> {
        self.jobs()?
            .send(Job::Region {
                plan: Box::new(region),
                dim,
                first,
            })
            .map_err(|_| StreamError::Sink("the sink thread stopped".into()))
    }

    fn jobs(&self) -> Result<&Sender<Job<B>>, StreamError> {
        Ok(&self.worker.as_ref().ok_or(StreamError::Finished)?.jobs)
    }

    /// Hands epoch `index` (`planes` complete planes) to the sink.
    pub fn send(&self, index: u64, planes: u64, buffer: B) -> Result<(), StreamError> {
        self.send_encoded(index, planes, buffer, None)
    }

    /// Hands epoch `index` to the sink, its buffer holding the chunks
    /// `encoded` describes (a backend that encodes them itself) or, with
    /// `None`, tiles.
    pub fn send_encoded(
        &self,
        index: u64,
        planes: u64,
        buffer: B,
        encoded: Option<EncodedChunks>,
    ) -> Result<(), StreamError> {
        self.jobs()?
            .send(Job::Epoch {
                index,
                planes,
                buffer,
                encoded,
            })
            .map_err(|_| StreamError::Sink("the sink thread stopped".into()))
    }

    /// Asks the sink, on its thread, how fast it encodes the tiles in
    /// `buffer` (epoch `index`, `planes` planes) on all its writer threads
    /// ([`Sink::encode_rate`], in bytes per second), and gives the buffer
    /// back; nothing is written.
    pub fn encode_rate(
        &self,
        index: u64,
        planes: u64,
        buffer: B,
    ) -> Result<(Option<f64>, B), StreamError> {
        let stopped = || StreamError::Sink("the sink thread stopped".into());
        let (reply, answer) = channel();
        let worker = self.worker.as_ref().ok_or(StreamError::Finished)?;
        worker
            .jobs
            .send(Job::Rate {
                index,
                planes,
                buffer,
                reply,
            })
            .map_err(|_| stopped())?;
        answer.recv().map_err(|_| stopped())
    }

    /// A buffer for the next epoch: one the sink gave back, a `free` one,
    /// or the next the sink gives back (the wait is counted).
    pub fn free_buffer(&mut self, free: &mut Vec<B>) -> Result<B, StreamError> {
        if let Some(buffer) = self.free_buffer_now(free)? {
            return Ok(buffer);
        }
        let worker = self.worker.as_ref().ok_or(StreamError::Finished)?;
        let waited = Instant::now();
        let buffer = worker
            .returned
            .recv()
            .map_err(|_| StreamError::Sink("the sink thread stopped".into()))??;
        self.summary.wait_seconds += waited.elapsed().as_secs_f64();
        Ok(buffer)
    }

    /// A buffer the sink gave back or a `free` one, if there is one now.
    pub fn free_buffer_now(&mut self, free: &mut Vec<B>) -> Result<Option<B>, StreamError> {
        let worker = self.worker.as_ref().ok_or(StreamError::Finished)?;
        while let Ok(returned) = worker.returned.try_recv() {
            free.push(returned?);
        }
        Ok(free.pop())
    }

    /// Whether `finish` has run.
    pub fn finished(&self) -> bool {
        self.worker.is_none()
    }

    /// Finalises the sink after the last epoch was shipped (`shipped`, whose
    /// error comes first), with `partial` bytes past the last complete
    /// plane: the summary, and the buffers the sink gave back.
    pub fn finish(
        &mut self,
        shipped: Result<(), StreamError>,
        partial: u64,
    ) -> Result<(Summary, Vec<B>), StreamError> {
        let held = !self.plan.spec().epochs_in_input_order();
        let short = self.capacity.is_some_and(|cap| self.taken < cap);
        let planes = match held && short {
            true => 0,
            false => self.taken / self.plane_bytes,
        };
        let worker = self.worker.take().ok_or(StreamError::Finished)?;
        let closed = worker.close(planes);
        shipped?;
        let (busy, stats, returned) = closed?;
        self.summary.sink_seconds = busy.as_secs_f64();
        self.summary.sink = stats;
        self.summary.bytes = self.taken;
        self.summary.planes = planes;
        self.summary.seconds = self.started.elapsed().as_secs_f64();
        if held && short {
            return Err(StreamError::HeldInput {
                bytes: self.taken,
                expected: self.capacity.unwrap_or(0),
            });
        }
        check_complete(&self.plan, planes, partial)?;
        Ok((self.summary.clone(), returned))
    }
}

/// A backend's part of the state machine: how bytes are put at the cursor
/// and how a full epoch is shipped. The epoch loop and the end of input
/// are the same for every backend.
///
/// ```
/// use retile_plan::{DType, MemorySink, StreamError, StreamPlan, StreamSpec};
/// use retile_tiler::{Filler, StreamState};
/// // a backend whose epochs are plain vectors, filled by copying the input
/// struct Copier { state: StreamState<Vec<u8>>, buffer: Vec<u8> }
/// impl Filler for Copier {
///     type Buffer = Vec<u8>;
///     fn state(&mut self) -> &mut StreamState<Vec<u8>> { &mut self.state }
///     fn ship_epoch(&mut self, planes: u64) -> Result<(), StreamError> {
///         let epoch = self.state.epoch;
///         self.state.send(epoch, planes, std::mem::take(&mut self.buffer))
///     }
/// }
/// // one-column tiles: the input order is the buffer order
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 1], vec![2, 1])?)?;
/// let sink = MemorySink::new();
/// let state = StreamState::start(plan, &[0], Box::new(sink.clone()))?;
/// let mut copier = Copier { state, buffer: Vec::new() };
/// let input = [1u8, 2, 3, 4];
/// copier.in_epochs(4, |c, at, n| {
///     c.buffer.extend_from_slice(&input[at as usize..(at + n) as usize]);
///     Ok(())
/// })?;
/// copier.state.finish(Ok(()), 0)?;
/// assert_eq!(sink.assemble().unwrap(), input);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub trait Filler: Sized {
    /// The buffers epochs travel to the sink in.
    type Buffer: AsRef<[u8]> + Send + Sync + 'static;

    /// The shared state.
    fn state(&mut self) -> &mut StreamState<Self::Buffer>;

    /// Sends the current epoch's `planes` planes on their way to the sink.
    fn ship_epoch(&mut self, planes: u64) -> Result<(), StreamError>;

    /// Ships the current epoch and moves to the next.
    fn ship(&mut self, planes: u64) -> Result<(), StreamError> {
        self.ship_epoch(planes)?;
        let state = self.state();
        state.summary.epochs += 1;
        state.summary.tiles += state.plan.m();
        state.epoch += 1;
        state.cursor = 0;
        Ok(())
    }

    /// Walks `len` bytes of input epoch by epoch: `put(self, at, n)` puts
    /// bytes `at..at + n` at the cursor, and each epoch filled is shipped.
    fn in_epochs(
        &mut self,
        len: u64,
        mut put: impl FnMut(&mut Self, u64, u64) -> Result<(), StreamError>,
    ) -> Result<(), StreamError> {
        let mut done = 0;
        while done < len {
            let n = self.state().bytes_to_epoch_end().min(len - done);
            put(self, done, n)?;
            let state = self.state();
            (state.cursor, state.taken, done) = (state.cursor + n, state.taken + n, done + n);
            if state.bytes_to_epoch_end() == 0 {
                let planes = state.plan.epoch_planes(state.epoch);
                self.ship(planes)?;
            }
        }
        Ok(())
    }

    /// Ships the complete planes of the last, unfinished epoch; returns the
    /// bytes of an incomplete plane past them.
    fn ship_last(&mut self) -> Result<u64, StreamError> {
        let state = self.state();
        let partial = state.cursor % state.plane_bytes;
        let planes = state.cursor / state.plane_bytes;
        if planes > 0 {
            self.ship(planes)?;
        }
        Ok(partial)
    }
}

/// The errors of a stream that ended with `partial` bytes past its last
/// complete plane, or before a bounded shape's last plane.
fn check_complete(plan: &StreamPlan, planes: u64, partial: u64) -> Result<(), StreamError> {
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
