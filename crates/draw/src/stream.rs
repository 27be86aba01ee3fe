//! Stream plans: one frame cut into its tiles (each with its slot in the
//! epoch buffer and the order in which it retires), its shards, the epochs
//! along the stream and the two epoch buffers they alternate between, and
//! the frames of the pyramid's levels.

use retile_plan::StreamPlan;

use crate::error::{DrawError, Result};
use crate::grid::{elision, Axis, Grid};
use crate::page::{Lines, MARGIN};
use crate::palette;
use crate::svg::{Svg, LINE};

/// Epochs drawn along the stream.
const EPOCHS: u64 = 6;

/// A frame's tiles as a grid: rows = dimension 1, columns = dimensions 2..
/// (the last fastest), each tile's place in the epoch (its slot).
struct Frame {
    rows: u64,
    cols: u64,
}

impl Frame {
    fn of(plan: &StreamPlan) -> Frame {
        let counts = plan.tile_counts();
        match counts.len() {
            0 | 1 => Frame { rows: 1, cols: 1 },
            2 => Frame {
                rows: 1,
                cols: counts[1],
            },
            _ => Frame {
                rows: counts[1],
                cols: counts[2..].iter().product(),
            },
        }
    }

    /// The tile coordinates (slowest first, epoch 0) of cell `(row, col)`.
    fn tile(&self, plan: &StreamPlan, row: u64, col: u64) -> Vec<u64> {
        let counts = plan.tile_counts();
        let mut coord = vec![0u64; counts.len()];
        if counts.len() == 2 {
            coord[1] = col;
        } else if counts.len() > 2 {
            coord[1] = row;
            let mut rest = col;
            for d in (2..counts.len()).rev() {
                coord[d] = rest % counts[d];
                rest /= counts[d];
            }
        }
        coord
    }
}

/// The retire rank of every tile of epoch 0 (by its last input index), by slot.
fn retire_ranks(plan: &StreamPlan) -> Vec<u64> {
    let spans = plan.tiles(plan.m() as usize);
    let mut order: Vec<(u64, usize)> = spans
        .iter()
        .enumerate()
        .map(|(slot, s)| (s.last, slot))
        .collect();
    order.sort_unstable();
    let mut rank = vec![0u64; spans.len()];
    for (k, &(_, slot)) in order.iter().enumerate() {
        rank[slot] = k as u64;
    }
    rank
}

/// Draws a stream plan: one frame (a plane of the input) cut into its
/// tiles, each labelled with its slot in the epoch buffer (`s<slot>`) and
/// the order in which it retires (`#k`: it is complete, and is handed to
/// the writers, k-th of its epoch), coloured by that order, ragged edge
/// tiles marked, shards (`shard`: tiles per shard, slowest first) ruled
/// off; the epochs along the stream with the epoch buffer each fills and
/// the shards they belong to; and, for a pyramid, every level's frame and
/// tiles (`levels`: the level plans, level 0 first).
///
/// ```
/// use retile_plan::{DType, StreamPlan, StreamSpec};
/// let plan = StreamPlan::new(&StreamSpec::new(DType::U16, vec![0, 8, 12], vec![2, 4, 3])?)?;
/// let svg = retile_draw::stream_svg(&plan, Some(&[1, 2, 2]), &[])?;
/// assert_eq!(svg.matches("data-slot=").count(), 8);
/// assert!(svg.contains(r#"data-row="1" data-col="3" data-slot="7" data-retire="7" data-shard="1""#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn stream_svg(
    plan: &StreamPlan,
    shard: Option<&[u64]>,
    levels: &[StreamPlan],
) -> Result<String> {
    let spec = plan.spec();
    let rank = spec.shape().len();
    if let Some(s) = shard {
        if s.len() != rank || s.contains(&0) {
            return Err(DrawError::Invalid(format!(
                "a shard gives a positive count of tiles per dimension, {rank} of them; got {s:?}"
            )));
        }
    }
    let frame = Frame::of(plan);
    let rows = Axis::new(frame.rows as i64, &[frame.rows as i64]);
    let cols = Axis::new(frame.cols as i64, &[frame.cols as i64]);
    let mut lines = Lines::default();
    lines.push(
        "title",
        format!(
            "stream plan: {} shape {:?} tile {:?} (slowest first{})",
            spec.dtype(),
            spec.shape(),
            spec.tile(),
            if spec.is_unbounded() {
                "; 0 = unbounded"
            } else {
                ""
            }
        ),
    );
    lines.push(
        "note",
        format!(
            "one frame (a plane of dimensions 1..) in {} tiles: M = {} live tiles per epoch of {} planes; memory: 2 epoch buffers of {} slots",
            plan.m(),
            plan.m(),
            spec.tile()[0],
            plan.m()
        ),
    );
    lines.push(
        "note",
        "each tile: its slot s in the epoch buffer and #k, the order in which it retires (complete, to the writers); colour = order",
    );
    if rank > 3 {
        lines.push(
            "note",
            format!("rank {rank}: columns = dimensions 2.. of the tile grid, the last fastest"),
        );
    }
    for (d, r, n) in plan.padding() {
        if d > 0 {
            lines.push("note", format!("dashed: edge tiles of dimension {d} hold {r} of {n}; the rest is the fill value"));
        }
    }
    if let Some(s) = shard {
        lines.push(
            "note",
            format!("heavy rules: shards of {s:?} tiles (slowest first)"),
        );
    }
    if let Some(e) = elision(&rows, &cols) {
        lines.push("note", e);
    }
    let ranks = retire_ranks(plan);
    let chars = 1 + plan.m().to_string().len() as i64;
    let top = MARGIN + lines.height() + LINE;
    let grid = Grid::new(rows, cols, chars, 2, MARGIN, top);
    let mut svg = Svg::new(&lines.0[0].1);
    lines.write(&mut svg, MARGIN);
    svg.text(grid.x0, top - 4, "note", "frame: tiles of epoch 0");
    draw_frame(&mut svg, &grid, plan, &frame, &ranks, shard)?;
    let (mut bottom, epochs_right) = draw_epochs(&mut svg, plan, shard, grid.bottom() + 2 * LINE);
    let mut right = grid.right().max(epochs_right);
    if levels.len() > 1 {
        let (b, r) = draw_levels(&mut svg, levels, bottom + LINE)?;
        bottom = b;
        right = right.max(r);
    }
    let width = (right + MARGIN)
        .max(lines.width())
        .max(MARGIN * 2 + 110 * crate::svg::CHAR_WIDTH);
    Ok(svg.finish(width, bottom + MARGIN))
}

