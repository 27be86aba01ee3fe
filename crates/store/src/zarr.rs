//! The Zarr v3 sink: every tile is one chunk, encoded straight from the
//! epoch buffer on the writer threads and written as its own file or as an
//! inner chunk of a `sharding_indexed` shard. `zarrs` makes the metadata and
//! the codecs; the chunk and shard files go through [`crate::dest`]: to a
//! local directory ([`crate::files`]) or to object storage ([`crate::object`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use zarrs::array::{Array, ArrayBuilder, FillValue};
use zarrs::storage::store::MemoryStore;

use retile_plan::{Epoch, Sink, SinkStats, StreamDType, StreamError, StreamPlan};

use crate::codec::{Codec, Encoder};
use crate::dest::{is_object_store, Dest, Open, Writer};
use crate::error::{store_error, DestError};
use crate::files::{BLOCK, STAGE_BYTES};
use crate::object::{IN_FLIGHT_PARTS, PART_BYTES};
use crate::options::{ZarrOptions, MAX_WRITERS};
use crate::shard::{index_bytes, index_len, ShardGrid, MISSING};

/// Writes epochs as Zarr v3 chunks or shards; the array's shape grows as
/// rows of files are completed, so the metadata never claims data that is
/// not on disk, and it is replaced atomically each time.
pub struct ZarrSink {
    options: ZarrOptions,
    store: Option<Store>,
}

/// An open store: its metadata, codec, file grid and the files of the row
/// being written.
struct Store {
    /// The metadata only: the chunks and shards are written by hand.
    array: Array<MemoryStore>,
    encoder: Encoder,
    grid: ShardGrid,
    row: Option<(u64, Vec<ShardFile>)>,
    writers: rayon::ThreadPool,
    writer_count: usize,
    dest: Dest,
    /// Parts of one object uploading at once.
    parts_in_flight: usize,
    /// Bytes of a whole shard without compression, its index included: the
    /// room an object is given before its first part goes up.
    shard_bytes: u64,
    fill_pattern: Vec<u8>,
    counters: Counters,
    /// Bytes an open shard keeps between epochs rather than write in small pieces.
    hold: usize,
}

/// Bytes the open shards of a row may keep back between epochs, in all:
/// a shard many epochs deep of thin epochs gets a few large writes instead
/// of one small write per epoch.
const HELD_BYTES: usize = 64 << 20;

/// Bytes of unfinished parts the open shards of a row may keep between
/// epochs in object storage (a part goes up only when whole).
const MAX_HELD_PARTS: u64 = 4 << 30;

/// One open shard: its bytes so far and its index.
struct ShardFile {
    out: Open,
    index: Vec<[u64; 2]>,
}

/// What the writer threads did, added up across them.
#[derive(Default)]
struct Counters {
    stored_bytes: AtomicU64,
    files: AtomicU64,
    omitted: AtomicU64,
    encode_nanos: AtomicU64,
    write_nanos: AtomicU64,
}

