//! The Zarr v3 sink: every tile is one chunk, encoded straight from the
//! epoch buffer on the writer threads and written as its own file or as an
//! inner chunk of a `sharding_indexed` shard ([`crate::writer`], several
//! epochs at once). `zarrs` makes the metadata and the codecs; the chunk
//! and shard files go through [`crate::dest`]: to a local directory
//! ([`crate::files`]) or to object storage ([`crate::object`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use zarrs::array::{Array, ArrayBuilder, FillValue};
use zarrs::storage::store::MemoryStore;

use retile_plan::{
    CodecOn, DeviceCodec, Epoch, SharedEpoch, Sink, SinkStats, StreamDType, StreamError, StreamPlan,
};

use crate::chain::{ChainLink, Claim, Claiming};
use crate::codec::{Codec, Encoder};
use crate::dest::{is_object_store, Dest};
use crate::error::store_error;
use crate::files::DIRECT_IO_MIN_CHUNK;
use crate::group::Group;
use crate::object::{IN_FLIGHT_PARTS, PART_BYTES};
use crate::options::{SyncPolicy, ZarrOptions, MAX_WRITERS};
use crate::records::MetadataWriter;
use crate::root::StoreRoot;
use crate::shard::{index_len, ShardGrid};
use crate::writer::{writer_pool, EpochWriter, WriterSetup};

/// Writes epochs as Zarr v3 chunks or shards; the array's shape grows as
/// rows of files are completed, so the metadata never claims data that is
/// not on disk, and it is replaced atomically each time.
///
/// ```
/// use retile_plan::{DType, Epoch, Sink, StreamPlan, StreamSpec};
/// use retile_store::{ZarrOptions, ZarrSink};
/// let dir = tempfile::tempdir()?;
/// // u16 planes of 8 in tiles of 2 x 4, both tiles of a row in one shard
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U16, vec![0, 8], vec![2, 4])?)?;
/// let mut sink = ZarrSink::new(ZarrOptions { path: dir.path().to_owned(), shard: Some(vec![1, 2]), ..Default::default() });
/// sink.begin(&plan, &[0, 0])?;
/// let tiles = vec![1u8; plan.epoch_buffer_bytes() as usize];
/// sink.write_epoch(&Epoch { index: 0, planes: 2, tiles: &tiles, plan: &plan })?;
/// sink.finish(2)?;
/// assert_eq!(sink.stats().files, 1);
/// let metadata: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("zarr.json"))?)?;
/// assert_eq!(metadata["shape"], serde_json::json!([2, 8]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ZarrSink {
    options: ZarrOptions,
    store: Option<Store>,
    /// The store the array is in, when it was made ready before the sink
    /// (the root of an image, or of an array opened ahead), and the
    /// array's key in it.
    within: Option<(StoreRoot, String)>,
    /// The pyramid's chain of claims, for a level.
    chain: Option<ChainLink>,
    /// Level 0 of an OME-Zarr image: the group and its `zarr.json` (without
    /// the user's attributes), which the user's attributes go in.
    image: Option<(Dest, serde_json::Value)>,
    /// Where the block of the array this sink writes begins (elements
    /// along each leading dimension; zero along the rest), when the caller
    /// of its job writes the array's metadata ([`ZarrSink::block`]).
    block: Option<Vec<u64>>,
}

/// An open store: the writer of its epochs and its writer threads.
struct Store {
    writer: EpochWriter,
    writer_count: usize,
    /// The writers' encoder and threads, for measuring how fast they encode.
    encoder: Encoder,
    pool: Arc<rayon::ThreadPool>,
    /// The regions of an input in slabs.
    regions: Regions,
}

/// The regions of an array whose input arrives in slabs along a dimension
/// that is not the stored first ([`Sink::begin_region`]): each is written
/// by a writer of its own into the files its slab covers, and claims
/// nothing; the array's writer claims the whole array at the end.
struct Regions {
    dest: Dest,
    fill: Vec<u8>,
    parts_in_flight: usize,
    file_bytes: u64,
    sync_rows: bool,
    /// The writer of each region begun, the current one last.
    writers: Vec<EpochWriter>,
}

impl Store {
    /// The writer of the epochs submitted now: the current region's, or
    /// the array's.
    fn current(&self) -> &EpochWriter {
        self.regions.writers.last().unwrap_or(&self.writer)
    }

