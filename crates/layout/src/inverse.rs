//! Inverses and the largest common vector of two layouts.

use crate::coalesce::{coalesce_into, coalesced_flat};
use crate::complement::sorted_by_stride;
use crate::composition::composition;
use crate::error::{div_rem, mul, LayoutError, Result};
use crate::layout::{Layout, Modes};

/// The coalesced modes of `layout` and the exclusive prefix products of
/// their extents (the index step of each mode).
fn coalesced_steps(layout: &Layout, modes: &mut Modes, steps: &mut Steps) -> Result<()> {
    coalesce_into(layout, modes)?;
    let mut step = 1i64;
    for &(s, _) in modes.iter() {
        steps.push(step);
        step = mul(step, s, "an index step")?;
    }
    Ok(())
}

/// Index steps of a layout's modes, inline up to 8.
type Steps = smallvec::SmallVec<[i64; 8]>;

/// `right_inverse(L)`: the largest R with `L(R(i)) = i` for `i < size(R)`.
///
/// The coalesced modes are taken in order of stride; a mode joins while its
/// stride continues the contiguous run (`stride == covered`); modes that do
/// not, stride-0 modes included, are skipped.
///
/// ```
/// use retile_layout::{right_inverse, Layout};
/// let l: Layout = "(4,2):(2,1)".parse().unwrap();
/// let r = right_inverse(&l).unwrap();
/// assert_eq!(r.to_string(), "(2,4):(4,1)");
/// for i in 0..8 { assert_eq!(l.eval(r.eval(i).unwrap()).unwrap(), i); }
/// ```
pub fn right_inverse(layout: &Layout) -> Result<Layout> {
    let (mut modes, mut steps) = (Modes::new(), Steps::new());
    coalesced_steps(layout, &mut modes, &mut steps)?;
    let mut result = Modes::new();
    result.push((1, 0));
    let mut covered = 1i64;
    for k in sorted_by_stride(&modes) {
        let (shape, stride) = modes[k];
        if stride == covered {
            result.push((shape, steps[k]));
            covered = mul(shape, stride, "a right inverse")?;
        }
    }
    coalesced_flat(&result)
}

/// `left_inverse(L)`: an R with `L(R(L(i))) = L(i)` for `i < size(L)`, so
/// `R(L(i)) = i` when L is injective. Strides must be non-negative.
///
/// As in CuTe, `right_inverse(make_layout(L, complement(L)))`: the
/// complement fills the gaps of L's image, so that `(L, L*)` is one-to-one
/// onto `[0, cosize)` and its right inverse undoes L. That needs L's strides,
/// in order, each a multiple of the extent the smaller ones span. Where they
/// are not, C++'s complement divides with truncation and its answer breaks the
/// post-condition (`(4,2):(1,5)` would give `4:1`); retile then inverts by
/// stride ratio, which needs each stride a multiple of the one before.
///
/// The composition is computed in one pass (`completed_inverse`); a
/// property test checks it against `right_inverse`, `complement` and
/// `make_layout` themselves.
///
/// ```
/// use retile_layout::{left_inverse, Layout};
/// let l: Layout = "(4,2):(1,5)".parse().unwrap();
/// assert_eq!(left_inverse(&l).unwrap().to_string(), "(5,2):(1,4)");
/// let l: Layout = "(2,4):(4,1)".parse().unwrap();
/// assert_eq!(left_inverse(&l).unwrap().to_string(), "(4,2):(2,1)");
/// ```
pub fn left_inverse(layout: &Layout) -> Result<Layout> {
    let (mut modes, mut steps) = (Modes::new(), Steps::new());
    coalesced_steps(layout, &mut modes, &mut steps)?;
    if let Some((mode, &(_, stride))) = modes.iter().enumerate().find(|(_, m)| m.1 < 0) {
        return Err(LayoutError::NegativeStride {
            op: "left_inverse",
            mode,
            stride,
        });
    }
    let order = sorted_by_stride(&modes);
    if !tiles_evenly(&modes, &order) {
        return stride_ratio_inverse(&modes, &steps, &order);
    }
    completed_inverse(&modes, &steps, &order)
}

