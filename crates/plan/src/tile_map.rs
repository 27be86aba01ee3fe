//! The tile map: where every element of a stream lives, in the input and in
//! the epoch buffers, as two layouts over one lifted shape.
//!
//! Dimension `d` (slowest first) of extent `s_d` and tile extent `n_d` is
//! lifted into the mode `(n_d, t_d)`, `t_d = ceil(s_d / n_d)`: the
//! coordinate inside the tile, then the tile's. Two layouts share that
//! shape (CuTe form, fastest mode first):
//!
//! - the **input** layout, the logical divide of the row-major input by the
//!   tile (`StreamPlan`'s lifted layout): lifted coordinate → input index;
//! - the **buffer** layout: lifted coordinate → element offset in the epoch
//!   buffers laid end to end, tiles in slot order (row-major over the tile
//!   coordinates of all dimensions but the first), one every slot, each
//!   tile row-major inside.
//!
//! Everything that places a tile or an element reads it from here: the CPU
//! scatter, the CUDA scatter kernel's source, the sinks' tile coordinates,
//! the shard grid and the plan's spans.

use retile_layout::{row_major_strides, IntTuple, Layout};

use crate::error::StreamError;

/// One dimension of the map, slowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DimMap {
    /// Extent (0 = unbounded, first dimension only).
    extent: u64,
    /// Tile extent `n`.
    tile: u64,
    /// Tiles along it `t` (of one epoch for an unbounded first dimension).
    count: u64,
    /// Input strides of `(n, t)`.
    input: (u64, u64),
    /// Buffer strides of `(n, t)`.
    buffer: (u64, u64),
}

/// Where each element goes: the input and buffer layouts over the lifted
/// shape (see the module doc), with their strides read off per dimension.
///
/// ```
/// use retile_plan::{DType, StreamPlan, StreamSpec};
/// // 4 x 6 bytes in 2 x 3 tiles: tiles are 6 bytes, 2 per epoch
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3]).unwrap()).unwrap();
/// let map = plan.tile_map();
/// assert_eq!(map.input_layout().to_string(), "((3,2),(2,2)):((1,3),(6,12))");
/// assert_eq!(map.buffer_layout().to_string(), "((3,2),(2,2)):((1,6),(3,12))");
/// // element (3, 4): tile (1, 1), row 1 column 1 of it
/// assert_eq!(map.locate(&[3, 4]), (vec![1, 1], 4));
/// assert_eq!(map.buffer_offset(&[3, 4]), 12 + 6 + 4);
/// ```
#[derive(Debug, Clone)]
pub struct TileMap {
    dims: Vec<DimMap>,
    input: Layout,
    buffer: Layout,
    /// Elements from one slot's start to the next.
    slot: u64,
}

impl TileMap {
    /// The map of a stream whose lifted input layout is `lifted` (the
    /// logical divide of the row-major input by the tile), with the given
    /// extents (0 first = unbounded), tile extents, tile counts and
    /// elements per slot.
    pub(crate) fn new(
        lifted: Layout,
        extents: &[u64],
        tile: &[u64],
        counts: &[u64],
        slot: u64,
        strides: &[u64],
    ) -> Result<TileMap, StreamError> {
        let rank = extents.len();
        let intra = row_major_strides(tile);
        let slots: Vec<u64> = row_major_strides(&counts[1..])
            .iter()
            .map(|&s| s * slot)
            .collect();
        let epoch = slots.first().map_or(slot, |&s| s * counts[1]);
        let dims: Vec<DimMap> = (0..rank)
            .map(|d| DimMap {
                extent: extents[d],
                tile: tile[d],
                count: counts[d],
                input: input_strides(&lifted, extents.len(), tile[d], strides[d], d),
                buffer: (intra[d], if d == 0 { epoch } else { slots[d - 1] }),
            })
            .collect();
        let buffer = buffer_layout(&dims)?;
        Ok(TileMap {
            dims,
            input: lifted,
            buffer,
            slot,
        })
    }

