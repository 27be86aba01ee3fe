//! Thread-value layouts and register layouts: every element of the tile
//! coloured by the thread that holds it and labelled `T<t>V<v>`, as CuTe's
//! `print_latex_tv` draws them.

use retile_layout::{IntTuple, Layout};
use retile_register::RegisterLayout;

use crate::error::{DrawError, Result, MAX_ITEMS};
use crate::grid::{elision, Axis, Grid};
use crate::page::{Lines, MARGIN};
use crate::palette;
use crate::svg::Svg;

/// Who holds an element: the first `(thread, value)` that maps to it, and
/// how many pairs do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Holder {
    thread: i64,
    value: i64,
    count: i64,
}

/// The holders of each element of a `rows x cols` tile (column-major index).
fn holders(tv: &Layout, rows: i64, cols: i64) -> Result<Vec<Option<Holder>>> {
    if tv.rank() != 2 {
        return Err(DrawError::Invalid(format!(
            "a thread-value layout has rank 2 (threads, values); {tv} has rank {}",
            tv.rank()
        )));
    }
    let (threads, values) = (tv.mode(0)?.size()?, tv.mode(1)?.size()?);
    let elements = rows.saturating_mul(cols);
    if rows < 1 || cols < 1 || threads.saturating_mul(values) > MAX_ITEMS || elements > MAX_ITEMS {
        return Err(DrawError::Invalid(format!(
            "{threads} threads x {values} values over a {rows}x{cols} tile: give a positive tile, \
             and at most {MAX_ITEMS} pairs and elements"
        )));
    }
    let mut out: Vec<Option<Holder>> = vec![None; elements as usize];
    for thread in 0..threads {
        for value in 0..values {
            let index = tv.eval_coord(&IntTuple::Tuple(vec![
                IntTuple::Int(thread),
                IntTuple::Int(value),
            ]))?;
            let slot = usize::try_from(index)
                .ok()
                .and_then(|i| out.get_mut(i))
                .ok_or_else(|| {
                    DrawError::Invalid(format!(
                        "{tv} maps thread {thread}, value {value} to element {index}, outside the {rows}x{cols} tile"
                    ))
                })?;
            match slot {
                Some(h) => h.count += 1,
                None => {
                    *slot = Some(Holder {
                        thread,
                        value,
                        count: 1,
                    })
                }
            }
        }
    }
    Ok(out)
}

/// Draws a CuTe thread-value layout `(thread, value) -> element` over a
/// `rows x cols` tile (element `r + rows * c` at row `r`, column `c`): each
/// cell coloured by its thread and labelled `T<t>` over `V<v>`; an element
/// held by several threads shows the first and how many more.
///
/// ```
/// let tv = "((4,8),(2,2)):((32,1),(16,8))".parse()?; // mma.m16n8k8's C
/// let svg = retile_draw::tv_svg(&tv, 16, 8)?;
/// assert!(svg.contains(r#"data-row="8" data-col="2" data-thread="1" data-value="2""#));
/// assert_eq!(svg.matches("data-thread=").count(), 128);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn tv_svg(tv: &Layout, rows: i64, cols: i64) -> Result<String> {
    let mut lines = Lines::default();
    lines.push(
        "title",
        format!("thread-value layout {tv} over a {rows}x{cols} tile"),
    );
    draw(tv, rows, cols, lines)
}

/// Draws a register layout (tilus) as the thread-value layout it is: rows =
/// the tile's first dimension, columns = the others (a rank-1 layout is one
/// row), each element coloured by its thread, labelled `T<t>V<v>` with `v`
/// the thread's register.
///
/// ```
/// let l = retile_register::spatial(&[2, 3])?;
/// let svg = retile_draw::register_svg(&l)?;
/// assert!(svg.contains(r#"data-row="1" data-col="2" data-thread="5" data-value="0""#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn register_svg(layout: &RegisterLayout) -> Result<String> {
    let tv = layout.tv_layout()?;
    let shape = layout.shape();
    let (rows, cols) = match shape {
        [n] => (1, *n),
        [first, rest @ ..] => (*first, rest.iter().product()),
        [] => (1, 1),
    };
    let mut lines = Lines::default();
    lines.push("title", layout.to_string());
    lines.push("note", format!("as CuTe's thread-value layout {tv}"));
    if shape.len() > 2 {
        lines.push(
            "note",
            format!("rank {} drawn as rank 2: rows = dimension 0, columns = dimensions 1.. (the first fastest)", shape.len()),
        );
    }
    draw(&tv, rows, cols, lines)
}

fn draw(tv: &Layout, rows: i64, cols: i64, mut lines: Lines) -> Result<String> {
    let held = holders(tv, rows, cols)?;
    let replicated = held.iter().flatten().filter(|h| h.count > 1).count();
    let (row_axis, col_axis) = (Axis::new(rows, &[rows]), Axis::new(cols, &[cols]));
    let label = |h: &Holder| -> [String; 2] {
        let more = if h.count > 1 {
            format!("+{}", h.count - 1)
        } else {
            String::new()
        };
        [format!("T{}{more}", h.thread), format!("V{}", h.value)]
    };
    let chars = held
        .iter()
        .flatten()
        .flat_map(|h| label(h).map(|l| l.len() as i64))
        .max()
        .unwrap_or(2);
    lines.push(
        "note",
        "each cell: the thread T that holds the element and its value (register) V; colour = thread",
    );
    if replicated > 0 {
        lines.push(
            "note",
            format!("{replicated} elements are held by several threads: T<first>+<how many more>"),
        );
    }
    let empty = held.iter().filter(|h| h.is_none()).count();
    if empty > 0 {
        lines.push(
            "note",
            format!("{empty} elements are held by no thread (blank)"),
        );
    }
    if let Some(elided) = elision(&row_axis, &col_axis) {
        lines.push("note", elided);
    }
    let grid = Grid::new(
        row_axis,
        col_axis,
        chars,
        2,
        MARGIN,
        MARGIN + lines.height(),
    );
    let mut svg = Svg::new(&lines.0[0].1);
    lines.write(&mut svg, MARGIN);
    svg.open("cells", "threads");
    for (i, j) in grid.cells() {
        let Some((x, y)) = grid.cell(i, j) else {
            continue;
        };
        let (cx, cy) = (x + grid.cell_w / 2, y + grid.cell_h / 2);
        match held[(i + rows * j) as usize] {
            Some(h) => {
                svg.rect(
                    x,
                    y,
                    grid.cell_w,
                    grid.cell_h,
                    &palette::class(h.thread),
                    &[
                        ("row", i),
                        ("col", j),
                        ("thread", h.thread),
                        ("value", h.value),
                    ],
                );
                let [t, v] = label(&h);
                svg.label(cx, cy, palette::label(h.thread), &[&t, &v]);
            }
            None => {
                svg.rect(
                    x,
                    y,
                    grid.cell_w,
                    grid.cell_h,
                    "none",
                    &[("row", i), ("col", j)],
                );
            }
        }
    }
    svg.close();
    grid.frame(&mut svg);
    let width = (grid.right() + MARGIN).max(lines.width());
    Ok(svg.finish(width, grid.bottom() + MARGIN))
}
