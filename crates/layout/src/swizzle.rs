//! Swizzles and swizzled layouts: CuTe's `Swizzle<B,M,S>` and the
//! `ComposedLayout` `Sw<B,M,S> o offset o L`.
//!
//! A swizzle permutes offsets by xoring `B` bits of an offset (the `ZZZ`
//! bits, starting at bit `M`) with the `B` bits `S` places above them (the
//! `YYY` bits); a negative `S` puts `YYY` below `ZZZ`. Shared-memory layouts
//! are swizzled so that the threads of one instruction reach different
//! banks.
//!
//! The semantics are CuTe's (C++ `cute/swizzle.hpp`, pycute `swizzle.py`,
//! which agree on every offset): `apply(o) = o ^ shiftr(o & yyy_msk, S)`
//! with `yyy_msk = (2^B - 1) << (M + max(0, S))`, and `shiftr` by a
//! negative amount shifting left. The size (and cosize) of a swizzle alone
//! is pycute's, `2^(B + M + |S|)`; the size *and the cosize* of a composed
//! layout are its inner layout's, as C++'s `size` and `cosize` of a
//! `ComposedLayout` answer (pycute's `ComposedLayout.cosize` answers the
//! swizzle's instead).

use std::fmt;

use crate::error::{add, LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::layout::Layout;
use crate::tiler::Tiler;

/// The most bits `B + M + |S|` a swizzle spans: its masks and every value
/// it shifts stay non-negative `i64`s.
///
/// ```
/// use retile_layout::{Swizzle, MAX_SWIZZLE_BITS};
/// // B + M + |S| = 3 + 56 + 3 = 62 is the widest swizzle allowed
/// assert!(Swizzle::new(3, MAX_SWIZZLE_BITS - 6, 3).is_ok());
/// let err = Swizzle::new(3, MAX_SWIZZLE_BITS - 5, 3).unwrap_err();
/// assert!(err.to_string().contains("at most 62"), "{err}");
/// ```
pub const MAX_SWIZZLE_BITS: i64 = 62;

/// CuTe's `Swizzle<B,M,S>`: `B` bits at `M + max(0,S)` (`YYY`) xored into
/// the `B` bits at `M - min(0,S)` (`ZZZ`).
///
/// ```
/// use retile_layout::Swizzle;
/// let sw = Swizzle::new(3, 4, 3)?;
/// assert_eq!(sw.to_string(), "Sw<3,4,3>");
/// // bits 7..9 of 0b1_0000000 are 001: bit 4 flips
/// assert_eq!(sw.apply(128), 128 + 16);
/// assert_eq!(sw.size(), 1 << 10);
/// // a negative shift xors the low bits into the high ones
/// assert_eq!(Swizzle::new(2, 0, -3)?.apply(0b01), 0b01_001);
/// # Ok::<(), retile_layout::LayoutError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Swizzle {
    bits: u8,
    base: u8,
    shift: i8,
}

impl Swizzle {
    /// `Swizzle<bits, base, shift>`, checked as C++'s `static_assert`s check
    /// it: `bits >= 0`, `base >= 0`, `|shift| >= bits`; and
    /// `bits + base + |shift| <=` [`MAX_SWIZZLE_BITS`].
    ///
    /// ```
    /// use retile_layout::Swizzle;
    /// assert!(Swizzle::new(3, 3, 3).is_ok());
    /// let err = Swizzle::new(3, 3, 2).unwrap_err();
    /// assert!(err.to_string().contains("|S| >= B"), "{err}");
    /// assert!(Swizzle::new(-1, 0, 0).is_err() && Swizzle::new(1, 60, 2).is_err());
    /// ```
    pub fn new(bits: i64, base: i64, shift: i64) -> Result<Swizzle> {
        let bad = |reason: String| LayoutError::BadSwizzle {
            bits,
            base,
            shift,
            reason,
        };
        if bits < 0 || base < 0 {
            return Err(bad("B (bits) and M (base) must be at least 0".to_string()));
        }
        if shift.unsigned_abs() < bits.unsigned_abs() {
            return Err(bad(format!(
                "CuTe needs |S| >= B, or the YYY and ZZZ bits overlap; give a shift of at least {bits} or -{bits}"
            )));
        }
        let span = bits
            .checked_add(base)
            .and_then(|s| s.checked_add(shift.checked_abs()?));
        if span.is_none_or(|s| s > MAX_SWIZZLE_BITS) {
            return Err(bad(format!(
                "B + M + |S| must be at most {MAX_SWIZZLE_BITS}, the bits of an offset"
            )));
        }
        // all three fit: each is at most 62 in magnitude
        Ok(Swizzle {
            bits: bits as u8,
            base: base as u8,
            shift: shift as i8,
        })
    }