    /// Every writer: the array's and the regions'.
    fn writers(&self) -> impl Iterator<Item = &EpochWriter> {
        std::iter::once(&self.writer).chain(&self.regions.writers)
    }
}

/// The attribute retile's own record of an array is kept under.
pub(crate) const RECORD_KEY: &str = "retile";

/// Bytes of unfinished parts the open shards of a row may keep between
/// epochs in object storage (a part goes up only when whole).
const MAX_HELD_PARTS: u64 = 4 << 30;

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
            within: None,
            chain: None,
            image: None,
            block: None,
        }
    }

    /// A sink writing the array at `key` under `root` (`""`: the root
    /// itself), with `options`' codec, shards and the rest (its path and
    /// `overwrite` are the root's); the root stays locked while the sink
    /// lives.
    ///
    /// ```
    /// use retile_store::{StoreRoot, ZarrOptions, ZarrSink};
    /// let dir = std::env::temp_dir().join(format!("retile-in-root-doc-{}", std::process::id()));
    /// let root = StoreRoot::open(&ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() })?;
    /// let level0 = ZarrSink::in_root(&root, "0", ZarrOptions::default());
    /// # drop(level0); drop(root); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn in_root(root: &StoreRoot, key: &str, options: ZarrOptions) -> ZarrSink {
        let path = match key {
            "" => root.path().to_owned(),
            key => root.path().join(key),
        };
        ZarrSink {
            within: Some((root.clone(), key.to_owned())),
            ..ZarrSink::new(ZarrOptions {
                path,
                overwrite: false,
                ..options
            })
        }
    }

    /// This sink as a level of a pyramid: its claims go through `link`, so
    /// that it never claims planes its parent level has not.
    ///
    /// ```
    /// use retile_store::{ClaimChain, ZarrOptions, ZarrSink};
    /// let chain = ClaimChain::new(2, false);
    /// let sink = ZarrSink::new(ZarrOptions { path: "level.zarr".into(), ..Default::default() })
    ///     .chained(chain.level(1));
    /// ```
    pub fn chained(self, link: ChainLink) -> ZarrSink {
        ZarrSink {
            chain: Some(link),
            ..self
        }
    }

    /// This sink as level 0 of the OME-Zarr image whose group is `group`
    /// and whose group `zarr.json` is `document`: the user's metadata
    /// ([`ZarrOptions::user`]) describes the image, its attributes going in
    /// the group's `zarr.json`, rewritten after the claims that change them.
    ///
    /// ```
    /// use retile_store::{Group, ZarrOptions, ZarrSink};
    /// let dir = std::env::temp_dir().join(format!("retile-image-doc-{}", std::process::id()));
    /// let group = Group::create(&ZarrOptions { path: dir.clone(), overwrite: true, ..Default::default() })?;
    /// let document = serde_json::json!({"zarr_format": 3, "node_type": "group", "attributes": {}});
    /// let level0 = ZarrSink::in_root(group.root(), "0", ZarrOptions::default()).describing_image(&group, document);
    /// # drop(level0); drop(group); std::fs::remove_dir_all(&dir).ok();
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn describing_image(self, group: &Group, document: serde_json::Value) -> ZarrSink {
        ZarrSink {
            image: Some((group.root().dest().clone(), document)),
            ..self
        }
    }

    /// This sink as one task's slab of a job that writes one array with
    /// several streams at once (the tasks of a cluster): the stream's
    /// planes are planes `first_plane..` of the array at `options.path`,
    /// a store the job's caller made ready, holds the lock of, and writes
    /// the metadata of once every slab is written. The sink writes the
    /// files of its rows whole (created, or emptied, before their first
    /// byte: a slab written again leaves the same files) and nothing else:
    /// no `zarr.json`, no lock, nothing emptied. Its finish returns once
    /// every file is stored whole (synced, or its upload completed).
    /// `first_plane` is refused at [`Sink::begin`] unless it starts a row
    /// of files (a multiple of the tile's first extent times the shard's).
    ///
    /// ```
    /// use retile_plan::{DType, Epoch, Sink, StreamPlan, StreamSpec};
    /// use retile_store::{ZarrOptions, ZarrSink};
    /// let dir = tempfile::tempdir()?;
    /// let options = ZarrOptions { path: dir.path().to_owned(), ..Default::default() };
    /// // planes 4 and 5 of an array in tiles of 2 x 4
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 4])?)?;
    /// let mut sink = ZarrSink::new(options).slab(4);
    /// sink.begin(&plan, &[0])?;
    /// sink.write_epoch(&Epoch { index: 0, planes: 2, tiles: &[1; 8], plan: &plan })?;
    /// sink.finish(2)?;
    /// assert!(dir.path().join("c/2/0").is_file() && !dir.path().join("zarr.json").exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slab(self, first_plane: u64) -> ZarrSink {
        self.block(vec![first_plane])
    }

    /// [`ZarrSink::slab`] generalised to a box of whole files: the
    /// stream's element `[0, 0, ...]` is the array's element `origin`
    /// (given for the leading dimensions, zero along the rest), and the
    /// stream's shape below its first dimension is the box's. `origin` is
    /// refused at [`Sink::begin`] unless each entry starts a file along its
    /// dimension (a multiple of the tile's extent times the shard's).
    ///
    /// ```
    /// use retile_plan::{DType, Epoch, Sink, StreamPlan, StreamSpec};
    /// use retile_store::{ZarrOptions, ZarrSink};
    /// let dir = tempfile::tempdir()?;
    /// let options = ZarrOptions { path: dir.path().to_owned(), ..Default::default() };
    /// // planes 4 and 5, columns 8..12, of an array in tiles of 2 x 4
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4], vec![2, 4])?)?;
    /// let mut sink = ZarrSink::new(options).block(vec![4, 8]);
    /// sink.begin(&plan, &[0])?;
    /// sink.write_epoch(&Epoch { index: 0, planes: 2, tiles: &[1; 8], plan: &plan })?;
    /// sink.finish(2)?;
    /// assert!(dir.path().join("c/2/2").is_file() && !dir.path().join("c/2/0").exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn block(self, origin: Vec<u64>) -> ZarrSink {
        ZarrSink {
            block: Some(origin),
            ..self
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
        check_slabs(plan, &grid)?;
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
        if let Some(record) = &self.options.record {
            let mut attributes = serde_json::Map::new();
            attributes.insert(RECORD_KEY.into(), record.clone());
            builder.attributes(attributes);
        }
        builder
            .build(Arc::new(MemoryStore::new()), "/")
            .map_err(|e| store_error(path, "creating the array", e))
    }
}

