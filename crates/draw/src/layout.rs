//! Layouts and swizzled layouts: a grid of cells labelled with their offsets.

use retile_layout::{ComposedLayout, GridAxes, Layout};

use crate::error::Result;
use crate::grid::{elision, Axis, Grid};
use crate::page::{Lines, MARGIN};
use crate::palette;
use crate::svg::Svg;

/// The extents of a layout's leaves, innermost first: the blocks its grid
/// rules off.
pub(crate) fn leaves(layout: &Layout) -> Vec<i64> {
    layout.flat_modes().iter().map(|m| m.0).collect()
}

/// Draws a layout (or a swizzled layout, `Sw<B,M,S> o L`) as CuTe's
/// `print_layout` lays it out: rows = mode 0, columns = mode 1 (a rank-1
/// layout is one column, higher ranks fold modes 1.. into the columns),
/// every cell labelled with its offset and coloured by the offset modulo 8;
/// the boundaries of hierarchical modes are ruled, heavier for outer modes.
///
/// ```
/// use retile_layout::ComposedLayout;
/// let plain: ComposedLayout = "(4,8):(8,1)".parse()?;
/// let svg = retile_draw::layout_svg(&plain)?;
/// assert_eq!(svg.matches("data-offset=").count(), 32);
/// let swizzled: ComposedLayout = "Sw<2,0,3> o (4,8):(8,1)".parse()?;
/// let svg = retile_draw::layout_svg(&swizzled)?;
/// assert!(svg.contains(r#"data-row="1" data-col="0" data-offset="9""#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn layout_svg(layout: &ComposedLayout) -> Result<String> {
    let axes = GridAxes::of(layout.layout())?;
    let rows = Axis::new(axes.row_count, &leaves(&axes.rows));
    let cols = Axis::new(axes.col_count, &leaves(&axes.cols));
    let mut offsets = Vec::new();
    for i in rows.shown() {
        for j in cols.shown() {
            offsets.push(layout.apply(axes.offset(i, j)?)?);
        }
    }
    let chars = offsets
        .iter()
        .map(|o| o.to_string().len() as i64)
        .max()
        .unwrap_or(1);
    let mut lines = Lines::default();
    lines.push("title", layout.to_string());
    if let Some(note) = &axes.note {
        lines.push("note", note.clone());
    }
    let swizzle = layout.swizzle();
    if !layout.is_plain() {
        lines.push(
            "note",
            format!(
                "offsets swizzled by {swizzle}: bits {} xored into bits {}{}",
                bit_range(swizzle.yyy_mask()),
                bit_range(swizzle.zzz_mask()),
                if layout.offset() != 0 {
                    format!(", after adding {}", layout.offset())
                } else {
                    String::new()
                }
            ),
        );
    }
    // a swizzle moves blocks of 2^M offsets: colour by block, so that
    // where each block went shows
    let (shift, colour_note) = if layout.is_plain() {
        (0, "colours repeat every 8 offsets".to_string())
    } else {
        let m = swizzle.base();
        (
            m,
            format!(
                "colour = offset / {} mod 8, the block of 2^{m} offsets the swizzle moves",
                1i64 << m
            ),
        )
    };
    lines.push(
        "note",
        format!("each cell: its offset; rows = mode 0, columns = mode 1; {colour_note}"),
    );
    if let Some(elided) = elision(&rows, &cols) {
        lines.push("note", elided);
    }
    let grid = Grid::new(rows, cols, chars, 1, MARGIN, MARGIN + lines.height());
    let mut svg = Svg::new(&layout.to_string());
    lines.write(&mut svg, MARGIN);
    svg.open("cells", "layout");
    for ((i, j), offset) in grid.cells().zip(&offsets) {
        if let Some((x, y)) = grid.cell(i, j) {
            let k = (offset >> shift).rem_euclid(8);
            svg.rect(
                x,
                y,
                grid.cell_w,
                grid.cell_h,
                &palette::class(k),
                &[("row", i), ("col", j), ("offset", *offset)],
            );
            let (cx, cy) = (x + grid.cell_w / 2, y + grid.cell_h / 2);
            svg.label(cx, cy, palette::label(k), &[&offset.to_string()]);
        }
    }
    svg.close();
    grid.frame(&mut svg);
    let width = (grid.right() + MARGIN).max(lines.width());
    Ok(svg.finish(width, grid.bottom() + MARGIN))
}

/// `"7..9"`: the bits a mask covers.
fn bit_range(mask: i64) -> String {
    let low = mask.trailing_zeros();
    let high = 63 - mask.leading_zeros();
    if low == high {
        low.to_string()
    } else {
        format!("{low}..{high}")
    }
}
