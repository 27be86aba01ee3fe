//! The block reductions of a multiscale pyramid: each element of a level
//! reduces a block of its parent that is 2 long along every halved
//! dimension (1 where the parent's extent ends, so no padding enters).
//!
//! Blocks always hold a power of two of elements, so a mean divides by a
//! shift: integer means round half to even, float means are summed in
//! `f64` (exact for 16-bit floats, and for `f32` unless a block spans more
//! than 29 binary orders of magnitude) and rounded once to the element
//! type. Sums run in a fixed order (pairs along the last dimension, then
//! rows in row-major order), so a reference that adds in that order
//! matches bit for bit. A NaN anywhere in a block makes `min`, `max` and
//! `median` NaN.
//!
//! An `f64` sum can overflow where the mean does not (four `f64::MAX`):
//! such a mean (or median) is made again from the elements each scaled by
//! `1 / 2^log2` first, the same additions in the same order, so that the
//! mean of finite elements is finite; every mean whose plain sum is finite
//! is left as it was.

use std::fmt;
use std::str::FromStr;

use bytemuck::Pod;
use half::{bf16, f16};
use rayon::prelude::*;

use retile_plan::{ravel, unravel, DType, StreamError};

/// How a block of a level becomes one element of the next.
///
/// ```
/// use retile_halving::Method;
/// let m: Method = "mean".parse()?;
/// assert_eq!(m, Method::Mean);
/// assert_eq!(Method::Decimate.to_string(), "decimate");
/// assert!("average".parse::<Method>().is_err());
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Method {
    /// The mean, rounded half to even for integers.
    #[default]
    Mean,
    /// The smallest element.
    Min,
    /// The largest element.
    Max,
    /// The first element of the block (plain subsampling).
    Decimate,
    /// The median: the mean of the two middle elements (blocks hold an
    /// even number of elements, or one).
    Median,
}

const METHODS: [(Method, &str); 5] = [
    (Method::Mean, "mean"),
    (Method::Min, "min"),
    (Method::Max, "max"),
    (Method::Decimate, "decimate"),
    (Method::Median, "median"),
];

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = METHODS
            .iter()
            .find(|(m, _)| m == self)
            .map_or("?", |(_, n)| n);
        f.write_str(name)
    }
}

impl FromStr for Method {
    type Err = StreamError;
    fn from_str(text: &str) -> Result<Method, StreamError> {
        METHODS
            .iter()
            .find(|(_, n)| *n == text)
            .map(|(m, _)| *m)
            .ok_or_else(|| {
                StreamError::Invalid(format!(
                    "unknown downsampling method '{text}'; use mean, min, max, decimate or median"
                ))
            })
    }
}

/// An element type the reductions work on.
pub(crate) trait Element: Pod + PartialOrd + Send + Sync {
    /// What a block's sum is kept in.
    type Sum: Copy + Send + std::ops::Add<Output = Self::Sum>;
    const ZERO: Self::Sum;
    fn widen(self) -> Self::Sum;
    /// `sum / 2^log2`, rounded to the element type.
    fn mean(sum: Self::Sum, log2: u32) -> Self;
    fn is_nan(self) -> bool {
        false
    }
    /// The sign bit (set for -0.0).
    fn sign_bit(self) -> bool {
        false
    }
    /// Whether a block's sum can overflow where its mean cannot (`f64`
    /// elements, summed in `f64`): such means are made again by
    /// [`Element::scaled_mean`].
    const SUM_MAY_OVERFLOW: bool = false;
    fn is_finite(self) -> bool {
        true
    }
    /// The mean of `terms` (each row's one or two elements, in the order a
    /// sum visits them), `2^log2` elements in all. Types whose sums cannot
    /// overflow sum them as [`Element::mean`] does; `f64` scales every
    /// element by `1 / 2^log2` before adding it, which cannot overflow,
    /// and gives `f64::MAX` with the sum's sign if rounding carries a mean
    /// of finite elements past it.
    fn scaled_mean<'a>(terms: impl Iterator<Item = &'a [Self]>, log2: u32) -> Self
    where
        Self: 'a,
    {
        let mut sum = Self::ZERO;
        for term in terms {
            sum = sum
                + match *term {
                    [a, b] => a.widen() + b.widen(),
                    [a] => a.widen(),
                    _ => Self::ZERO,
                };
        }
        Self::mean(sum, log2)
    }
}

/// `sum / 2^log2` rounded half to even, for integer sums, without a
/// branch (so that it vectorises): adding `half - 1` and the quotient's
/// lowest bit before the shift rounds up exactly when the remainder is
/// over a half, or a half with an odd quotient.
macro_rules! shift_half_even {
    ($sum:expr, $log2:expr) => {{
        let (sum, log2) = ($sum, $log2);
        if log2 == 0 {
            sum
        } else {
            (sum + ((1 << (log2 - 1)) - 1) + ((sum >> log2) & 1)) >> log2
        }
    }};
}

