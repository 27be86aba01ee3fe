//! Where complete epochs of tiles go.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::StreamError;
use crate::plan::{unravel, StreamPlan};

/// One complete epoch: the `M` tiles sharing the slowest tile coordinate, in
/// slot order (lexicographic over the other tile coordinates), each tile
/// row-major over the tile extents.
///
/// ```
/// use retile_plan::{DType, Epoch, StreamPlan, StreamSpec};
/// // 2 x 4 bytes in 2 x 2 tiles: one epoch of two tiles
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![2, 4], vec![2, 2])?)?;
/// let tiles = [0u8, 1, 4, 5, 2, 3, 6, 7];
/// let epoch = Epoch { index: 0, planes: 2, tiles: &tiles, plan: &plan };
/// assert_eq!(epoch.tile(1), &[2, 3, 6, 7]);
/// assert_eq!(epoch.tile_coords(1), vec![0, 1]);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
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
    ///
    /// ```
    /// use retile_plan::{DType, Epoch, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U16, vec![0, 4], vec![2, 2])?)?;
    /// let tiles = vec![0u8; plan.epoch_buffer_bytes() as usize];
    /// let epoch = Epoch { index: 0, planes: 2, tiles: &tiles, plan: &plan };
    /// assert_eq!(epoch.tile_bytes(), 2 * 2 * 2); // 2 x 2 elements of 2 bytes
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn tile_bytes(&self) -> usize {
        self.plan.tile_bytes() as usize
    }

    /// The bytes of tile `slot`.
    ///
    /// ```
    /// use retile_plan::{DType, Epoch, StreamPlan, StreamSpec};
    /// // tiles of 4096 bytes: each slot is a cache line longer than its tile
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 128], vec![64, 64])?)?;
    /// let mut tiles = vec![0u8; plan.epoch_buffer_bytes() as usize];
    /// tiles[plan.slot_bytes() as usize] = 7; // the first byte of slot 1
    /// let epoch = Epoch { index: 0, planes: 64, tiles: &tiles, plan: &plan };
    /// assert_eq!(epoch.tile(1).len(), 4096);
    /// assert_eq!(epoch.tile(1)[0], 7);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn tile(&self, slot: usize) -> &[u8] {
        let start = slot * self.plan.slot_bytes() as usize;
        &self.tiles[start..start + self.tile_bytes()]
    }

    /// Tile coordinates (slowest first, the epoch first) of tile `slot`.
    ///
    /// ```
    /// use retile_plan::{DType, Epoch, StreamPlan, StreamSpec};
    /// // 2 x 2 tiles per plane, slot order row-major over them
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4, 6], vec![1, 2, 3])?)?;
    /// let tiles = vec![0u8; plan.epoch_buffer_bytes() as usize];
    /// let epoch = Epoch { index: 7, planes: 1, tiles: &tiles, plan: &plan };
    /// assert_eq!(epoch.tile_coords(2), vec![7, 1, 0]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn tile_coords(&self, slot: usize) -> Vec<u64> {
        self.plan.tile_map().tile_of_slot(self.index, slot as u64)
    }
}

/// The bytes of an epoch's tiles, held for a sink by a [`SharedEpoch`].
///
/// ```
/// use retile_plan::TileBytes;
/// // any owner of the bytes will do, e.g. a boxed slice
/// struct Boxed(Box<[u8]>);
/// impl TileBytes for Boxed {
///     fn bytes(&self) -> &[u8] { &self.0 }
/// }
/// assert_eq!(Boxed(vec![1, 2, 3].into()).bytes(), &[1, 2, 3]);
/// assert_eq!(TileBytes::bytes(&vec![4u8, 5]), &[4, 5]); // and a Vec<u8>
/// ```
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
    encoded: Option<Arc<EncodedChunks>>,
}

/// A chunk codec that a backend can run itself in place of the sink (the
/// GPU, through nvCOMP), as the sink names it ([`Sink::device_codec`]):
/// the stored bytes are those the sink's own codec would decode.
///
/// ```
/// use retile_plan::DeviceCodec;
/// assert_ne!(DeviceCodec::Zstd, DeviceCodec::BloscLz4 { typesize: 2 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceCodec {
    /// Zarr's `zstd` codec: each chunk one standard zstd frame.
    Zstd,
    /// Zarr's `blosc` codec, LZ4 inside, byte shuffle of `typesize`-byte elements.
    BloscLz4 {
        /// Bytes per element.
        typesize: u8,
    },
    /// Zarr's `blosc` codec, zstd inside, byte shuffle of `typesize`-byte elements.
    BloscZstd {
        /// Bytes per element.
        typesize: u8,
    },
}