impl Counters {
    fn add_time(counter: &AtomicU64, since: Instant) {
        counter.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
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

impl ZarrSink {
    /// A sink writing to `options.path`.
    ///
    /// ```no_run
    /// use retile_store::{ZarrOptions, ZarrSink};
    /// let sink = ZarrSink::new(ZarrOptions { path: "out.zarr".into(), ..Default::default() });
    /// ```
    pub fn new(options: ZarrOptions) -> ZarrSink {
        ZarrSink {
            options,
            store: None,
        }
    }

    fn store(&mut self) -> Result<&mut Store, StreamError> {
        self.store
            .as_mut()
            .ok_or_else(|| StreamError::Sink("the Zarr sink was not begun".into()))
    }

    /// Checks every option against the plan before anything is created.
    fn check(&self, plan: &StreamPlan) -> Result<(ShardGrid, usize), StreamError> {
        let rank = plan.spec().shape().len();
        if let Some(names) = &self.options.dimension_names {
            if names.len() != rank {
                return Err(StreamError::Invalid(format!(
                    "{} dimension names for {rank} dimensions",
                    names.len()
                )));
            }
        }
        let writers = self
            .options
            .writers
            .unwrap_or_else(|| default_writers(self.options.codec));
        if !(1..=MAX_WRITERS).contains(&writers) {
            return Err(StreamError::Invalid(format!(
                "a Zarr sink needs 1 to {MAX_WRITERS} writer threads, not {writers}"
            )));
        }
        let grid = ShardGrid::new(plan, self.options.shard.as_deref())?;
        if is_object_store(&self.options.path) && grid.depth() > 1 {
            // an object is uploaded in whole parts: the unfinished part of
            // every open shard stays in memory between epochs
            let shard_bytes = plan
                .tile_bytes()
                .saturating_mul(grid.chunks_per_file() as u64);
            let held =
                (grid.files_per_row() as u64).saturating_mul(shard_bytes.min(PART_BYTES as u64));
            if held > MAX_HELD_PARTS {
                return Err(StreamError::Invalid(format!(
                    "{} shards {} epochs deep would keep up to {held} bytes of unfinished upload parts in memory between epochs (at most {MAX_HELD_PARTS}); use shards one epoch deep, or fewer, larger shards",
                    grid.files_per_row(),
                    grid.depth()
                )));
            }
        }
        Ok((grid, writers))
    }

    /// The array's metadata (shape 0 along the first dimension).
    fn build_array(
        &self,
        plan: &StreamPlan,
        fill: &[u8],
        grid: &ShardGrid,
        encoder: &Encoder,
    ) -> Result<Array<MemoryStore>, StreamError> {
        let path = &self.options.path;
        let spec = plan.spec();
        let mut shape = spec.shape().to_vec();
        shape[0] = 0;
        let chunk: Vec<u64> = spec
            .tile()
            .iter()
            .zip(grid.shape())
            .map(|(n, k)| n * k)
            .collect();
        let mut builder = ArrayBuilder::new(
            shape,
            chunk,
            spec.dtype().zarr_name(),
            FillValue::new(fill.to_vec()),
        );
        builder.bytes_to_bytes_codecs(encoder.codecs().to_vec());
        if grid.sharded() {
            builder.subchunk_shape(spec.tile().to_vec());
        }
        if let Some(names) = &self.options.dimension_names {
            builder.dimension_names(Some(names.clone()));
        }
        builder
            .build(Arc::new(MemoryStore::new()), "/")
            .map_err(|e| store_error(path, "creating the array", e))
    }
}

/// Writer threads when none are asked for: 16 without compression (each
/// waits on the disk, and many writes in flight keep it busy); with
/// compression, which keeps every writer on a core, two per core (at least
/// 4, at most 16), so that fewer threads than tiles share the caches.
fn default_writers(codec: Codec) -> usize {
    match codec {
        Codec::None => 16,
        _ => {
            let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
            (2 * cores).clamp(4, 16)
        }
    }
}

impl Store {
    /// Sets the array's first extent to `planes` and replaces `zarr.json`
    /// (`durable`: synced to the disk).
    fn claim(&mut self, planes: u64, durable: bool) -> Result<(), StreamError> {
        let root = self.dest.name();
        let mut shape = self.array.shape().to_vec();
        shape[0] = planes;
        self.array
            .set_shape(shape)
            .map_err(|e| store_error(root, "resizing the array", e))?;
        let json = serde_json::to_vec_pretty(self.array.metadata())
            .map_err(|e| store_error(root, "writing the array metadata", e))?;
        self.dest
            .put_metadata("zarr.json", &json, durable)
            .map_err(|e| store_error(root, "writing the array metadata zarr.json", e))
    }

    /// The error of writing `what` (a chunk or shard key).
    fn io(&self, what: &str) -> impl Fn(DestError) -> StreamError + '_ {
        let doing = format!("writing {what}");
        move |e| store_error(self.dest.name(), &doing, e)
    }

    /// Whether `tile` holds nothing but the fill value.
    fn is_fill(&self, tile: &[u8]) -> bool {
        let pattern = &self.fill_pattern;
        tile.chunks(pattern.len())
            .all(|part| part == &pattern[..part.len()])
    }

    /// The stored bytes of `tile`, or `None` for a chunk of fill alone.
    fn encode<'t>(
        &self,
        tile: &'t [u8],
    ) -> Result<Option<std::borrow::Cow<'t, [u8]>>, StreamError> {
        if self.is_fill(tile) {
            self.counters.omitted.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        }
        let started = thread_cpu_nanos();
        let bytes = self.encoder.encode(tile)?;
        let spent = thread_cpu_nanos().saturating_sub(started);
        self.counters
            .encode_nanos
            .fetch_add(spent, Ordering::Relaxed);
        Ok(Some(bytes))
    }

    /// Writes one tile as its own chunk file (none for a chunk of fill alone).
    fn write_chunk(&self, key: &str, tile: &[u8]) -> Result<(), StreamError> {
        let Some(bytes) = self.encode(tile)? else {
            return Ok(());
        };
        let io = self.io(&format!("chunk {key}"));
        let started = Instant::now();
        let mut open = self
            .dest
            .fresh(key, self.parts_in_flight, bytes.len() as u64);
        let mut file = self.dest.writer(&mut open).map_err(&io)?;
        file.push(&bytes).map_err(&io)?;
        file.close().map_err(&io)?;
        Counters::add_time(&self.counters.write_nanos, started);
        self.count_file(bytes.len() as u64);
        Ok(())
    }

    fn count_file(&self, bytes: u64) {
        self.counters
            .stored_bytes
            .fetch_add(bytes, Ordering::Relaxed);
        self.counters.files.fetch_add(1, Ordering::Relaxed);
    }
}

