//! Errors of the layout algebra: every rejected input says which rule it broke.

use thiserror::Error;

/// Everything that can go wrong in the layout algebra.
///
/// Each variant names the rule that was broken and, where there is one, the
/// offending mode, so that a user can see what to change.
///
/// ```
/// use retile_layout::{Layout, LayoutError};
/// let a: Layout = "(4,3):(1,5)".parse().unwrap();
/// let b: Layout = "6:1".parse().unwrap();
/// let err = retile_layout::composition(&a, &b).unwrap_err();
/// assert!(matches!(err, LayoutError::ShapeDivisibility { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LayoutError {
    /// An `i64` operation overflowed; retile never wraps.
    #[error("integer overflow while computing {what}; use smaller shapes or strides")]
    Overflow {
        /// What was being computed.
        what: &'static str,
    },
    /// A name that is not an element type.
    #[error("unknown dtype '{name}'; use one of {known}")]
    UnknownDType {
        /// The name given.
        name: String,
        /// The names there are.
        known: String,
    },
    /// Text could not be parsed.
    #[error("parse error at column {column}: {message}")]
    Parse {
        /// 1-based column of the offending character.
        column: usize,
        /// What was expected or found.
        message: String,
    },
    /// Shape and stride do not have the same nesting.
    #[error(
        "shape {shape} and stride {stride} are not congruent: they must have the same nesting"
    )]
    NotCongruent {
        /// The shape as written.
        shape: String,
        /// The stride as written.
        stride: String,
    },
    /// A shape extent is zero or negative.
    #[error("shape extent {extent} is not positive: every extent must be at least 1")]
    NonPositiveExtent {
        /// The offending extent.
        extent: i64,
    },
    /// A mode index is out of range.
    #[error("mode {index} does not exist: the layout has rank {rank}")]
    NoSuchMode {
        /// Requested mode.
        index: usize,
        /// Rank of the layout.
        rank: usize,
    },
    /// A coordinate does not match the shape it indexes.
    #[error("coordinate {coord} does not fit shape {shape}: {reason}")]
    BadCoordinate {
        /// The coordinate.
        coord: String,
        /// The shape.
        shape: String,
        /// Why it does not fit.
        reason: &'static str,
    },
    /// Composition: the stride being divided out is neither a multiple nor a divisor of a mode.
    #[error("Stride Divisibility Condition violated: stride {stride} of the right operand is neither a multiple nor a divisor of extent {extent} of mode {mode} of the coalesced left operand")]
    StrideDivisibility {
        /// Index of the mode of the coalesced left layout.
        mode: usize,
        /// Its extent.
        extent: i64,
        /// The remaining stride of the right operand.
        stride: i64,
    },
    /// Composition: the shape being taken does not split evenly over a mode.
    #[error("Shape Divisibility Condition violated: the remaining extent {rest} of the right operand is not a multiple of {taken}, the part of mode {mode} of the coalesced left operand it covers")]
    ShapeDivisibility {
        /// Index of the mode of the coalesced left layout.
        mode: usize,
        /// The elements taken from that mode.
        taken: i64,
        /// The remaining extent of the right operand.
        rest: i64,
    },
    /// Composition with a right operand whose modes interfere inside the left operand.
    #[error("composition is not distributive over the modes of the right operand: {reason}; compose with each mode separately or coalesce the right operand")]
    NotDistributive {
        /// Where the modes interfere.
        reason: String,
    },
    /// Complement of a layout that is not injective: a mode's stride lies
    /// inside the extent the modes of smaller stride already cover.
    #[error("complement needs an injective layout: mode {mode} (stride {stride}) lies inside the extent {covered} that the modes of smaller stride already cover")]
    ComplementNotDivisible {
        /// Index of the offending mode in the filtered (flattened) layout.
        mode: usize,
        /// Its stride.
        stride: i64,
        /// The extent covered by the modes of smaller stride.
        covered: i64,
    },
    /// An operation that needs non-negative strides got a negative one.
    #[error("{op} needs non-negative strides, but mode {mode} has stride {stride}")]
    NegativeStride {
        /// The operation.
        op: &'static str,
        /// Offending mode (flattened index).
        mode: usize,
        /// Its stride.
        stride: i64,
    },
    /// A cotarget that is not positive.
    #[error("cotarget {cotarget} is not positive: complement needs a codomain size of at least 1")]
    BadCotarget {
        /// The cotarget as written.
        cotarget: String,
    },
    /// A by-mode tiler with more modes than the layout.
    #[error("{op}: the tiler has {tiler} modes but the layout has only {layout}; give at most {layout} tiler modes")]
    TooManyModes {
        /// The operation.
        op: &'static str,
        /// Modes in the tiler.
        tiler: usize,
        /// Rank of the layout.
        layout: usize,
    },
    /// A profile or guide whose rank does not fit the layout.
    #[error("{op}: {reason}")]
    RankMismatch {
        /// The operation.
        op: &'static str,
        /// What does not fit.
        reason: String,
    },
    /// Left inverse: a stride is not a multiple of the extent already inverted.
    #[error("left inverse divisibility condition violated: stride {stride} of mode {mode} is not a multiple of {covered}")]
    LeftInverseDivisibility {
        /// Offending mode (coalesced index).
        mode: usize,
        /// Its stride.
        stride: i64,
        /// The extent inverted so far.
        covered: i64,
    },
    /// Swizzle parameters CuTe rejects (its `static_assert`s), or too wide
    /// for an `i64` offset.
    #[error("Swizzle<{bits},{base},{shift}> is not a swizzle: {reason}")]
    BadSwizzle {
        /// `B`, the bits xored.
        bits: i64,
        /// `M`, the low bits kept.
        base: i64,
        /// `S`, the shift.
        shift: i64,
        /// Which rule it breaks and what to change.
        reason: String,
    },
    /// The result would be too large to enumerate or draw.
    #[error("{what} has {count} entries, more than the limit of {limit}")]
    TooLarge {
        /// What was to be enumerated.
        what: &'static str,
        /// How many entries.
        count: i64,
        /// The limit.
        limit: i64,
    },
}