/// Writer threads when none are asked for: one per core with compression
/// (each keeps a core busy encoding); without, at least 16, so that many
/// writes wait on the disk at once.
fn default_writers(codec: Codec) -> usize {
    let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
    match codec {
        Codec::None => cores.max(16),
        _ => cores.max(2),
    }
}

/// Sets the array's first extent to `planes` and replaces `zarr.json`
/// (`durable`: synced to the disk), with the user's metadata as it is now:
/// the records of the planes claimed written first, the attributes with
/// the array's `zarr.json` (or its image's, after it).
fn claim(
    array: &mut Array<MemoryStore>,
    dest: &Dest,
    mut user: Option<&mut MetadataWriter>,
    planes: u64,
    durable: bool,
) -> Result<(), StreamError> {
    let root = dest.name();
    let mut shape = array.shape().to_vec();
    shape[0] = planes;
    array
        .set_shape(shape)
        .map_err(|e| store_error(root, "resizing the array", e))?;
    if let Some(user) = user.as_deref_mut() {
        user.before_claim(planes, array.attributes_mut(), durable)?;
    }
    let json = serde_json::to_vec_pretty(array.metadata())
        .map_err(|e| store_error(root, "writing the array metadata", e))?;
    dest.put_metadata("zarr.json", &json, durable)
        .map_err(|e| store_error(root, "writing the array metadata zarr.json", e))?;
    match user {
        Some(user) => user.after_claim(durable),
        None => Ok(()),
    }
}

/// The array's own claim `own`, through the pyramid's chain where the
/// array is a level of one.
fn chained(link: Option<&ChainLink>, own: Claim) -> Claim {
    match link {
        Some(link) => {
            link.attach(own);
            let link = link.clone();
            Box::new(move |planes, claiming| link.claim(planes, claiming))
        }
        None => own,
    }
}

