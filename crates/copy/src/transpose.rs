//! The in-thread transpose plan.
//!
//! The reference compiler (Wave) gives each thread an `S x stores` block,
//! `S = max_bits / element_bits` elements along the destination's contiguous
//! dimension and `stores = ceil(tile / (threads * S))` along the source's;
//! the thread loads vectors along the source's contiguous dimension,
//! extracts every element, and stores vectors along the destination's. It
//! fires only when `stores > 1` and the source-contiguous extent splits
//! evenly by `stores`. retile keeps those decisions and generalises them:
//! any rank, any permutation, widths from `max_common_vector` of the
//! thread's fragment and its register order, ragged tiles predicated, and
//! threads beyond the tile idle instead of repeating work.

use std::fmt;

use retile_layout::{
    ceil_div, composition, gcd, idx2crd, max_common_vector, right_inverse, IntTuple, Layout,
};

use crate::error::{CopyError, Result};
use crate::vector::{alignment, widest};

/// What to plan: a tile (coordinates → offsets on both sides) and who moves it.
///
/// ```
/// let r = retile_copy::TransposeRequest::new(256, 16, 128, "(256,16):(1,256)".parse().unwrap(), "(256,16):(16,1)".parse().unwrap());
/// assert_eq!(r.threads, 256);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransposeRequest {
    /// Threads moving the tile.
    pub threads: i64,
    /// Bits per element.
    pub element_bits: i64,
    /// Bits of the widest access.
    pub max_bits: i64,
    /// Tile coordinate → source offset (elements); flat, one mode per dimension.
    pub src: Layout,
    /// Tile coordinate → destination offset (elements), same extents.
    pub dst: Layout,
    /// The GPU architecture, when it matters (`gfx95*` has transpose loads).
    pub target: Option<String>,
}

/// One vector access of a thread: start coordinate, dimension it runs
/// along, and width (clipped at the tile's edge).
///
/// ```
/// use retile_copy::{TransposePlan, TransposeRequest};
/// let TransposePlan::Applies(t) = TransposeRequest::square(4, 32, 128)?.plan()? else { panic!() };
/// let loads = t.loads_of(0)?;
/// assert_eq!(loads.len(), 4);
/// assert_eq!(loads[0].coord, vec![0, 0]);
/// assert!(loads.iter().all(|a| a.dim == t.src_fast && a.width == 4));
/// assert!(t.stores_of(0)?.iter().all(|a| a.dim == t.dst_fast));
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// Tile coordinate of the first element.
    pub coord: Vec<i64>,
    /// The dimension the vector runs along.
    pub dim: usize,
    /// Elements in the vector.
    pub width: i64,
}

/// A planned in-thread transpose.
///
/// ```
/// use retile_copy::{TransposePlan, TransposeRequest};
/// let r = TransposeRequest::new(256, 16, 128, "(256,16):(1,256)".parse()?, "(256,16):(16,1)".parse()?);
/// let TransposePlan::Applies(t) = r.plan()? else { panic!() };
/// assert_eq!((t.shape.clone(), t.src_fast, t.dst_fast), (vec![256, 16], 0, 1));
/// assert_eq!((t.load_width, t.loads, t.store_width, t.stores), (2, 8, 8, 2));
/// assert_eq!(t.block.iter().product::<i64>(), t.extracts);
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transpose {
    /// Tile extents per dimension.
    pub shape: Vec<i64>,
    /// The source's contiguous dimension (loads run along it).
    pub src_fast: usize,
    /// The destination's contiguous dimension (stores run along it).
    pub dst_fast: usize,
    /// Each thread's block extents.
    pub block: Vec<i64>,
    /// Blocks per dimension.
    pub grid: Vec<i64>,
    /// Dimensions in thread-numbering order, fastest first (by source stride).
    pub order: Vec<usize>,
    /// Threads of the request.
    pub threads: i64,
    /// Elements per load.
    pub load_width: i64,
    /// Loads per thread.
    pub loads: i64,
    /// Elements per store.
    pub store_width: i64,
    /// Stores per thread.
    pub stores: i64,
    /// Register extracts per thread.
    pub extracts: i64,
    /// Load-order register → store-order register: `composition(RS, right_inverse(RL))`.
    pub shuffle: Layout,
    /// Whether some accesses are masked (ragged tile or idle threads).
    pub predicated: bool,
    load_order: Layout,
    store_order: Layout,
}

