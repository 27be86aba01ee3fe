//! Text drawings of layouts, as CuTe's `print_layout` draws them.

use std::fmt::Write;

use crate::error::{add, LayoutError, Result};
use crate::layout::Layout;
use crate::swizzle::ComposedLayout;

/// Most cells a drawing may have.
///
/// ```
/// use retile_layout::{render_grid, Layout, MAX_CELLS};
/// assert_eq!(MAX_CELLS, 256 * 256);
/// assert!(render_grid(&"(256,256):(256,1)".parse::<Layout>()?).is_ok());
/// let err = render_grid(&"(256,257):(257,1)".parse::<Layout>()?).unwrap_err();
/// assert!(err.to_string().contains("the drawing has 65792 entries"), "{err}");
/// # Ok::<(), retile_layout::LayoutError>(())
/// ```
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
    let axes = GridAxes::of(layout)?;
    let offsets = axes.offsets(Ok)?;
    Ok(draw(&layout.to_string(), &axes, &offsets, layout.cosize()?))
}

/// Draws a swizzled layout as [`render_grid`] draws a layout: the cells of
/// the inner layout's grid, each holding its swizzled offset.
///
/// ```
/// use retile_layout::{render_composed, ComposedLayout};
/// let c: ComposedLayout = "Sw<1,0,1> o (2,2):(2,1)".parse().unwrap();
/// let text = render_composed(&c).unwrap();
/// assert_eq!(text.lines().nth(3).unwrap(), " 0  | 0 | 1 |");
/// assert_eq!(text.lines().nth(5).unwrap(), " 1  | 3 | 2 |");
/// ```
pub fn render_composed(layout: &ComposedLayout) -> Result<String> {
    let axes = GridAxes::of(layout.layout())?;
    let offsets = axes.offsets(|o| layout.apply(o))?;
    Ok(draw(&layout.to_string(), &axes, &offsets, layout.cosize()?))
}

/// How a layout of any rank is laid out on a grid, as CuTe's `print_layout`
/// lays it: rows = mode 0, columns = mode 1. A rank-1 layout is one column
/// (`(L, 1:0)`); a layout of rank above 2 is folded as `(mode0, (mode1,
/// ...))`, and [`note`](GridAxes::note) says so.
///
/// ```
/// use retile_layout::{GridAxes, Layout};
/// let l: Layout = "(2,3,4):(1,2,6)".parse().unwrap();
/// let axes = GridAxes::of(&l).unwrap();
/// assert_eq!((axes.rows.to_string(), axes.cols.to_string()), ("2:1".into(), "(3,4):(2,6)".into()));
/// assert_eq!((axes.row_count, axes.col_count), (2, 12));
/// assert!(axes.note.unwrap().starts_with("rank 3 drawn as rank 2"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridAxes {
    /// The layout along the rows (mode 0).
    pub rows: Layout,
    /// The layout along the columns (mode 1, or modes 1.. folded).
    pub cols: Layout,
    /// Number of rows.
    pub row_count: i64,
    /// Number of columns.
    pub col_count: i64,
    /// What folding happened, if any, in words.
    pub note: Option<String>,
}

impl GridAxes {
    /// The axes of `layout`; an error if the grid has more than
    /// [`MAX_GRID_CELLS`] cells.
    ///
    /// ```
    /// use retile_layout::{GridAxes, Layout};
    /// let axes = GridAxes::of(&"8:1".parse::<Layout>().unwrap()).unwrap();
    /// assert_eq!((axes.row_count, axes.col_count), (8, 1));
    /// ```
    pub fn of(layout: &Layout) -> Result<GridAxes> {
        let (rows, cols, note) = match layout.rank() {
            1 => (layout.clone(), Layout::from_flat(&[]), None),
            2 => (layout.mode(0)?, layout.mode(1)?, None),
            r => {
                let modes = layout.modes();
                let folded = Layout::from_modes(modes[1..].to_vec());
                let note = format!(
                    "rank {r} drawn as rank 2: rows = mode 0, columns = modes 1..{r} as one mode {}",
                    folded.shape()
                );
                (modes[0].clone(), folded, Some(note))
            }
        };
        let (row_count, col_count) = (rows.size()?, cols.size()?);
        let cells = row_count.checked_mul(col_count).unwrap_or(i64::MAX);
        if cells > MAX_GRID_CELLS {
            return Err(LayoutError::TooLarge {
                what: "the grid",
                count: cells,
                limit: MAX_GRID_CELLS,
            });
        }
        Ok(GridAxes {
            rows,
            cols,
            row_count,
            col_count,
            note,
        })
    }

    /// The inner offset of cell `(row, col)`: `rows(row) + cols(col)`.
    ///
    /// ```
    /// use retile_layout::{GridAxes, Layout};
    /// let axes = GridAxes::of(&"(2,3):(3,1)".parse::<Layout>().unwrap()).unwrap();
    /// assert_eq!(axes.offset(1, 2).unwrap(), 5);
    /// ```
    pub fn offset(&self, row: i64, col: i64) -> Result<i64> {
        add(self.rows.eval(row)?, self.cols.eval(col)?, "a drawn offset")
    }

    /// Every cell's offset, row by row, passed through `map` (a swizzle, or
    /// nothing); an error if there are more than [`MAX_CELLS`].
    fn offsets(&self, map: impl Fn(i64) -> Result<i64>) -> Result<Vec<i64>> {
        let cells = self.row_count * self.col_count;
        if cells > MAX_CELLS {
            return Err(LayoutError::TooLarge {
                what: "the drawing",
                count: cells,
                limit: MAX_CELLS,
            });
        }
        let mut values = Vec::with_capacity(cells as usize);
        for i in 0..self.row_count {
            for j in 0..self.col_count {
                values.push(map(self.offset(i, j)?)?);
            }
        }
        Ok(values)
    }
}

/// Most cells a grid may have (its cells are counted, not all enumerated:
/// a drawing that shows only some of them may use a larger grid).
///
/// ```
/// use retile_layout::{GridAxes, Layout, MAX_GRID_CELLS};
/// assert_eq!(MAX_GRID_CELLS, 1 << 40);
/// // a grid too large to draw still has axes, up to 2^40 cells
/// let axes = GridAxes::of(&"(1048576,1048576):(1,0)".parse::<Layout>()?)?;
/// assert_eq!(axes.row_count * axes.col_count, MAX_GRID_CELLS);
/// let err = GridAxes::of(&"(1048576,1048577):(1,0)".parse::<Layout>()?).unwrap_err();
/// assert!(err.to_string().contains("the grid has"), "{err}");
/// # Ok::<(), retile_layout::LayoutError>(())
/// ```
pub const MAX_GRID_CELLS: i64 = 1 << 40;

/// The text grid: a title line, the column indices, and one ruled row per
/// row of `values`.
fn draw(title: &str, axes: &GridAxes, values: &[i64], cosize: i64) -> String {
    let (m, n) = (axes.row_count, axes.col_count);
    let widest = values
        .iter()
        .map(|v| v.to_string().len())
        .max()
        .unwrap_or(1);
    let width = widest.max(cosize.to_string().len());
    let rule = format!(
        "    {}+\n",
        format!("+{}", "-".repeat(width + 2)).repeat(n as usize)
    );
    let mut out = String::new();
    if let Some(note) = &axes.note {
        let _ = writeln!(out, "{note}");
    }
    let _ = writeln!(out, "{title}");
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
    out
}