/// `right_inverse(make_layout(L, complement(L)))` for the coalesced,
/// non-negative modes of an L whose strides tile evenly, without making the
/// three layouts. In stride `order` the one-to-one `(L, L*)` alternates the gap
/// below each mode of L, `d_k / current : current` (index step: `size(L)`
/// times the gaps before it), with that mode (index step `steps[k]`), and
/// every stride continues the run, so the right inverse is those pieces in
/// that order, coalesced; stride-0 modes are skipped as right_inverse skips
/// them. The complement's last mode, `ceil(cosize(L) / current)`, is 1 here.
fn completed_inverse(modes: &[(i64, i64)], steps: &[i64], order: &[usize]) -> Result<Layout> {
    let mut gap_step = modes
        .iter()
        .try_fold(1i64, |acc, m| mul(acc, m.0, "a left inverse"))?;
    let mut current = 1i64;
    let mut pieces = Modes::new();
    for &k in order {
        let (shape, stride) = modes[k];
        if stride == 0 {
            continue;
        }
        let gap = div_rem(stride, current).0;
        pieces.push((gap, gap_step));
        pieces.push((shape, steps[k]));
        gap_step = mul(gap_step, gap, "a left inverse")?;
        current = mul(stride, shape, "a left inverse")?;
    }
    coalesced_flat(&pieces)
}

/// Whether each non-zero stride, in `order`, is a multiple of the
/// extent that the modes of smaller stride span (so the complement is exact).
fn tiles_evenly(modes: &[(i64, i64)], order: &[usize]) -> bool {
    let mut spanned = 1i64;
    for &k in order {
        let (shape, stride) = modes[k];
        if stride == 0 {
            continue;
        }
        if stride < spanned || div_rem(stride, spanned).1 != 0 {
            return false;
        }
        spanned = stride.saturating_mul(shape);
    }
    true
}

/// The left inverse of coalesced, non-negative `modes` with index `steps`,
/// by stride ratio: the offset is split in the mixed radix of the ratios of
/// successive strides (the last digit unbounded) and each digit is sent to
/// its mode's index step. Each stride must be a multiple of the one before.
fn stride_ratio_inverse(modes: &[(i64, i64)], steps: &[i64], order: &[usize]) -> Result<Layout> {
    let mut pairs = Modes::new();
    let (mut step, mut covered) = (0i64, 1i64);
    for &k in order {
        let stride = modes[k].1;
        if stride == 0 {
            continue;
        }
        let (quotient, remainder) = div_rem(stride, covered);
        if remainder != 0 {
            return Err(LayoutError::LeftInverseDivisibility {
                mode: k,
                stride,
                covered,
            });
        }
        pairs.push((quotient, step));
        (step, covered) = (steps[k], stride);
    }
    pairs.push((order.last().map_or(1, |&k| modes[k].0), step));
    coalesced_flat(&pairs)
}

/// The largest `N` such that A and B agree on their first `N` indices' order
/// in memory: A's values at B's first `N` offsets are `0..N` (CuTe's
/// `max_common_vector`). 1 when nothing is shared.
///
/// ```
/// use retile_layout::{max_common_vector, Layout};
/// let a: Layout = "(4,8):(1,4)".parse().unwrap();
/// let b: Layout = "(4,8):(1,8)".parse().unwrap();
/// assert_eq!(max_common_vector(&a, &b).unwrap(), 4);
/// ```
pub fn max_common_vector(a: &Layout, b: &Layout) -> Result<i64> {
    Ok(common_run(a, b)?.map_or(1, |(extent, _)| extent))
}

/// The layout of the largest common vector: B's coordinates of the offsets
/// that A and B both hold contiguously (CuTe's `max_common_layout`); `1:0` when
/// nothing is shared.
///
/// ```
/// use retile_layout::{max_common_layout, Layout};
/// let a: Layout = "(4,8):(1,4)".parse().unwrap();
/// let b: Layout = "(4,8):(1,8)".parse().unwrap();
/// assert_eq!(max_common_layout(&a, &b).unwrap().to_string(), "4:1");
/// ```
pub fn max_common_layout(a: &Layout, b: &Layout) -> Result<Layout> {
    match common_run(a, b)? {
        Some((extent, inv_b)) => composition(&inv_b, &Layout::vector(extent, 1)?),
        None => Ok(Layout::from_flat(&[])),
    }
}

/// The extent of the stride-1 first mode of `coalesce(A ∘ right_inverse(B))`,
/// with `right_inverse(B)`, or `None` when that mode is not stride 1.
fn common_run(a: &Layout, b: &Layout) -> Result<Option<(i64, Layout)>> {
    let inv_b = right_inverse(b)?;
    let mut common = Modes::new();
    coalesce_into(&composition(a, &inv_b)?, &mut common)?;
    Ok(match common.first() {
        Some(&(extent, 1)) => Some((extent, inv_b)),
        _ => None,
    })
}