/// Refuses slabs of the input that would cut the array's files (chunks,
/// or shards) along their dimension: each is written as a region of whole
/// files.
fn check_slabs(plan: &StreamPlan, grid: &ShardGrid) -> Result<(), StreamError> {
    let spec = plan.spec();
    let Some((dim, extent)) = spec.input_slab() else {
        return Ok(());
    };
    let file_extent = spec.tile()[dim].saturating_mul(grid.shape()[dim]);
    match spec.slab_count() == 1 || extent.is_multiple_of(file_extent) {
        true => Ok(()),
        false => Err(StreamError::Invalid(format!(
            "the input arrives in slabs of {extent} along dimension {dim}, which would cut its shards of {file_extent} there: make the slabs whole shards (StreamSpec::with_input_slab({file_extent}), which the CLI and the Python package do themselves)"
        ))),
    }
}

/// The claim of a slab's sink: it claims nothing (the job's caller writes
/// the metadata); its last waits until every object closed is stored.
fn unclaimed(dest: Dest) -> Claim {
    Box::new(move |_, claiming| match claiming {
        Claiming::Last => dest
            .wait_closed()
            .map_err(|e| store_error(dest.name(), "completing the slab's uploads", e)),
        Claiming::Row => Ok(()),
    })
}

/// The grid of a block's sink whose element `[0, 0, ...]` is the array's
/// element `origin` (zero past its end): its files counted from the
/// array's first; refused unless the block starts a file along every
/// dimension.
fn block_grid(
    mut grid: ShardGrid,
    plan: &StreamPlan,
    origin: &[u64],
) -> Result<ShardGrid, StreamError> {
    let tile = plan.spec().tile();
    if origin.len() > tile.len() {
        return Err(StreamError::Invalid(format!(
            "a block of the array starts at {origin:?}, {} coordinates for {} dimensions",
            origin.len(),
            tile.len()
        )));
    }
    for (d, &at) in origin.iter().enumerate() {
        let file = tile[d].saturating_mul(grid.shape()[d]);
        if !at.is_multiple_of(file.max(1)) {
            return Err(StreamError::Invalid(format!(
                "a block of the array starts at a file of {}: element {at} of dimension {d} is not a multiple of {file} (the tile's extent times the shard's)",
                if grid.sharded() { "shards" } else { "chunks" }
            )));
        }
        grid = grid.offset_files(d, at / file.max(1));
    }
    Ok(grid)
}

/// The planes the array in `dest` claims, for a stream appending to it
/// from its plane `first_plane`: its `zarr.json` must describe the array
/// `array` does (but for its first extent, and its attributes), and
/// `first_plane` must begin a row of files (`row_planes` planes each)
/// within the claim.
fn claimed_planes(
    dest: &Dest,
    array: &Array<MemoryStore>,
    first_plane: u64,
    row_planes: u64,
) -> Result<u64, StreamError> {
    let root = dest.name();
    let bytes = dest
        .read_metadata("zarr.json")
        .map_err(|e| store_error(root, "reading the array metadata zarr.json", e))?;
    let mut found: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| store_error(root, "reading the array metadata zarr.json", e))?;
    let claimed = found["shape"][0].as_u64().unwrap_or(0);
    let planes = |document: &serde_json::Value| match document["shape"].as_array() {
        Some(shape) if !shape.is_empty() => shape[1..].to_vec(),
        _ => Vec::new(),
    };
    let mut made = serde_json::to_value(array.metadata())
        .map_err(|e| store_error(root, "describing the array", e))?;
    let extents = (planes(&found), planes(&made));
    for document in [&mut found, &mut made] {
        if let Some(object) = document.as_object_mut() {
            object.remove("attributes");
            object.remove("shape");
        }
    }
    if found != made || extents.0 != extents.1 {
        return Err(StreamError::Invalid(format!(
            "the array at {} is not the one this stream would write (its zarr.json describes another type, tile, shards, codec or fill): append with the store's own options",
            root.display()
        )));
    }
    if first_plane > claimed || !first_plane.is_multiple_of(row_planes.max(1)) {
        return Err(StreamError::Invalid(format!(
            "a stream appending to {} starts at a row of its files ({row_planes} planes each) within its {claimed} claimed planes, not at plane {first_plane}",
            root.display()
        )));
    }
    Ok(claimed)
}

