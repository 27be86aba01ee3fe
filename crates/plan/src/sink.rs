//! Where complete epochs of tiles go.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::StreamError;
use crate::plan::{unravel, StreamPlan};

/// One complete epoch: the `M` tiles sharing the slowest tile coordinate, in
/// slot order (lexicographic over the other tile coordinates), each tile
/// row-major over the tile extents.
#[derive(Debug)]
pub struct Epoch<'a> {
    /// The slowest tile coordinate.
    pub index: u64,
    /// Planes of data it holds (the tile extent of the slowest dimension,
    /// or fewer in the last epoch); rows past them hold the fill value.
    pub planes: u64,
    /// The `M` tiles, one every [`StreamPlan::slot_bytes`] bytes.
    pub tiles: &'a [u8],
    /// The plan the tiles follow.
    pub plan: &'a StreamPlan,
}

impl Epoch<'_> {
    /// Bytes of one tile.
    pub fn tile_bytes(&self) -> usize {
        self.plan.tile_bytes() as usize
    }

    /// The bytes of tile `slot`.
    pub fn tile(&self, slot: usize) -> &[u8] {
        let start = slot * self.plan.slot_bytes() as usize;
        &self.tiles[start..start + self.tile_bytes()]
    }

    /// Tile coordinates (slowest first, the epoch first) of tile `slot`.
    pub fn tile_coords(&self, slot: usize) -> Vec<u64> {
        self.plan.tile_map().tile_of_slot(self.index, slot as u64)
    }
}

/// The bytes of an epoch's tiles, held for a sink by a [`SharedEpoch`].
pub trait TileBytes: Send + Sync {
    /// The `M` tiles, one every [`StreamPlan::slot_bytes`] bytes.
    fn bytes(&self) -> &[u8];
}

impl TileBytes for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// An epoch a sink may go on working on after [`Sink::submit`] returns: its
/// tiles stay readable as long as a clone of it lives, and when the last
/// clone is dropped the stream gets the buffer back for a later epoch.
///
/// ```
/// use std::sync::Arc;
/// use retile_plan::{DType, SharedEpoch, StreamPlan, StreamSpec};
/// let plan = Arc::new(StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 2])?)?);
/// let epoch = SharedEpoch::new(0, 2, Arc::new(vec![1u8, 2, 3, 4, 5, 6, 7, 8]), plan);
/// let task = epoch.clone(); // a writer thread's handle
/// assert_eq!(task.view().tile(1), &[5, 6, 7, 8]);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Clone)]
pub struct SharedEpoch {
    /// The slowest tile coordinate.
    pub index: u64,
    /// Planes of data it holds (see [`Epoch::planes`]).
    pub planes: u64,
    tiles: Arc<dyn TileBytes>,
    plan: Arc<StreamPlan>,
}

impl SharedEpoch {
    /// Epoch `index` of `plan`, `planes` planes, its tiles in `tiles`.
    pub fn new(
        index: u64,
        planes: u64,
        tiles: Arc<dyn TileBytes>,
        plan: Arc<StreamPlan>,
    ) -> SharedEpoch {
        SharedEpoch {
            index,
            planes,
            tiles,
            plan,
        }
    }

    /// The epoch as [`Sink::write_epoch`] takes it.
    pub fn view(&self) -> Epoch<'_> {
        Epoch {
            index: self.index,
            planes: self.planes,
            tiles: self.tiles.bytes(),
            plan: &self.plan,
        }
    }
}

/// A consumer of complete epochs. Runs on the stream's sink thread.
///
/// A sink that writes one epoch at a time implements [`Sink::write_epoch`];
/// one that works on several at once (the Zarr sink encodes the tiles of the
/// next epoch while the last ones of the previous are written) implements
/// [`Sink::submit`] too, keeps the [`SharedEpoch`]s it is given until it is
/// done with their tiles, and reports a failure of that work at its next
/// call.
pub trait Sink: Send {
    /// Called once before the first epoch, with the plan and the fill value
    /// (the bytes of one element).
    fn begin(&mut self, plan: &StreamPlan, fill: &[u8]) -> Result<(), StreamError>;
    /// Called for each epoch, in order.
    fn write_epoch(&mut self, epoch: &Epoch<'_>) -> Result<(), StreamError>;
    /// Called once at the end with the number of planes written in all,
    /// after every epoch was submitted; returns once everything is written.
    fn finish(&mut self, planes: u64) -> Result<(), StreamError>;
    /// What the sink did so far (nothing, unless it says).
    fn stats(&self) -> SinkStats {
        SinkStats::default()
    }
    /// Takes each epoch, in order, in place of [`Sink::write_epoch`]; by
    /// default it writes the epoch before returning, which gives the
    /// buffer back to the stream.
    fn submit(&mut self, epoch: SharedEpoch) -> Result<(), StreamError> {
        self.write_epoch(&epoch.view())
    }
}

/// What a sink did, for the stream's summary.
///
/// ```
/// let stats = retile_plan::SinkStats::default();
/// assert_eq!(stats.stored_bytes, 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SinkStats {
    /// Bytes of chunk and shard files stored (metadata not counted).
    pub stored_bytes: u64,
    /// Chunk or shard files written.
    pub files: u64,
    /// Chunks of nothing but the fill value, left out (a reader sees the fill value).
    pub omitted_chunks: u64,
    /// CPU time spent compressing, added up over the writer threads.
    pub encode_seconds: f64,
    /// Time spent writing files, added up over the writer threads.
    pub write_seconds: f64,
    /// Writer threads.
    pub threads: usize,
    /// Bytes uploaded to object storage: the chunk and shard objects
    /// completed and the metadata (0 for a local directory).
    pub uploaded_bytes: u64,
    /// Requests made to object storage (each `PUT`, part, multipart start,
    /// completion and abort, listing and deletion; retries not counted).
    pub requests: u64,
}