fn draw_frame(
    svg: &mut Svg,
    grid: &Grid,
    plan: &StreamPlan,
    frame: &Frame,
    ranks: &[u64],
    shard: Option<&[u64]>,
) -> Result<()> {
    let spec = plan.spec();
    let counts = plan.tile_counts();
    let shard_of = |tile: &[u64]| -> Option<i64> {
        let s = shard?;
        let coord: Vec<u64> = tile.iter().zip(s).map(|(t, n)| t / n).collect();
        let grid_counts: Vec<u64> = counts.iter().zip(s).map(|(c, n)| c.div_ceil(*n)).collect();
        Some(retile_plan::ravel(&coord[1..], &grid_counts[1..]) as i64)
    };
    svg.open("cells", "frame");
    let mut edges = Vec::new();
    let mut shards = std::collections::BTreeMap::new();
    for (i, j) in grid.cells() {
        let Some((x, y)) = grid.cell(i, j) else {
            continue;
        };
        let tile = frame.tile(plan, i as u64, j as u64);
        let slot = retile_plan::ravel(&tile[1..], &counts[1..]);
        let rank = ranks.get(slot as usize).copied().unwrap_or(0) as i64;
        let mut data = vec![
            ("row", i),
            ("col", j),
            ("slot", slot as i64),
            ("retire", rank),
        ];
        if let Some(id) = shard_of(&tile) {
            data.push(("shard", id));
            shards.insert((i, j), id);
        }
        svg.rect(x, y, grid.cell_w, grid.cell_h, &palette::class(rank), &data);
        let (cx, cy) = (x + grid.cell_w / 2, y + grid.cell_h / 2);
        svg.label(
            cx,
            cy,
            palette::label(rank),
            &[&format!("s{slot}"), &format!("#{rank}")],
        );
        let ragged = (1..tile.len()).any(|d| {
            let (s, n) = (spec.shape()[d], spec.tile()[d]);
            tile[d] + 1 == counts[d] && s % n != 0
        });
        if ragged {
            edges.push((x, y));
        }
    }
    svg.close();
    grid.frame(svg);
    svg.open("edges", "ragged tiles");
    for (x, y) in edges {
        svg.rect(x + 3, y + 3, grid.cell_w - 6, grid.cell_h - 6, "edge", &[]);
    }
    svg.close();
    draw_shards(svg, grid, &shards);
    Ok(())
}

