//! Grids of cells: which rows and columns are shown (long axes keep their
//! first and last blocks and elide the repeats between), where each cell
//! goes, index headers, and rules at the boundaries of hierarchical modes.

use crate::svg::{Svg, CHAR_WIDTH, LINE};

/// Most rows (or columns) drawn; longer axes are elided.
///
/// ```
/// use retile_draw::{layout_svg, MAX_SHOWN};
/// let svg = layout_svg(&"(1,128):(0,1)".parse()?)?;
/// assert_eq!(svg.matches("data-offset=").count(), MAX_SHOWN as usize);
/// assert!(!svg.contains("elided"));
/// let svg = layout_svg(&"(1,1024):(0,1)".parse()?)?;
/// assert!(svg.matches("data-offset=").count() <= MAX_SHOWN as usize);
/// assert!(svg.contains("elided: columns"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_SHOWN: i64 = 128;

/// One axis of a grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Axis {
    /// Indices along the axis.
    pub count: i64,
    /// The shown indices, as runs; an elision gap between runs.
    pub runs: Vec<(i64, i64)>,
    /// Block sizes of the axis's modes, innermost first (each a multiple of
    /// the one before), below `count`: rules are drawn at their boundaries.
    pub blocks: Vec<i64>,
}

impl Axis {
    /// An axis of `count` indices made of modes of extents `leaves`
    /// (innermost first); at most [`MAX_SHOWN`] shown. A longer axis shows
    /// its first and last block of the largest mode boundary that fits
    /// twice (or of half the limit, when no boundary fits).
    pub fn new(count: i64, leaves: &[i64]) -> Axis {
        let mut blocks = Vec::new();
        let mut product = 1i64;
        for &e in leaves {
            product = product.saturating_mul(e.max(1));
            if product < count && blocks.last() != Some(&product) && e > 1 {
                blocks.push(product);
            }
        }
        let runs = if count <= MAX_SHOWN {
            vec![(0, count)]
        } else {
            let block = blocks
                .iter()
                .copied()
                .filter(|&b| 2 * b <= MAX_SHOWN)
                .max()
                .unwrap_or(MAX_SHOWN / 2);
            vec![(0, block), (count - block, count)]
        };
        Axis {
            count,
            runs,
            blocks,
        }
    }

    /// Indices drawn.
    pub fn shown(&self) -> impl Iterator<Item = i64> + '_ {
        self.runs.iter().flat_map(|&(a, b)| a..b)
    }

    /// How many indices are drawn.
    pub fn shown_count(&self) -> i64 {
        self.runs.iter().map(|(a, b)| b - a).sum()
    }

    /// Slots along the axis: shown indices and one per gap.
    pub fn slots(&self) -> i64 {
        self.shown_count() + self.runs.len() as i64 - 1
    }

    /// The slot of index `i`, if shown.
    pub fn slot(&self, i: i64) -> Option<i64> {
        let mut before = 0;
        for (k, &(a, b)) in self.runs.iter().enumerate() {
            if (a..b).contains(&i) {
                return Some(before + i - a + k as i64);
            }
            before += b - a;
        }
        None
    }

    /// The slots of the elision gaps, each with how many indices it stands for.
    pub fn gaps(&self) -> Vec<(i64, i64)> {
        self.runs
            .windows(2)
            .map(|w| (self.slot(w[0].1 - 1).unwrap_or(0) + 1, w[1].0 - w[0].1))
            .collect()
    }

    /// The rule level at the boundary before index `i` (0: none), when
    /// `i - 1` and `i` are both shown and adjacent.
    fn rule(&self, i: i64) -> usize {
        if i <= 0 || i >= self.count {
            return 0;
        }
        match (self.slot(i - 1), self.slot(i)) {
            (Some(a), Some(b)) if b == a + 1 => self
                .blocks
                .iter()
                .rposition(|&b| i % b == 0)
                .map_or(0, |l| l + 1),
            _ => 0,
        }
    }

    /// In words, what is elided: `"columns 32..991 (960 of 1024)"`.
    pub fn elided(&self, name: &str) -> Option<String> {
        let gaps: Vec<String> = self
            .runs
            .windows(2)
            .map(|w| format!("{}..{}", w[0].1, w[1].0 - 1))
            .collect();
        let hidden = self.count - self.shown_count();
        (hidden > 0).then(|| format!("{name} {} ({hidden} of {})", gaps.join(", "), self.count))
    }
}

/// Where a grid's cells go.
#[derive(Debug, Clone)]
pub(crate) struct Grid {
    /// The rows.
    pub rows: Axis,
    /// The columns.
    pub cols: Axis,
    /// Cell width, px.
    pub cell_w: i64,
    /// Cell height, px.
    pub cell_h: i64,
    /// Left edge of the first column, px.
    pub x0: i64,
    /// Top edge of the first row, px.
    pub y0: i64,
}

/// The left margin for row headers of up to this many digits.
fn header_width(count: i64) -> i64 {
    (count.max(1).to_string().len() as i64 + 1) * CHAR_WIDTH + 6
}

