//! The epoch writer: as soon as an epoch is submitted its tiles are encoded
//! and written by tasks on the writer threads, the tasks of the next epochs
//! alongside the last ones of the previous, so that no core waits for an
//! epoch to end. Each encoded tile is appended to its file (a shard, or a
//! chunk file of its own) where its bytes are; a file is closed (its index
//! written) when its last tile of the row lands, a row when its last file
//! closes, and rows are claimed in order, so that the array never claims a
//! plane whose files are not whole.

use std::collections::{BTreeMap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use retile_plan::{shared_pool, SharedEpoch, StreamError, StreamPlan};

use crate::chain::{Claim, Claiming};
use crate::codec::Encoder;
use crate::dest::{Dest, Open};
use crate::error::DestError;
use crate::shard::{index_bytes, Member, ShardGrid, MISSING};

/// Tile bytes one task encodes and writes, at most (but at least one tile):
/// tasks of small tiles are grouped so that scheduling stays cheap.
const TASK_BYTES: u64 = 1 << 20;

/// Tasks an epoch gives each writer thread, at least, where it has the
/// tiles: a stream holds two epochs by default, so an epoch of few tiles
/// must keep every writer busy by itself while the next one is tiled.
const TASKS_PER_WRITER: usize = 2;

/// Tiles per task: up to [`TASK_BYTES`] of them, but no more than spread
/// an epoch of `epoch_tiles` tiles over [`TASKS_PER_WRITER`] tasks for each
/// of `writers` threads.
///
/// Measured on 16 cores with tiles one plane deep (64 tiles of 128 KiB an
/// epoch): grouped by [`TASK_BYTES`] alone, an epoch made 8 tasks, so half
/// the writers waited for the next epoch; spread, such streams ran 1.13-1.20x
/// faster with blosc-zstd:1 and up to 1.2x with blosc-lz4:1. Four tasks a
/// writer ran no faster than two.
fn tiles_per_task(tile_bytes: u64, epoch_tiles: u64, writers: usize) -> usize {
    let by_bytes = (TASK_BYTES / tile_bytes.max(1)).max(1);
    let tasks = (TASKS_PER_WRITER * writers.max(1)) as u64;
    by_bytes.min(epoch_tiles.div_ceil(tasks).max(1)) as usize
}

/// How the epoch writer is set up.
pub(crate) struct WriterSetup {
    pub encoder: Encoder,
    pub grid: ShardGrid,
    pub dest: Dest,
    pub plan: StreamPlan,
    pub fill: Vec<u8>,
    pub pool: Arc<rayon::ThreadPool>,
    /// Parts of one object uploading at once.
    pub parts_in_flight: usize,
    /// Bytes of a whole file without compression, its index included.
    pub file_bytes: u64,
    /// Every row's files and directories synced before it is claimed.
    pub sync_rows: bool,
    pub claim: Claim,
    /// The array's epoch that the stream's first epoch is (a stream
    /// appending to an array: a multiple of the shard's depth; else 0).
    pub first_epoch: u64,
    /// Rows below this one hold planes the array claimed before the
    /// stream: their files are written beside and renamed over the old.
    pub replaced_rows: u64,
}

/// Writes the epochs of one array with the tasks of a writer pool.
pub(crate) struct EpochWriter {
    shared: Arc<Shared>,
    pool: Arc<rayon::ThreadPool>,
}

/// What every task of the writer shares.
struct Shared {
    encoder: Encoder,
    grid: ShardGrid,
    dest: Dest,
    /// Planes per epoch.
    epoch_planes: u64,
    /// The last epoch of a bounded stream (of the array).
    last_epoch: Option<u64>,
    /// The array's epoch that the stream's first epoch is.
    first_epoch: u64,
    /// Rows whose files replace files holding claimed planes.
    replaced_rows: u64,
    fill_pattern: Vec<u8>,
    parts_in_flight: usize,
    file_bytes: u64,
    /// Tiles per task.
    per_task: usize,
    /// One epoch at a time: an object store's rows are claimed one by one,
    /// as its uploads complete, so that a bounded number of rows complete
    /// at once (see `ROWS_COMPLETING`).
    one_epoch_at_a_time: bool,
    sync_rows: bool,
    rows: Mutex<HashMap<u64, Arc<Row>>>,
    claims: Mutex<Claims>,
    /// The first failure: the row it hit, and what it was.
    failure: OnceLock<(u64, String)>,
    in_flight: Arc<InFlight>,
    pub counters: Counters,
}

/// The files of one row of the tile grid (one range of epochs), open
/// while its epochs land.
struct Row {
    files: Vec<Mutex<FileState>>,
    /// Files not closed yet.
    open: AtomicUsize,
    /// Planes through the end of the row's epochs submitted so far.
    planes_end: AtomicU64,
}

/// One file of a row: what was written of it, and its shard index.
struct FileState {
    out: Option<Open>,
    index: Vec<[u64; 2]>,
    /// Epochs whose tiles of this file have all landed.
    landed: u64,
}

/// Rows closed and not yet claimed, and the array's claim.
struct Claims {
    next_row: u64,
    closed: BTreeMap<u64, u64>,
    claim: Claim,
}

/// What the writer threads did, added up across them.
#[derive(Default)]
pub(crate) struct Counters {
    pub stored_bytes: AtomicU64,
    pub files: AtomicU64,
    pub omitted: AtomicU64,
    pub encode_nanos: AtomicU64,
    pub write_nanos: AtomicU64,
}

/// Tasks under way, and a wait for none.
#[derive(Default)]
struct InFlight {
    count: Mutex<usize>,
    idle: Condvar,
}

/// One task counted in [`InFlight`] until dropped. It holds the count
/// itself, not the writer's state: the task drops its share of that state
/// (the store's lock among it) before its ticket, so a stream that waited
/// for no task in flight holds the store alone.
struct Ticket(Arc<InFlight>);

impl InFlight {
    fn enter(&self) {
        *lock(&self.count) += 1;
    }

    fn wait_idle(&self) {
        let mut count = lock(&self.count);
        while *count > 0 {
            count = self.idle.wait(count).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut count = lock(&self.0.count);
        *count -= 1;
        if *count == 0 {
            self.0.idle.notify_all();
        }
    }
}

/// A mutex's guard, whether or not a thread panicked holding it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The writer threads of `count` threads, shared by every sink of the
/// process that asks for as many while one is alive (the levels of a
/// pyramid, the arrays of an acquisition): one set of threads, none
/// spinning while another set works.
pub(crate) fn writer_pool(count: usize) -> Result<Arc<rayon::ThreadPool>, String> {
    shared_pool("retile-zarr-writer", count)
        .map_err(|e| format!("cannot start {count} writer threads: {e}"))
}

/// CPU time of the calling thread in nanoseconds (0 where it cannot tell):
/// compression is measured in CPU time, since many writer threads share
/// few cores.
fn thread_cpu_nanos() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec, which `t` is.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64;
        }
    }
    0
}