/// A sink that keeps nothing: for measuring the tiler alone.
///
/// ```
/// use retile_plan::{DType, Epoch, NullSink, Sink, StreamPlan, StreamSpec};
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 8], vec![2, 4])?)?;
/// let mut sink = NullSink;
/// sink.begin(&plan, &[0])?;
/// let tiles = vec![1; plan.epoch_buffer_bytes() as usize];
/// sink.write_epoch(&Epoch { index: 0, planes: 2, tiles: &tiles, plan: &plan })?;
/// sink.finish(2)?;
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl Sink for NullSink {
    fn begin(&mut self, _: &StreamPlan, _: &[u8]) -> Result<(), StreamError> {
        Ok(())
    }
    fn write_epoch(&mut self, _: &Epoch<'_>) -> Result<(), StreamError> {
        Ok(())
    }
    fn finish(&mut self, _: u64) -> Result<(), StreamError> {
        Ok(())
    }
}

#[derive(Debug, Default)]
struct Stored {
    plan: Option<StreamPlan>,
    tiles: HashMap<Vec<u64>, Vec<u8>>,
    planes: u64,
    finished: bool,
}

/// A sink that keeps every tile in memory, for tests and embedding; clones
/// share the same store.
///
/// ```
/// use retile_plan::{DType, Epoch, MemorySink, Sink, StreamPlan, StreamSpec};
/// // 2 x 3 bytes in 2 x 2 tiles: two tiles, the second padded with 9
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![2, 3], vec![2, 2])?)?;
/// let sink = MemorySink::new();
/// let mut writer = sink.clone();
/// writer.begin(&plan, &[9])?;
/// let slot = plan.slot_bytes() as usize;
/// let mut tiles = vec![9; 2 * slot];
/// tiles[..4].copy_from_slice(&[0, 1, 3, 4]);
/// tiles[slot..slot + 4].copy_from_slice(&[2, 9, 5, 9]);
/// writer.write_epoch(&Epoch { index: 0, planes: 2, tiles: &tiles, plan: &plan })?;
/// writer.finish(2)?;
/// assert_eq!(sink.tile(&[0, 1]).unwrap(), vec![2, 9, 5, 9]);
/// assert_eq!(sink.assemble().unwrap(), vec![0, 1, 2, 3, 4, 5]);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemorySink {
    stored: Arc<Mutex<Stored>>,
}

impl MemorySink {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Stored> {
        self.stored
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The bytes of the tile at `coords` (slowest first), if written.
    pub fn tile(&self, coords: &[u64]) -> Option<Vec<u8>> {
        self.lock().tiles.get(coords).cloned()
    }

    /// The coordinates of every tile written, sorted.
    ///
    /// ```
    /// assert!(retile_plan::MemorySink::new().tile_keys().is_empty());
    /// ```
    pub fn tile_keys(&self) -> Vec<Vec<u64>> {
        let mut keys: Vec<Vec<u64>> = self.lock().tiles.keys().cloned().collect();
        keys.sort_unstable();
        keys
    }

    /// Number of tiles written.
    pub fn tile_count(&self) -> usize {
        self.lock().tiles.len()
    }

    /// Planes written, once finished.
    pub fn planes(&self) -> Option<u64> {
        let s = self.lock();
        s.finished.then_some(s.planes)
    }

    /// The dense row-major array the tiles describe (planes written × the
    /// other extents), read back from the tiles.
    pub fn assemble(&self) -> Option<Vec<u8>> {
        let s = self.lock();
        let plan = s.plan.as_ref()?;
        let spec = plan.spec();
        let esize = spec.dtype().size();
        let mut shape: Vec<usize> = spec.shape().iter().map(|&v| v as usize).collect();
        shape[0] = s.planes as usize;
        let extents: Vec<u64> = shape.iter().map(|&v| v as u64).collect();
        let total: usize = shape.iter().product();
        let mut out = vec![0u8; total * esize];
        for i in 0..total {
            let (key, intra) = plan.tile_map().locate(&unravel(i as u64, &extents));
            let intra = intra as usize;
            let t = s.tiles.get(&key)?;
            out[i * esize..(i + 1) * esize].copy_from_slice(&t[intra * esize..(intra + 1) * esize]);
        }
        Some(out)
    }
}

impl Sink for MemorySink {
    fn begin(&mut self, plan: &StreamPlan, _: &[u8]) -> Result<(), StreamError> {
        self.lock().plan = Some(plan.clone());
        Ok(())
    }

    fn write_epoch(&mut self, epoch: &Epoch<'_>) -> Result<(), StreamError> {
        let m = epoch.plan.m() as usize;
        let mut s = self.lock();
        for slot in 0..m {
            s.tiles
                .insert(epoch.tile_coords(slot), epoch.tile(slot).to_vec());
        }
        Ok(())
    }

    fn finish(&mut self, planes: u64) -> Result<(), StreamError> {
        let mut s = self.lock();
        s.planes = planes;
        s.finished = true;
        Ok(())
    }
}