impl ZarrSink {
    /// Opens the array in `dest` and starts its writer: [`Sink::begin`]'s
    /// work once the store is ready.
    fn start(
        &mut self,
        plan: &StreamPlan,
        fill: &[u8],
        dest: Dest,
        (grid, writer_count): (ShardGrid, usize),
    ) -> Result<(), StreamError> {
        let min_direct = self.options.direct_io_min_chunk;
        let dest = dest.for_chunks_of(plan.tile_bytes(), min_direct.unwrap_or(DIRECT_IO_MIN_CHUNK));
        let encoder = Encoder::new(self.options.codec, plan.spec().dtype().size())?;
        let mut array = self.build_array(plan, fill, &grid, &encoder)?;
        let pool = writer_pool(writer_count)
            .map_err(|e| store_error(&self.options.path, "starting the writer threads", e))?;
        let open_objects = match grid.sharded() {
            true => grid.files_per_row(),
            false => writer_count,
        };
        let chunks = grid.chunks_per_file() as u64;
        let file_bytes = match grid.sharded() {
            true => plan
                .tile_bytes()
                .saturating_mul(chunks)
                .saturating_add(index_len(chunks)),
            false => plan.tile_bytes(),
        };
        // the store's parts in flight shared by the row's open objects
        let parts_in_flight = (IN_FLIGHT_PARTS / open_objects.max(1)).clamp(1, 8);
        let sync_rows = self.options.sync == SyncPolicy::Rows;
        let mut user = self.options.user.clone().map(|user| match &self.image {
            Some((group, document)) => {
                MetadataWriter::new(user, group.clone(), &self.options, Some(document.clone()))
            }
            None => MetadataWriter::new(user, dest.clone(), &self.options, None),
        });
        let first_plane = self.options.resume.map_or(0, |r| r.first_plane);
        let row_planes = plan.spec().tile()[0].saturating_mul(grid.depth());
        let claimed = match self.options.resume {
            Some(_) => claimed_planes(&dest, &array, first_plane, row_planes)?,
            None => 0,
        };
        let replaced_rows = claimed.div_ceil(row_planes.max(1));
        if self.options.resume.is_some() {
            dest.remove_rows_from(replaced_rows).map_err(|e| {
                store_error(
                    dest.name(),
                    "removing the rows a stopped stream did not claim",
                    e,
                )
            })?;
        }
        if let (Some(resume), Some(user)) = (self.options.resume, user.as_mut()) {
            user.resume(resume.first_plane, claimed)?;
        }
        let metadata = dest.clone();
        let claim: Claim = match &self.chain {
            _ if self.block.is_some() => unclaimed(metadata),
            chain => {
                claim(&mut array, &dest, user.as_mut(), claimed, sync_rows)?;
                let own: Claim = Box::new(move |planes, claiming| {
                    let durable = sync_rows || claiming == Claiming::Last;
                    // the array claims what it did before the stream, at least
                    let planes = planes.max(claimed);
                    if planes == claimed && claiming == Claiming::Row {
                        return Ok(());
                    }
                    claim(&mut array, &metadata, user.as_mut(), planes, durable)
                });
                if let Some(link) = chain {
                    link.start_at(claimed);
                }
                chained(chain.as_ref(), own)
            }
        };
        let regions = Regions {
            dest: dest.clone(),
            fill: fill.to_vec(),
            parts_in_flight,
            file_bytes,
            sync_rows,
            writers: Vec::new(),
        };
        let writer = EpochWriter::new(WriterSetup {
            encoder: encoder.clone(),
            grid,
            dest,
            plan: plan.clone(),
            fill: fill.to_vec(),
            pool: pool.clone(),
            parts_in_flight,
            file_bytes,
            sync_rows,
            claim,
            first_epoch: first_plane / plan.spec().tile()[0].max(1),
            replaced_rows,
        });
        self.store = Some(Store {
            writer,
            writer_count,
            encoder,
            pool,
            regions,
        });
        Ok(())
    }
}