impl EpochWriter {
    /// A writer of `setup.plan`'s epochs.
    pub fn new(setup: WriterSetup) -> EpochWriter {
        let spec = setup.plan.spec();
        let tile_bytes = setup.plan.tile_bytes();
        let last_epoch = (!spec.is_unbounded())
            .then(|| spec.shape()[0].div_ceil(spec.tile()[0]).max(1) - 1 + setup.first_epoch);
        let esize = setup.fill.len().max(1);
        let first_row = setup.first_epoch / setup.grid.depth().max(1);
        let shared = Shared {
            epoch_planes: spec.tile()[0],
            last_epoch,
            first_epoch: setup.first_epoch,
            replaced_rows: setup.replaced_rows,
            fill_pattern: setup.fill.repeat(64 / esize),
            per_task: tiles_per_task(tile_bytes, setup.plan.m(), setup.pool.current_num_threads()),
            one_epoch_at_a_time: setup.dest.is_object_store(),
            sync_rows: setup.sync_rows,
            encoder: setup.encoder,
            grid: setup.grid,
            dest: setup.dest,
            parts_in_flight: setup.parts_in_flight,
            file_bytes: setup.file_bytes,
            rows: Mutex::new(HashMap::new()),
            claims: Mutex::new(Claims {
                next_row: first_row,
                closed: BTreeMap::new(),
                claim: setup.claim,
            }),
            failure: OnceLock::new(),
            in_flight: Arc::default(),
            counters: Counters::default(),
        };
        EpochWriter {
            shared: Arc::new(shared),
            pool: setup.pool,
        }
    }

