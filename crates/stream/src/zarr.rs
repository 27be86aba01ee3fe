//! The Zarr v3 sink: one chunk per tile (or one shard per block of tiles),
//! written through the `zarrs` crate to a directory store.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use rayon::prelude::*;
use zarrs::array::{Array, ArrayBuilder, ArrayBytes, FillValue};
use zarrs::filesystem::{FilesystemStore, FilesystemStoreOptions};

use crate::plan::StreamPlan;
use crate::sink::{Epoch, Sink};
use crate::StreamError;

/// How chunks are compressed.
///
/// ```
/// use retile_stream::Codec;
/// assert_eq!("zstd:3".parse::<Codec>().unwrap(), Codec::Zstd(3));
/// assert_eq!("none".parse::<Codec>().unwrap(), Codec::None);
/// assert!("lz4".parse::<Codec>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// Raw little-endian bytes.
    #[default]
    None,
    /// zstd at the given level.
    Zstd(i32),
}

impl FromStr for Codec {
    type Err = StreamError;

    fn from_str(text: &str) -> Result<Self, StreamError> {
        let bad = || {
            StreamError::Invalid(format!(
                "unknown codec '{text}'; use none, zstd or zstd:LEVEL (1 to 22)"
            ))
        };
        match text.split_once(':') {
            None if text == "none" => Ok(Codec::None),
            None if text == "zstd" => Ok(Codec::Zstd(3)),
            Some(("zstd", level)) => match level.parse() {
                Ok(l) if (1..=22).contains(&l) => Ok(Codec::Zstd(l)),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

/// Where and how the Zarr array is written.
#[derive(Debug, Clone, Default)]
pub struct ZarrOptions {
    /// The directory of the store (created if missing).
    pub path: PathBuf,
    /// Compression of each chunk.
    pub codec: Codec,
    /// Tiles per shard per dimension (slowest first); `None` = no sharding.
    pub shard: Option<Vec<u64>>,
    /// Names of the dimensions, slowest first.
    pub dimension_names: Option<Vec<String>>,
    /// Write chunks through the page cache. By default they are written
    /// with direct I/O (`O_DIRECT`) wherever the store's file system takes
    /// it: the page cache's fresh pages cost more than the disk's
    /// bandwidth on many machines, and a recording is not read back soon.
    pub buffered_io: bool,
    /// How many chunks are written at once; `None` = 16. A chunk's write
    /// waits on the disk, so more writers than cores keep the disk busy.
    pub writers: Option<usize>,
}

/// Writes epochs as Zarr v3 chunks; the array's shape grows as planes land,
/// so the metadata never claims data that is not on disk.
pub struct ZarrSink {
    options: ZarrOptions,
    array: Option<Array<FilesystemStore>>,
    fill: Vec<u8>,
    plan: Option<StreamPlan>,
    pending: Vec<(u64, Vec<u8>)>,
    writers: Option<rayon::ThreadPool>,
}

impl ZarrSink {
    /// A sink writing to `options.path`.
    ///
    /// ```no_run
    /// use retile_stream::{ZarrOptions, ZarrSink};
    /// let sink = ZarrSink::new(ZarrOptions { path: "out.zarr".into(), ..Default::default() });
    /// ```
    pub fn new(options: ZarrOptions) -> ZarrSink {
        ZarrSink {
            options,
            array: None,
            fill: Vec::new(),
            plan: None,
            pending: Vec::new(),
            writers: None,
        }
    }

    fn fail(&self, doing: &str, e: impl std::fmt::Display) -> StreamError {
        StreamError::Sink(format!("{doing} in {}: {e}", self.options.path.display()))
    }

    fn array(&self) -> Result<&Array<FilesystemStore>, StreamError> {
        self.array
            .as_ref()
            .ok_or_else(|| StreamError::Sink("the Zarr array was not created".into()))
    }

    /// Sets the array's first extent to the planes written and stores the metadata.
    fn grow(&mut self, planes: u64) -> Result<(), StreamError> {
        let mut array = self
            .array
            .take()
            .ok_or_else(|| StreamError::Sink("the Zarr array was not created".into()))?;
        let mut shape = array.shape().to_vec();
        shape[0] = planes;
        let result = array
            .set_shape(shape)
            .map(|_| ())
            .map_err(|e| self.fail("resizing the array", e));
        let stored = array
            .store_metadata()
            .map_err(|e| self.fail("writing the array metadata", e));
        self.array = Some(array);
        result.and(stored)
    }

    /// Runs `writes` on the sink's writer threads.
    fn on_writers<R: Send>(&self, writes: impl FnOnce() -> R + Send) -> Result<R, StreamError> {
        let pool = self
            .writers
            .as_ref()
            .ok_or_else(|| StreamError::Sink("the Zarr sink was not begun".into()))?;
        Ok(pool.install(writes))
    }

    fn write_tiles(&self, epoch: &Epoch<'_>) -> Result<(), StreamError> {
        let array = self.array()?;
        self.on_writers(|| {
            (0..epoch.plan.m() as usize)
                .into_par_iter()
                .try_for_each(|slot| {
                    let coords = epoch.tile_coords(slot);
                    let bytes = ArrayBytes::new_flen(Cow::Borrowed(epoch.tile(slot)));
                    array
                        .store_chunk(&coords, bytes)
                        .map_err(|e| self.fail(&format!("writing chunk {coords:?}"), e))
                })
        })?
    }

    /// Writes the pending epochs as one row of shards.
    fn write_shards(&mut self, plan: &StreamPlan, shard: &[u64]) -> Result<(), StreamError> {
        let Some(&(first_epoch, _)) = self.pending.first() else {
            return Ok(());
        };
        let layout = ShardLayout::new(plan, shard);
        let array = self.array()?;
        let grid: Vec<u64> = plan.tile_counts()[1..]
            .iter()
            .zip(&shard[1..])
            .map(|(&t, &k)| t.div_ceil(k))
            .collect();
        let shards: u64 = grid.iter().product();
        self.on_writers(|| {
            (0..shards).into_par_iter().try_for_each(|s| {
                let mut coords = vec![first_epoch / shard[0]; grid.len() + 1];
                let mut rest = s;
                for (d, &g) in grid.iter().enumerate().rev() {
                    coords[d + 1] = rest % g;
                    rest /= g;
                }
                let bytes = layout.assemble(&coords, &self.pending, &self.fill);
                array
                    .store_chunk(&coords, ArrayBytes::new_flen(Cow::Owned(bytes)))
                    .map_err(|e| self.fail(&format!("writing shard {coords:?}"), e))
            })
        })??;
        self.pending.clear();
        Ok(())
    }
}

/// Whether `dir`'s file system takes direct I/O: a page written to a probe
/// file opened with `O_DIRECT` (some file systems refuse the flag, others
/// the write).
#[cfg(target_os = "linux")]
fn direct_io_works(dir: &Path) -> bool {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    const PAGE: usize = 4096;
    let probe = dir.join(".retile-direct-io-probe");
    let buffer = vec![0u8; 2 * PAGE];
    let start = buffer.as_ptr().align_offset(PAGE);
    let works = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .and_then(|mut file| file.write_all(&buffer[start..start + PAGE]))
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    works
}

/// Direct I/O is used on Linux only.
#[cfg(not(target_os = "linux"))]
fn direct_io_works(_: &Path) -> bool {
    false
}

/// How the tiles of a block of epochs make up one dense shard.
struct ShardLayout {
    esize: usize,
    tile_bytes: usize,
    slot_bytes: usize,
    tile: Vec<usize>,
    counts: Vec<usize>,
    shard: Vec<usize>,
}

impl ShardLayout {
    fn new(plan: &StreamPlan, shard: &[u64]) -> ShardLayout {
        ShardLayout {
            esize: plan.spec().dtype().size(),
            tile_bytes: plan.tile_bytes() as usize,
            slot_bytes: plan.slot_bytes() as usize,
            tile: plan.spec().tile().iter().map(|&v| v as usize).collect(),
            counts: plan.tile_counts().iter().map(|&v| v as usize).collect(),
            shard: shard.iter().map(|&v| v as usize).collect(),
        }
    }

    /// The dense C-order bytes of the shard at `coords`.
    fn assemble(&self, coords: &[u64], pending: &[(u64, Vec<u8>)], fill: &[u8]) -> Vec<u8> {
        let rank = self.tile.len();
        let extent: Vec<usize> = self
            .tile
            .iter()
            .zip(&self.shard)
            .map(|(n, k)| n * k)
            .collect();
        let total: usize = extent.iter().product::<usize>() * self.esize;
        let mut out = crate::buffer::filled(total, fill);
        let row = self.tile[rank - 1] * self.esize;
        let per_epoch: usize = self.shard[1..].iter().product();
        for (e, (_, tiles)) in pending.iter().enumerate() {
            for local in 0..per_epoch {
                let mut rest = local;
                let mut tile_coord = vec![0usize; rank];
                let mut slot = 0;
                let mut inside = true;
                for d in (1..rank).rev() {
                    let l = rest % self.shard[d];
                    rest /= self.shard[d];
                    tile_coord[d] = l;
                    let global = coords[d] as usize * self.shard[d] + l;
                    inside &= global < self.counts[d];
                }
                if !inside {
                    continue;
                }
                let mut weight = 1;
                for d in (1..rank).rev() {
                    slot += (coords[d] as usize * self.shard[d] + tile_coord[d]) * weight;
                    weight *= self.counts[d];
                }
                tile_coord[0] = e;
                let tile = &tiles[slot * self.slot_bytes..][..self.tile_bytes];
                for (r, chunk) in tile.chunks_exact(row).enumerate() {
                    let mut offset = 0;
                    let mut rest = r;
                    let mut inner = vec![0usize; rank];
                    for d in (0..rank - 1).rev() {
                        inner[d] = rest % self.tile[d];
                        rest /= self.tile[d];
                    }
                    for d in 0..rank {
                        offset = offset * extent[d] + tile_coord[d] * self.tile[d] + inner[d];
                    }
                    let at = offset * self.esize;
                    out[at..at + row].copy_from_slice(chunk);
                }
            }
        }
        out
    }
}

impl Sink for ZarrSink {
    fn begin(&mut self, plan: &StreamPlan, fill: &[u8]) -> Result<(), StreamError> {
        let spec = plan.spec();
        if let Some(shard) = &self.options.shard {
            if shard.len() != spec.tile().len() || shard.contains(&0) {
                return Err(StreamError::Invalid(format!(
                    "--shard needs {} positive tile counts (one per dimension), got {shard:?}",
                    spec.tile().len()
                )));
            }
        }
        if let Some(names) = &self.options.dimension_names {
            if names.len() != spec.shape().len() {
                return Err(StreamError::Invalid(format!(
                    "{} dimension names for {} dimensions",
                    names.len(),
                    spec.shape().len()
                )));
            }
        }
        std::fs::create_dir_all(&self.options.path)
            .map_err(|e| self.fail("creating the store directory", e))?;
        let writers = match self.options.writers {
            Some(0) => {
                return Err(StreamError::Invalid(
                    "the Zarr sink needs at least one writer (--writers 1 or more)".into(),
                ))
            }
            w => w.unwrap_or(16),
        };
        self.writers = Some(
            rayon::ThreadPoolBuilder::new()
                .num_threads(writers)
                .thread_name(|i| format!("retile-zarr-writer-{i}"))
                .build()
                .map_err(|e| self.fail("starting the writer threads", e))?,
        );
        let mut store_options = FilesystemStoreOptions::default();
        store_options.direct_io(!self.options.buffered_io && direct_io_works(&self.options.path));
        let store = Arc::new(
            FilesystemStore::new_with_options(&self.options.path, store_options)
                .map_err(|e| self.fail("opening the store", e))?,
        );
        let mut shape = spec.shape().to_vec();
        shape[0] = 0;
        let chunk: Vec<u64> = match &self.options.shard {
            Some(k) => spec.tile().iter().zip(k).map(|(n, k)| n * k).collect(),
            None => spec.tile().to_vec(),
        };
        let mut builder = ArrayBuilder::new(
            shape,
            chunk,
            spec.dtype().zarr_name(),
            FillValue::new(fill.to_vec()),
        );
        if let Codec::Zstd(level) = self.options.codec {
            builder.bytes_to_bytes_codecs(vec![Arc::new(zarrs::array::codec::ZstdCodec::new(
                level, false,
            ))]);
        }
        if self.options.shard.is_some() {
            builder.subchunk_shape(spec.tile().to_vec());
        }
        if let Some(names) = &self.options.dimension_names {
            builder.dimension_names(Some(names.clone()));
        }
        let array = builder
            .build(store, "/")
            .map_err(|e| self.fail("creating the array", e))?;
        array
            .store_metadata()
            .map_err(|e| self.fail("writing the array metadata", e))?;
        self.array = Some(array);
        self.fill = fill.to_vec();
        self.plan = Some(plan.clone());
        Ok(())
    }

    fn write_epoch(&mut self, epoch: &Epoch<'_>) -> Result<(), StreamError> {
        let planes = epoch.index * epoch.plan.spec().tile()[0] + epoch.planes;
        match self.options.shard.clone() {
            None => self.write_tiles(epoch)?,
            Some(shard) => {
                self.pending.push((epoch.index, epoch.tiles.to_vec()));
                if (self.pending.len() as u64) < shard[0] {
                    return Ok(());
                }
                self.write_shards(epoch.plan, &shard)?;
            }
        }
        self.grow(planes)
    }

    fn finish(&mut self, planes: u64) -> Result<(), StreamError> {
        if let (Some(shard), Some(plan)) = (self.options.shard.clone(), self.plan.clone()) {
            self.write_shards(&plan, &shard)?;
        }
        self.grow(planes)
    }
}