/// The planner's answer.
///
/// ```
/// use retile_copy::{TransposePlan, TransposeRequest};
/// let plan = TransposeRequest::square(8, 16, 128)?.plan()?;
/// assert!(matches!(plan, TransposePlan::Applies(_)));
/// let r = TransposeRequest::new(256, 16, 128, "(64,32):(1,64)".parse()?, "(64,32):(32,1)".parse()?);
/// let TransposePlan::Rejected { reason } = r.plan()? else { panic!() };
/// assert!(reason.contains("expected_number_of_stores <= 1"), "{reason}");
/// # Ok::<(), retile_copy::CopyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransposePlan {
    /// The transform applies.
    Applies(Box<Transpose>),
    /// It does not, and why.
    Rejected {
        /// The reason, naming the rule.
        reason: String,
    },
}

impl fmt::Display for TransposePlan {
    /// `TransposePlan(applies=true, load_width=2, loads=8, store_width=8, stores=2, extracts=16)`
    /// or `TransposePlan(applies=false, reason="...")`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransposePlan::Applies(t) => write!(
                f,
                "TransposePlan(applies=true, load_width={}, loads={}, store_width={}, stores={}, extracts={})",
                t.load_width, t.loads, t.store_width, t.stores, t.extracts
            ),
            TransposePlan::Rejected { reason } => write!(f, "TransposePlan(applies=false, reason={reason:?})"),
        }
    }
}

fn invalid(message: String) -> CopyError {
    CopyError::Invalid(message)
}

/// The compact layout over `block` whose register order follows `strides`
/// ascending (the fastest dimension fills consecutive registers).
fn register_order(block: &[i64], strides: &[i64]) -> Result<Layout> {
    let mut dims: Vec<usize> = (0..block.len()).collect();
    dims.sort_by_key(|&d| (strides[d].abs(), d));
    let mut reg_stride = vec![0; block.len()];
    let mut acc = 1;
    for d in dims {
        reg_stride[d] = acc;
        acc *= block[d];
    }
    Ok(Layout::new(block.into(), reg_stride[..].into())?)
}

impl TransposePlan {
    /// Whether the transform applies as `n` loads of `n` elements and `n`
    /// stores of `n`: a square block moved one register per row and per
    /// column.
    ///
    /// ```
    /// use retile_copy::TransposeRequest;
    /// let plan = TransposeRequest::square(4, 32, 128).unwrap().plan().unwrap();
    /// assert!(plan.is_square(4) && !plan.is_square(2));
    /// ```
    pub fn is_square(&self, n: i64) -> bool {
        matches!(self, TransposePlan::Applies(t)
            if t.load_width == n && t.loads == n && t.store_width == n && t.stores == n)
    }
}

fn rejected(reason: impl Into<String>) -> TransposePlan {
    TransposePlan::Rejected {
        reason: reason.into(),
    }
}

impl TransposeRequest {
    /// A request without a target architecture.
    ///
    /// ```
    /// let r = retile_copy::TransposeRequest::new(128, 32, 128, "(8,8):(1,8)".parse().unwrap(), "(8,8):(8,1)".parse().unwrap());
    /// assert!(r.target.is_none());
    /// ```
    pub fn new(threads: i64, element_bits: i64, max_bits: i64, src: Layout, dst: Layout) -> Self {
        TransposeRequest {
            threads,
            element_bits,
            max_bits,
            src,
            dst,
            target: None,
        }
    }

    /// One thread transposing a square block of `units x units` elements of
    /// `element_bits` bits from row-major to column-major, in accesses of at
    /// most `max_bits`: the in-register transpose of SIMD kernels, where
    /// each register holds one row, then one column.
    ///
    /// ```
    /// use retile_copy::TransposeRequest;
    /// let plan = TransposeRequest::square(8, 16, 128).unwrap().plan().unwrap();
    /// assert!(plan.is_square(8));
    /// ```
    pub fn square(units: i64, element_bits: i64, max_bits: i64) -> Result<Self> {
        let side = |stride| Layout::vector(units, stride);
        let src = Layout::from_modes([side(units)?, side(1)?]);
        let dst = Layout::from_modes([side(1)?, side(units)?]);
        Ok(TransposeRequest::new(1, element_bits, max_bits, src, dst))
    }

