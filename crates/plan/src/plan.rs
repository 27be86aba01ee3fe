//! The tile-stream plan: everything about a stream that is known before the
//! first byte arrives, computed with the layout algebra.

use std::fmt;

use retile_layout::{composition, logical_divide, row_major_strides, Layout, Tiler};
use serde::Serialize;

use crate::dtype::{DType, StreamDType};
use crate::error::StreamError;
use crate::tile_map::TileMap;

/// Most tiles a plan lists.
///
/// ```
/// use retile_plan::{DType, StreamPlan, StreamSpec, MAX_LISTED_TILES};
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![64, 128], vec![1, 1])?)?; // 8192 tiles
/// let json = plan.to_json();
/// assert_eq!(json["tiles"].as_array().map(Vec::len), Some(MAX_LISTED_TILES));
/// assert_eq!(json["tiles_truncated"], true);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub const MAX_LISTED_TILES: usize = 4096;

/// What a stream is: its element type and, per dimension (slowest first),
/// its extent and tile extent. Extent 0 on the first dimension means
/// unbounded.
///
/// ```
/// use retile_plan::{DType, StreamSpec};
/// let spec = StreamSpec::new(DType::U16, vec![0, 2048, 2048], vec![64, 256, 256]).unwrap();
/// assert!(spec.is_unbounded());
/// assert!(StreamSpec::new(DType::U16, vec![4, 0], vec![2, 2]).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSpec {
    dtype: DType,
    shape: Vec<u64>,
    tile: Vec<u64>,
    epoch_buffers: u64,
    /// The stored dimension of each input dimension, slowest first.
    input_order: Vec<usize>,
    /// Elements of the input's slowest dimension in one slab, when it is
    /// not the stored first (0: its tile extent).
    input_slab: u64,
}

/// Most epoch buffers a stream holds.
///
/// ```
/// use retile_plan::{DType, StreamSpec, MAX_EPOCH_BUFFERS};
/// let spec = StreamSpec::new(DType::U8, vec![0, 64], vec![4, 16])?;
/// assert!(spec.clone().with_epoch_buffers(MAX_EPOCH_BUFFERS + 1).is_err());
/// // a budget of a gigabyte buys no more than the most
/// assert_eq!(spec.within_memory(1 << 30)?.epoch_buffers(), MAX_EPOCH_BUFFERS);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub const MAX_EPOCH_BUFFERS: u64 = 64;

impl StreamSpec {
    /// Checks ranks (1 to 16, equal), extents (only the first may be 0) and
    /// tile extents (at least 1), and that the sizes fit in 63 bits.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U16, vec![0, 512, 512], vec![16, 256, 256])?;
    /// assert_eq!(spec.epoch_buffers(), 2);
    /// let err = StreamSpec::new(DType::U16, vec![4, 4], vec![2, 0]).unwrap_err();
    /// assert!(err.to_string().contains("tile extent of dimension 1 is 0"));
    /// assert!(StreamSpec::new(DType::U16, vec![4, 4], vec![2]).is_err()); // ranks differ
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn new(dtype: DType, shape: Vec<u64>, tile: Vec<u64>) -> Result<StreamSpec, StreamError> {
        let invalid = |m: String| Err(StreamError::Invalid(m));
        if shape.is_empty() || shape.len() > 16 {
            return invalid(format!(
                "a stream has 1 to 16 dimensions, not {}",
                shape.len()
            ));
        }
        if tile.len() != shape.len() {
            return invalid(format!(
                "the tile has {} dimensions but the shape has {}",
                tile.len(),
                shape.len()
            ));
        }
        if let Some(d) = shape.iter().skip(1).position(|&s| s == 0) {
            return invalid(format!(
                "dimension {} has extent 0; only the first (slowest) may be 0, meaning unbounded",
                d + 1
            ));
        }
        if let Some(d) = tile.iter().position(|&n| n == 0) {
            return invalid(format!(
                "tile extent of dimension {d} is 0; every tile extent must be at least 1"
            ));
        }
        let dtype = dtype.check_streamable()?;
        let spec = StreamSpec {
            dtype,
            input_order: (0..shape.len()).collect(),
            shape,
            tile,
            epoch_buffers: 2,
            input_slab: 0,
        };
        let epoch_elems = spec.plane_elements()?.checked_mul(spec.tile[0]);
        let tile_bytes = spec
            .tile
            .iter()
            .try_fold(dtype.size() as u64, |a, &n| a.checked_mul(n));
        let total = spec
            .shape
            .iter()
            .try_fold(dtype.size() as u64, |a, &s| a.checked_mul(s.max(1)));
        if [epoch_elems, tile_bytes, total]
            .iter()
            .any(|v| v.is_none_or(|v| v > i64::MAX as u64 / 4))
        {
            return invalid("the shape or tile is too large: sizes must fit in 61 bits".into());
        }
        Ok(spec)
    }

