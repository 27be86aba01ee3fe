//! Complement: the layout of the offsets a layout does not reach, in order.

use crate::coalesce::{coalesce, filtered_modes};
use crate::error::{mul, LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::layout::Layout;

/// `complement(A, M)`: a layout R, strictly increasing, disjoint from A on
/// `i ≥ 1`, such that `(A, R)` covers `[0, M)` once when A divides it.
///
/// The modes of `filter(A)` are sorted by stride; each fills the gap below it
/// (`d_k / current : current`), and a last mode repeats the whole up to `M`.
/// A must be injective with strides that divide evenly, and non-negative.
/// `M` may be a shape (an `IntTuple`): it is divided mode by mode, as CuTe does.
///
/// ```
/// use retile_layout::{complement, IntTuple, Layout};
/// let a: Layout = "(2,2):(1,4)".parse().unwrap();
/// assert_eq!(complement(&a, &IntTuple::Int(24)).unwrap().to_string(), "(2,3):(2,8)");
/// let b: Layout = "4:2".parse().unwrap();
/// assert_eq!(complement(&b, &IntTuple::Int(24)).unwrap().to_string(), "(2,3):(1,8)");
/// ```
pub fn complement(a: &Layout, cotarget: &IntTuple) -> Result<Layout> {
    if cotarget.leaves().iter().any(|&v| v < 1) || cotarget.size().is_err() {
        return Err(LayoutError::BadCotarget { cotarget: cotarget.to_string() });
    }
    let modes = filtered_modes(a)?;
    if modes == [(1, 0)] {
        return Layout::from_shape(IntTuple::Int(cotarget.size()?));
    }
    if let Some((mode, &(_, stride))) = modes.iter().enumerate().find(|(_, m)| m.1 < 0) {
        return Err(LayoutError::NegativeStride { op: "complement", mode, stride });
    }
    let order: Vec<usize> = sorted_by_stride(&modes);
    let mut result = Vec::with_capacity(modes.len() + 1);
    let mut current = 1i64;
    for &k in &order {
        let (shape, stride) = modes[k];
        if stride % current != 0 || stride < current {
            return Err(LayoutError::ComplementNotDivisible { mode: k, stride, covered: current });
        }
        result.push((stride / current, current));
        current = mul(stride, shape, "a complement stride")?;
    }
    let rest = cotarget.ceil_div(current).size()?;
    result.push((rest, current));
    coalesce(&Layout::from_flat(&result))
}

/// Indices of `modes` in ascending order of stride (stable).
pub(crate) fn sorted_by_stride(modes: &[(i64, i64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..modes.len()).collect();
    order.sort_by_key(|&k| modes[k].1);
    order
}