    /// What the writer threads did so far.
    pub fn counters(&self) -> &Counters {
        &self.shared.counters
    }

    /// The store's bytes uploaded and requests made (0 for a directory).
    pub fn traffic(&self) -> (u64, u64) {
        self.shared.dest.traffic()
    }

    /// Starts the tasks that encode and write `epoch`; fails at once if an
    /// earlier task failed.
    pub fn submit(&self, epoch: SharedEpoch) -> Result<(), StreamError> {
        let shared = &self.shared;
        if shared.one_epoch_at_a_time {
            shared.in_flight.wait_idle();
        }
        shared.check()?;
        if let Some(encoded) = epoch.encoded() {
            shared.encoder.check_device(encoded.codec)?;
        }
        let depth = shared.grid.depth();
        let index = epoch.index + shared.first_epoch;
        let (row_index, depth_pos) = (index / depth, index % depth);
        let row = shared.row(row_index);
        row.planes_end.fetch_max(
            index * shared.epoch_planes + epoch.planes,
            Ordering::Relaxed,
        );
        let mut by_file: Vec<std::vec::IntoIter<Task>> = (0..shared.grid.files_per_row())
            .map(|file| {
                let members = shared.grid.members(file, depth_pos);
                let groups = members.chunks(shared.per_task);
                let remaining = Arc::new(AtomicUsize::new(groups.len()));
                let tasks: Vec<Task> = groups
                    .map(|members| Task {
                        shared: shared.clone(),
                        row: row.clone(),
                        row_index,
                        file,
                        members: members.to_vec(),
                        epoch: Some(epoch.clone()),
                        remaining: remaining.clone(),
                    })
                    .collect();
                tasks.into_iter()
            })
            .collect();
        for task in interleaved(&mut by_file) {
            shared.in_flight.enter();
            self.pool.spawn(move || task.run());
        }
        Ok(())
    }

    /// Waits for every task, closes the files of rows still open (the last
    /// rows of an unbounded stream), syncs every file and directory to the
    /// disk, and then claims `planes` planes durably: the last claim never
    /// names data that a power loss could take.
    pub fn finish(&self, planes: u64) -> Result<(), StreamError> {
        self.settle()?;
        let shared = &self.shared;
        shared.dest.sync_all().map_err(|e| {
            crate::error::store_error(
                shared.dest.name(),
                "syncing the store's files to the disk before its last claim (the planes claimed so far may not be on the disk)",
                e,
            )
        })?;
        let mut claims = lock(&shared.claims);
        (claims.claim)(planes, Claiming::Last)
    }
}

impl EpochWriter {
    /// Waits for every task and closes the files of rows still open (the
    /// last rows of an unbounded stream): everything submitted is written,
    /// nothing more is claimed than the rows closed claim.
    pub fn settle(&self) -> Result<(), StreamError> {
        let shared = &self.shared;
        shared.in_flight.wait_idle();
        shared.check()?;
        let mut open: Vec<(u64, Arc<Row>)> = lock(&shared.rows).drain().collect();
        open.sort_by_key(|(index, _)| *index);
        for (index, row) in open {
            for file in 0..row.files.len() {
                if shared.close_file(&row, index, file)? {
                    shared.row_whole(index, &row)?;
                }
            }
        }
        shared.check()
    }

    /// The first failure of a task so far, as the stream's error.
    pub fn check(&self) -> Result<(), StreamError> {
        self.shared.check()
    }
}