macro_rules! integer_element {
    ($($t:ty => $sum:ty),*) => {$(
        impl Element for $t {
            type Sum = $sum;
            const ZERO: $sum = 0;
            #[inline(always)]
            fn widen(self) -> $sum {
                self as $sum
            }
            #[inline(always)]
            fn mean(sum: $sum, log2: u32) -> $t {
                shift_half_even!(sum, log2) as $t
            }
        }
    )*};
}

integer_element!(u8 => u32, u16 => u32, u32 => u64, u64 => u128, i8 => i32, i16 => i32, i32 => i64, i64 => i128);

/// The methods every float element shares: summed in `f64`, a NaN mean
/// the quiet NaN.
macro_rules! float_methods {
    ($t:ty, $to:expr, $from:expr) => {
        type Sum = f64;
        const ZERO: f64 = 0.0;
        #[inline(always)]
        fn widen(self) -> f64 {
            $to(self)
        }
        #[inline(always)]
        fn mean(sum: f64, log2: u32) -> $t {
            $from(sum / (1u64 << log2) as f64)
        }
        #[inline(always)]
        fn is_nan(self) -> bool {
            self != self
        }
        fn sign_bit(self) -> bool {
            self.is_sign_negative()
        }
    };
}

/// Floats narrower than the `f64` sum, which cannot overflow it.
macro_rules! float_element {
    ($($t:ty: $to:expr, $from:expr);*) => {$(
        impl Element for $t {
            float_methods!($t, $to, $from);
        }
    )*};
}

float_element!(
    f16: f16::to_f64, |v| f16::from_bits(narrow(v, 10, 5));
    bf16: bf16::to_f64, |v| bf16::from_bits(narrow(v, 7, 8));
    f32: |v: f32| v as f64, |v: f64| if v.is_nan() { f32::NAN } else { v as f32 }
);

impl Element for f64 {
    float_methods!(f64, |v: f64| v, |v: f64| if v.is_nan() {
        f64::NAN
    } else {
        v
    });
    const SUM_MAY_OVERFLOW: bool = true;
    #[inline(always)]
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    fn scaled_mean<'a>(terms: impl Iterator<Item = &'a [f64]>, log2: u32) -> f64 {
        let scale = power_of_two(-(log2 as i32));
        let mut finite = true;
        let mut sum = 0.0;
        for term in terms {
            finite &= term.iter().all(|v| v.is_finite());
            sum += match *term {
                [a, b] => a * scale + b * scale,
                [a] => a * scale,
                _ => 0.0,
            };
        }
        match (sum.is_nan(), sum.is_infinite() && finite) {
            (true, _) => f64::NAN,
            (false, true) => f64::MAX.copysign(sum),
            (false, false) => sum,
        }
    }
}

/// `2^n` as an `f64` (`n` within the normal exponents).
fn power_of_two(n: i32) -> f64 {
    f64::from_bits(((n + 1023) as u64) << 52)
}

/// The bits of `v` rounded to nearest, ties to even, in a binary float of
/// `mantissa` stored bits and `exponent` bits (f16: 10, 5; bf16: 7, 8),
/// in one rounding (the `half` crate rounds f64 through f32 on CPUs with
/// F16C, or drops the low 32 bits for bf16: twice, and not the same on
/// every CPU). NaN becomes the positive quiet NaN, as a mean of any float
/// type does; the GPU's halving kernel rounds with the same steps.
///
/// For example, `narrow(512.25 + 2^-26, 10, 5)` is `0x6001`: 512.5, not
/// 512 (the unit tests assert it and the rest of f16 and bf16).
pub(crate) fn narrow(v: f64, mantissa: i32, exponent: i32) -> u16 {
    let sign = ((v.to_bits() >> 63) as u16) << 15;
    let bias = (1 << (exponent - 1)) - 1;
    let infinity = (((1u32 << exponent) - 1) << mantissa) as u16;
    if v.is_nan() {
        return infinity | (1 << (mantissa - 1));
    }
    let a = v.abs();
    // the binade of `a`, or the subnormals' exponent below the normals
    let e = ((a.to_bits() >> 52) as i32 - 1023).max(1 - bias);
    if e > bias {
        return sign | infinity;
    }
    // a = q * 2^(e - mantissa): q in [2^mantissa, 2^(mantissa+1)] for a
    // normal, [0, 2^mantissa] for a subnormal; its top carries into the exponent
    let q = (a * power_of_two(mantissa - e)).round_ties_even() as u32;
    let bits = (((e + bias - 1) as u32) << mantissa) + q;
    sign | bits.min(u32::from(infinity)) as u16
}