/// One shard's part of an epoch: its tiles encoded (a few at once, so that
/// a row of few shards still keeps every writer busy) and appended, then
/// the shard paused or, with `close`, ended with its index.
struct ShardWrite<'a> {
    store: &'a Store,
    key: String,
    epoch: &'a Epoch<'a>,
    depth_pos: u64,
    close: bool,
    window: usize,
}

impl ShardWrite<'_> {
    fn run(&self, file: usize, shard: &mut ShardFile) -> Result<(), StreamError> {
        let io = self.store.io(&format!("shard {}", self.key));
        let members = self.store.grid.members(file, self.depth_pos);
        let mut out = self.store.dest.writer(&mut shard.out).map_err(&io)?;
        for batch in members.chunks(self.window) {
            let encoded: Vec<_> = batch
                .par_iter()
                .map(|m| self.store.encode(self.epoch.tile(m.slot)))
                .collect::<Result<_, _>>()?;
            let started = Instant::now();
            let mut offset = out.offset();
            for (member, bytes) in batch.iter().zip(&encoded) {
                shard.index[member.inner] = match bytes {
                    None => MISSING,
                    Some(bytes) => {
                        offset += bytes.len() as u64;
                        [offset - bytes.len() as u64, bytes.len() as u64]
                    }
                };
            }
            let parts: Vec<&[u8]> = encoded.iter().flatten().map(|b| &b[..]).collect();
            out.push_all(&parts).map_err(&io)?;
            Counters::add_time(&self.store.counters.write_nanos, started);
        }
        finish_shard(self.store, out, &shard.index, self.close).map_err(&io)
    }
}

/// Pauses a shard, or closes it with its index.
fn finish_shard(
    store: &Store,
    mut out: Writer<'_>,
    index: &[[u64; 2]],
    close: bool,
) -> Result<(), DestError> {
    let started = Instant::now();
    let result = if close {
        out.push(&index_bytes(index))?;
        out.close().map(|len| store.count_file(len))
    } else {
        out.pause(store.hold)
    };
    Counters::add_time(&store.counters.write_nanos, started);
    result
}

impl Sink for ZarrSink {
    fn begin(&mut self, plan: &StreamPlan, fill: &[u8]) -> Result<(), StreamError> {
        let (grid, writer_count) = self.check(plan)?;
        let encoder = Encoder::new(self.options.codec, plan.spec().dtype().size())?;
        let array = self.build_array(plan, fill, &grid, &encoder)?;
        let path = self.options.path.clone();
        let writers = rayon::ThreadPoolBuilder::new()
            .num_threads(writer_count)
            .thread_name(|i| format!("retile-zarr-writer-{i}"))
            .build()
            .map_err(|e| store_error(&path, "starting the writer threads", e))?;
        let dest = Dest::prepare(&path, &self.options)?;
        let hold =
            (HELD_BYTES / grid.files_per_row().max(1)).clamp(BLOCK, STAGE_BYTES) / BLOCK * BLOCK;
        let open_objects = match grid.sharded() {
            true => grid.files_per_row(),
            false => writer_count,
        };
        let chunks = grid.chunks_per_file() as u64;
        let shard_bytes = plan
            .tile_bytes()
            .saturating_mul(chunks)
            .saturating_add(index_len(chunks));
        // the store's parts in flight shared by the row's open objects
        let parts_in_flight = (IN_FLIGHT_PARTS / open_objects.max(1)).clamp(1, 8);
        let mut store = Store {
            array,
            encoder,
            grid,
            row: None,
            writers,
            writer_count,
            dest,
            parts_in_flight,
            shard_bytes,
            fill_pattern: fill.repeat(64 / fill.len().max(1)),
            counters: Counters::default(),
            hold,
        };
        store.claim(0, false)?;
        self.store = Some(store);
        Ok(())
    }