    /// The same stream holding `count` epoch buffers (2 to
    /// [`MAX_EPOCH_BUFFERS`]; 2 by default): one is filled while the sink
    /// works on the others, so more of them absorb bursts of input and let
    /// the sink work on more epochs at once, for memory.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 64], vec![4, 16])?.with_epoch_buffers(3)?;
    /// assert_eq!(StreamPlan::new(&spec)?.memory_bytes(), 3 * 256);
    /// assert!(spec.with_epoch_buffers(1).is_err());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn with_epoch_buffers(mut self, count: u64) -> Result<StreamSpec, StreamError> {
        if !(2..=MAX_EPOCH_BUFFERS).contains(&count) {
            return Err(StreamError::Invalid(format!(
                "a stream holds 2 to {MAX_EPOCH_BUFFERS} epoch buffers, not {count}"
            )));
        }
        self.epoch_buffers = count;
        Ok(self)
    }

    /// The same stream holding as many epoch buffers as fit in `memory`
    /// bytes (at least two, at most [`MAX_EPOCH_BUFFERS`]), or why two do
    /// not fit: what a user's memory budget (`--memory`, `memory=`) buys.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 64], vec![4, 16])?; // epochs of 256 bytes
    /// assert_eq!(spec.clone().within_memory(1000)?.epoch_buffers(), 3);
    /// assert!(spec.within_memory(500).is_err());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn within_memory(self, memory: u64) -> Result<StreamSpec, StreamError> {
        let buffers = StreamPlan::new(&self)?.epoch_buffers_within(memory)?;
        match self.epochs_in_input_order() || self.slabs_in_epochs() {
            true => self.with_epoch_buffers(buffers),
            // slabs held whole: the count is two slabs' epochs, not the spec's
            false => Ok(self),
        }
    }

    /// Epoch buffers the stream holds at most.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 64], vec![4, 16])?;
    /// assert_eq!(spec.epoch_buffers(), 2); // the default
    /// assert_eq!(spec.with_epoch_buffers(5)?.epoch_buffers(), 5);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn epoch_buffers(&self) -> u64 {
        self.epoch_buffers
    }

    /// The same stream arriving in another order: `order[i]` is the stored
    /// dimension (an index into the shape, slowest first) that is the
    /// `i`-th slowest dimension of the input; any permutation, the plane's
    /// own axes included. The shape, the tile and the store keep the stored
    /// order; the tiler reads the input through the permutation composed
    /// with the lifted layout.
    ///
    /// When the input's slowest dimension is the stored first, epochs and
    /// claims are as in stored order. Otherwise no stored plane is complete
    /// before the last element arrives: the stream must be bounded, takes
    /// the input in slabs along its slowest dimension
    /// ([`StreamSpec::with_input_slab`]), holds each slab whole while the
    /// one before is written (the plan's memory says how much) and claims
    /// the whole array at the end.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// // stored (t, y, x), each frame arriving column by column (t, x, y)
    /// let spec = StreamSpec::new(DType::U8, vec![0, 4, 6], vec![1, 2, 3])?.with_input_order(vec![0, 2, 1])?;
    /// assert_eq!(spec.input_shape(), vec![0, 6, 4]);
    /// assert_eq!(StreamPlan::new(&spec)?.lifted_strides(), vec![24, 24, 2, 1, 12, 4]);
    /// assert!(spec.clone().with_input_order(vec![0, 0, 1]).is_err());
    /// assert!(spec.with_input_order(vec![1, 0, 2]).is_err()); // unbounded, not slowest
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn with_input_order(mut self, order: Vec<usize>) -> Result<StreamSpec, StreamError> {
        let rank = self.shape.len();
        let mut seen = vec![false; rank];
        let permutation = order.len() == rank
            && order
                .iter()
                .all(|&d| d < rank && !std::mem::replace(&mut seen[d], true));
        if !permutation {
            return Err(StreamError::Invalid(format!(
                "the input order {order:?} is not a permutation of the {rank} stored dimensions 0..{rank}: name every dimension exactly once, slowest first"
            )));
        }
        if self.is_unbounded() && order[0] != 0 {
            return Err(StreamError::Invalid(format!(
                "an unbounded stream must arrive with its first (unbounded) dimension slowest, but the input order {order:?} puts dimension {} first: no stored plane would be complete before the input ends; bound the first extent or put dimension 0 first",
                order[0]
            )));
        }
        self.input_order = order;
        Ok(self)
    }

    /// The stored dimension of each input dimension, slowest first (the
    /// identity unless [`StreamSpec::with_input_order`] said otherwise).
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 4, 6], vec![1, 2, 3])?;
    /// assert_eq!(spec.input_order(), &[0, 1, 2]);
    /// assert_eq!(spec.with_input_order(vec![0, 2, 1])?.input_order(), &[0, 2, 1]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn input_order(&self) -> &[usize] {
        &self.input_order
    }

    /// Whether the input arrives in the stored order.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 4, 6], vec![1, 2, 3])?;
    /// assert!(spec.in_stored_order());
    /// assert!(!spec.with_input_order(vec![0, 2, 1])?.in_stored_order());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn in_stored_order(&self) -> bool {
        self.input_order.iter().enumerate().all(|(i, &d)| i == d)
    }

    /// Whether the input's slowest dimension is the stored first, so that
    /// epochs complete (and are claimed) as the input arrives; otherwise
    /// the stream takes the input in slabs along that dimension
    /// ([`StreamSpec::input_slab`]) and claims the array at its end.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![4, 4, 6], vec![1, 2, 3])?;
    /// // frames arriving column by column still complete stored planes in turn
    /// assert!(spec.clone().with_input_order(vec![0, 2, 1])?.epochs_in_input_order());
    /// assert!(!spec.with_input_order(vec![1, 0, 2])?.epochs_in_input_order());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn epochs_in_input_order(&self) -> bool {
        self.input_order[0] == 0
    }

    /// The same stream taking an input whose slowest dimension `s` is not
    /// the stored first in slabs of `extent` elements along `s`: each slab
    /// is held whole in its own epoch buffers, and written as one region of
    /// the array, each epoch once its last byte arrives, while the next
    /// fills. `extent` is a multiple of the tile's
    /// extent along `s` (a store with shards needs whole shards: the tile's
    /// extent times the shard's); the default is the tile's extent.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// // stored (t, c, y, x), arriving channel by channel (c, t, y, x)
    /// let spec = StreamSpec::new(DType::U8, vec![4, 5, 2, 2], vec![2, 1, 2, 2])?.with_input_order(vec![1, 0, 2, 3])?;
    /// assert_eq!((spec.input_slab(), spec.slab_count()), (Some((1, 1)), 5));
    /// let spec = spec.with_input_slab(2)?;
    /// assert_eq!((spec.input_slab(), spec.slab_count()), (Some((1, 2)), 3));
    /// assert_eq!(spec.slab(2)?.shape(), &[4, 1, 2, 2]); // the last slab is short
    /// assert!(spec.with_input_slab(0).is_err());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn with_input_slab(mut self, extent: u64) -> Result<StreamSpec, StreamError> {
        let s = self.input_order[0];
        if extent == 0 || !extent.is_multiple_of(self.tile[s]) {
            return Err(StreamError::Invalid(format!(
                "an input slab of {extent} elements along dimension {s} is not a positive multiple of the tile's extent {} there",
                self.tile[s]
            )));
        }
        self.input_slab = extent;
        Ok(self)
    }

    /// The same stream whose input slabs (if it arrives in slabs) are one
    /// shard of `shard` tiles (per dimension, slowest first) thick: the
    /// thinnest slabs a store with those shards can write whole.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![4, 8, 2], vec![2, 2, 2])?.with_input_order(vec![1, 0, 2])?;
    /// assert_eq!(spec.with_input_slab_of_shard(&[1, 3, 1])?.input_slab(), Some((1, 6)));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn with_input_slab_of_shard(self, shard: &[u64]) -> Result<StreamSpec, StreamError> {
        match (self.input_slab(), shard.get(self.input_order[0])) {
            (Some((s, _)), Some(&k)) => {
                let extent = self.tile[s].saturating_mul(k.max(1));
                self.with_input_slab(extent)
            }
            _ => Ok(self),
        }
    }

    /// The dimension the input arrives in slabs of and their extent, when
    /// its slowest dimension is not the stored first (`None` otherwise).
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// // stored (t, c, y, x), arriving channel by channel (c, t, y, x)
    /// let spec = StreamSpec::new(DType::U8, vec![4, 5, 2, 2], vec![2, 1, 2, 2])?;
    /// assert_eq!(spec.input_slab(), None); // in stored order: not cut
    /// let spec = spec.with_input_order(vec![1, 0, 2, 3])?;
    /// assert_eq!(spec.input_slab(), Some((1, 1))); // the tile's extent
    /// assert_eq!(spec.with_input_slab(10)?.input_slab(), Some((1, 5))); // at most the extent
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn input_slab(&self) -> Option<(usize, u64)> {
        let s = self.input_order[0];
        (s != 0).then(|| {
            let extent = match self.input_slab {
                0 => self.tile[s],
                n => n,
            };
            (s, extent.min(self.shape[s]))
        })
    }

    /// Slabs the input arrives in: 1 when its slowest dimension is the
    /// stored first (the stream is not cut).
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![4, 6, 8], vec![2, 1, 8])?;
    /// assert_eq!(spec.slab_count(), 1);
    /// let spec = spec.with_input_order(vec![1, 0, 2])?.with_input_slab(4)?;
    /// assert_eq!(spec.slab_count(), 2); // 6 channels in slabs of 4
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn slab_count(&self) -> u64 {
        match self.input_slab() {
            Some((s, extent)) => self.shape[s].div_ceil(extent),
            None => 1,
        }
    }

    /// Whether each slab of the input ([`StreamSpec::input_slab`]) streams
    /// in epochs, as a stream in stored order does: a slab one element
    /// thick whose input goes on along the stored first dimension (e.g.
    /// `c,t,y,x` stored `t,c,y,x`, channels in tiles of 1). Its epochs
    /// then complete as the input arrives, and the stream holds its
    /// epoch buffers, not whole slabs.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![4, 3, 2], vec![2, 1, 2])?;
    /// assert!(spec.clone().with_input_order(vec![1, 0, 2])?.slabs_in_epochs());
    /// assert!(!spec.clone().with_input_order(vec![1, 2, 0])?.slabs_in_epochs());
    /// assert!(!spec.with_input_order(vec![1, 0, 2])?.with_input_slab(2)?.slabs_in_epochs());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn slabs_in_epochs(&self) -> bool {
        matches!(self.input_slab(), Some((_, 1))) && self.input_order[1] == 0
    }

    /// The stream of slab `k` of the input ([`StreamSpec::input_slab`]):
    /// this one, but for the extent along the slab's dimension (shorter in
    /// the last slab); the stream itself when it is not cut. A slab that
    /// streams in epochs ([`StreamSpec::slabs_in_epochs`]) arrives with the
    /// stored first dimension slowest (its own dimension, of extent 1, is
    /// moved after it: the same input).
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![4, 6, 8], vec![2, 1, 8])?;
    /// assert_eq!(spec.slab(0)?, spec); // not cut
    /// let spec = spec.with_input_order(vec![1, 0, 2])?.with_input_slab(4)?;
    /// assert_eq!(spec.slab(1)?.shape(), &[4, 2, 8]); // the 2 channels left
    /// assert!(spec.slab(2).unwrap_err().to_string().contains("slab 2 starts past"));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn slab(&self, k: u64) -> Result<StreamSpec, StreamError> {
        let Some((s, extent)) = self.input_slab() else {
            return Ok(self.clone());
        };
        let first = k.saturating_mul(extent);
        if first >= self.shape[s] {
            return Err(StreamError::Invalid(format!(
                "slab {k} starts past the {} elements of dimension {s}",
                self.shape[s]
            )));
        }
        let mut slab = self.clone();
        slab.shape[s] = extent.min(self.shape[s] - first);
        if self.slabs_in_epochs() {
            slab.input_order.swap(0, 1);
        }
        Ok(slab)
    }

    /// The extents in input order, slowest first.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![2, 3, 4], vec![1, 1, 4])?;
    /// assert_eq!(spec.input_shape(), vec![2, 3, 4]);
    /// assert_eq!(spec.with_input_order(vec![1, 0, 2])?.input_shape(), vec![3, 2, 4]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn input_shape(&self) -> Vec<u64> {
        self.input_order.iter().map(|&d| self.shape[d]).collect()
    }

    /// Elements of one frame of input: one index of the input's slowest
    /// dimension (a stored plane when that is the stored first).
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![2, 3, 4], vec![1, 1, 4])?.with_input_order(vec![1, 0, 2])?;
    /// assert_eq!((spec.frame_elements()?, spec.plane_elements()?), (8, 12));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn frame_elements(&self) -> Result<u64, StreamError> {
        self.input_shape()[1..]
            .iter()
            .try_fold(1u64, |a, &s| a.checked_mul(s))
            .ok_or_else(|| StreamError::Invalid("a frame has more than 2^64 elements".into()))
    }

    /// The element type.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U16, vec![0, 4, 6], vec![2, 2, 3])?;
    /// assert_eq!(spec.dtype(), DType::U16);
    /// assert_eq!(spec.dtype().size(), 2);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Extents, slowest first (0 first = unbounded).
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 4, 6], vec![2, 2, 3])?;
    /// assert_eq!(spec.shape(), &[0, 4, 6]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// Tile extents, slowest first.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![0, 4, 6], vec![2, 2, 3])?;
    /// assert_eq!(spec.tile(), &[2, 2, 3]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn tile(&self) -> &[u64] {
        &self.tile
    }

    /// The first dimension has no end.
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// assert!(StreamSpec::new(DType::U8, vec![0, 4], vec![2, 2])?.is_unbounded());
    /// assert!(!StreamSpec::new(DType::U8, vec![8, 4], vec![2, 2])?.is_unbounded());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn is_unbounded(&self) -> bool {
        self.shape[0] == 0
    }

    /// Elements in one plane (one index of the slowest dimension).
    ///
    /// ```
    /// use retile_plan::{DType, StreamSpec};
    /// let spec = StreamSpec::new(DType::U16, vec![0, 4, 6], vec![2, 2, 3])?;
    /// assert_eq!(spec.plane_elements()?, 4 * 6);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn plane_elements(&self) -> Result<u64, StreamError> {
        self.shape[1..]
            .iter()
            .try_fold(1u64, |a, &s| a.checked_mul(s))
            .ok_or_else(|| StreamError::Invalid("a plane has more than 2^64 elements".into()))
    }
}