/// The geometry of one halving: the parent's plane (every dimension but
/// the first), which of its dimensions are halved, and the child's plane.
///
/// ```
/// let h = retile_halving::Halving::new(&[5, 8], &[true, true]);
/// assert_eq!(h.child(), &[3, 4]);
/// assert_eq!((h.parent_elements(), h.child_elements()), (40, 12));
/// ```
#[derive(Debug, Clone)]
pub struct Halving {
    /// The parent's plane extents.
    parent: Vec<u64>,
    /// The child's plane extents.
    child: Vec<u64>,
    /// Which plane dimensions are halved.
    halve: Vec<bool>,
}

impl Halving {
    /// Halving the plane `parent` (extents of every dimension but the
    /// first) along the dimensions where `halve` is set.
    ///
    /// ```
    /// use retile_halving::Halving;
    /// // only the last dimension halves: odd extents round up
    /// let h = Halving::new(&[3, 7], &[false, true]);
    /// assert_eq!(h.child(), &[3, 4]);
    /// ```
    pub fn new(parent: &[u64], halve: &[bool]) -> Halving {
        let child = parent
            .iter()
            .zip(halve)
            .map(|(&n, &h)| if h { n.div_ceil(2) } else { n })
            .collect();
        Halving {
            parent: parent.to_vec(),
            child,
            halve: halve.to_vec(),
        }
    }

    fn last(&self) -> usize {
        self.parent.len() - 1
    }

    /// The parent's plane extents.
    ///
    /// ```
    /// let h = retile_halving::Halving::new(&[5, 8], &[true, false]);
    /// assert_eq!(h.parent(), &[5, 8]);
    /// assert_eq!(h.child(), &[3, 8]);
    /// ```
    pub fn parent(&self) -> &[u64] {
        &self.parent
    }

    /// The child's plane extents.
    ///
    /// ```
    /// let h = retile_halving::Halving::new(&[1, 9, 10], &[true, true, true]);
    /// // an extent of 1 stays 1: its block is one element long
    /// assert_eq!(h.child(), &[1, 5, 5]);
    /// ```
    pub fn child(&self) -> &[u64] {
        &self.child
    }

    /// Which plane dimensions are halved.
    ///
    /// ```
    /// let h = retile_halving::Halving::new(&[4, 4], &[false, true]);
    /// assert_eq!(h.halves(), &[false, true]);
    /// assert_eq!(h.child(), &[4, 2]);
    /// ```
    pub fn halves(&self) -> &[bool] {
        &self.halve
    }

    /// Elements in one parent plane.
    ///
    /// ```
    /// let h = retile_halving::Halving::new(&[3, 5], &[true, true]);
    /// assert_eq!(h.parent_elements(), 15);
    /// ```
    pub fn parent_elements(&self) -> usize {
        self.parent.iter().product::<u64>() as usize
    }

    /// Elements in one child plane.
    ///
    /// ```
    /// let h = retile_halving::Halving::new(&[3, 5], &[true, true]);
    /// assert_eq!(h.child_elements(), 6); // 2 x 3
    /// ```
    pub fn child_elements(&self) -> usize {
        self.child.iter().product::<u64>() as usize
    }

    /// Rows (every plane dimension but the last) of a child plane.
    fn child_rows(&self) -> usize {
        self.child[..self.last()].iter().product::<u64>() as usize
    }

    /// The element offsets, within a parent plane, of the parent rows that
    /// child row `row` reduces, in row-major order.
    fn parent_rows(&self, row: usize, out: &mut Vec<usize>) {
        let last = self.last();
        let coords = unravel(row as u64, &self.child[..last]);
        out.clear();
        let mut source = vec![0u64; last];
        let count = 1usize << self.halve[..last].iter().filter(|&&h| h).count();
        for pick in 0..count {
            let mut bit = count;
            let mut inside = true;
            for d in 0..last {
                source[d] = match self.halve[d] {
                    true => {
                        bit >>= 1;
                        2 * coords[d] + u64::from(pick & bit != 0)
                    }
                    false => coords[d],
                };
                inside &= source[d] < self.parent[d];
            }
            if inside {
                out.push(
                    ravel(&source, &self.parent[..last]) as usize * self.parent[last] as usize,
                );
            }
        }
    }
}