    /// `B`: the number of bits xored.
    ///
    /// ```
    /// assert_eq!(retile_layout::Swizzle::new(3, 4, 5).unwrap().bits(), 3);
    /// ```
    pub fn bits(&self) -> i64 {
        i64::from(self.bits)
    }

    /// `M`: the number of low bits left as they are.
    ///
    /// ```
    /// assert_eq!(retile_layout::Swizzle::new(3, 4, 5).unwrap().base(), 4);
    /// ```
    pub fn base(&self) -> i64 {
        i64::from(self.base)
    }

    /// `S`: how far above `ZZZ` the `YYY` bits are (below, when negative).
    ///
    /// ```
    /// assert_eq!(retile_layout::Swizzle::new(3, 4, -5).unwrap().shift(), -5);
    /// ```
    pub fn shift(&self) -> i64 {
        i64::from(self.shift)
    }

    /// The `YYY` mask: the bits that are read, `(2^B-1) << (M + max(0,S))`.
    ///
    /// ```
    /// let sw = retile_layout::Swizzle::new(2, 1, 3).unwrap();
    /// assert_eq!((sw.yyy_mask(), sw.zzz_mask()), (0b11_0000, 0b110));
    /// ```
    pub fn yyy_mask(&self) -> i64 {
        ((1i64 << self.bits) - 1) << (self.base() + self.shift().max(0))
    }

    /// The `ZZZ` mask: the bits that are flipped, `(2^B-1) << (M - min(0,S))`.
    ///
    /// ```
    /// let sw = retile_layout::Swizzle::new(2, 1, -3).unwrap();
    /// assert_eq!((sw.yyy_mask(), sw.zzz_mask()), (0b110, 0b11_0000));
    /// ```
    pub fn zzz_mask(&self) -> i64 {
        ((1i64 << self.bits) - 1) << (self.base() - self.shift().min(0))
    }

    /// The swizzled offset: `offset ^ shiftr(offset & yyy_mask, S)`. Every
    /// `i64` has one (negative offsets are xored in two's complement, as
    /// Python's integers are).
    ///
    /// ```
    /// let sw = retile_layout::Swizzle::new(1, 0, 1).unwrap();
    /// assert_eq!((0..4).map(|o| sw.apply(o)).collect::<Vec<_>>(), [0, 1, 3, 2]);
    /// ```
    pub fn apply(&self, offset: i64) -> i64 {
        let y = offset & self.yyy_mask();
        // y < 2^(M+B+max(0,S)) and M+B+|S| <= 62: a left shift stays positive
        let moved = if self.shift >= 0 {
            y >> self.shift
        } else {
            y << -self.shift()
        };
        offset ^ moved
    }

    /// The size of the domain, pycute's `2^(B + M + |S|)`: the swizzle
    /// permutes each aligned block of this many offsets.
    ///
    /// ```
    /// assert_eq!(retile_layout::Swizzle::new(2, 3, -4).unwrap().size(), 512);
    /// ```
    pub fn size(&self) -> i64 {
        1i64 << (self.bits() + self.base() + self.shift().abs())
    }

    /// The size of the codomain: the [`size`](Self::size), as pycute says
    /// (a swizzle is a permutation of each block).
    ///
    /// ```
    /// assert_eq!(retile_layout::Swizzle::new(3, 3, 3).unwrap().cosize(), 512);
    /// ```
    pub fn cosize(&self) -> i64 {
        self.size()
    }

    /// `B == 0`: the swizzle changes nothing (CuTe's composition with
    /// `Swizzle<0,M,S>` returns the layout itself).
    ///
    /// ```
    /// assert!(retile_layout::Swizzle::new(0, 4, 3).unwrap().is_identity());
    /// ```
    pub fn is_identity(&self) -> bool {
        self.bits == 0
    }
}

impl fmt::Display for Swizzle {
    /// CuTe's `Sw<B,M,S>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sw<{},{},{}>", self.bits, self.base, self.shift)
    }
}

/// A swizzled layout, CuTe's `ComposedLayout<Swizzle, Offset, Layout>`:
/// `c -> swizzle(offset + layout(c))`. Its coordinates (shape, rank, modes,
/// size) are the inner layout's.
///
/// ```
/// use retile_layout::{ComposedLayout, Swizzle};
/// let c: ComposedLayout = "Sw<3,4,3> o (8,64):(64,1)".parse()?;
/// assert_eq!(c.swizzle(), Swizzle::new(3, 4, 3)?);
/// assert_eq!(c.eval_coord(&"(1,0)".parse()?)?, 64);
/// assert_eq!(c.eval_coord(&"(2,0)".parse()?)?, 128 + 16);
/// assert_eq!((c.size()?, c.cosize()?), (512, 512));
/// assert_eq!(c.to_string(), "Sw<3,4,3> o (8,64):(64,1)");
/// # Ok::<(), retile_layout::LayoutError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ComposedLayout {
    swizzle: Swizzle,
    offset: i64,
    layout: Layout,
}