/// The span of input indices over which a tile receives its elements.
///
/// ```
/// use retile_plan::{DType, StreamPlan, StreamSpec, TileSpan};
/// // 4 x 6 bytes in 2 x 3 tiles: the last tile takes input 15 ..= 23
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?)?;
/// let span = plan.tile_span(&[1, 1]).unwrap();
/// assert_eq!(span, TileSpan { tile: vec![1, 1], first: 15, last: 23 });
/// assert_eq!(span.last - span.first, plan.c());
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TileSpan {
    /// Tile coordinates, slowest first.
    pub tile: Vec<u64>,
    /// Input index of its first element.
    pub first: u64,
    /// Input index of its last element.
    pub last: u64,
}

/// The plan of a tile stream: tile counts, the lifted layout, the
/// tile lifetime constant `C`, the live-tile bound `M`, epochs, slots and
/// the memory they take.
///
/// ```
/// use retile_plan::{DType, StreamPlan, StreamSpec};
/// let spec = StreamSpec::new(DType::U16, vec![4, 4, 6], vec![2, 2, 3]).unwrap();
/// let plan = StreamPlan::new(&spec).unwrap();
/// assert_eq!(plan.c(), 32);
/// assert_eq!(plan.m(), 4);
/// assert_eq!(plan.lifted_strides(), vec![48, 24, 12, 6, 3, 1]);
/// ```
#[derive(Debug, Clone)]
pub struct StreamPlan {
    spec: StreamSpec,
    counts: Vec<u64>,
    /// Where every element lives, in the input and in the epoch buffers.
    map: TileMap,
}