    /// Whether the planner moves the [`square`](Self::square) block as
    /// `units` loads and `units` stores of one register each: the question
    /// every kernel with an in-register transpose asks of its block.
    ///
    /// ```
    /// use retile_copy::TransposeRequest;
    /// assert!(TransposeRequest::square_in_registers(8, 16, 128));
    /// assert!(!TransposeRequest::square_in_registers(16, 16, 128));
    /// ```
    pub fn square_in_registers(units: i64, element_bits: i64, max_bits: i64) -> bool {
        Self::square(units, element_bits, max_bits)
            .and_then(|request| request.plan())
            .is_ok_and(|plan| plan.is_square(units))
    }

    /// The same request for a named GPU architecture.
    ///
    /// ```
    /// let r = retile_copy::TransposeRequest::new(256, 16, 128, "(256,16):(1,256)".parse().unwrap(), "(256,16):(16,1)".parse().unwrap())
    ///     .with_target("gfx950");
    /// assert!(r.plan().unwrap().to_string().contains("applies=false"));
    /// ```
    pub fn with_target(mut self, target: &str) -> Self {
        self.target = Some(target.to_string());
        self
    }

    /// Tile extents and both sides' strides, one entry per dimension.
    fn dimensions(&self) -> Result<(Vec<i64>, Vec<i64>, Vec<i64>)> {
        let (src, dst) = (self.src.flat_modes(), self.dst.flat_modes());
        if self.src.rank() != src.len() || self.dst.rank() != dst.len() {
            return Err(invalid(format!(
                "give flat layouts, one mode per dimension: {} and {}",
                self.src, self.dst
            )));
        }
        let shape: Vec<i64> = src.iter().map(|m| m.0).collect();
        if dst.iter().map(|m| m.0).ne(shape.iter().copied()) {
            return Err(invalid(format!(
                "source {} and destination {} must have the same extents",
                self.src, self.dst
            )));
        }
        Ok((
            shape,
            src.iter().map(|m| m.1).collect(),
            dst.iter().map(|m| m.1).collect(),
        ))
    }

    /// Plans the copy, or says why the in-thread transpose does not apply.
    ///
    /// ```
    /// use retile_copy::TransposeRequest;
    /// let r = TransposeRequest::new(256, 16, 128, "(64,32):(1,64)".parse().unwrap(), "(64,32):(32,1)".parse().unwrap());
    /// assert!(r.plan().unwrap().to_string().contains("expected_number_of_stores <= 1"));
    /// ```
    pub fn plan(&self) -> Result<TransposePlan> {
        if self.threads < 1 || self.element_bits < 1 || self.max_bits < self.element_bits {
            return Err(invalid(format!(
                "need threads >= 1 and 1 <= element_bits <= max_bits; got threads={}, element_bits={}, max_bits={}",
                self.threads, self.element_bits, self.max_bits
            )));
        }
        if self
            .target
            .as_deref()
            .is_some_and(|t| t.starts_with("gfx95"))
        {
            return Ok(rejected(
                "gfx95*: hardware transpose loads preferred, pass disabled",
            ));
        }
        let (shape, src_strides, dst_strides) = self.dimensions()?;
        let fast = |strides: &[i64]| (0..shape.len()).find(|&d| shape[d] > 1 && strides[d] == 1);
        let (Some(src_fast), Some(dst_fast)) = (fast(&src_strides), fast(&dst_strides)) else {
            return Ok(rejected(
                "a side has no contiguous dimension (stride 1): no vector access applies",
            ));
        };
        if src_fast == dst_fast {
            return Ok(rejected(format!(
                "not a transpose: dimension {src_fast} is contiguous on both sides (a vectorized copy applies)"
            )));
        }
        let total: i64 = shape
            .iter()
            .try_fold(1i64, |a, &s| a.checked_mul(s))
            .ok_or_else(|| invalid("tile size overflows".into()))?;
        let per_store = self.max_bits / self.element_bits;
        let stores = ceil_div(total, self.threads.saturating_mul(per_store));
        if stores <= 1 {
            return Ok(rejected(format!(
                "expected_number_of_stores <= 1: {} threads storing {per_store} elements each cover the {total}-element tile in one store",
                self.threads
            )));
        }
        if shape[src_fast] % stores != 0 {
            return Ok(rejected(format!(
                "materialized_shape[-2] % expected_number_of_stores != 0: the source-contiguous dimension {src_fast} \
                 (extent {}) does not split into {stores} stores",
                shape[src_fast]
            )));
        }
        let mut block = vec![1; shape.len()];
        block[src_fast] = stores;
        block[dst_fast] = per_store.min(shape[dst_fast]);
        Ok(TransposePlan::Applies(Box::new(self.build(
            shape,
            src_strides,
            dst_strides,
            src_fast,
            dst_fast,
            block,
        )?)))
    }