impl ComposedLayout {
    /// `swizzle o offset o layout` (C++'s `composition(swizzle, offset,
    /// layout)`; pycute's `ComposedLayout(swizzle, offset, layout)`).
    ///
    /// ```
    /// use retile_layout::{ComposedLayout, Swizzle};
    /// let c = ComposedLayout::new(Swizzle::new(1, 0, 1)?, 2, "4:1".parse()?);
    /// assert_eq!(c.table(4)?, vec![3, 2, 4, 5]);
    /// assert_eq!(c.to_string(), "Sw<1,0,1> o 2 o 4:1");
    /// # Ok::<(), retile_layout::LayoutError>(())
    /// ```
    pub fn new(swizzle: Swizzle, offset: i64, layout: Layout) -> ComposedLayout {
        ComposedLayout {
            swizzle,
            offset,
            layout,
        }
    }

    /// The swizzle applied last.
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<2,0,2> o 4:1".parse().unwrap();
    /// assert_eq!(c.swizzle().to_string(), "Sw<2,0,2>");
    /// ```
    pub fn swizzle(&self) -> Swizzle {
        self.swizzle
    }

    /// The offset added before the swizzle.
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<2,0,2> o 8 o 4:1".parse().unwrap();
    /// assert_eq!(c.offset(), 8);
    /// ```
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// The inner layout, applied first.
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<2,0,2> o (4,4):(4,1)".parse().unwrap();
    /// assert_eq!(c.layout().to_string(), "(4,4):(4,1)");
    /// ```
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The same swizzle and offset over another inner layout: how CuTe
    /// applies composition, divides, products and mode selection to a
    /// composed layout (each acts on the inner layout).
    ///
    /// ```
    /// use retile_layout::{logical_divide, ComposedLayout};
    /// let c: ComposedLayout = "Sw<3,4,3> o (8,64):(64,1)".parse()?;
    /// let tiled = c.with_layout(logical_divide(c.layout(), &"<4,8>".parse()?)?);
    /// assert_eq!(tiled.to_string(), "Sw<3,4,3> o ((4,2),(8,8)):((64,256),(1,8))");
    /// # Ok::<(), retile_layout::LayoutError>(())
    /// ```
    pub fn with_layout(&self, layout: Layout) -> ComposedLayout {
        ComposedLayout::new(self.swizzle, self.offset, layout)
    }

    /// The swizzled offset of an inner offset: `swizzle(offset + o)`.
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<1,0,1> o 1 o 4:1".parse().unwrap();
    /// assert_eq!(c.apply(1).unwrap(), 3);
    /// ```
    pub fn apply(&self, inner: i64) -> Result<i64> {
        Ok(self
            .swizzle
            .apply(add(self.offset, inner, "a swizzled offset")?))
    }

    /// `C(i)`: the swizzled offset of index `i`.
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<1,0,1> o 4:1".parse().unwrap();
    /// assert_eq!(c.eval(2).unwrap(), 3);
    /// ```
    pub fn eval(&self, index: i64) -> Result<i64> {
        self.apply(self.layout.eval(index)?)
    }

    /// `C(c)` for a coordinate (matched against the inner layout's shape).
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<1,0,1> o (2,2):(2,1)".parse().unwrap();
    /// assert_eq!(c.eval_coord(&"(1,0)".parse().unwrap()).unwrap(), 3);
    /// ```
    pub fn eval_coord(&self, coord: &IntTuple) -> Result<i64> {
        self.apply(self.layout.eval_coord(coord)?)
    }

    /// `C(i)` for `i` in `0..count`.
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<1,0,1> o 4:1".parse().unwrap();
    /// assert_eq!(c.table(4).unwrap(), vec![0, 1, 3, 2]);
    /// ```
    pub fn table(&self, count: i64) -> Result<Vec<i64>> {
        (0..count).map(|i| self.eval(i)).collect()
    }

    /// The shape: the inner layout's.
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<1,0,1> o (2,3):(3,1)".parse().unwrap();
    /// assert_eq!(c.shape().to_string(), "(2,3)");
    /// ```
    pub fn shape(&self) -> IntTuple {
        self.layout.shape()
    }

    /// The size: the inner layout's (C++ and pycute agree).
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<3,3,3> o (4,8):(8,1)".parse().unwrap();
    /// assert_eq!(c.size().unwrap(), 32);
    /// ```
    pub fn size(&self) -> Result<i64> {
        self.layout.size()
    }