impl Sink for ZarrSink {
    /// Makes the store ready (locked for this stream), unless it was made
    /// ready before the sink, and opens the array; a failure removes what
    /// was made.
    fn begin(&mut self, plan: &StreamPlan, fill: &[u8]) -> Result<(), StreamError> {
        let checked = self.check(plan)?;
        if let Some(origin) = &self.block {
            let grid = block_grid(checked.0, plan, origin)?;
            let dest = Dest::unlocked(&self.options.path, &self.options)?;
            return self.start(plan, fill, dest, (grid, checked.1));
        }
        let (root, key, own_root) = match &self.within {
            Some((root, key)) => (root.clone(), key.clone(), false),
            None => (StoreRoot::open(&self.options)?, String::new(), true),
        };
        let started = root
            .dest_for(&key, &self.options)
            .and_then(|dest| self.start(plan, fill, dest, checked));
        if started.is_err() && own_root {
            root.abandon();
        }
        self.within.get_or_insert((root, key));
        started
    }

    /// Writes a copy of `epoch`'s tiles (a stream hands its epochs to
    /// [`Sink::submit`], which copies nothing); the writing goes on after
    /// this returns, and [`Sink::finish`] waits for it.
    fn write_epoch(&mut self, epoch: &Epoch<'_>) -> Result<(), StreamError> {
        let shared = SharedEpoch::new(
            epoch.index,
            epoch.planes,
            Arc::new(epoch.tiles.to_vec()),
            Arc::new(epoch.plan.clone()),
        );
        self.submit(shared)
    }

    fn submit(&mut self, epoch: SharedEpoch) -> Result<(), StreamError> {
        self.store()?.current().submit(epoch)
    }

    /// Waits for every region's writing (an input in slabs) and then
    /// claims the planes through the array's writer.
    fn finish(&mut self, planes: u64) -> Result<(), StreamError> {
        let first_plane = self.options.resume.map_or(0, |r| r.first_plane);
        let store = self.store()?;
        for region in &store.regions.writers {
            region.settle()?;
        }
        if !store.regions.writers.is_empty() {
            let dest = &store.regions.dest;
            dest.wait_closed()
                .map_err(|e| store_error(dest.name(), "completing the slabs' uploads", e))?;
        }
        store.writer.finish(planes + first_plane)
    }

    /// Starts a writer of the region's files (whole files of the array's
    /// grid, along `dim` from the file `first` begins), which claims
    /// nothing; an earlier region's failure is reported here.
    fn begin_region(
        &mut self,
        region: &StreamPlan,
        dim: usize,
        first: u64,
    ) -> Result<(), StreamError> {
        let shard = self.options.shard.clone();
        let store = self.store()?;
        for writer in store.writers() {
            writer.check()?;
        }
        let grid = ShardGrid::new(region, shard.as_deref())?;
        let file_extent = region.spec().tile()[dim].saturating_mul(grid.shape()[dim]);
        if !first.is_multiple_of(file_extent.max(1)) {
            return Err(StreamError::Invalid(format!(
                "a region of the array starts at element {first} of dimension {dim}, inside a file of {file_extent} elements there: begin regions at whole files"
            )));
        }
        let regions = &store.regions;
        let writer = EpochWriter::new(WriterSetup {
            encoder: store.encoder.clone(),
            grid: grid.offset_files(dim, first / file_extent.max(1)),
            dest: regions.dest.clone(),
            plan: region.clone(),
            fill: regions.fill.clone(),
            pool: store.pool.clone(),
            parts_in_flight: regions.parts_in_flight,
            file_bytes: regions.file_bytes,
            sync_rows: regions.sync_rows,
            claim: Box::new(|_, _| Ok(())),
            first_epoch: 0,
            replaced_rows: 0,
        });
        store.regions.writers.push(writer);
        Ok(())
    }

    /// The array's codec, where a GPU can write it, and where
    /// [`ZarrOptions::codec_on`] asks for it to run.
    fn device_codec(&self, plan: &StreamPlan) -> Option<(DeviceCodec, CodecOn)> {
        let codec = self.options.codec;
        let device = codec.device_codec(plan.spec().dtype().size())?;
        Some((device, self.options.codec_on))
    }

    /// Encodes every tile of `epoch` on the writer threads at once, keeping
    /// nothing, and says how many tile bytes a second that was.
    fn encode_rate(&self, epoch: &Epoch<'_>) -> Option<f64> {
        let store = self.store.as_ref()?;
        let slots = epoch.plan.m() as usize;
        let started = Instant::now();
        let encoded = store.pool.install(|| {
            (0..slots)
                .into_par_iter()
                .all(|slot| store.encoder.encode(epoch.tile(slot)).is_ok())
        });
        let seconds = started.elapsed().as_secs_f64();
        encoded.then(|| (slots * epoch.tile_bytes()) as f64 / seconds.max(1e-9))
    }

