//! Copy plans: which thread loads, and which stores, which vector of the tile.

use retile_copy::{Access, Transpose};

use crate::error::{DrawError, Result, MAX_ITEMS};
use crate::grid::{elision, Axis, Grid};
use crate::page::{Lines, MARGIN};
use crate::palette;
use crate::svg::Svg;

/// Who touches an element in one direction: the thread and its access number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Toucher {
    thread: i64,
    access: i64,
}

/// One panel: each element's toucher, and every vector as (first element,
/// dimension, width).
struct Panel {
    touchers: Vec<Option<Toucher>>,
    vectors: Vec<Access>,
}

/// The column of tile coordinate `c` (dimensions 1.. folded, the first fastest).
fn column(c: &[i64], shape: &[i64]) -> i64 {
    c.iter()
        .zip(shape)
        .skip(1)
        .rev()
        .fold(0, |acc, (&x, &s)| acc * s + x)
}

fn panel(
    t: &Transpose,
    rows: i64,
    accesses: impl Fn(i64) -> retile_copy::Result<Vec<Access>>,
) -> Result<Panel> {
    let elements: i64 = t.shape.iter().product();
    let mut touchers = vec![None; elements as usize];
    let mut vectors = Vec::new();
    for thread in 0..t.threads {
        for (k, a) in accesses(thread)?.into_iter().enumerate() {
            for j in 0..a.width {
                let mut c = a.coord.clone();
                c[a.dim] += j;
                let index = c[0] + rows * column(&c, &t.shape);
                if let Some(slot) = usize::try_from(index)
                    .ok()
                    .and_then(|i| touchers.get_mut(i))
                {
                    slot.get_or_insert(Toucher {
                        thread,
                        access: k as i64,
                    });
                }
            }
            vectors.push(a);
        }
    }
    Ok(Panel { touchers, vectors })
}

/// Draws an in-thread transpose plan: two grids of the tile (rows =
/// dimension 0, columns = the others), the loads along the source's
/// contiguous dimension and the stores along the destination's; each
/// element coloured by the thread that moves it and labelled `T<t>` over
/// `L<k>` (its `k`-th load) or `S<k>` (its `k`-th store), each vector
/// outlined.
///
/// ```
/// use retile_copy::{TransposePlan, TransposeRequest};
/// let r = TransposeRequest::new(8, 32, 128, "(8,8):(1,8)".parse()?, "(8,8):(8,1)".parse()?);
/// let TransposePlan::Applies(t) = r.plan()? else { panic!() };
/// let svg = retile_draw::copy_svg(&t)?;
/// assert_eq!(svg.matches("data-thread=").count(), 128);
/// assert!(svg.contains(r#"data-side="load" data-row="0" data-col="0" data-thread="0" data-access="0""#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn copy_svg(t: &Transpose) -> Result<String> {
    let elements = t.shape.iter().try_fold(1i64, |a, &s| a.checked_mul(s));
    let accesses = t.threads.saturating_mul(t.loads + t.stores);
    if elements.is_none_or(|e| e > MAX_ITEMS) || accesses > MAX_ITEMS {
        return Err(DrawError::Invalid(format!(
            "the plan moves a tile of {:?} in {accesses} accesses, more than the {MAX_ITEMS} drawn",
            t.shape
        )));
    }
    let rows = t.shape.first().copied().unwrap_or(1);
    let cols = t.shape.iter().skip(1).product::<i64>();
    let loads = panel(t, rows, |thread| t.loads_of(thread))?;
    let stores = panel(t, rows, |thread| t.stores_of(thread))?;
    let mut lines = Lines::default();
    lines.push(
        "title",
        format!(
            "in-thread transpose of a {:?} tile by {} threads",
            t.shape, t.threads
        ),
    );
    lines.push(
        "note",
        format!(
            "left: {} loads of {} along dimension {}; right: {} stores of {} along dimension {}; each thread a {:?} block",
            t.loads, t.load_width, t.src_fast, t.stores, t.store_width, t.dst_fast, t.block
        ),
    );
    lines.push(
        "note",
        "each cell: the thread T that moves the element and its load L<k> or store S<k>; colour = thread; vectors outlined",
    );
    if t.shape.len() > 2 {
        lines.push(
            "note",
            format!(
                "rank {} drawn as rank 2: columns = dimensions 1.. (the first fastest)",
                t.shape.len()
            ),
        );
    }
    let (row_axis, col_axis) = (Axis::new(rows, &[rows]), Axis::new(cols, &[cols]));
    if let Some(elided) = elision(&row_axis, &col_axis) {
        lines.push("note", elided);
    }
    let chars = 1 + t.threads.max(t.loads.max(t.stores)).to_string().len() as i64;
    let top = MARGIN + lines.height() + crate::svg::LINE;
    let left = Grid::new(row_axis.clone(), col_axis.clone(), chars, 2, MARGIN, top);
    let right = Grid::new(row_axis, col_axis, chars, 2, left.right() + 3 * MARGIN, top);
    let mut svg = Svg::new(&lines.0[0].1);
    lines.write(&mut svg, MARGIN);
    for (grid, panel, side, letter) in [
        (&left, &loads, "load", "L"),
        (&right, &stores, "store", "S"),
    ] {
        svg.text(grid.x0, top - 4, "note", &format!("{side}s"));
        draw_panel(&mut svg, grid, panel, rows, &t.shape, side, letter);
    }
    let width = (right.right() + MARGIN).max(lines.width());
    Ok(svg.finish(width, left.bottom() + MARGIN))
}

fn draw_panel(
    svg: &mut Svg,
    grid: &Grid,
    panel: &Panel,
    rows: i64,
    shape: &[i64],
    side: &str,
    letter: &str,
) {
    svg.open("cells", side);
    for (i, j) in grid.cells() {
        let Some((x, y)) = grid.cell(i, j) else {
            continue;
        };
        match panel.touchers[(i + rows * j) as usize] {
            Some(h) => {
                svg.rect_tagged(
                    x,
                    y,
                    grid.cell_w,
                    grid.cell_h,
                    &palette::class(h.thread),
                    Some(("side", side)),
                    &[
                        ("row", i),
                        ("col", j),
                        ("thread", h.thread),
                        ("access", h.access),
                    ],
                );
                let (cx, cy) = (x + grid.cell_w / 2, y + grid.cell_h / 2);
                let (t, k) = (format!("T{}", h.thread), format!("{letter}{}", h.access));
                svg.label(cx, cy, palette::label(h.thread), &[&t, &k]);
            }
            None => svg.rect(
                x,
                y,
                grid.cell_w,
                grid.cell_h,
                "none",
                &[("row", i), ("col", j)],
            ),
        }
    }
    svg.close();
    svg.open("vectors", side);
    for a in &panel.vectors {
        let first = (a.coord[0], column(&a.coord, shape));
        let mut last_coord = a.coord.clone();
        last_coord[a.dim] += a.width - 1;
        let last = (last_coord[0], column(&last_coord, shape));
        // a vector along dimension 0 or 1 is a run of neighbouring cells
        let (Some((x1, y1)), Some((x2, y2))) =
            (grid.cell(first.0, first.1), grid.cell(last.0, last.1))
        else {
            continue;
        };
        if a.dim <= 1 {
            svg.rect(
                x1 + 2,
                y1 + 2,
                x2 - x1 + grid.cell_w - 4,
                y2 - y1 + grid.cell_h - 4,
                "vec",
                &[],
            );
        }
    }
    svg.close();
    grid.frame(svg);
}