impl StreamPlan {
    /// Computes the plan: the lifted layout is the logical divide of the
    /// input layout by the tile, mode by mode. The input layout is the
    /// row-major layout of the input composed with the permutation taking a
    /// stored coordinate to the input's (the identity in stored order), so
    /// that a lifted coordinate (stored order) gives the index at which its
    /// element arrives.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// // 5 x 6 bytes in 2 x 4 tiles: the edge tiles are padded
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![5, 6], vec![2, 4])?)?;
    /// assert_eq!(plan.tile_counts(), &[3, 2]);
    /// assert_eq!((plan.m(), plan.tile_total()), (2, Some(6)));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn new(spec: &StreamSpec) -> Result<StreamPlan, StreamError> {
        let extents: Vec<u64> = spec
            .shape
            .iter()
            .zip(&spec.tile)
            .map(|(&s, &n)| if s == 0 { n } else { s })
            .collect();
        let counts: Vec<u64> = extents
            .iter()
            .zip(&spec.tile)
            .map(|(&s, &n)| s.div_ceil(n))
            .collect();
        let strides = permuted_strides(&extents, &spec.input_order);
        let input = permuted_input(&extents, &strides)?;
        let tiler = Tiler::Modes(
            spec.tile
                .iter()
                .rev()
                .map(|&n| Layout::vector(n as i64, 1).map(Tiler::Layout))
                .collect::<Result<_, _>>()?,
        );
        let lifted = logical_divide(&input, &tiler)?;
        let esize = spec.dtype.size() as u64;
        let slot = slot_bytes_of(spec.tile.iter().product::<u64>() * esize);
        let buffer = counts[1..].iter().try_fold(slot, |a, &t| a.checked_mul(t));
        if buffer.is_none_or(|b| b > i64::MAX as u64 / 4) {
            return Err(StreamError::Invalid(
                "one epoch of tiles would not fit in 61 bits of bytes: use fewer or smaller tiles"
                    .into(),
            ));
        }
        let map = TileMap::new(
            lifted,
            &spec.shape,
            &spec.tile,
            &counts,
            slot / esize,
            &strides,
        )?;
        let plan = StreamPlan {
            spec: spec.clone(),
            counts,
            map,
        };
        Ok(plan)
    }

    /// The stream this plans.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let spec = StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?;
    /// assert_eq!(StreamPlan::new(&spec)?.spec(), &spec);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn spec(&self) -> &StreamSpec {
        &self.spec
    }

    /// Tiles per dimension, slowest first (the first is that of one epoch
    /// when the stream is unbounded).
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let bounded = StreamPlan::new(&StreamSpec::new(DType::U8, vec![5, 4, 6], vec![2, 2, 3])?)?;
    /// assert_eq!(bounded.tile_counts(), &[3, 2, 2]);
    /// let unbounded = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4, 6], vec![2, 2, 3])?)?;
    /// assert_eq!(unbounded.tile_counts(), &[1, 2, 2]); // one epoch's
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn tile_counts(&self) -> &[u64] {
        &self.counts
    }

    /// The lifted layout in CuTe form, fastest mode first: mode `k` is
    /// `(n, t):(stride(n), stride(t))` of the `k`-th fastest dimension.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?)?;
    /// // x: (3 in a tile, 2 tiles):(1, 3); y: (2 in a tile, 2 tiles):(6, 12)
    /// assert_eq!(plan.lifted_layout().to_string(), "((3,2),(2,2)):((1,3),(6,12))");
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn lifted_layout(&self) -> &Layout {
        self.map.input_layout()
    }

    /// Where every element lives, in the input and in the epoch buffers:
    /// the one source of tile placement.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?)?;
    /// assert_eq!(plan.tile_map().locate(&[3, 4]), (vec![1, 1], 4));
    /// assert_eq!(plan.tile_map().input_layout(), plan.lifted_layout());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn tile_map(&self) -> &TileMap {
        &self.map
    }

    /// The lifted shape, slowest first: `[t_0, n_0, t_1, n_1, ...]`.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// // 4 x 6 in 2 x 3 tiles: 2 tiles of 2 rows, 2 tiles of 3 columns
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?)?;
    /// assert_eq!(plan.lifted_shape(), vec![2, 2, 2, 3]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn lifted_shape(&self) -> Vec<u64> {
        self.counts
            .iter()
            .zip(&self.spec.tile)
            .flat_map(|(&t, &n)| [t, n])
            .collect()
    }

    /// Input strides of the lifted shape, slowest first.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?)?;
    /// // next row tile, next row, next column tile, next column
    /// assert_eq!(plan.lifted_strides(), vec![12, 6, 3, 1]);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn lifted_strides(&self) -> Vec<u64> {
        (0..self.spec.shape.len())
            .flat_map(|d| {
                let (sn, st) = self.map.input_strides(d);
                [st, sn]
            })
            .collect()
    }

    /// `C`: how many input indices after its first a full tile receives its last.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// // a 2 x 3 tile of 6-wide rows: its last element arrives 6 + 2 after its first
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?)?;
    /// assert_eq!(plan.c(), 8);
    /// assert_eq!(plan.tile_span(&[0, 1]).map(|t| t.last - t.first), Some(8));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn c(&self) -> u64 {
        self.map.reach()
    }

    /// `M`: tiles live at once, the product of the tile counts of all
    /// dimensions but the slowest. One epoch holds exactly `M` tiles.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4, 6], vec![2, 2, 3])?)?;
    /// assert_eq!(plan.m(), 2 * 2);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn m(&self) -> u64 {
        self.counts[1..].iter().product()
    }

    /// Input elements in one epoch: `tile[0]` planes (the last epoch of a
    /// bounded stream may hold fewer).
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4, 6], vec![2, 2, 3]).unwrap()).unwrap();
    /// assert_eq!(plan.epoch_elements(), 2 * 24);
    /// // one epoch, shorter than its tile: still a whole tile's planes
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![1, 1, 2, 4], vec![4, 4, 3, 1]).unwrap()).unwrap();
    /// assert_eq!(plan.epoch_elements(), 4 * 8);
    /// ```
    pub fn epoch_elements(&self) -> u64 {
        // the spec checked that a tile's planes fit in 61 bits
        let plane = self.spec.plane_elements().unwrap_or(0);
        plane.saturating_mul(self.spec.tile[0])
    }

    /// Planes of input in epoch `epoch`: the slowest tile extent, fewer in
    /// the last epoch of a bounded stream.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![5, 4], vec![2, 2]).unwrap()).unwrap();
    /// assert_eq!((plan.epoch_planes(0), plan.epoch_planes(2)), (2, 1));
    /// ```
    pub fn epoch_planes(&self, epoch: u64) -> u64 {
        let n0 = self.spec.tile[0];
        match self.spec.is_unbounded() {
            true => n0,
            false => n0.min(self.spec.shape[0].saturating_sub(epoch.saturating_mul(n0))),
        }
    }

    /// Elements in one tile.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U16, vec![0, 4, 6], vec![2, 2, 3])?)?;
    /// assert_eq!(plan.tile_elements(), 12);
    /// assert_eq!(plan.tile_bytes(), 12 * 2);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn tile_elements(&self) -> u64 {
        self.spec.tile.iter().product()
    }

    /// Bytes of one tile.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U16, vec![0, 8, 6], vec![2, 4, 3]).unwrap()).unwrap();
    /// assert_eq!(plan.tile_bytes(), 48);
    /// ```
    pub fn tile_bytes(&self) -> u64 {
        self.tile_elements() * self.spec.dtype.size() as u64
    }

    /// Bytes from the start of one slot of an epoch buffer to the next: the
    /// tile, plus one cache line when the tile is a multiple of 4 KiB, so
    /// that the tiles of an epoch do not all start at the same offset of
    /// their memory pages (the streaming stores into many tiles at once then
    /// spread over the memory's banks instead of queueing on a few).
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = |tile| StreamPlan::new(&StreamSpec::new(DType::U16, vec![0, 512, 512], tile).unwrap()).unwrap();
    /// assert_eq!(plan(vec![2, 4, 3]).slot_bytes(), 48);
    /// assert_eq!(plan(vec![64, 64, 64]).slot_bytes(), 512 * 1024 + 64);
    /// ```
    pub fn slot_bytes(&self) -> u64 {
        slot_bytes_of(self.tile_bytes())
    }

    /// Bytes of one epoch's buffer: the ring of `M` slots, or of one
    /// slab's tiles of an epoch when the input arrives in slabs
    /// ([`StreamPlan::epoch_slots`]).
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U16, vec![0, 4, 6], vec![2, 2, 3])?)?;
    /// assert_eq!(plan.epoch_buffer_bytes(), 4 * 24); // 4 slots of 24 bytes
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn epoch_buffer_bytes(&self) -> u64 {
        self.epoch_slots() * self.slot_bytes()
    }

    /// Slots of one epoch buffer: `M`, or, when the input arrives in slabs
    /// along a dimension that is not the stored first, the tiles of one
    /// (whole) slab in an epoch.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// // 6 channels in tiles of 1, slabs of 2 channels: 2 of the epoch's 6 tiles
    /// let spec = StreamSpec::new(DType::U8, vec![4, 6, 8], vec![2, 1, 8])?.with_input_order(vec![1, 0, 2])?;
    /// let plan = StreamPlan::new(&spec.with_input_slab(2)?)?;
    /// assert_eq!((plan.m(), plan.epoch_slots()), (6, 2));
    /// assert_eq!(plan.epoch_buffers(), 2 * 2); // two slabs of two epochs
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn epoch_slots(&self) -> u64 {
        match self.spec.input_slab() {
            Some((s, extent)) => self.m() / self.counts[s] * extent.div_ceil(self.spec.tile[s]),
            None => self.m(),
        }
    }

    /// Epoch buffers the stream holds: the spec's count, or as many as a
    /// bounded stream has epochs, if fewer (of one slab's tiles, for an
    /// input whose slabs stream in epochs); for an input in slabs held
    /// whole, every epoch of the two slabs held at once (one filling, one
    /// written).
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let one_epoch = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 8], vec![4, 8])?)?;
    /// assert_eq!(one_epoch.epoch_buffers(), 1);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn epoch_buffers(&self) -> u64 {
        let spec = &self.spec;
        if !spec.epochs_in_input_order() && !spec.slabs_in_epochs() {
            return self.slabs_held() * self.counts[0];
        }
        match spec.is_unbounded() {
            true => spec.epoch_buffers,
            false => spec.shape[0].div_ceil(spec.tile[0]).min(spec.epoch_buffers),
        }
    }

    /// Slabs of the input held at once when it arrives in slabs: the one
    /// filling and the one being written (one, when there is only one).
    fn slabs_held(&self) -> u64 {
        self.spec.slab_count().min(2)
    }

    /// Bytes of tile buffers the stream holds, whatever its length.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let spec = StreamSpec::new(DType::U16, vec![0, 4, 6], vec![2, 2, 3])?; // epochs of 96 bytes
    /// assert_eq!(StreamPlan::new(&spec)?.memory_bytes(), 2 * 96);
    /// assert_eq!(StreamPlan::new(&spec.with_epoch_buffers(4)?)?.memory_bytes(), 4 * 96);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn memory_bytes(&self) -> u64 {
        self.epoch_buffers() * self.epoch_buffer_bytes()
    }

    /// How many epoch buffers fit in `memory` bytes, or why not even two
    /// do: the count a user's memory budget buys.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 64], vec![4, 16])?)?;
    /// assert_eq!(plan.epoch_buffers_within(1000)?, 3); // epochs of 256 bytes
    /// assert!(plan.epoch_buffers_within(500).is_err());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn epoch_buffers_within(&self, memory: u64) -> Result<u64, StreamError> {
        let epoch = self.epoch_buffer_bytes().max(1);
        if let Some((s, extent)) = self
            .spec
            .input_slab()
            .filter(|_| !self.spec.slabs_in_epochs())
        {
            let needed = self.memory_bytes();
            return match memory >= needed {
                true => Ok(self.epoch_buffers()),
                false => Err(StreamError::Invalid(format!(
                    "a memory budget of {memory} bytes is less than the {needed} bytes ({} epoch buffers of {epoch} bytes) the input order {:?} needs: its slowest dimension is not the stored first, so the stream holds {} slabs of {extent} along dimension {s} whole (one filling while the other is written); give at least {needed} bytes, or a smaller tile along dimension {s}",
                    self.epoch_buffers(), self.spec.input_order, self.slabs_held()
                ))),
            };
        }
        match memory / epoch {
            n if n >= 2 => Ok(n.min(MAX_EPOCH_BUFFERS)),
            _ => Err(StreamError::Invalid(format!(
                "a memory budget of {memory} bytes holds fewer than the two epoch buffers of {epoch} bytes a stream needs; give at least {} bytes",
                2 * epoch
            ))),
        }
    }

    /// The span of tile `tile` (slowest first): its first and last input
    /// index; `None` if `tile` is not a tile of the stream. Edge tiles of
    /// ragged dimensions end early.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 4, 6], vec![2, 2, 3]).unwrap()).unwrap();
    /// assert_eq!(plan.tile_span(&[0, 1, 1]).map(|t| (t.first, t.last)), Some((15, 47)));
    /// assert!(plan.tile_span(&[0, 2, 0]).is_none());
    /// ```
    pub fn tile_span(&self, tile: &[u64]) -> Option<TileSpan> {
        let unbounded = self.spec.is_unbounded();
        let inside = tile.len() == self.counts.len()
            && tile
                .iter()
                .zip(&self.counts)
                .enumerate()
                .all(|(d, (&t, &n))| t < n || (d == 0 && unbounded));
        inside.then(|| self.span_of(tile))
    }

    fn span_of(&self, tile: &[u64]) -> TileSpan {
        let (first, last) = self.map.span(tile);
        TileSpan {
            tile: tile.to_vec(),
            first,
            last,
        }
    }

    /// The tiles in the order they start (and finish), up to `limit`; an
    /// unbounded stream lists its first epoch.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?)?;
    /// let order: Vec<Vec<u64>> = plan.tiles(10).into_iter().map(|t| t.tile).collect();
    /// assert_eq!(order, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
    /// assert_eq!(plan.tiles(2).len(), 2);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn tiles(&self, limit: usize) -> Vec<TileSpan> {
        let mut out = Vec::new();
        let mut coord = vec![0u64; self.counts.len()];
        while out.len() < limit {
            out.push(self.span_of(&coord));
            let Some(d) = (0..coord.len())
                .rev()
                .find(|&d| coord[d] + 1 < self.counts[d])
            else {
                break;
            };
            coord[d] += 1;
            coord[d + 1..].iter_mut().for_each(|c| *c = 0);
        }
        out
    }

    /// Total tiles (`None` when unbounded).
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![5, 6], vec![2, 3])?)?;
    /// assert_eq!(plan.tile_total(), Some(3 * 2));
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 6], vec![2, 3])?)?;
    /// assert_eq!(plan.tile_total(), None);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn tile_total(&self) -> Option<u64> {
        (!self.spec.is_unbounded()).then(|| self.counts.iter().product())
    }

    /// For each ragged dimension (slowest first): how many elements the edge
    /// tiles hold out of their extent.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// // 5 x 6 in 2 x 4 tiles: edge tiles hold 1 of 2 rows, 2 of 4 columns
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![5, 6], vec![2, 4])?)?;
    /// assert_eq!(plan.padding(), vec![(0, 1, 2), (1, 2, 4)]);
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?)?;
    /// assert!(plan.padding().is_empty());
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn padding(&self) -> Vec<(usize, u64, u64)> {
        (0..self.spec.shape.len())
            .filter(|&d| {
                self.spec.shape[d] != 0 && !self.spec.shape[d].is_multiple_of(self.spec.tile[d])
            })
            .map(|d| (d, self.spec.shape[d] % self.spec.tile[d], self.spec.tile[d]))
            .collect()
    }

    /// The plan as JSON, shapes and tiles slowest dimension first.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4, 6], vec![2, 2, 3])?)?;
    /// let json = plan.to_json();
    /// assert_eq!((json["M"].as_u64(), json["C"].as_u64()), (Some(4), Some(plan.c())));
    /// assert_eq!(json["unbounded"], true);
    /// assert!(json["tile_counts"][0].is_null()); // per epoch: no count
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        let listed = self.tiles(MAX_LISTED_TILES);
        let unbounded = self.spec.is_unbounded();
        let counts: Vec<serde_json::Value> = self
            .counts
            .iter()
            .enumerate()
            .map(|(d, &t)| {
                if d == 0 && unbounded {
                    serde_json::Value::Null
                } else {
                    t.into()
                }
            })
            .collect();
        let mut lifted_shape: Vec<serde_json::Value> =
            self.lifted_shape().into_iter().map(Into::into).collect();
        if unbounded {
            lifted_shape[0] = serde_json::Value::Null;
        }
        serde_json::json!({
            "dtype": self.spec.dtype.to_string(),
            "shape": self.spec.shape,
            "tile": self.spec.tile,
            "input_order": self.spec.input_order,
            "unbounded": unbounded,
            "tile_counts": counts,
            "lifted_layout": self.lifted_layout().to_string(),
            "lifted_shape": lifted_shape,
            "lifted_strides": self.lifted_strides(),
            "C": self.c(),
            "M": self.m(),
            "epoch_elements": self.epoch_elements(),
            "tile_elements": self.tile_elements(),
            "memory_bytes": self.memory_bytes(),
            "epoch_buffers": self.epoch_buffers(),
            "epoch_slots": self.epoch_slots(),
            "input_slab": self.spec.input_slab().map(|(dim, extent)| serde_json::json!({"dim": dim, "extent": extent, "slabs": self.spec.slab_count()})),
            "padding": self.padding().iter().map(|&(d, r, n)| serde_json::json!({"dim": d, "edge_extent": r, "tile_extent": n})).collect::<Vec<_>>(),
            "tiles_truncated": self.tile_total().is_none_or(|t| t > listed.len() as u64),
            "tiles": listed,
        })
    }
}