/// Result type of the layout algebra.
///
/// ```
/// use retile_layout::{Layout, Result};
/// fn cosize_of(text: &str) -> Result<i64> {
///     text.parse::<Layout>()?.cosize()
/// }
/// assert_eq!(cosize_of("(2,3):(3,1)").unwrap(), 6);
/// assert!(cosize_of("(2,3").is_err());
/// ```
pub type Result<T> = std::result::Result<T, LayoutError>;

/// The value of a checked operation, or an overflow error naming `what`
/// (made only on overflow: building and dropping an unused error costs
/// more than the arithmetic).
#[inline]
pub(crate) fn checked<T>(value: Option<T>, what: &'static str) -> Result<T> {
    match value {
        Some(v) => Ok(v),
        None => Err(LayoutError::Overflow { what }),
    }
}

/// `a * b`, or an overflow error naming `what`.
#[inline]
pub(crate) fn mul(a: i64, b: i64, what: &'static str) -> Result<i64> {
    checked(a.checked_mul(b), what)
}

/// `a + b`, or an overflow error naming `what`.
#[inline]
pub(crate) fn add(a: i64, b: i64, what: &'static str) -> Result<i64> {
    checked(a.checked_add(b), what)
}

/// `(a / b, a % b)` with C's truncation, using 32-bit division when both
/// operands are non-negative and fit (it is several times faster than the
/// 64-bit instruction on many x86 cores).
#[inline]
pub(crate) fn div_rem(a: i64, b: i64) -> (i64, i64) {
    if (a | b) as u64 <= u64::from(u32::MAX) {
        let (a, b) = (a as u32, b as u32);
        (i64::from(a / b), i64::from(a % b))
    } else {
        (a / b, a % b)
    }
}

/// `ceil(a / b)` for `a >= 0`, `b > 0` (CuTe's `ceil_div` on integers).
///
/// ```
/// assert_eq!(retile_layout::ceil_div(7, 2), 4);
/// assert_eq!(retile_layout::ceil_div(8, 2), 4);
/// assert_eq!(retile_layout::ceil_div(0, 3), 0);
/// ```
#[inline]
pub fn ceil_div(a: i64, b: i64) -> i64 {
    let (q, r) = div_rem(a, b);
    q + i64::from(r != 0)
}

/// Row-major (C-order) strides of `extents`, in elements: the last
/// dimension's stride is 1 and each other's is the product of the extents
/// after it (CuTe's `compact_row_major`, without its stride 0 for extent 1,
/// so that every stride also steps over a whole sub-array).
///
/// ```
/// assert_eq!(retile_layout::row_major_strides(&[4u64, 3, 2]), vec![6, 2, 1]);
/// assert_eq!(retile_layout::row_major_strides(&[5i64, 1, 7]), vec![7, 7, 1]);
/// assert!(retile_layout::row_major_strides::<u64>(&[]).is_empty());
/// ```
pub fn row_major_strides<T>(extents: &[T]) -> Vec<T>
where
    T: Copy + std::ops::Mul<Output = T> + From<u8>,
{
    let mut strides = vec![T::from(1); extents.len()];
    for d in (1..extents.len()).rev() {
        strides[d - 1] = strides[d] * extents[d];
    }
    strides
}

/// The greatest common divisor of `a` and `b`, never negative (`gcd(0, 0)` is 0).
///
/// ```
/// assert_eq!(retile_layout::gcd(12, -18), 6);
/// assert_eq!(retile_layout::gcd(0, 5), 5);
/// ```
pub fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a as i64
}
