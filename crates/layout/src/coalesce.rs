//! Coalesce and filter: the same function with fewer modes.

use crate::error::{mul, LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::layout::{Layout, LayoutBuilder, Modes};

/// Appends the merge of `modes` to `out`: size-1 modes vanish, and `s0:d0`
/// followed by `s1:(s0*d0)` becomes `(s0*s1):d0`; nothing left gives `1:0`.
/// (CuTe merges from the back; merging adjacent pairs is associative along
/// the chain, so merging from the front gives the same modes.)
fn merge_into(modes: impl Iterator<Item = (i64, i64)>, out: &mut Modes) -> Result<()> {
    let start = out.len();
    for mode in modes {
        push_merged(out, start, mode)?;
    }
    if out.len() == start {
        out.push((1, 0));
    }
    Ok(())
}

/// Appends `s:d` to the modes of `out` from `start` on, merged into the last
/// of them where coalesce would merge it (a size-1 mode vanishes).
pub(crate) fn push_merged(out: &mut Modes, start: usize, (s, d): (i64, i64)) -> Result<()> {
    if s == 1 {
        return Ok(());
    }
    let mergeable = out.len() > start;
    match out.last_mut() {
        Some(last) if mergeable && mul(last.0, last.1, "coalesce")? == d => {
            last.0 = mul(last.0, s, "coalesce")?;
        }
        _ => out.push((s, d)),
    }
    Ok(())
}

/// The flat layout of `modes` coalesced.
pub(crate) fn coalesced_flat(modes: &[(i64, i64)]) -> Result<Layout> {
    Layout::flat_built(|out| merge_into(modes.iter().copied(), out))
}

/// Appends the flattened modes of a layout to `out`, merged where possible:
/// same function and size on the domain, depth at most 1.
pub(crate) fn coalesce_into(layout: &Layout, out: &mut Modes) -> Result<()> {
    merge_into(layout.flat_modes().iter().copied(), out)
}

/// Like [`coalesce_into`], but the function is also kept past the size
/// (CuTe's `coalesce_x`): a trailing size-1 mode keeps its stride, standing
/// as an extent-2 mode that is never merged away.
pub(crate) fn coalesce_x_into(layout: &Layout, out: &mut Modes) -> Result<()> {
    let flat = layout.flat_modes();
    let (last, rest) = flat.split_last().unwrap_or((&(1, 0), &[]));
    let last = if last.0 == 1 { (2, last.1) } else { *last };
    merge_into(rest.iter().copied().chain(std::iter::once(last)), out)
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
    coalesced_flat(layout.flat_modes())
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
            LayoutBuilder::build(|out| {
                by_mode(layout, ps.len(), out, |i, mode, out| {
                    out.push(&coalesce_profile(mode, &ps[i])?);
                    Ok(())
                })
            })
        }
    }
}

/// Appends to `out` the tuple of what `f` appends for each of the first
/// `count` modes, and the other modes as they are (CuTe's `transform_layout`).
pub(crate) fn by_mode(
    layout: &Layout,
    count: usize,
    out: &mut LayoutBuilder,
    mut f: impl FnMut(usize, &Layout, &mut LayoutBuilder) -> Result<()>,
) -> Result<()> {
    out.open();
    layout.try_for_each_mode(|i, mode| {
        if i < count {
            f(i, mode, out)
        } else {
            out.push(mode);
            Ok(())
        }
    })?;
    out.close();
    Ok(())
}

/// Filter: drop stride-0 and size-1 modes, then coalesce.
///
/// ```
/// use retile_layout::{filter, Layout};
/// let l: Layout = "(4,3,2):(0,1,3)".parse().unwrap();
/// assert_eq!(filter(&l).unwrap().to_string(), "6:1");
/// ```
pub fn filter(layout: &Layout) -> Result<Layout> {
    Layout::flat_built(|out| filter_into(layout, out))
}

/// Appends the modes of `filter(layout)` to `out`.
pub(crate) fn filter_into(layout: &Layout, out: &mut Modes) -> Result<()> {
    merge_into(
        layout.flat_modes().iter().copied().filter(|&(_, d)| d != 0),
        out,
    )
}
