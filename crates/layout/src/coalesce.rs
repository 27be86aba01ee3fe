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
    for (s, d) in modes {
        if s == 1 {
            continue;
        }
        let mergeable = out.len() > start;
        match out.last_mut() {
            Some(last) if mergeable && mul(last.0, last.1, "coalesce")? == d => {
                last.0 = mul(last.0, s, "coalesce")?;
            }
            _ => out.push((s, d)),
        }
    }
    if out.len() == start {
        out.push((1, 0));
    }
    Ok(())
}

/// Coalesces flat `(extent, stride)` pairs.
pub(crate) fn coalesce_modes(modes: &[(i64, i64)]) -> Result<Modes> {
    let mut out = Modes::new();
    merge_into(modes.iter().copied(), &mut out)?;
    Ok(out)
}

/// The flattened modes of a layout, merged where possible: same function and
/// size on the domain, depth at most 1.
pub(crate) fn coalesced_modes(layout: &Layout) -> Result<Modes> {
    coalesce_modes(layout.flat_modes())
}

/// Like [`coalesced_modes`], but the function is also kept past the size
/// (CuTe's `coalesce_x`): a trailing size-1 mode keeps its stride, standing
/// as an extent-2 mode that is never merged away.
pub(crate) fn coalesced_modes_x(layout: &Layout) -> Result<Modes> {
    let flat = layout.flat_modes();
    let (last, rest) = flat.split_last().unwrap_or((&(1, 0), &[]));
    let last = if last.0 == 1 { (2, last.1) } else { *last };
    let mut out = Modes::new();
    merge_into(rest.iter().copied().chain(std::iter::once(last)), &mut out)?;
    Ok(out)
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
    Ok(Layout::from_flat_modes(coalesced_modes(layout)?))
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
    let mut out = LayoutBuilder::default();
    out.open();
    for (i, mode) in layout.modes_iter().enumerate() {
        if i < count {
            out.push(&f(i, mode)?);
        } else {
            out.push(&mode);
        }
    }
    out.close();
    Ok(out.finish())
}

/// Filter: drop stride-0 and size-1 modes, then coalesce.
///
/// ```
/// use retile_layout::{filter, Layout};
/// let l: Layout = "(4,3,2):(0,1,3)".parse().unwrap();
/// assert_eq!(filter(&l).unwrap().to_string(), "6:1");
/// ```
pub fn filter(layout: &Layout) -> Result<Layout> {
    Ok(Layout::from_flat_modes(filtered_modes(layout)?))
}

/// The modes of `filter(layout)`.
pub(crate) fn filtered_modes(layout: &Layout) -> Result<Modes> {
    let mut out = Modes::new();
    merge_into(
        layout.flat_modes().iter().copied().filter(|&(_, d)| d != 0),
        &mut out,
    )?;
    Ok(out)
}