/// Reduces `groups` groups of `per_group` parent planes each (`src`,
/// back to back) into one child plane each (`dst`), with `method`, on the
/// current rayon pool. `dtype` says how the bytes read; both slices must
/// be aligned to the element.
///
/// ```
/// use retile_halving::{halve_planes, Halving, Method};
/// use retile_plan::DType;
/// let h = Halving::new(&[2, 4], &[true, true]);
/// let mut child = [0u8; 2];
/// halve_planes(Method::Max, DType::U8, &h, 1, &[0, 1, 2, 3, 4, 5, 6, 7], &mut child)?;
/// assert_eq!(child, [5, 7]);
/// # Ok::<(), retile_plan::StreamError>(())
/// ```
pub fn halve_planes(
    method: Method,
    dtype: DType,
    halving: &Halving,
    per_group: usize,
    src: &[u8],
    dst: &mut [u8],
) -> Result<(), StreamError> {
    halve_parents(
        method,
        dtype,
        halving,
        Parents::BackToBack(src, per_group),
        dst,
    )
}

/// Where the parent planes of each group lie.
#[derive(Clone, Copy)]
pub(crate) enum Parents<'a> {
    /// Groups of this many planes back to back (the last group may be
    /// short of planes).
    BackToBack(&'a [u8], usize),
    /// The `i`-th plane of every group in the `i`-th slice, back to back:
    /// a group's planes held in separate buffers.
    Split(&'a [&'a [u8]]),
}

/// [`Parents`] read as elements.
enum TypedParents<'a, T> {
    BackToBack(&'a [T], usize),
    Split(Vec<&'a [T]>),
}

impl<'a, T> TypedParents<'a, T> {
    fn per_group(&self) -> usize {
        match self {
            TypedParents::BackToBack(_, per_group) => *per_group,
            TypedParents::Split(planes) => planes.len(),
        }
    }

    /// Plane `i` of group `group` (`len` elements), if the input holds it.
    fn plane(&self, group: usize, i: usize, len: usize) -> Option<&'a [T]> {
        let (planes, index) = match self {
            TypedParents::BackToBack(src, per_group) => (*src, group * per_group + i),
            TypedParents::Split(planes) => (planes[i], group),
        };
        planes.get(index * len..(index + 1) * len)
    }
}

/// [`halve_planes`] of groups whose planes lie where `parents` says.
pub(crate) fn halve_parents(
    method: Method,
    dtype: DType,
    halving: &Halving,
    parents: Parents<'_>,
    dst: &mut [u8],
) -> Result<(), StreamError> {
    macro_rules! typed {
        ($t:ty) => {
            halve_typed::<$t>(
                method,
                halving,
                &match parents {
                    Parents::BackToBack(src, per_group) => {
                        TypedParents::BackToBack(cast(src)?, per_group)
                    }
                    Parents::Split(planes) => TypedParents::Split(
                        planes.iter().map(|p| cast(p)).collect::<Result<_, _>>()?,
                    ),
                },
                bytemuck::try_cast_slice_mut(dst).map_err(misaligned)?,
            )
        };
    }
    match dtype {
        DType::U8 => typed!(u8),
        DType::U16 => typed!(u16),
        DType::U32 => typed!(u32),
        DType::U64 => typed!(u64),
        DType::I8 => typed!(i8),
        DType::I16 => typed!(i16),
        DType::I32 => typed!(i32),
        DType::I64 => typed!(i64),
        DType::F16 => typed!(f16),
        DType::BF16 => typed!(bf16),
        DType::F32 => typed!(f32),
        DType::F64 => typed!(f64),
        DType::Bool | DType::F8E4M3 | DType::F8E5M2 => {
            return Err(StreamError::Invalid(format!(
                "{dtype} elements cannot be reduced: a pyramid takes numeric types"
            )))
        }
    }
    Ok(())
}

fn misaligned(e: bytemuck::PodCastError) -> StreamError {
    StreamError::Invalid(format!(
        "pyramid buffers must be aligned to their element: {e}"
    ))
}

fn cast<T: Pod>(bytes: &[u8]) -> Result<&[T], StreamError> {
    bytemuck::try_cast_slice(bytes).map_err(misaligned)
}

/// Child rows handed to one task at a time.
const ROWS_PER_TASK: usize = 16;

fn halve_typed<T: Element>(
    method: Method,
    halving: &Halving,
    parents: &TypedParents<'_, T>,
    dst: &mut [T],
) {
    let (parent_plane, child_plane) = (halving.parent_elements(), halving.child_elements());
    let parent_width = halving.parent[halving.last()] as usize;
    let child_width = halving.child[halving.last()] as usize;
    let pair = halving.halve[halving.last()];
    let rows = halving.child_rows();
    let groups = dst.len() / child_plane.max(1);
    let per_group = parents.per_group();
    dst.par_chunks_mut(child_width * ROWS_PER_TASK)
        .enumerate()
        .for_each(|(task, out)| {
            let mut offsets = Vec::new();
            let mut sources: Vec<&[T]> = Vec::new();
            let mut scratch = Scratch::default();
            for (k, out_row) in out.chunks_mut(child_width).enumerate() {
                let flat = task * ROWS_PER_TASK + k;
                let (group, row) = (flat / rows, flat % rows);
                debug_assert!(group < groups);
                halving.parent_rows(row, &mut offsets);
                sources.clear();
                for i in 0..per_group {
                    let Some(plane) = parents.plane(group, i, parent_plane) else {
                        continue;
                    };
                    for &o in &offsets {
                        sources.push(&plane[o..o + parent_width]);
                    }
                }
                reduce_row_dispatch(method, &sources, pair, out_row, &mut scratch);
            }
        });
}