    fn build(
        &self,
        shape: Vec<i64>,
        src_strides: Vec<i64>,
        dst_strides: Vec<i64>,
        src_fast: usize,
        dst_fast: usize,
        block: Vec<i64>,
    ) -> Result<Transpose> {
        let grid: Vec<i64> = shape
            .iter()
            .zip(&block)
            .map(|(&s, &b)| ceil_div(s, b))
            .collect();
        let mut order: Vec<usize> = (0..shape.len()).collect();
        order.sort_by_key(|&d| (src_strides[d].abs(), d));
        let fragment = |strides: &[i64]| -> Result<Layout> {
            Ok(Layout::new(block[..].into(), strides.into())?)
        };
        let (src_fragment, dst_fragment) = (fragment(&src_strides)?, fragment(&dst_strides)?);
        let (load_order, store_order) = (
            register_order(&block, &src_strides)?,
            register_order(&block, &dst_strides)?,
        );
        let cap = self.max_bits / self.element_bits;
        let align = |strides: &[i64], fragment: &Layout| {
            // gcd(g, block * stride) without forming a product that may not
            // fit: with d = gcd(g, stride), it is d * gcd(g / d, block); for
            // g = 0 (no constraint yet) it is |block * stride|, or |stride|
            // (a divisor, so a stricter bound) when that overflows
            let steps = (0..shape.len())
                .filter(|&d| grid[d] > 1)
                .map(|d| (block[d], strides[d]));
            steps.fold(alignment(fragment), |g, (b, s)| match g {
                0 => s.checked_mul(b).map_or(s.abs(), i64::abs),
                _ => {
                    let d = gcd(g, s).max(1);
                    d * gcd(g / d, b)
                }
            })
        };
        let load_width = widest(
            max_common_vector(&src_fragment, &load_order)?,
            cap,
            align(&src_strides, &src_fragment),
        );
        let store_width = widest(
            max_common_vector(&dst_fragment, &store_order)?,
            cap,
            align(&dst_strides, &dst_fragment),
        );
        let elements: i64 = block.iter().product();
        let shuffle = composition(&store_order, &right_inverse(&load_order)?)?;
        let blocks: i64 = grid.iter().product();
        let ragged = shape.iter().zip(&block).any(|(s, b)| s % b != 0);
        Ok(Transpose {
            predicated: ragged || blocks % self.threads != 0,
            load_width,
            loads: elements / load_width,
            store_width,
            stores: elements / store_width,
            extracts: elements,
            shuffle,
            shape,
            src_fast,
            dst_fast,
            block,
            grid,
            order,
            threads: self.threads,
            load_order,
            store_order,
        })
    }
}

impl Transpose {
    /// Blocks in the tile (threads past this many are idle).
    ///
    /// ```
    /// # use retile_copy::{TransposePlan, TransposeRequest};
    /// let r = TransposeRequest::new(256, 16, 128, "(192,16):(1,192)".parse().unwrap(), "(192,16):(16,1)".parse().unwrap());
    /// let TransposePlan::Applies(t) = r.plan().unwrap() else { panic!() };
    /// assert_eq!(t.blocks(), 192);
    /// ```
    pub fn blocks(&self) -> i64 {
        self.grid.iter().product()
    }