    /// The input layout: lifted coordinate → input element index.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?)?;
    /// let input = plan.tile_map().input_layout();
    /// // mode (n, t) of x, then of y: 3 columns a tile, 2 rows of 6 a tile
    /// assert_eq!(input.to_string(), "((3,2),(2,2)):((1,3),(6,12))");
    /// assert_eq!(input.size()?, 4 * 6);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn input_layout(&self) -> &Layout {
        &self.input
    }

    /// The buffer layout: lifted coordinate → element offset in the epoch
    /// buffers laid end to end.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?)?;
    /// let buffer = plan.tile_map().buffer_layout();
    /// // inside a tile row-major (strides 1 and 3), tiles 6 elements apart
    /// assert_eq!(buffer.to_string(), "((3,2),(2,2)):((1,6),(3,12))");
    /// assert_eq!(buffer.cosize()?, 4 * 6);
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn buffer_layout(&self) -> &Layout {
        &self.buffer
    }

    /// Input element strides of dimension `d`'s `(n, t)` (slowest first).
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3]).unwrap()).unwrap();
    /// assert_eq!(plan.tile_map().input_strides(0), (6, 12));
    /// ```
    pub fn input_strides(&self, d: usize) -> (u64, u64) {
        self.dims[d].input
    }

    /// Buffer element strides of dimension `d`'s `(n, t)`: the step inside
    /// a tile and the step from one tile to the next.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3]).unwrap()).unwrap();
    /// assert_eq!(plan.tile_map().buffer_strides(1), (1, 6));
    /// ```
    pub fn buffer_strides(&self, d: usize) -> (u64, u64) {
        self.dims[d].buffer
    }

    /// The tile extent of dimension `d` (slowest first).
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3]).unwrap()).unwrap();
    /// assert_eq!(plan.tile_map().tile_extent(1), 3);
    /// ```
    pub fn tile_extent(&self, d: usize) -> u64 {
        self.dims[d].tile
    }

    /// Elements from one slot's start to the next.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// // tiles of 32 x 64 u16, 4096 bytes: one cache line (32 elements) between tiles
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U16, vec![0, 128], vec![32, 64])?)?;
    /// assert_eq!(plan.tile_map().slot_elements(), 2048 + 32);
    /// assert_eq!(plan.slot_bytes(), 2 * (2048 + 32));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn slot_elements(&self) -> u64 {
        self.slot
    }

    /// The buffer offset that coordinate `x` of dimension `d` adds: its
    /// place inside the tile plus its tile's. Summed over the dimensions
    /// it is [`TileMap::buffer_offset`].
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3]).unwrap()).unwrap();
    /// assert_eq!(plan.tile_map().place(1, 4), 6 + 1);
    /// ```
    pub fn place(&self, d: usize, x: u64) -> u64 {
        let m = &self.dims[d];
        (x % m.tile) * m.buffer.0 + (x / m.tile) * m.buffer.1
    }

    /// The buffer offset of the element at `coords` (slowest first): the
    /// buffer layout at its lifted coordinate.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// // 4 x 6 bytes in 2 x 3 tiles of 6 bytes
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?)?;
    /// let map = plan.tile_map();
    /// assert_eq!(map.buffer_offset(&[0, 4]), 6 + 1); // the second tile, column 1
    /// assert_eq!(map.buffer_offset(&[1, 4]), 6 + 3 + 1); // and row 1
    /// assert_eq!(map.buffer_offset(&[1, 4]), map.place(0, 1) + map.place(1, 4));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn buffer_offset(&self, coords: &[u64]) -> u64 {
        coords
            .iter()
            .enumerate()
            .map(|(d, &x)| self.place(d, x))
            .sum()
    }

    /// The tile holding the element at `coords` (slowest first) and the
    /// element's row-major index inside it.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![4, 6], vec![2, 3])?)?;
    /// // element (2, 5): tile (1, 1), row 0 column 2 of it
    /// assert_eq!(plan.tile_map().locate(&[2, 5]), (vec![1, 1], 2));
    /// assert_eq!(plan.tile_map().locate(&[0, 0]), (vec![0, 0], 0));
    /// # Ok::<(), retile_plan::StreamError>(())
    /// ```
    pub fn locate(&self, coords: &[u64]) -> (Vec<u64>, u64) {
        let tile = coords
            .iter()
            .zip(&self.dims)
            .map(|(&x, m)| x / m.tile)
            .collect();
        let intra = coords
            .iter()
            .zip(&self.dims)
            .map(|(&x, m)| (x % m.tile) * m.buffer.0)
            .sum();
        (tile, intra)
    }

    /// The slot of the tile at `tile` (slowest first; the first coordinate,
    /// the epoch's, does not count).
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4, 6], vec![1, 2, 3]).unwrap()).unwrap();
    /// assert_eq!(plan.tile_map().slot(&[7, 1, 0]), 2);
    /// ```
    pub fn slot(&self, tile: &[u64]) -> u64 {
        tile.iter()
            .zip(&self.dims)
            .skip(1)
            .map(|(&t, m)| t * m.buffer.1 / self.slot)
            .sum()
    }

    /// The tile coordinates (slowest first) of slot `slot` of epoch `epoch`.
    ///
    /// ```
    /// use retile_plan::{DType, StreamPlan, StreamSpec};
    /// let plan = StreamPlan::new(&StreamSpec::new(DType::U8, vec![0, 4, 6], vec![1, 2, 3]).unwrap()).unwrap();
    /// assert_eq!(plan.tile_map().tile_of_slot(7, 2), vec![7, 1, 0]);
    /// ```
    pub fn tile_of_slot(&self, epoch: u64, slot: u64) -> Vec<u64> {
        let mut coords = vec![epoch];
        coords.extend(self.dims.iter().skip(1).map(|m| {
            let step = m.buffer.1 / self.slot;
            (slot / step) % m.count
        }));
        coords
    }

    /// The first and last input index of tile `tile` (slowest first): edge
    /// tiles of ragged dimensions end early.
    pub(crate) fn span(&self, tile: &[u64]) -> (u64, u64) {
        let first: u64 = tile
            .iter()
            .zip(&self.dims)
            .map(|(&t, m)| t * m.input.1)
            .sum();
        let reach: u64 = tile
            .iter()
            .zip(&self.dims)
            .map(|(&t, m)| {
                let held = match m.extent {
                    0 => m.tile,
                    s => m.tile.min(s - t * m.tile),
                };
                (held - 1) * m.input.0
            })
            .sum();
        (first, first + reach)
    }

    /// `C`: input indices from a full tile's first to its last.
    pub(crate) fn reach(&self) -> u64 {
        self.dims.iter().map(|m| (m.tile - 1) * m.input.0).sum()
    }
}