/// Per-task scratch space.
struct Scratch<T: Element> {
    sums: Vec<T::Sum>,
    block: Vec<T>,
}

impl<T: Element> Default for Scratch<T> {
    fn default() -> Self {
        Scratch {
            sums: Vec::new(),
            block: Vec::new(),
        }
    }
}

/// Chooses the widest SIMD instructions this CPU has, at run time.
fn reduce_row_dispatch<T: Element>(
    method: Method,
    rows: &[&[T]],
    pair: bool,
    out: &mut [T],
    scratch: &mut Scratch<T>,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU has AVX-512 BW (checked just above).
            return unsafe { reduce_row_avx512(method, rows, pair, out, scratch) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { reduce_row_avx2(method, rows, pair, out, scratch) };
        }
    }
    reduce_row(method, rows, pair, out, scratch)
}

/// [`reduce_row`] compiled for AVX-512.
///
/// # Safety
/// The CPU must have AVX-512 F and BW.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2")]
unsafe fn reduce_row_avx512<T: Element>(
    method: Method,
    rows: &[&[T]],
    pair: bool,
    out: &mut [T],
    scratch: &mut Scratch<T>,
) {
    reduce_row(method, rows, pair, out, scratch)
}

/// [`reduce_row`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn reduce_row_avx2<T: Element>(
    method: Method,
    rows: &[&[T]],
    pair: bool,
    out: &mut [T],
    scratch: &mut Scratch<T>,
) {
    reduce_row(method, rows, pair, out, scratch)
}

/// One child row from its parent rows (`pair`: the last dimension is
/// halved too). Blocks hold `rows.len()` (a power of two) rows times 2
/// elements, or 1 at the end of an odd last extent.
#[inline(always)]
fn reduce_row<T: Element>(
    method: Method,
    rows: &[&[T]],
    pair: bool,
    out: &mut [T],
    scratch: &mut Scratch<T>,
) {
    // Child elements whose block has two elements along the last dimension.
    let full = if pair { rows[0].len() / 2 } else { 0 };
    match method {
        Method::Mean => {
            match *rows {
                [a] if pair && full == out.len() => mean_pairs_1(a, out),
                [a, b] if pair && full == out.len() => mean_pairs_2(a, b, out),
                [a, b, c, d] if pair && full == out.len() => mean_pairs_4([a, b, c, d], out),
                _ => mean_row(rows, pair, full, out, &mut scratch.sums),
            }
            if T::SUM_MAY_OVERFLOW {
                rescue_overflowed_means(rows, pair, full, out);
            }
        }
        Method::Decimate => {
            let step = if pair { 2 } else { 1 };
            for (x, o) in out.iter_mut().enumerate() {
                *o = rows[0][x * step];
            }
        }
        Method::Min => fold_row(rows, pair, full, out, |a, b| if b < a { b } else { a }),
        Method::Max => fold_row(rows, pair, full, out, |a, b| if b > a { b } else { a }),
        Method::Median => {
            for (x, o) in out.iter_mut().enumerate() {
                let block = &mut scratch.block;
                block.clear();
                for r in rows {
                    match pair {
                        true => block.extend(r.iter().skip(2 * x).take(2)),
                        false => block.push(r[x]),
                    }
                }
                *o = median(block);
            }
        }
    }
}

/// [`mean_row`] of rows whose blocks all hold two elements along the last
/// dimension, in one pass (the same sums in the same order), written with
/// iterators so that the compiler sees no bounds to check and vectorises.
#[inline(always)]
fn mean_pairs_1<T: Element>(a: &[T], out: &mut [T]) {
    for (o, p) in out.iter_mut().zip(a.chunks_exact(2)) {
        *o = T::mean(T::ZERO + (p[0].widen() + p[1].widen()), 1);
    }
}

/// [`mean_pairs_1`] of two rows.
#[inline(always)]
fn mean_pairs_2<T: Element>(a: &[T], b: &[T], out: &mut [T]) {
    for ((o, p), q) in out.iter_mut().zip(a.chunks_exact(2)).zip(b.chunks_exact(2)) {
        let sum = T::ZERO + (p[0].widen() + p[1].widen());
        *o = T::mean(sum + (q[0].widen() + q[1].widen()), 2);
    }
}

