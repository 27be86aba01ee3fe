//! Complement: the layout of the offsets a layout does not reach, in order.

use crate::coalesce::{filter_into, push_merged};
use crate::error::{ceil_div, div_rem, mul, LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::layout::{Layout, Modes};

/// `complement(A, M)`: a layout R, strictly increasing, disjoint from A on
/// `i ≥ 1`, such that `(A, R)` covers `[0, M)` once when A divides it.
///
/// The modes of `filter(A)` are sorted by stride; each fills the gap below it
/// (`d_k / current : current`, integer division as in CuTe's C++), and a
/// last mode repeats the whole up to `M`. A must be injective and
/// non-negative; strides that do not divide evenly are answered as C++
/// answers them (then `(A, R)` need not cover `[0, M)`).
/// `M` may be a shape (an `IntTuple`): it is divided mode by mode, as CuTe does.
///
/// ```
/// use retile_layout::{complement, IntTuple, Layout};
/// let a: Layout = "(2,2):(1,4)".parse().unwrap();
/// assert_eq!(complement(&a, &IntTuple::Int(24)).unwrap().to_string(), "(2,3):(2,8)");
/// let b: Layout = "4:2".parse().unwrap();
/// assert_eq!(complement(&b, &IntTuple::Int(24)).unwrap().to_string(), "(2,3):(1,8)");
/// // CUTLASS's own cases, whose strides do not divide evenly
/// let c: Layout = "(4,6):(1,6)".parse().unwrap();
/// assert_eq!(complement(&c, &IntTuple::Int(34)).unwrap().to_string(), "1:0");
/// let d: Layout = "(4,10):(1,10)".parse().unwrap();
/// assert_eq!(complement(&d, &IntTuple::Int(94)).unwrap().to_string(), "2:4");
/// ```
pub fn complement(a: &Layout, cotarget: &IntTuple) -> Result<Layout> {
    match cotarget {
        IntTuple::Int(m) => complement_leaves(a, &[*m]),
        IntTuple::Tuple(_) => complement_leaves(a, &cotarget.leaves()),
    }
}

/// `complement(A, M)` for a cotarget given by its leaves, left to right
/// (CuTe's tuple `ceil_div` only depends on them).
pub(crate) fn complement_leaves(a: &Layout, cotarget: &[i64]) -> Result<Layout> {
    if cotarget.iter().any(|&v| v < 1) {
        let text = cotarget
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        return Err(LayoutError::BadCotarget { cotarget: text });
    }
    let mut modes = Modes::new();
    filter_into(a, &mut modes)?;
    if modes.as_slice() == [(1, 0)] {
        let size = cotarget
            .iter()
            .try_fold(1i64, |acc, &v| mul(acc, v, "a cotarget"))?;
        return Layout::from_shape(IntTuple::Int(size));
    }
    if let Some((mode, &(_, stride))) = modes.iter().enumerate().find(|(_, m)| m.1 < 0) {
        return Err(LayoutError::NegativeStride {
            op: "complement",
            mode,
            stride,
        });
    }
    Layout::flat_built(|out| {
        let mut current = 1i64;
        for k in sorted_by_stride(&modes) {
            let (shape, stride) = modes[k];
            // integer division, as CuTe's C++ does: strides that do not
            // divide evenly are answered; only an extent 0 (A not injective) is not
            let (quotient, _) = div_rem(stride, current);
            if quotient == 0 {
                return Err(LayoutError::ComplementNotDivisible {
                    mode: k,
                    stride,
                    covered: current,
                });
            }
            push_merged(out, 0, (quotient, current))?;
            current = mul(stride, shape, "a complement stride")?;
        }
        push_merged(out, 0, (ceil_div_leaves(cotarget, current)?, current))
    })
}

/// The size of CuTe's `ceil_div(M, divisor)` for a cotarget with these
/// leaves: each leaf is divided by what is left of the divisor, which is in
/// turn divided by the leaf.
fn ceil_div_leaves(leaves: &[i64], divisor: i64) -> Result<i64> {
    let mut rest = divisor;
    leaves.iter().try_fold(1i64, |acc, &v| {
        let q = ceil_div(v, rest);
        rest = ceil_div(rest, v);
        mul(acc, q, "a complement extent")
    })
}

/// Indices of `modes` in ascending order of stride (stable): an insertion
/// sort by swaps, the fastest for the few modes of a layout.
pub(crate) fn sorted_by_stride(modes: &[(i64, i64)]) -> smallvec::SmallVec<[usize; 8]> {
    let mut order: smallvec::SmallVec<[usize; 8]> = smallvec::SmallVec::new();
    for k in 0..modes.len() {
        order.push(k);
        let mut j = k;
        while j > 0 && modes[order[j - 1]].1 > modes[k].1 {
            order.swap(j - 1, j);
            j -= 1;
        }
    }
    order
}