/// `(stride(n_d), stride(t_d))` of dimension `d` (slowest first), as input
/// element strides, read off mode `rank-1-d` of the lifted layout. A stride
/// of an extent-1 mode is arbitrary in CuTe; the map takes the input's own
/// (`stride`, the row-major one in input order) there, so that it also
/// steps between epochs.
fn input_strides(lifted: &Layout, rank: usize, tile: u64, stride: u64, d: usize) -> (u64, u64) {
    let k = rank - 1 - d;
    let mode = lifted
        .mode(k)
        .map(|m| m.flat_modes().to_vec())
        .unwrap_or_default();
    let (n, sn) = mode.first().copied().unwrap_or((1, 0));
    let stride_n = if n == 1 { stride } else { sn as u64 };
    let stride_t = match mode.get(1) {
        Some(&(t, st)) if t > 1 => st as u64,
        _ => stride_n * tile,
    };
    (stride_n, stride_t)
}

/// The buffer layout: the lifted shape, fastest mode first, with each
/// dimension's buffer strides.
fn buffer_layout(dims: &[DimMap]) -> Result<Layout, StreamError> {
    let pair = |(a, b): (u64, u64)| IntTuple::from(&[a as i64, b as i64][..]);
    let shape = dims.iter().rev().map(|m| pair((m.tile, m.count))).collect();
    let stride = dims.iter().rev().map(|m| pair(m.buffer)).collect();
    Ok(Layout::new(
        IntTuple::Tuple(shape),
        IntTuple::Tuple(stride),
    )?)
}
