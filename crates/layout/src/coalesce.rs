//! Coalesce and filter: the same function with fewer modes.

use crate::error::{mul, LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::layout::{Layout, Modes};

/// Merges modes from the back (CuTe's `bw_coalesce`): size-1 modes vanish,
/// and `s0:d0` followed by `s1:(s0*d0)` becomes `(s0*s1):d0`.
/// `front` is the initial last mode.
fn bw_coalesce(modes: &[(i64, i64)], front: (i64, i64)) -> Result<Modes> {
    let mut reversed = Modes::new();
    reversed.push(front);
    for &(s, d) in modes.iter().rev() {
        if s == 1 {
            continue;
        }
        let single = reversed.len() == 1;
        let Some(last) = reversed.last_mut() else { break };
        if single && last.0 == 1 {
            *last = (s, d);
        } else if mul(s, d, "coalesce")? == last.1 {
            *last = (mul(s, last.0, "coalesce")?, d);
        } else {
            reversed.push((s, d));
        }
    }
    if reversed.len() == 1 && reversed[0].0 == 1 {
        reversed[0] = (1, 0);
    }
    reversed.reverse();
    Ok(reversed)
}

/// The flattened modes of a layout, merged where possible: same function and
/// size on the domain, depth at most 1.
pub(crate) fn coalesced_modes(layout: &Layout) -> Result<Modes> {
    coalesce_modes(layout.flat_modes())
}

/// Like [`coalesced_modes`], but the function is also kept past the size
/// (CuTe's `coalesce_x`): a trailing size-1 mode keeps its stride.
pub(crate) fn coalesced_modes_x(layout: &Layout) -> Result<Modes> {
    let flat = layout.flat_modes();
    let (last, rest) = flat.split_last().unwrap_or((&(1, 0), &[]));
    let front = if last.0 == 1 { (2, last.1) } else { *last };
    bw_coalesce(rest, front)
}

/// Coalesce: flatten and merge modes; the result has depth ≤ 1, the same size
/// and the same values `L(i)` for `i < size(L)`. An all-size-1 layout gives `1:0`.
///
/// ```
/// use retile_layout::{coalesce, Layout};
/// let l: Layout = "(2,(1,6)):(1,(6,2))".parse().unwrap();
/// assert_eq!(coalesce(&l).unwrap().to_string(), "12:1");
/// ```
pub fn coalesce(layout: &Layout) -> Result<Layout> {
    Ok(Layout::from_flat(&coalesced_modes(layout)?))
}

/// Coalesce by profile: each mode named by a tuple `profile` is coalesced on
/// its own (recursively); an integer profile coalesces the whole layout.
///
/// ```
/// use retile_layout::{coalesce_profile, Layout};
/// let l: Layout = "(2,(1,6)):(1,(6,2))".parse().unwrap();
/// let p = "(1,1)".parse().unwrap();
/// assert_eq!(coalesce_profile(&l, &p).unwrap().to_string(), "(2,6):(1,2)");
/// ```
pub fn coalesce_profile(layout: &Layout, profile: &IntTuple) -> Result<Layout> {
    match profile {
        IntTuple::Int(_) => coalesce(layout),
        IntTuple::Tuple(ps) => {
            if ps.len() > layout.rank() {
                return Err(LayoutError::RankMismatch {
                    op: "coalesce",
                    reason: format!(
                        "the profile {profile} has {} modes but the layout has rank {}",
                        ps.len(),
                        layout.rank()
                    ),
                });
            }
            by_mode(layout, ps.len(), |i, mode| coalesce_profile(&mode, &ps[i]))
        }
    }
}

/// Applies `f` to each of the first `count` modes, keeps the others, and
/// gathers the results as a tuple layout (CuTe's `transform_layout`).
pub(crate) fn by_mode(
    layout: &Layout,
    count: usize,
    mut f: impl FnMut(usize, Layout) -> Result<Layout>,
) -> Result<Layout> {
    let modes = layout
        .modes_iter()
        .enumerate()
        .map(|(i, m)| if i < count { f(i, m) } else { Ok(m) })
        .collect::<Result<Vec<_>>>()?;
    Ok(Layout::from_modes(modes))
}

/// Filter: drop stride-0 and size-1 modes, then coalesce.
///
/// ```
/// use retile_layout::{filter, Layout};
/// let l: Layout = "(4,3,2):(0,1,3)".parse().unwrap();
/// assert_eq!(filter(&l).unwrap().to_string(), "6:1");
/// ```
pub fn filter(layout: &Layout) -> Result<Layout> {
    Ok(Layout::from_flat(&filtered_modes(layout)?))
}

/// Coalesces flat `(extent, stride)` pairs.
pub(crate) fn coalesce_modes(modes: &[(i64, i64)]) -> Result<Modes> {
    let (last, rest) = modes.split_last().unwrap_or((&(1, 0), &[]));
    bw_coalesce(rest, *last)
}

/// The modes of `filter(layout)`.
pub(crate) fn filtered_modes(layout: &Layout) -> Result<Modes> {
    let kept: Modes = layout.flat_modes().iter().copied().filter(|&(_, d)| d != 0).collect();
    coalesce_modes(&kept)
}