/// Where chunks are compressed when the stream's backend could do it
/// itself (`--codec-on`).
///
/// ```
/// use retile_plan::CodecOn;
/// assert_eq!("gpu".parse::<CodecOn>().unwrap(), CodecOn::Gpu);
/// assert_eq!(CodecOn::default(), CodecOn::Auto);
/// assert!("disk".parse::<CodecOn>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CodecOn {
    /// Both are measured on the first epoch, and the faster is used.
    #[default]
    Auto,
    /// The GPU, where it can (else the CPU, and the summary says why).
    Gpu,
    /// The sink's writer threads on the CPU.
    Cpu,
}

impl std::str::FromStr for CodecOn {
    type Err = StreamError;

    fn from_str(text: &str) -> Result<CodecOn, StreamError> {
        match text {
            "auto" => Ok(CodecOn::Auto),
            "gpu" => Ok(CodecOn::Gpu),
            "cpu" => Ok(CodecOn::Cpu),
            _ => Err(StreamError::Invalid(format!(
                "codec_on '{text}': use auto, gpu or cpu"
            ))),
        }
    }
}

/// The chunks of an epoch a backend encoded itself: the epoch's buffer
/// holds their stored bytes packed, and each slot says where its chunk is.
///
/// ```
/// use retile_plan::{DeviceCodec, EncodedChunks};
/// let encoded = EncodedChunks { codec: DeviceCodec::Zstd, chunks: vec![Some((0, 9)), None] };
/// assert_eq!(encoded.chunks[1], None); // the second tile is fill alone: left out
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedChunks {
    /// The codec the chunks were encoded with.
    pub codec: DeviceCodec,
    /// Per slot: the offset and length of its chunk's stored bytes in the
    /// buffer, or `None` for a tile of fill alone (left out of the store).
    pub chunks: Vec<Option<(u64, u64)>>,
}