    /// The cosize: the inner layout's, as C++'s `cosize(ComposedLayout)`
    /// answers (`cute/layout_composed.hpp`, `cute/swizzle_layout.hpp`).
    /// pycute answers the swizzle's `2^(B+M+|S|)` instead.
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<3,3,3> o (4,8):(8,1)".parse().unwrap();
    /// assert_eq!(c.cosize().unwrap(), 32);
    /// ```
    pub fn cosize(&self) -> Result<i64> {
        self.layout.cosize()
    }

    /// Number of top-level modes: the inner layout's.
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<1,0,1> o (2,3):(3,1)".parse().unwrap();
    /// assert_eq!(c.rank(), 2);
    /// ```
    pub fn rank(&self) -> usize {
        self.layout.rank()
    }

    /// Nesting depth: the inner layout's.
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<1,0,1> o ((2,2),3):((1,2),4)".parse().unwrap();
    /// assert_eq!(c.depth(), 2);
    /// ```
    pub fn depth(&self) -> usize {
        self.layout.depth()
    }

    /// Mode `i`, with the same swizzle and offset (C++'s `get<I>`; pycute's
    /// `__getitem__`).
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<1,0,1> o (2,3):(3,1)".parse().unwrap();
    /// assert_eq!(c.mode(1).unwrap().to_string(), "Sw<1,0,1> o 3:1");
    /// ```
    pub fn mode(&self, i: usize) -> Result<ComposedLayout> {
        Ok(self.with_layout(self.layout.mode(i)?))
    }

    /// The inner layout flattened.
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<1,0,1> o ((2,2),3):((1,2),4)".parse().unwrap();
    /// assert_eq!(c.flatten().to_string(), "Sw<1,0,1> o (2,2,3):(1,2,4)");
    /// ```
    pub fn flatten(&self) -> ComposedLayout {
        self.with_layout(self.layout.flatten())
    }

    /// C++'s `composition(ComposedLayout, tiler)`: the tiler composed with
    /// the inner layout.
    ///
    /// ```
    /// use retile_layout::ComposedLayout;
    /// let c: ComposedLayout = "Sw<3,4,3> o (8,64):(64,1)".parse()?;
    /// let tile = c.compose(&"<4,8>".parse()?)?;
    /// assert_eq!(tile.to_string(), "Sw<3,4,3> o (4,8):(64,1)");
    /// # Ok::<(), retile_layout::LayoutError>(())
    /// ```
    pub fn compose(&self, tiler: &Tiler) -> Result<ComposedLayout> {
        Ok(self.with_layout(crate::composition::composition_tiler(&self.layout, tiler)?))
    }
}

/// A plain layout as a swizzled one: `Sw<0,0,0> o L`, which prints as `L`.
///
/// ```
/// use retile_layout::{ComposedLayout, Layout};
/// let l: Layout = "(4,2):(2,1)".parse().unwrap();
/// let c = ComposedLayout::from(l.clone());
/// assert!(c.is_plain());
/// assert_eq!(c.to_string(), "(4,2):(2,1)");
/// assert_eq!(c.table(8).unwrap(), l.table(8).unwrap());
/// ```
impl From<Layout> for ComposedLayout {
    fn from(layout: Layout) -> Self {
        ComposedLayout::new(NO_SWIZZLE, 0, layout)
    }
}

/// `Sw<0,0,0>`: no swizzle at all.
const NO_SWIZZLE: Swizzle = Swizzle {
    bits: 0,
    base: 0,
    shift: 0,
};

/// `Sw<0,0,0>`, the swizzle of a plain layout.
///
/// ```
/// assert_eq!(retile_layout::Swizzle::default().to_string(), "Sw<0,0,0>");
/// ```
impl Default for Swizzle {
    fn default() -> Self {
        NO_SWIZZLE
    }
}

impl ComposedLayout {
    /// Whether this is a plain layout: `Sw<0,0,0>` and no offset (see
    /// [`From<Layout>`](#impl-From<Layout>-for-ComposedLayout)).
    ///
    /// ```
    /// let c: retile_layout::ComposedLayout = "Sw<0,0,0> o 4:1".parse().unwrap();
    /// assert!(c.is_plain() && c.to_string() == "4:1");
    /// ```
    pub fn is_plain(&self) -> bool {
        self.swizzle == NO_SWIZZLE && self.offset == 0
    }
}

impl fmt::Display for ComposedLayout {
    /// `Sw<B,M,S> o L`, or `Sw<B,M,S> o offset o L` for a non-zero offset;
    /// a plain layout (`Sw<0,0,0>`, no offset) as `L`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_plain() {
            write!(f, "{}", self.layout)
        } else if self.offset == 0 {
            write!(f, "{} o {}", self.swizzle, self.layout)
        } else {
            write!(f, "{} o {} o {}", self.swizzle, self.offset, self.layout)
        }
    }
}
