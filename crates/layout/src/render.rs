//! Text drawings of layouts, as CuTe's `print_layout` draws them.

use std::fmt::Write;

use crate::error::{add, LayoutError, Result};
use crate::layout::Layout;

/// Most cells a drawing may have.
pub const MAX_CELLS: i64 = 1 << 16;

/// Draws a layout as a grid of offsets, rows = mode 0, columns = mode 1,
/// exactly as CuTe's `print_layout`. A rank-1 layout is drawn as one column
/// (`(L, 1:0)`); a layout of rank above 2 is folded as `(mode0, (mode1, ...))`,
/// and a line saying so precedes the grid.
///
/// ```
/// use retile_layout::{render_grid, Layout};
/// let l: Layout = "(2,3):(3,1)".parse().unwrap();
/// let text = render_grid(&l).unwrap();
/// let expected = [
///     "(2,3):(3,1)",
///     "      0   1   2 ",
///     "    +---+---+---+",
///     " 0  | 0 | 1 | 2 |",
///     "    +---+---+---+",
///     " 1  | 3 | 4 | 5 |",
///     "    +---+---+---+",
/// ];
/// assert_eq!(text.lines().collect::<Vec<_>>(), expected);
/// ```
pub fn render_grid(layout: &Layout) -> Result<String> {
    let mut out = String::new();
    let (rows, cols) = match layout.rank() {
        1 => (layout.clone(), Layout::from_flat(&[])),
        2 => (layout.mode(0)?, layout.mode(1)?),
        r => {
            let modes = layout.modes();
            let folded = Layout::from_modes(modes[1..].to_vec());
            let _ = writeln!(
                out,
                "rank {r} drawn as rank 2: rows = mode 0, columns = modes 1..{r} as one mode {}",
                folded.shape()
            );
            (modes[0].clone(), folded)
        }
    };
    let (m, n) = (rows.size()?, cols.size()?);
    let cells = m.checked_mul(n).unwrap_or(i64::MAX);
    if cells > MAX_CELLS {
        return Err(LayoutError::TooLarge {
            what: "the drawing",
            count: cells,
            limit: MAX_CELLS,
        });
    }
    let mut values = Vec::with_capacity(cells as usize);
    for i in 0..m {
        for j in 0..n {
            values.push(add(rows.eval(i)?, cols.eval(j)?, "a drawn offset")?);
        }
    }
    let widest = values
        .iter()
        .map(|v| v.to_string().len())
        .max()
        .unwrap_or(1);
    let width = widest.max(layout.cosize()?.to_string().len());
    let rule = format!(
        "    {}+\n",
        format!("+{}", "-".repeat(width + 2)).repeat(n as usize)
    );
    let _ = writeln!(out, "{layout}");
    out.push_str("    ");
    for j in 0..n {
        let _ = write!(out, "  {j:>width$} ");
    }
    out.push('\n');
    for i in 0..m {
        out.push_str(&rule);
        let _ = write!(out, "{i:>2}  ");
        for v in &values[(i * n) as usize..((i + 1) * n) as usize] {
            let _ = write!(out, "| {v:>width$} ");
        }
        out.push_str("|\n");
    }
    out.push_str(&rule);
    Ok(out)
}