/// The input element stride of each stored dimension (slowest first): the
/// row-major strides of the extents taken in input order.
fn permuted_strides(extents: &[u64], order: &[usize]) -> Vec<u64> {
    let in_order: Vec<u64> = order.iter().map(|&d| extents[d]).collect();
    let row_major = row_major_strides(&in_order);
    let mut strides = vec![0; extents.len()];
    for (i, &d) in order.iter().enumerate() {
        strides[d] = row_major[i];
    }
    strides
}

/// The input layout in stored mode order (CuTe form, fastest mode first):
/// the input's row-major layout (`total:1`) composed with the layout
/// taking a stored coordinate to its input index (the permutation).
fn permuted_input(extents: &[u64], strides: &[u64]) -> Result<Layout, StreamError> {
    let total: u64 = extents.iter().product();
    let row_major = Layout::vector(total as i64, 1)?;
    let fastest_first: Vec<i64> = extents.iter().rev().map(|&s| s as i64).collect();
    let permuted: Vec<i64> = strides.iter().rev().map(|&s| s as i64).collect();
    let permutation = Layout::new(fastest_first[..].into(), permuted[..].into())?;
    Ok(composition(&row_major, &permutation)?)
}

/// Bytes of a slot holding a tile of `tile_bytes`: see [`StreamPlan::slot_bytes`].
fn slot_bytes_of(tile_bytes: u64) -> u64 {
    match tile_bytes % 4096 {
        0 => tile_bytes + 64,
        _ => tile_bytes,
    }
}