/// [`mean_pairs_1`] of four rows.
#[inline(always)]
fn mean_pairs_4<T: Element>(rows: [&[T]; 4], out: &mut [T]) {
    let [a, b, c, d] = rows.map(|r| r.chunks_exact(2));
    for ((((o, p), q), r), s) in out.iter_mut().zip(a).zip(b).zip(c).zip(d) {
        let sum = T::ZERO + (p[0].widen() + p[1].widen());
        let sum = sum + (q[0].widen() + q[1].widen());
        let sum = sum + (r[0].widen() + r[1].widen());
        *o = T::mean(sum + (s[0].widen() + s[1].widen()), 3);
    }
}

/// `sum >> log2` of each block, summing each row's pair first.
#[inline(always)]
fn mean_row<T: Element>(
    rows: &[&[T]],
    pair: bool,
    full: usize,
    out: &mut [T],
    sums: &mut Vec<T::Sum>,
) {
    let width = out.len();
    sums.clear();
    sums.resize(width, T::ZERO);
    for r in rows {
        if pair {
            for (s, p) in sums[..full].iter_mut().zip(r.chunks_exact(2)) {
                *s = *s + (p[0].widen() + p[1].widen());
            }
            if full < width {
                sums[full] = sums[full] + r[2 * full].widen();
            }
        } else {
            for (s, v) in sums.iter_mut().zip(r.iter()) {
                *s = *s + v.widen();
            }
        }
    }
    let log2 = rows.len().trailing_zeros();
    let pair_log2 = log2 + u32::from(pair);
    for (o, s) in out[..full].iter_mut().zip(sums.iter()) {
        *o = T::mean(*s, pair_log2);
    }
    let start = if pair { full } else { 0 };
    for (o, s) in out[start..].iter_mut().zip(&sums[start..]) {
        *o = T::mean(*s, log2);
    }
}

/// Makes again, with [`Element::scaled_mean`], every mean of the row that
/// came out infinite or NaN: its sum overflowed (to an infinity, or to
/// opposite infinities that made a NaN), or an element is infinite or NaN
/// (then it comes out the same).
#[cold]
fn rescue_overflowed_means<T: Element>(rows: &[&[T]], pair: bool, full: usize, out: &mut [T]) {
    let log2 = rows.len().trailing_zeros();
    for (x, o) in out.iter_mut().enumerate() {
        if o.is_finite() {
            continue;
        }
        let (first, count) = match (pair, x < full) {
            (true, true) => (2 * x, 2),
            (true, false) => (2 * full, 1),
            (false, _) => (x, 1),
        };
        let terms = rows.iter().map(|r| &r[first..first + count]);
        *o = T::scaled_mean(terms, log2 + u32::from(count == 2));
    }
}

/// A min or max of each block with `pick`, any NaN winning.
#[inline(always)]
fn fold_row<T: Element>(
    rows: &[&[T]],
    pair: bool,
    full: usize,
    out: &mut [T],
    pick: impl Fn(T, T) -> T,
) {
    let width = out.len();
    let pick = |a: T, b: T| {
        if a.is_nan() {
            a
        } else if b.is_nan() {
            b
        } else {
            pick(a, b)
        }
    };
    for (k, r) in rows.iter().enumerate() {
        if pair {
            for (o, p) in out[..full].iter_mut().zip(r.chunks_exact(2)) {
                let v = pick(p[0], p[1]);
                *o = if k == 0 { v } else { pick(*o, v) };
            }
            if full < width {
                let v = r[2 * full];
                out[full] = if k == 0 { v } else { pick(out[full], v) };
            }
        } else {
            for (o, &v) in out.iter_mut().zip(r.iter()) {
                *o = if k == 0 { v } else { pick(*o, v) };
            }
        }
    }
}

/// NaN-free elements in order, -0 before +0 (so that the middle elements,
/// and the median's sign, do not depend on how the sort breaks ties).
fn total_order<T: Element>(a: &T, b: &T) -> std::cmp::Ordering {
    let negative = |v: &T| v.sign_bit();
    a.partial_cmp(b)
        .unwrap_or(std::cmp::Ordering::Equal)
        .then_with(|| negative(b).cmp(&negative(a)))
}