impl SharedEpoch {
    /// Epoch `index` of `plan`, `planes` planes, its tiles in `tiles`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use retile_plan::{DType, SharedEpoch, StreamPlan, StreamSpec};
    /// let plan = Arc::new(StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 2])?)?);
    /// let epoch = SharedEpoch::new(3, 1, Arc::new(vec![0u8; 8]), plan);
    /// assert_eq!((epoch.index, epoch.planes), (3, 1));
    /// assert!(epoch.encoded().is_none()); // it holds tiles
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
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
            encoded: None,
        }
    }

    /// The same epoch, its buffer holding the chunks `encoded` describes
    /// rather than tiles.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use retile_plan::{DType, DeviceCodec, EncodedChunks, SharedEpoch, StreamPlan, StreamSpec};
    /// let plan = Arc::new(StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 2])?)?);
    /// let chunks = EncodedChunks { codec: DeviceCodec::Zstd, chunks: vec![Some((0, 3)), None] };
    /// let epoch = SharedEpoch::new(0, 2, Arc::new(vec![1u8, 2, 3]), plan).with_encoded(chunks);
    /// assert_eq!(epoch.encoded_chunk(0), Some(Some(&[1u8, 2, 3][..])));
    /// assert_eq!(epoch.encoded_chunk(1), Some(None));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn with_encoded(mut self, encoded: EncodedChunks) -> SharedEpoch {
        self.encoded = Some(Arc::new(encoded));
        self
    }

    /// How the epoch's chunks were encoded, if a backend encoded them.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use retile_plan::{DType, DeviceCodec, EncodedChunks, SharedEpoch, StreamPlan, StreamSpec};
    /// let plan = Arc::new(StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 2])?)?);
    /// let epoch = SharedEpoch::new(0, 2, Arc::new(vec![0u8; 8]), plan);
    /// assert!(epoch.encoded().is_none());
    /// let epoch = epoch.with_encoded(EncodedChunks { codec: DeviceCodec::Zstd, chunks: vec![None, None] });
    /// assert_eq!(epoch.encoded().map(|e| e.codec), Some(DeviceCodec::Zstd));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn encoded(&self) -> Option<&EncodedChunks> {
        self.encoded.as_deref()
    }

    /// The stored bytes of slot `slot`'s chunk, when the epoch is encoded:
    /// `Some(None)` for a chunk of fill alone (or out of range); `None`
    /// when the epoch holds tiles.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use retile_plan::{DType, DeviceCodec, EncodedChunks, SharedEpoch, StreamPlan, StreamSpec};
    /// let plan = Arc::new(StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 2])?)?);
    /// let epoch = SharedEpoch::new(0, 2, Arc::new(vec![9u8, 9, 1, 2]), plan);
    /// assert_eq!(epoch.encoded_chunk(0), None); // tiles, not chunks
    /// let chunks = EncodedChunks { codec: DeviceCodec::Zstd, chunks: vec![Some((2, 2)), None] };
    /// let epoch = epoch.with_encoded(chunks);
    /// assert_eq!(epoch.encoded_chunk(0), Some(Some(&[1u8, 2][..])));
    /// assert_eq!(epoch.encoded_chunk(5), Some(None)); // out of range
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn encoded_chunk(&self, slot: usize) -> Option<Option<&[u8]>> {
        let encoded = self.encoded.as_ref()?;
        let bytes = self.tiles.bytes();
        Some(
            encoded
                .chunks
                .get(slot)
                .copied()
                .flatten()
                .and_then(|(at, len)| bytes.get(at as usize..at.checked_add(len)? as usize)),
        )
    }

    /// The epoch as [`Sink::write_epoch`] takes it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use retile_plan::{DType, SharedEpoch, StreamPlan, StreamSpec};
    /// let plan = Arc::new(StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 2])?)?);
    /// let epoch = SharedEpoch::new(1, 2, Arc::new(vec![1u8, 2, 3, 4, 5, 6, 7, 8]), plan);
    /// let view = epoch.view();
    /// assert_eq!((view.index, view.planes, view.tiles.len()), (1, 2, 8));
    /// assert_eq!(view.tile_coords(1), vec![1, 1]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
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
///
/// ```
/// use retile_plan::{DType, Epoch, Sink, StreamError, StreamPlan, StreamSpec};
/// struct CountTiles(u64);
/// impl Sink for CountTiles {
///     fn begin(&mut self, _: &StreamPlan, _: &[u8]) -> Result<(), StreamError> { Ok(()) }
///     fn write_epoch(&mut self, e: &Epoch<'_>) -> Result<(), StreamError> { self.0 += e.plan.m(); Ok(()) }
///     fn finish(&mut self, _: u64) -> Result<(), StreamError> { Ok(()) }
/// }
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 8], vec![2, 4])?)?;
/// let mut sink = CountTiles(0);
/// sink.begin(&plan, &[0])?;
/// # let tiles = vec![0; plan.epoch_buffer_bytes() as usize];
/// sink.write_epoch(&Epoch { index: 0, planes: 2, tiles: &tiles, plan: &plan })?;
/// sink.finish(2)?;
/// assert_eq!(sink.0, 2);
/// assert!(sink.begin_region(&plan, 1, 0).is_err()); // the default takes no regions
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
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
    /// The codec a backend may encode this sink's chunks with for `plan`
    /// (handing it epochs of [`EncodedChunks`]), and where the sink's
    /// user asked for it to run; `None` (the default): the sink encodes.
    fn device_codec(&self, _plan: &StreamPlan) -> Option<(DeviceCodec, CodecOn)> {
        None
    }
    /// Bytes per second the sink encodes `epoch`'s tiles at, on all its
    /// writer threads (measured now, writing nothing); `None` when it
    /// cannot tell. A backend choosing where to compress asks it once.
    fn encode_rate(&self, _epoch: &Epoch<'_>) -> Option<f64> {
        None
    }
    /// The epochs that follow (numbered from 0 again) are those of a
    /// *region* of the array the sink began with: the stream `region`
    /// plans, which is the array's but for dimension `dim`, whose element 0
    /// is the array's element `first` (a multiple of the region's extent
    /// there). A stream whose input's slowest dimension is not the stored
    /// first sends its array as regions, one slab of that dimension each
    /// ([`StreamSpec::slab`](crate::StreamSpec::slab)). By default a sink
    /// takes no regions.
    fn begin_region(
        &mut self,
        _region: &StreamPlan,
        dim: usize,
        _first: u64,
    ) -> Result<(), StreamError> {
        Err(StreamError::Invalid(format!(
            "this output cannot be written in slabs of dimension {dim}: give an input order whose slowest dimension is the stored first"
        )))
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
    fn begin_region(&mut self, _: &StreamPlan, _: usize, _: u64) -> Result<(), StreamError> {
        Ok(())
    }
}