/// The items of `lists` in turns, one of each list per turn: the writer
/// threads take tasks in the order they are started, and a file system
/// writes one file at a time (a lock per file: on the 16-core device host
/// 16 threads wrote `/dev/shm` at 2.8 GB/s into one file and 31.5 GB/s
/// into 16, `bench/file_writes_probe.py`), so that threads started together
/// write as many different files as the epoch has.
fn interleaved<T>(lists: &mut [std::vec::IntoIter<T>]) -> Vec<T> {
    let total = lists.iter().map(ExactSizeIterator::len).sum();
    let mut out = Vec::with_capacity(total);
    while out.len() < total {
        out.extend(lists.iter_mut().filter_map(Iterator::next));
    }
    out
}

impl Drop for EpochWriter {
    /// Waits for the tasks under way (a failed or abandoned stream's), so
    /// that what they finish is claimed before the stream reports.
    fn drop(&mut self) {
        self.shared.in_flight.wait_idle();
    }
}

/// One chunk to append: a tile to encode, or the stored bytes a backend
/// encoded (`None`: a tile of fill alone).
enum Chunk<'a> {
    Tile(&'a [u8]),
    Encoded(Option<&'a [u8]>),
}

/// Some tiles of one epoch for one file.
struct Task {
    shared: Arc<Shared>,
    row: Arc<Row>,
    row_index: u64,
    file: usize,
    members: Vec<Member>,
    epoch: Option<SharedEpoch>,
    /// Tasks of this epoch and file still running.
    remaining: Arc<AtomicUsize>,
}

impl Task {
    fn run(mut self) {
        let ticket = Ticket(self.shared.in_flight.clone());
        let outcome = catch_unwind(AssertUnwindSafe(|| self.write()))
            .unwrap_or_else(|_| Err(StreamError::Sink("a writer thread panicked".into())));
        if let Err(e) = outcome {
            self.shared.fail(self.row_index, e);
        }
        // the task's state goes before its ticket says it is done
        drop(self);
        drop(ticket);
    }

    /// Appends the tiles, gives the epoch's buffer back (once no task holds
    /// it), and closes the file when this was its last tile of the row.
    /// After a failure, the rows above the failed one are still finished
    /// (and claimed), the others left alone.
    fn write(&mut self) -> Result<(), StreamError> {
        let shared = &*self.shared;
        let goes_on = !shared.failed_at_or_before(self.row_index);
        if goes_on {
            if let Some(epoch) = &self.epoch {
                let view = epoch.view();
                for member in &self.members {
                    let chunk = match epoch.encoded_chunk(member.slot) {
                        Some(stored) => Chunk::Encoded(stored),
                        None => Chunk::Tile(view.tile(member.slot)),
                    };
                    shared.append(&self.row, self.row_index, self.file, *member, chunk)?;
                }
            }
        }
        self.epoch = None;
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 && goes_on {
            shared.landed(&self.row, self.row_index, self.file)?;
        }
        Ok(())
    }
}

impl Shared {
    /// The first failure of a task, as the stream's error.
    fn check(&self) -> Result<(), StreamError> {
        match self.failure.get() {
            Some((_, reason)) => Err(StreamError::Sink(format!(
                "an earlier write failed, so nothing more is written: {reason}"
            ))),
            None => Ok(()),
        }
    }

    /// Keeps the first failure, met in row `row`.
    fn fail(&self, row: u64, e: StreamError) {
        let _ = self.failure.set((row, e.to_string()));
    }

    /// Whether a failure hit row `row` or a row above it.
    fn failed_at_or_before(&self, row: u64) -> bool {
        self.failure.get().is_some_and(|(failed, _)| *failed <= row)
    }

    /// Row `index`, its files made fresh at its first epoch.
    fn row(&self, index: u64) -> Arc<Row> {
        let mut rows = lock(&self.rows);
        rows.entry(index)
            .or_insert_with(|| {
                let files = (0..self.grid.files_per_row())
                    .map(|f| {
                        let key = self.grid.key(index, f);
                        let (parts, bytes) = (self.parts_in_flight, self.file_bytes);
                        Mutex::new(FileState {
                            out: Some(match index < self.replaced_rows {
                                true => self.dest.replacing(&key, parts, bytes),
                                false => self.dest.fresh(&key, parts, bytes),
                            }),
                            index: vec![MISSING; self.grid.chunks_per_file()],
                            landed: 0,
                        })
                    })
                    .collect::<Vec<_>>();
                Arc::new(Row {
                    open: AtomicUsize::new(files.len()),
                    files,
                    planes_end: AtomicU64::new(0),
                })
            })
            .clone()
    }

    /// The error of writing file `file` of row `row`.
    fn io(&self, row: u64, file: usize) -> impl Fn(DestError) -> StreamError + '_ {
        let key = self.grid.key(row, file);
        let what = if self.grid.sharded() {
            "shard"
        } else {
            "chunk"
        };
        move |e| crate::error::store_error(self.dest.name(), &format!("writing {what} {key}"), e)
    }

    /// Whether `tile` holds nothing but the fill value.
    fn is_fill(&self, tile: &[u8]) -> bool {
        let pattern = &self.fill_pattern;
        tile.chunks(pattern.len())
            .all(|part| part == &pattern[..part.len()])
    }

    /// Encodes one tile (unless a backend did) and appends it to its file,
    /// where its bytes are; a tile of fill alone is left out (its index
    /// entry says so).
    fn append(
        &self,
        row: &Row,
        row_index: u64,
        file: usize,
        member: Member,
        chunk: Chunk<'_>,
    ) -> Result<(), StreamError> {
        let bytes = match chunk {
            Chunk::Tile(tile) if !self.is_fill(tile) => {
                let started = thread_cpu_nanos();
                let bytes = self.encoder.encode(tile)?;
                let spent = thread_cpu_nanos().saturating_sub(started);
                self.counters
                    .encode_nanos
                    .fetch_add(spent, Ordering::Relaxed);
                bytes
            }
            Chunk::Encoded(Some(stored)) => std::borrow::Cow::Borrowed(stored),
            Chunk::Tile(_) | Chunk::Encoded(None) => {
                self.counters.omitted.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
        };
        let io = self.io(row_index, file);
        let started = Instant::now();
        let placed = {
            let mut state = lock(&row.files[file]);
            let out = state
                .out
                .as_mut()
                .ok_or_else(|| io("the file was closed".into()))?;
            let offset = out.len();
            let placed = out.append(&bytes).map_err(&io)?;
            state.index[member.inner] = [offset, bytes.len() as u64];
            placed
        };
        placed.write(&bytes).map_err(|e| io(e.into()))?;
        self.counters
            .write_nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Epochs row `index` holds: the file's depth, or fewer in the last
    /// row of a bounded stream.
    fn row_epochs(&self, index: u64) -> u64 {
        let depth = self.grid.depth();
        match self.last_epoch {
            Some(last) => depth.min(last + 1 - index * depth),
            None => depth,
        }
    }

    /// The tiles of one epoch of `file` have all landed: the file is closed
    /// when it was the row's last epoch.
    fn landed(&self, row: &Row, index: u64, file: usize) -> Result<(), StreamError> {
        let whole = {
            let mut state = lock(&row.files[file]);
            state.landed += 1;
            state.landed == self.row_epochs(index)
        };
        if !whole {
            return Ok(());
        }
        if self.close_file(row, index, file)? {
            lock(&self.rows).remove(&index);
            self.row_whole(index, row)?;
        }
        Ok(())
    }

    /// Every file of row `index` is closed: with `sync_rows` its
    /// directories are synced (its files were, as they closed); then the
    /// row is claimed in its turn.
    fn row_whole(&self, index: u64, row: &Row) -> Result<(), StreamError> {
        if self.sync_rows {
            let keys: Vec<String> = (0..row.files.len())
                .map(|f| self.grid.key(index, f))
                .collect();
            self.dest
                .sync_directories(keys.iter().map(String::as_str))
                .map_err(|e| {
                    crate::error::store_error(
                        self.dest.name(),
                        &format!("syncing the directories of row {index} to the disk"),
                        e,
                    )
                })?;
        }
        self.row_closed(index, row.planes_end.load(Ordering::Relaxed))
    }

    /// Closes `file` of `row` (once): a shard gets its index; a file that
    /// received nothing (a chunk of fill alone, or a shard of nothing but
    /// such chunks) is not made at all, and a reader sees the fill value.
    /// Returns whether it was the row's last open file.
    fn close_file(&self, row: &Row, index: u64, file: usize) -> Result<bool, StreamError> {
        let mut state = lock(&row.files[file]);
        let Some(mut out) = state.out.take() else {
            return Ok(false);
        };
        let io = self.io(index, file);
        let started = Instant::now();
        let stored = match self.grid.sharded() {
            true if out.len() > 0 => {
                let bytes = index_bytes(&state.index);
                out.append(&bytes)
                    .map_err(&io)?
                    .write(&bytes)
                    .map_err(|e| io(e.into()))?;
                Some(out.close(self.sync_rows).map_err(&io)?)
            }
            false if out.len() > 0 => Some(out.close(self.sync_rows).map_err(&io)?),
            _ => {
                out.discard().map_err(&io)?;
                None
            }
        };
        if let Some(len) = stored {
            self.counters.stored_bytes.fetch_add(len, Ordering::Relaxed);
            self.counters.files.fetch_add(1, Ordering::Relaxed);
        }
        self.counters
            .write_nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Ok(row.open.fetch_sub(1, Ordering::AcqRel) == 1)
    }

    /// Row `index` is whole, through plane `planes_end`: claims every
    /// whole row from the first unclaimed one on, in order.
    fn row_closed(&self, index: u64, planes_end: u64) -> Result<(), StreamError> {
        let mut claims = lock(&self.claims);
        claims.closed.insert(index, planes_end);
        let mut through = None;
        loop {
            let next = claims.next_row;
            match claims.closed.remove(&next) {
                Some(planes) => {
                    through = Some(planes);
                    claims.next_row += 1;
                }
                None => break,
            }
        }
        // rows close only above a failed one, so what is claimed is whole
        match through {
            Some(planes) => (claims.claim)(planes, Claiming::Row),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{interleaved, tiles_per_task, TASK_BYTES};

    #[test]
    fn an_epoch_of_few_small_tiles_is_spread_over_every_writer() {
        // 64 tiles of 128 KiB (one plane deep) on 16 writers: 2 tiles a task,
        // 32 tasks, where 1 MiB tasks would have made 8
        assert_eq!(tiles_per_task(128 << 10, 64, 16), 2);
        // large tiles: one a task, however many writers
        assert_eq!(tiles_per_task(8 << 20, 64, 16), 1);
        assert_eq!(tiles_per_task(8 << 20, 1, 1), 1);
        // many tiny tiles: tasks stay at most TASK_BYTES
        let tiny = 4 << 10;
        assert_eq!(
            tiles_per_task(tiny, 1 << 20, 2),
            (TASK_BYTES / tiny) as usize
        );
        // an epoch of fewer tiles than writers: a tile a task
        assert_eq!(tiles_per_task(tiny, 3, 16), 1);
        // degenerate sizes never make empty tasks
        assert_eq!(tiles_per_task(0, 0, 0), 1);
        // in general: at least a tile, at most TASK_BYTES (or one tile), and
        // never more than an even share of the epoch for 2 tasks a writer
        for (bytes, tiles, writers) in [
            (1u64, 1u64, 1usize),
            (1000, 77, 3),
            (1 << 21, 5, 64),
            (300, 10_000, 16),
        ] {
            let per = tiles_per_task(bytes, tiles, writers) as u64;
            assert!(
                per >= 1 && per * bytes <= TASK_BYTES.max(bytes),
                "{bytes} {tiles} {writers}"
            );
            assert!(
                per <= tiles.div_ceil(2 * writers as u64).max(1),
                "{bytes} {tiles} {writers}"
            );
        }
    }

    #[test]
    fn tasks_are_started_one_file_at_a_time_in_turns() {
        let mut lists = [vec![1, 2, 3], vec![], vec![10], vec![20, 21]].map(Vec::into_iter);
        assert_eq!(interleaved(&mut lists), [1, 10, 20, 2, 21, 3]);
        let mut none: [std::vec::IntoIter<u8>; 0] = [];
        assert!(interleaved(&mut none).is_empty());
    }
}
