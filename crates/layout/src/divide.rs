//! The divide family: split a layout into (tile, rest).

use smallvec::SmallVec;

use crate::coalesce::coalesce_into;
use crate::complement::complement_leaves;
use crate::composition::{apply_tiler, composition_into};
use crate::error::{LayoutError, Result};
use crate::layout::Modes;
use crate::layout::{Layout, LayoutBuilder};
use crate::tiler::Tiler;

/// `logical_divide(A, T)`: for a layout tiler B,
/// `A ∘ (B, complement(B, shape(coalesce(A))))`, so mode 0 is `A ∘ B` (the
/// tile) and mode 1 walks the tiles; a by-mode tiler divides mode by mode.
///
/// ```
/// use retile_layout::{logical_divide, Layout, Tiler};
/// let a: Layout = "(4,2,3):(2,1,8)".parse().unwrap();
/// let t: Tiler = "4:2".parse().unwrap();
/// assert_eq!(logical_divide(&a, &t).unwrap().to_string(), "((2,2),(2,3)):((4,1),(2,8))");
/// ```
pub fn logical_divide(a: &Layout, tiler: &Tiler) -> Result<Layout> {
    let divide = |a: &Layout, b: &Layout, out: &mut LayoutBuilder| {
        let mut flat_a = Modes::new();
        coalesce_into(a, &mut flat_a)?;
        let cotarget: SmallVec<[i64; 8]> = flat_a.iter().map(|m| m.0).collect();
        let rest = complement_leaves(b, &cotarget)?;
        composition_into(a, &Layout::pair(b, &rest), out)
    };
    LayoutBuilder::build(|out| apply_tiler("logical_divide", a, tiler, &divide, out))
}

/// `zipped_divide(A, T)`: `((tiles...), (rests...))` — the tile modes of a
/// by-mode divide gathered in mode 0, the rest modes in mode 1.
///
/// ```
/// use retile_layout::{zipped_divide, Layout, Tiler};
/// let a: Layout = "(4,6):(1,4)".parse().unwrap();
/// let t: Tiler = "<2,3>".parse().unwrap();
/// assert_eq!(zipped_divide(&a, &t).unwrap().to_string(), "((2,3),(2,2)):((1,4),(2,12))");
/// ```
pub fn zipped_divide(a: &Layout, tiler: &Tiler) -> Result<Layout> {
    tile_unzip(&logical_divide(a, tiler)?, tiler)
}

/// `tiled_divide(A, T)`: `((tiles...), rest0, rest1, ...)`.
///
/// ```
/// use retile_layout::{tiled_divide, Layout, Tiler};
/// let a: Layout = "(4,6):(1,4)".parse().unwrap();
/// let t: Tiler = "<2,3>".parse().unwrap();
/// assert_eq!(tiled_divide(&a, &t).unwrap().to_string(), "((2,3),2,2):((1,4),2,12)");
/// ```
pub fn tiled_divide(a: &Layout, tiler: &Tiler) -> Result<Layout> {
    splice(&zipped_divide(a, tiler)?, false)
}

/// `flat_divide(A, T)`: `(tile0, tile1, ..., rest0, rest1, ...)`.
///
/// ```
/// use retile_layout::{flat_divide, Layout, Tiler};
/// let a: Layout = "(4,6):(1,4)".parse().unwrap();
/// let t: Tiler = "<2,3>".parse().unwrap();
/// assert_eq!(flat_divide(&a, &t).unwrap().to_string(), "(2,3,2,2):(1,4,2,12)");
/// ```
pub fn flat_divide(a: &Layout, tiler: &Tiler) -> Result<Layout> {
    splice(&zipped_divide(a, tiler)?, true)
}

/// CuTe's `tile_unzip`: regroups a by-mode result `((t0,r0),(t1,r1),x...)`
/// as `((t0,t1),(r0,r1,x...))`; with a layout tiler it is already `(t, r)`.
pub(crate) fn tile_unzip(layout: &Layout, guide: &Tiler) -> Result<Layout> {
    let (mut out, mut rests) = (LayoutBuilder::default(), LayoutBuilder::default());
    out.open();
    unzip_into(layout, guide, &mut out, &mut rests)?;
    out.push(&rests.finish());
    out.close();
    Ok(out.finish())
}

/// Appends the tile part of `layout` (as `guide` splits it) to `tiles` and
/// the rest to `rests`, one item each.
fn unzip_into(
    layout: &Layout,
    guide: &Tiler,
    tiles: &mut LayoutBuilder,
    rests: &mut LayoutBuilder,
) -> Result<()> {
    match guide {
        Tiler::Modes(gs) => {
            tiles.open();
            rests.open();
            layout.try_for_each_mode(|i, mode| {
                match gs.get(i) {
                    Some(g) => unzip_into(mode, g, tiles, rests)?,
                    None => rests.push(mode),
                }
                Ok(())
            })?;
            tiles.close();
            rests.close();
            Ok(())
        }
        Tiler::Layout(_) | Tiler::Underscore => {
            if !layout.is_leaf() && layout.rank() == 2 {
                tiles.push_mode(layout, 0);
                rests.push_mode(layout, 1);
                Ok(())
            } else {
                Err(LayoutError::RankMismatch {
                    op: "zipped divide/product",
                    reason: format!("mode {layout} must have rank 2 (tile, rest) to be unzipped; a `_` tiler mode can only stand for such a mode"),
                })
            }
        }
    }
}

/// Splices the modes of mode 1 (and, if `flat`, of mode 0) into the top
/// level, as CuTe's `result(_, repeat<R1>(_))` does: a mode of rank 1 stays
/// as it is.
pub(crate) fn splice(zipped: &Layout, flat: bool) -> Result<Layout> {
    let tile = zipped.mode(0)?;
    let rest = zipped.mode(1)?;
    let mut modes = if flat && tile.rank() > 1 {
        tile.modes()
    } else {
        vec![tile]
    };
    if rest.rank() > 1 {
        modes.extend(rest.modes());
    } else {
        modes.push(rest);
    }
    Ok(Layout::from_modes(modes))
}