/// Heavy rules between neighbouring tiles of different shards.
fn draw_shards(svg: &mut Svg, grid: &Grid, shards: &std::collections::BTreeMap<(i64, i64), i64>) {
    svg.open("shards", "shards");
    for (&(i, j), id) in shards {
        let Some((x, y)) = grid.cell(i, j) else {
            continue;
        };
        if shards.get(&(i, j + 1)).is_some_and(|other| other != id)
            && grid
                .cell(i, j + 1)
                .is_some_and(|(x2, _)| x2 == x + grid.cell_w)
        {
            svg.line(
                (x + grid.cell_w, y),
                (x + grid.cell_w, y + grid.cell_h),
                "shard",
            );
        }
        if shards.get(&(i + 1, j)).is_some_and(|other| other != id)
            && grid
                .cell(i + 1, j)
                .is_some_and(|(_, y2)| y2 == y + grid.cell_h)
        {
            svg.line(
                (x, y + grid.cell_h),
                (x + grid.cell_w, y + grid.cell_h),
                "shard",
            );
        }
    }
    svg.close();
}

/// The epochs along the stream: planes, the buffer each fills, its shard;
/// returns (bottom, right).
fn draw_epochs(svg: &mut Svg, plan: &StreamPlan, shard: Option<&[u64]>, top: i64) -> (i64, i64) {
    let spec = plan.spec();
    let n0 = spec.tile()[0];
    let total = match spec.is_unbounded() {
        true => EPOCHS,
        false => spec.shape()[0].div_ceil(n0).min(EPOCHS),
    };
    svg.text(
        MARGIN,
        top,
        "note",
        &format!(
            "along the stream (dimension 0): epochs of {n0} planes; epoch e fills buffer e mod 2 while the other's tiles are written{}",
            match shard {
                Some(s) if s[0] > 1 => format!("; a shard spans {} epochs", s[0]),
                _ => String::new(),
            }
        ),
    );
    let (w, h) = (30 * crate::svg::CHAR_WIDTH + 12, 2 * (LINE - 3) + 9);
    let y = top + LINE / 2;
    svg.open("cells", "epochs");
    for e in 0..total {
        let x = MARGIN + e as i64 * (w + 6);
        let first = e * n0;
        let planes = plan.epoch_planes(e);
        let buffer = (e % 2) as i64;
        let mut data = vec![
            ("epoch", e as i64),
            ("buffer", buffer),
            ("first-plane", first as i64),
        ];
        if let Some(s) = shard {
            data.push(("shard-depth", (e / s[0]) as i64));
        }
        svg.rect(x, y, w, h, &palette::class(4 * buffer), &data);
        let label = [
            format!(
                "epoch {e}: planes {first}..{}",
                first + planes.saturating_sub(1)
            ),
            format!("buffer {}", if buffer == 0 { "A" } else { "B" }),
        ];
        svg.label(
            x + w / 2,
            y + h / 2,
            palette::label(4 * buffer),
            &[&label[0], &label[1]],
        );
    }
    svg.close();
    let mut right = MARGIN + total as i64 * (w + 6);
    if spec.is_unbounded() || spec.shape()[0].div_ceil(n0) > EPOCHS {
        svg.label(right + 10, y + h / 2, "gap", &["\u{22ef}"]);
        right += 20;
    }
    (y + h + LINE, right)
}

/// Each pyramid level's frame of tiles, side by side; returns (bottom, right).
fn draw_levels(svg: &mut Svg, levels: &[StreamPlan], top: i64) -> Result<(i64, i64)> {
    svg.text(
        MARGIN,
        top,
        "note",
        "pyramid: each level's frame and its tiles (level k+1 halves level k); s = slot in that level's epoch",
    );
    let mut left = MARGIN;
    let mut bottom = top;
    for (k, level) in levels.iter().enumerate() {
        let frame = Frame::of(level);
        let rows = Axis::new(frame.rows as i64, &[frame.rows as i64]);
        let cols = Axis::new(frame.cols as i64, &[frame.cols as i64]);
        let chars = 1 + level.m().to_string().len() as i64;
        let grid = Grid::new(rows, cols, chars, 1, left, top + 2 * LINE);
        let title = format!("level {k}: {:?}", &level.spec().shape()[1..]);
        svg.text(left, top + LINE + LINE / 2, "note", &title);
        svg.open("cells", &format!("level {k}"));
        let counts = level.tile_counts();
        for (i, j) in grid.cells() {
            let Some((x, y)) = grid.cell(i, j) else {
                continue;
            };
            let tile = frame.tile(level, i as u64, j as u64);
            let slot = retile_plan::ravel(&tile[1..], &counts[1..]) as i64;
            svg.rect(
                x,
                y,
                grid.cell_w,
                grid.cell_h,
                &palette::class(k as i64),
                &[("level", k as i64), ("row", i), ("col", j), ("slot", slot)],
            );
            svg.label(
                x + grid.cell_w / 2,
                y + grid.cell_h / 2,
                palette::label(k as i64),
                &[&format!("s{slot}")],
            );
        }
        svg.close();
        grid.frame(svg);
        bottom = bottom.max(grid.bottom());
        left = grid.right().max(left + title.len() as i64 * 8) + 3 * MARGIN;
    }
    Ok((bottom, left))
}