    fn stats(&self) -> SinkStats {
        let Some(store) = &self.store else {
            return SinkStats::default();
        };
        let total = |count: fn(&crate::writer::Counters) -> &AtomicU64| {
            store
                .writers()
                .map(|w| count(w.counters()).load(Ordering::Relaxed))
                .sum::<u64>()
        };
        // the writers share one store: its traffic is counted once
        let (uploaded_bytes, requests) = store.writer.traffic();
        SinkStats {
            uploaded_bytes,
            requests,
            stored_bytes: total(|c| &c.stored_bytes),
            files: total(|c| &c.files),
            omitted_chunks: total(|c| &c.omitted),
            encode_seconds: total(|c| &c.encode_nanos) as f64 / 1e9,
            write_seconds: total(|c| &c.write_nanos) as f64 / 1e9,
            threads: store.writer_count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use retile_plan::{DType, StreamSpec};
    use zarrs::filesystem::FilesystemStore;

    /// Stored (t, c, x) = 2 x 4 x 2, arriving channel-major (c, t, x).
    fn spec(slab: u64) -> StreamSpec {
        StreamSpec::new(DType::U8, vec![2, 4, 2], vec![1, 1, 2])
            .and_then(|s| s.with_input_order(vec![1, 0, 2]))
            .and_then(|s| s.with_input_slab(slab))
            .unwrap()
    }

    fn value(t: u64, c: u64, x: u64) -> u8 {
        (100 * t + 10 * c + x) as u8
    }

    #[test]
    fn regions_write_whole_shards_and_the_array_is_claimed_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let options = ZarrOptions {
            path: dir.path().join("a.zarr"),
            shard: Some(vec![1, 2, 1]),
            ..Default::default()
        };
        let spec = spec(2);
        let mut sink = ZarrSink::new(options.clone());
        sink.begin(&StreamPlan::new(&spec).unwrap(), &[0]).unwrap();
        for k in 0..2 {
            let region = StreamPlan::new(&spec.slab(k).unwrap()).unwrap();
            sink.begin_region(&region, 1, 2 * k).unwrap();
            for t in 0..2 {
                // the region's two tiles of epoch t: channels 2k and 2k + 1
                let tiles: Vec<u8> = (2 * k..2 * k + 2)
                    .flat_map(|c| (0..2).map(move |x| value(t, c, x)))
                    .collect();
                let epoch = Epoch {
                    index: t,
                    planes: 1,
                    tiles: &tiles,
                    plan: &region,
                };
                sink.write_epoch(&epoch).unwrap();
            }
        }
        let claimed = |path: &std::path::Path| {
            let meta: serde_json::Value =
                serde_json::from_slice(&std::fs::read(path.join("zarr.json")).unwrap()).unwrap();
            meta["shape"][0].as_u64().unwrap()
        };
        assert_eq!(claimed(&options.path), 0);
        sink.finish(2).unwrap();
        assert_eq!(claimed(&options.path), 2);
        let store = Arc::new(FilesystemStore::new(&options.path).unwrap());
        let array = Array::open(store, "/").unwrap();
        let got: Vec<u8> = array.retrieve_array_subset(&array.subset_all()).unwrap();
        let want: Vec<u8> = (0..2)
            .flat_map(|t| (0..4).flat_map(move |c| (0..2).map(move |x| value(t, c, x))))
            .collect();
        assert_eq!(got, want);
        assert_eq!(sink.stats().files, 4);
    }

    #[test]
    fn slabs_that_cut_shards_are_refused_before_anything_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.zarr");
        let mut sink = ZarrSink::new(ZarrOptions {
            path: path.clone(),
            shard: Some(vec![1, 2, 1]),
            ..Default::default()
        });
        let err = sink
            .begin(&StreamPlan::new(&spec(1)).unwrap(), &[0])
            .unwrap_err()
            .to_string();
        assert!(err.contains("would cut its shards of 2"), "{err}");
        assert!(!path.exists());
    }
}