    /// The tile coordinates where `thread`'s blocks start: blocks
    /// `thread`, `thread + threads`, ...; none for an idle thread.
    ///
    /// ```
    /// # use retile_copy::{TransposePlan, TransposeRequest};
    /// let r = TransposeRequest::new(256, 16, 128, "(256,16):(1,256)".parse().unwrap(), "(256,16):(16,1)".parse().unwrap());
    /// let TransposePlan::Applies(t) = r.plan().unwrap() else { panic!() };
    /// assert_eq!(t.block_origins(129), vec![vec![2, 8]]);
    /// ```
    pub fn block_origins(&self, thread: i64) -> Vec<Vec<i64>> {
        let blocks = self.blocks();
        if !(0..self.threads).contains(&thread) {
            return Vec::new();
        }
        (thread..blocks)
            .step_by(self.threads as usize)
            .map(|b| {
                let mut origin = vec![0; self.shape.len()];
                let mut rest = b;
                for &d in &self.order {
                    origin[d] = (rest % self.grid[d]) * self.block[d];
                    rest /= self.grid[d];
                }
                origin
            })
            .collect()
    }

    /// The accesses of `thread`'s blocks, each block in register order
    /// `order`, `width` registers per access, along `dim`.
    fn accesses(&self, thread: i64, order: &Layout, width: i64, dim: usize) -> Result<Vec<Access>> {
        let inverse = right_inverse(order)?;
        let block_shape = IntTuple::from(&self.block[..]);
        let count = self.block.iter().product::<i64>() / width;
        let mut out = Vec::new();
        for origin in self.block_origins(thread) {
            for i in 0..count {
                let index = inverse.eval(i * width)?;
                let IntTuple::Tuple(c) = idx2crd(index, &block_shape)? else {
                    continue;
                };
                let coord: Vec<i64> = c
                    .iter()
                    .zip(&origin)
                    .map(|(c, o)| if let IntTuple::Int(v) = c { v + o } else { *o })
                    .collect();
                if coord.iter().zip(&self.shape).all(|(c, s)| c < s) {
                    let width = width.min(self.shape[dim] - coord[dim]);
                    out.push(Access { coord, dim, width });
                }
            }
        }
        Ok(out)
    }

    /// `thread`'s loads, in register order (clipped at the tile's edge).
    ///
    /// ```
    /// # use retile_copy::{TransposePlan, TransposeRequest};
    /// let r = TransposeRequest::new(256, 16, 128, "(256,16):(1,256)".parse().unwrap(), "(256,16):(16,1)".parse().unwrap());
    /// let TransposePlan::Applies(t) = r.plan().unwrap() else { panic!() };
    /// let loads = t.loads_of(1).unwrap();
    /// assert_eq!((loads[3].coord.clone(), loads[3].width), (vec![2, 3], 2));
    /// ```
    pub fn loads_of(&self, thread: i64) -> Result<Vec<Access>> {
        self.accesses(thread, &self.load_order, self.load_width, self.src_fast)
    }

    /// `thread`'s stores, in register order (clipped at the tile's edge).
    ///
    /// ```
    /// # use retile_copy::{TransposePlan, TransposeRequest};
    /// let r = TransposeRequest::new(256, 16, 128, "(256,16):(1,256)".parse().unwrap(), "(256,16):(16,1)".parse().unwrap());
    /// let TransposePlan::Applies(t) = r.plan().unwrap() else { panic!() };
    /// assert_eq!(t.stores_of(0).unwrap()[1].coord, vec![1, 0]);
    /// ```
    pub fn stores_of(&self, thread: i64) -> Result<Vec<Access>> {
        self.accesses(thread, &self.store_order, self.store_width, self.dst_fast)
    }

    /// For store `s`, lane `j`: the `(load, lane)` its element came from.
    ///
    /// ```
    /// # use retile_copy::{TransposePlan, TransposeRequest};
    /// let r = TransposeRequest::new(256, 16, 128, "(256,16):(1,256)".parse().unwrap(), "(256,16):(16,1)".parse().unwrap());
    /// let TransposePlan::Applies(t) = r.plan().unwrap() else { panic!() };
    /// assert_eq!(t.store_from_load_lane().unwrap()[1][3], (3, 1));
    /// ```
    pub fn store_from_load_lane(&self) -> Result<Vec<Vec<(i64, i64)>>> {
        let gather = composition(&self.load_order, &right_inverse(&self.store_order)?)?;
        (0..self.stores)
            .map(|s| {
                (0..self.store_width)
                    .map(|j| {
                        let r = gather.eval(s * self.store_width + j)?;
                        Ok((r / self.load_width, r % self.load_width))
                    })
                    .collect()
            })
            .collect()
    }
}