impl fmt::Display for StreamPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spec = &self.spec;
        let unbounded = spec.is_unbounded();
        writeln!(
            f,
            "stream plan: {} shape {:?} tile {:?} (slowest dimension first{})",
            spec.dtype,
            spec.shape,
            spec.tile,
            if unbounded { "; 0 = unbounded" } else { "" }
        )?;
        if !spec.in_stored_order() {
            writeln!(
                f,
                "  input order     {:?} (the stored dimension of each input dimension, slowest first){}",
                spec.input_order,
                match spec.input_slab() {
                    None => String::new(),
                    Some((s, extent)) => format!(
                        "; its slowest is not the stored first: the input arrives in {} slabs of {extent} along dimension {s}, {}, and the array is claimed when the input ends",
                        spec.slab_count(),
                        match spec.slabs_in_epochs() {
                            true => "each streamed in epochs of its own tiles",
                            false => "each held whole and written while the next fills",
                        }
                    ),
                }
            )?;
        }
        writeln!(
            f,
            "  tile counts     {:?}{}",
            self.counts,
            if unbounded {
                " (first: per epoch; the stream is unbounded)"
            } else {
                ""
            }
        )?;
        writeln!(
            f,
            "  lifted layout   {}  (CuTe, fastest mode first: (n,t):(stride n, stride t))",
            self.lifted_layout()
        )?;
        writeln!(f, "  lifted shape    {:?}", self.lifted_shape())?;
        writeln!(f, "  lifted strides  {:?}", self.lifted_strides())?;
        writeln!(
            f,
            "  C = {}: a tile's last input index is its first + C",
            self.c()
        )?;
        writeln!(
            f,
            "  M = {} live tiles (ring slots); slot = tile index within its epoch",
            self.m()
        )?;
        writeln!(
            f,
            "  epoch = {} input elements ({} planes)",
            self.epoch_elements(),
            spec.tile[0]
        )?;
        let bytes = self.epoch_buffer_bytes();
        writeln!(
            f,
            "  memory: {} epoch buffers x {} slots x {} B ({} elements x {} B{}) = {} B",
            self.epoch_buffers(),
            self.epoch_slots(),
            self.slot_bytes(),
            self.tile_elements(),
            spec.dtype.size(),
            match self.slot_bytes() - self.tile_bytes() {
                0 => String::new(),
                pad => format!(", then {pad} B to the next slot"),
            },
            self.epoch_buffers() * bytes
        )?;
        let padding = self.padding();
        if padding.is_empty() {
            writeln!(
                f,
                "  padding: none (every extent is a multiple of its tile)"
            )?;
        }
        for (d, r, n) in padding {
            writeln!(f, "  padding: edge tiles of dimension {d} hold {r} of {n}; the rest is the fill value")?;
        }
        let listed = self.tiles(32);
        writeln!(f, "  tiles (first .. last input index -> slot):")?;
        for (i, t) in listed.iter().enumerate() {
            writeln!(
                f,
                "    {:?}  {} .. {}  -> slot {}",
                t.tile,
                t.first,
                t.last,
                i as u64 % self.m()
            )?;
        }
        if self.tile_total().is_none_or(|t| t > listed.len() as u64) {
            writeln!(f, "    ...")?;
        }
        Ok(())
    }
}

/// Row-major coordinates of `index` over `extents`.
///
/// ```
/// assert_eq!(retile_plan::unravel(5, &[2, 3]), vec![1, 2]);
/// ```
pub fn unravel(mut index: u64, extents: &[u64]) -> Vec<u64> {
    let mut coords = vec![0; extents.len()];
    for (c, &e) in coords.iter_mut().zip(extents).rev() {
        *c = index % e;
        index /= e;
    }
    coords
}

/// The row-major index of `coords` over `extents`.
///
/// ```
/// assert_eq!(retile_plan::ravel(&[1, 2], &[2, 3]), 5);
/// ```
pub fn ravel(coords: &[u64], extents: &[u64]) -> u64 {
    coords
        .iter()
        .zip(extents)
        .fold(0, |acc, (&c, &e)| acc * e + c)
}