/// The median of `block` (one element, or an even number): the mean of the
/// two middle elements, rounded as a mean; NaN if any element is NaN.
fn median<T: Element>(block: &mut [T]) -> T {
    if let Some(&nan) = block.iter().find(|v| v.is_nan()) {
        return nan;
    }
    block.sort_unstable_by(total_order);
    match block.len() {
        1 => block[0],
        n => {
            let middle = [block[n / 2 - 1], block[n / 2]];
            let mean = T::mean(middle[0].widen() + middle[1].widen(), 1);
            match T::SUM_MAY_OVERFLOW && !mean.is_finite() {
                true => T::scaled_mean(std::iter::once(&middle[..]), 1),
                false => mean,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_means_round_half_to_even() {
        assert_eq!(<u8 as Element>::mean(5, 1), 2); // 2.5 -> 2
        assert_eq!(<u8 as Element>::mean(7, 1), 4); // 3.5 -> 4
        assert_eq!(<i16 as Element>::mean(-5, 1), -2); // -2.5 -> -2
        assert_eq!(<i16 as Element>::mean(-7, 1), -4); // -3.5 -> -4
        assert_eq!(<i32 as Element>::mean(-6, 2), -2); // -1.5 -> -2
        assert_eq!(
            <u64 as Element>::mean(u64::MAX as u128 * 4 - 1, 2),
            u64::MAX
        ); // max - 0.25
        assert_eq!(<i64 as Element>::mean(i64::MIN as i128 * 8, 3), i64::MIN);
    }

    #[test]
    fn sixteen_bit_floats_are_rounded_once_from_the_exact_mean() {
        // 512.25 + 2^-26 lies just above the tie between 512 and 512.5:
        // rounded through f32 it becomes the tie, and goes to 512
        assert_eq!(
            narrow(512.25 + power_of_two(-26), 10, 5),
            f16::from_f32(512.5).to_bits()
        );
        // 128.5 + 2^-40 lies just above the tie between 128 and 129 in bf16
        // (its low bits are the ones `half` drops)
        assert_eq!(
            narrow(128.5 + power_of_two(-40), 7, 8),
            bf16::from_f32(129.0).to_bits()
        );
        for (v, bits) in [
            (0.0, 0x0000),
            (-0.0, 0x8000),
            (65504.0, 0x7BFF),
            (65519.99, 0x7BFF),
            (65520.0, 0x7C00), // the tie above the largest goes to infinity
            (-1e300, 0xFC00),
            (power_of_two(-24), 0x0001), // the smallest subnormal
            (power_of_two(-25), 0x0000), // its half: a tie, to even 0
            (1.5 * power_of_two(-25), 0x0001),
            (power_of_two(-14) * (1.0 - power_of_two(-12)), 0x0400), // rounds up into the normals
            (f64::NAN, 0x7E00),
            (-f64::NAN, 0x7E00),
        ] {
            assert_eq!(narrow(v, 10, 5), bits, "{v:e}");
        }
        // every f16 goes back to itself
        for bits in 0..=u16::MAX {
            let h = f16::from_bits(bits);
            if !h.is_nan() {
                assert_eq!(narrow(h.to_f64(), 10, 5), bits);
            }
            let b = bf16::from_bits(bits);
            if !b.is_nan() {
                assert_eq!(narrow(b.to_f64(), 7, 8), bits);
            }
        }
    }

    #[test]
    fn a_mean_over_a_nan_is_the_quiet_nan_and_medians_order_zeros() {
        let negative_nan = f64::from_bits(0xFFF8_0000_0000_0001);
        assert_eq!(
            <f64 as Element>::mean(negative_nan, 1).to_bits(),
            f64::NAN.to_bits()
        );
        assert_eq!(
            <f32 as Element>::mean(negative_nan, 1).to_bits(),
            f32::NAN.to_bits()
        );
        let mut block = [0.0f32, -0.0, -0.0, 1.0];
        // sorted -0, -0, 0, 1: the middle two are -0 and 0, whose sum is +0
        assert_eq!(median(&mut block).to_bits(), 0);
        let mut block = [0.0f32, -0.0, -0.0, -1.0];
        assert_eq!(median(&mut block).to_bits(), (-0.0f32).to_bits());
    }

    /// Halves one plane of `f64`s with `method`.
    fn halved_f64(method: Method, plane: &[u64], halve: &[bool], src: &[f64]) -> Vec<f64> {
        let h = Halving::new(plane, halve);
        let mut dst = vec![0f64; h.child_elements()];
        halve_planes(
            method,
            DType::F64,
            &h,
            1,
            bytemuck::cast_slice(src),
            bytemuck::cast_slice_mut(&mut dst),
        )
        .unwrap();
        dst
    }

    #[test]
    fn means_and_medians_of_huge_finite_f64s_are_finite() {
        let max = f64::MAX;
        // every mean path: blocks of 1, 2 and 4 rows of pairs (the
        // vectorised ones), 8 rows and an odd edge (the general one)
        for (plane, halve) in [
            (vec![1u64, 2], vec![false, true]),
            (vec![2, 2], vec![true, true]),
            (vec![2, 2, 2], vec![true, true, true]),
            (vec![2, 2, 2, 2], vec![true, true, true, true]),
            (vec![2, 3], vec![true, true]),
            (vec![2, 2], vec![true, false]),
        ] {
            let n = plane.iter().product::<u64>() as usize;
            for (src, expected) in [
                (vec![max; n], max),
                (vec![-max; n], -max),
                (
                    (0..n)
                        .map(|i| if i % 2 == 0 { max } else { max / 2.0 })
                        .collect(),
                    f64::NAN,
                ),
            ] {
                for method in [Method::Mean, Method::Median] {
                    let out = halved_f64(method, &plane, &halve, &src);
                    for v in &out {
                        assert!(v.is_finite(), "{method} of {plane:?} {halve:?}: {out:?}");
                        assert!(v.abs() <= max);
                    }
                    if !expected.is_nan() {
                        assert!(out.iter().all(|v| *v == expected), "{method}: {out:?}");
                    }
                }
            }
        }
        // the exact mean of MAX and MAX / 2 is three quarters of MAX
        let out = halved_f64(Method::Mean, &[1, 2], &[false, true], &[max, max / 2.0]);
        assert_eq!(out, [max * 0.75]);
        // sums that overflow both ways, into a NaN
        let out = halved_f64(
            Method::Mean,
            &[2, 2],
            &[true, true],
            &[max, max, -max, -max],
        );
        assert_eq!(out, [0.0]);
        // an infinite element still makes an infinite mean, opposite ones
        // and a NaN the quiet NaN
        let (inf, nan) = (f64::INFINITY, f64::from_bits(0xFFF8_0000_0000_0001));
        let out = halved_f64(
            Method::Mean,
            &[1, 8],
            &[false, true],
            &[max, inf, max, -inf, inf, -inf, nan, max],
        );
        assert_eq!(out[..2], [inf, -inf]);
        assert_eq!(out[2].to_bits(), f64::NAN.to_bits());
        assert_eq!(out[3].to_bits(), f64::NAN.to_bits());
    }

    #[test]
    fn f64_means_are_unchanged_wherever_the_plain_sum_is_finite() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2000 {
            // magnitudes from tiny to the largest, either sign, half of
            // them in the top binades, where sums overflow
            let block: Vec<f64> = (0..4)
                .map(|_| {
                    let exponent = match next() % 2 {
                        0 => 1021 + (next() % 3) as i32,
                        _ => (next() % 2046) as i32 - 1022,
                    };
                    let mantissa = 1.0 + (next() % 1024) as f64 / 1024.0;
                    let sign = if next() % 2 == 0 { 1.0 } else { -1.0 };
                    sign * mantissa * power_of_two(exponent)
                })
                .collect();
            let out = halved_f64(Method::Mean, &[2, 2], &[true, true], &block)[0];
            let sum = 0.0 + (block[0] + block[1]) + (block[2] + block[3]);
            assert!(out.is_finite(), "{block:?}");
            if sum.is_finite() {
                assert_eq!(out.to_bits(), (sum / 4.0).to_bits(), "{block:?}");
            } else {
                let largest = block.iter().fold(0f64, |m, v| m.max(v.abs()));
                assert!(out.abs() <= largest, "{block:?}: {out}");
                let exact: f64 = block.iter().map(|v| v / 4.0).sum();
                assert!(
                    (out - exact).abs() <= largest * 1e-15,
                    "{block:?}: {out} vs {exact}"
                );
            }
            let mut sorted = block.clone();
            let median = halved_f64(Method::Median, &[2, 2], &[true, true], &block)[0];
            sorted.sort_by(f64::total_cmp);
            assert!(
                median.is_finite() && median >= sorted[1] && median <= sorted[2],
                "{block:?}: {median}"
            );
        }
    }

    #[test]
    fn parent_rows_stop_at_the_edge() {
        // plane 3 x 5 halved in both: child 2 x 3; child row 1 reads parent row 2 only
        let h = Halving::new(&[3, 5], &[true, true]);
        let mut rows = Vec::new();
        h.parent_rows(0, &mut rows);
        assert_eq!(rows, vec![0, 5]);
        h.parent_rows(1, &mut rows);
        assert_eq!(rows, vec![10]);
    }

    #[test]
    fn a_block_cut_by_the_edge_reduces_what_exists() {
        // one 3 x 3 u16 plane, mean, halved in both: child 2 x 2
        let src: Vec<u16> = vec![1, 2, 3, 4, 5, 6, 7, 8, 9];
        let mut dst = vec![0u16; 4];
        let h = Halving::new(&[3, 3], &[true, true]);
        halve_planes(
            Method::Mean,
            DType::U16,
            &h,
            1,
            bytemuck::cast_slice(&src),
            bytemuck::cast_slice_mut(&mut dst),
        )
        .unwrap();
        // (1+2+4+5)/4 = 3, (3+6)/2 = 4.5 -> 4, (7+8)/2 = 7.5 -> 8, 9
        assert_eq!(dst, vec![3, 4, 8, 9]);
    }
}