    fn write_epoch(&mut self, epoch: &Epoch<'_>) -> Result<(), StreamError> {
        let store = self.store()?;
        let depth = store.grid.depth();
        let (row, depth_pos) = (epoch.index / depth, epoch.index % depth);
        let planes = epoch.index * epoch.plan.spec().tile()[0] + epoch.planes;
        let last_epoch =
            !epoch.plan.spec().is_unbounded() && planes >= epoch.plan.spec().shape()[0];
        let close = depth_pos + 1 == depth || last_epoch;
        if store.grid.sharded() {
            write_shards(store, epoch, row, depth_pos, close)?;
        } else {
            write_chunks(store, epoch)?;
        }
        if close {
            store.claim(planes, false)?;
        }
        Ok(())
    }

    fn finish(&mut self, planes: u64) -> Result<(), StreamError> {
        let store = self.store()?;
        if let Some((row, mut files)) = store.row.take() {
            let store = &*store;
            store.writers.install(|| {
                files.par_iter_mut().enumerate().try_for_each(|(f, shard)| {
                    let io = store.io(&format!("shard {}", store.grid.key(row, f)));
                    let out = store.dest.writer(&mut shard.out).map_err(&io)?;
                    finish_shard(store, out, &shard.index, true).map_err(&io)
                })
            })?;
        }
        store.claim(planes, true)
    }

    fn stats(&self) -> SinkStats {
        let Some(store) = &self.store else {
            return SinkStats::default();
        };
        let c = &store.counters;
        let seconds = |n: &AtomicU64| n.load(Ordering::Relaxed) as f64 / 1e9;
        let (uploaded_bytes, requests) = store.dest.traffic();
        SinkStats {
            uploaded_bytes,
            requests,
            stored_bytes: c.stored_bytes.load(Ordering::Relaxed),
            files: c.files.load(Ordering::Relaxed),
            omitted_chunks: c.omitted.load(Ordering::Relaxed),
            encode_seconds: seconds(&c.encode_nanos),
            write_seconds: seconds(&c.write_nanos),
            threads: store.writer_count,
        }
    }
}

/// Writes every tile of `epoch` as its own chunk file.
fn write_chunks(store: &Store, epoch: &Epoch<'_>) -> Result<(), StreamError> {
    store.writers.install(|| {
        (0..store.grid.files_per_row())
            .into_par_iter()
            .try_for_each(|file| {
                let member = store.grid.members(file, 0);
                member.iter().try_for_each(|m| {
                    store.write_chunk(&store.grid.key(epoch.index, file), epoch.tile(m.slot))
                })
            })
    })
}

/// Appends the tiles of `epoch` to the shards of `row`, opening the row's
/// shards at its first epoch and closing them with `close`.
fn write_shards(
    store: &mut Store,
    epoch: &Epoch<'_>,
    row: u64,
    depth_pos: u64,
    close: bool,
) -> Result<(), StreamError> {
    let mut files = match store.row.take() {
        Some((open, files)) if open == row => files,
        _ => (0..store.grid.files_per_row())
            .map(|f| ShardFile {
                out: store.dest.fresh(
                    &store.grid.key(row, f),
                    store.parts_in_flight,
                    store.shard_bytes,
                ),
                index: vec![MISSING; store.grid.chunks_per_file()],
            })
            .collect(),
    };
    let store_ref = &*store;
    let window = store_ref.writer_count.div_ceil(files.len().max(1)).max(1);
    let result = store_ref.writers.install(|| {
        files.par_iter_mut().enumerate().try_for_each(|(f, shard)| {
            ShardWrite {
                store: store_ref,
                key: store_ref.grid.key(row, f),
                epoch,
                depth_pos,
                close,
                window,
            }
            .run(f, shard)
        })
    });
    if !close {
        store.row = Some((row, files));
    }
    result
}