impl Grid {
    /// A grid at `(left, top)` (its headers included) whose cells fit
    /// labels of `chars` characters on `lines` lines.
    pub fn new(rows: Axis, cols: Axis, chars: i64, lines: i64, left: i64, top: i64) -> Grid {
        let cell_w = (chars * CHAR_WIDTH + 12).max(26);
        let cell_h = lines * (LINE - 3) + 9;
        let x0 = left + header_width(rows.count);
        let y0 = top + LINE;
        Grid {
            rows,
            cols,
            cell_w,
            cell_h,
            x0,
            y0,
        }
    }

    /// The top-left corner of cell `(row, col)`, if drawn.
    pub fn cell(&self, row: i64, col: i64) -> Option<(i64, i64)> {
        Some((
            self.x0 + self.cols.slot(col)? * self.cell_w,
            self.y0 + self.rows.slot(row)? * self.cell_h,
        ))
    }

    /// The right edge, px.
    pub fn right(&self) -> i64 {
        self.x0 + self.cols.slots() * self.cell_w
    }

    /// The bottom edge, px.
    pub fn bottom(&self) -> i64 {
        self.y0 + self.rows.slots() * self.cell_h
    }

    /// Every drawn cell, row by row.
    pub fn cells(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.rows
            .shown()
            .flat_map(move |i| self.cols.shown().map(move |j| (i, j)))
    }

    /// Headers, elision marks, mode rules and the frame (drawn after the cells).
    pub fn frame(&self, svg: &mut Svg) {
        let (top, left, right, bottom) = (self.y0, self.x0, self.right(), self.bottom());
        for j in self.cols.shown() {
            if let Some(slot) = self.cols.slot(j) {
                let x = left + slot * self.cell_w + self.cell_w / 2;
                svg.label(x, top - LINE / 2, "head", &[&j.to_string()]);
            }
        }
        for i in self.rows.shown() {
            if let Some(slot) = self.rows.slot(i) {
                let y = top + slot * self.cell_h + self.cell_h / 2;
                svg.label(
                    left - header_width(self.rows.count) / 2,
                    y,
                    "head",
                    &[&i.to_string()],
                );
            }
        }
        for (slot, _) in self.cols.gaps() {
            let x = left + slot * self.cell_w + self.cell_w / 2;
            svg.label(x, (top + bottom) / 2, "gap", &["\u{22ef}"]);
            svg.label(x, top - LINE / 2, "gap", &["\u{22ef}"]);
        }
        for (slot, _) in self.rows.gaps() {
            let y = top + slot * self.cell_h + self.cell_h / 2;
            svg.label((left + right) / 2, y, "gap", &["\u{22ee}"]);
            svg.label(
                left - header_width(self.rows.count) / 2,
                y,
                "gap",
                &["\u{22ee}"],
            );
        }
        for j in self.cols.shown() {
            let level = self.cols.rule(j);
            if level > 0 {
                if let Some(slot) = self.cols.slot(j) {
                    let x = left + slot * self.cell_w;
                    svg.line((x, top), (x, bottom), rule_class(level));
                }
            }
        }
        for i in self.rows.shown() {
            let level = self.rows.rule(i);
            if level > 0 {
                if let Some(slot) = self.rows.slot(i) {
                    let y = top + slot * self.cell_h;
                    svg.line((left, y), (right, y), rule_class(level));
                }
            }
        }
        svg.rect(left, top, right - left, bottom - top, "frame", &[]);
    }
}

/// What a grid of `rows` by `cols` elides, in words, if anything.
pub(crate) fn elision(rows: &Axis, cols: &Axis) -> Option<String> {
    let parts: Vec<String> = [rows.elided("rows"), cols.elided("columns")]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| {
        let total = rows.count.saturating_mul(cols.count);
        format!(
            "elided: {} ({} of {} cells drawn; the blocks left out continue the pattern)",
            parts.join("; "),
            rows.shown_count() * cols.shown_count(),
            total
        )
    })
}

fn rule_class(level: usize) -> &'static str {
    match level {
        1 => "rule",
        2 => "rule2",
        _ => "rule3",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_axis_keeps_its_first_and_last_blocks() {
        let a = Axis::new(1024, &[32, 32]);
        assert_eq!(a.runs, vec![(0, 32), (992, 1024)]);
        assert_eq!(a.blocks, vec![32]);
        assert_eq!(a.slot(992), Some(33));
        assert_eq!(a.slot(500), None);
        assert_eq!(a.gaps(), vec![(32, 960)]);
        assert_eq!(
            a.elided("columns").unwrap(),
            "columns 32..991 (960 of 1024)"
        );
        let flat = Axis::new(1000, &[1000]);
        assert_eq!(flat.runs, vec![(0, 64), (936, 1000)]);
        let short = Axis::new(128, &[2, 64]);
        assert_eq!(
            (short.runs.clone(), short.blocks.clone()),
            (vec![(0, 128)], vec![2])
        );
        assert!(short.elided("rows").is_none());
    }

    #[test]
    fn rules_mark_every_mode_boundary_by_its_level() {
        let a = Axis::new(16, &[2, 1, 2, 4]);
        assert_eq!(a.blocks, vec![2, 4]);
        let levels: Vec<usize> = (0..16).map(|i| a.rule(i)).collect();
        assert_eq!(levels, [0, 0, 1, 0, 2, 0, 1, 0, 2, 0, 1, 0, 2, 0, 1, 0]);
    }
}