#[derive(Debug, Default)]
struct Stored {
    plan: Option<StreamPlan>,
    tiles: HashMap<Vec<u64>, Vec<u8>>,
    planes: u64,
    finished: bool,
    /// The region the epochs are of: its dimension and first tile there.
    region: Option<(usize, u64)>,
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
    ///
    /// ```
    /// let sink = retile_plan::MemorySink::new();
    /// assert_eq!((sink.tile_count(), sink.planes()), (0, None));
    /// assert!(sink.assemble().is_none()); // no plan yet
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Stored> {
        self.stored
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The bytes of the tile at `coords` (slowest first), if written.
    ///
    /// ```
    /// use retile_plan::{DType, Epoch, MemorySink, Sink, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 2])?)?;
    /// let mut sink = MemorySink::new();
    /// sink.begin(&plan, &[0])?;
    /// let tiles = [1u8, 2, 3, 4, 5, 6, 7, 8];
    /// sink.write_epoch(&Epoch { index: 0, planes: 2, tiles: &tiles, plan: &plan })?;
    /// assert_eq!(sink.tile(&[0, 1]), Some(vec![5, 6, 7, 8]));
    /// assert_eq!(sink.tile(&[1, 0]), None); // epoch 1 not written
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
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
    ///
    /// ```
    /// use retile_plan::{DType, Epoch, MemorySink, Sink, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 6], vec![1, 2])?)?;
    /// let mut sink = MemorySink::new();
    /// sink.begin(&plan, &[0])?;
    /// let tiles = vec![0u8; plan.epoch_buffer_bytes() as usize];
    /// for index in 0..2 {
    ///     sink.write_epoch(&Epoch { index, planes: 1, tiles: &tiles, plan: &plan })?;
    /// }
    /// assert_eq!(sink.tile_count(), 2 * 3);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn tile_count(&self) -> usize {
        self.lock().tiles.len()
    }

    /// Planes written, once finished.
    ///
    /// ```
    /// use retile_plan::{DType, MemorySink, Sink, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 2])?)?;
    /// let mut sink = MemorySink::new();
    /// sink.begin(&plan, &[0])?;
    /// assert_eq!(sink.planes(), None); // not finished
    /// sink.finish(3)?;
    /// assert_eq!(sink.planes(), Some(3));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn planes(&self) -> Option<u64> {
        let s = self.lock();
        s.finished.then_some(s.planes)
    }

    /// The dense row-major array the tiles describe (planes written × the
    /// other extents), read back from the tiles.
    ///
    /// ```
    /// use retile_plan::{DType, Epoch, MemorySink, Sink, StreamPlan, StreamSpec};
    /// // 2 x 4 bytes in 2 x 2 tiles, read back row-major
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![2, 4], vec![2, 2])?)?;
    /// let mut sink = MemorySink::new();
    /// sink.begin(&plan, &[0])?;
    /// let tiles = [0u8, 1, 4, 5, 2, 3, 6, 7];
    /// sink.write_epoch(&Epoch { index: 0, planes: 2, tiles: &tiles, plan: &plan })?;
    /// sink.finish(2)?;
    /// assert_eq!(sink.assemble(), Some(vec![0, 1, 2, 3, 4, 5, 6, 7]));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
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
            let mut coords = epoch.tile_coords(slot);
            if let Some((dim, first)) = s.region {
                coords[dim] += first;
            }
            s.tiles.insert(coords, epoch.tile(slot).to_vec());
        }
        Ok(())
    }

    fn begin_region(
        &mut self,
        region: &StreamPlan,
        dim: usize,
        first: u64,
    ) -> Result<(), StreamError> {
        let tile = region.spec().tile()[dim];
        if !first.is_multiple_of(tile) {
            return Err(StreamError::Invalid(format!(
                "a region starts at a tile: element {first} of dimension {dim} is not a multiple of {tile}"
            )));
        }
        self.lock().region = Some((dim, first / tile));
        Ok(())
    }

    fn finish(&mut self, planes: u64) -> Result<(), StreamError> {
        let mut s = self.lock();
        s.planes = planes;
        s.finished = true;
        Ok(())
    }
}
