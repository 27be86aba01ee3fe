//! `visualize_layout`: tilus's drawing of a layout, byte for byte.

use crate::error::{RegisterError, Result};
use crate::ints::{product, py_list};
use crate::layout::RegisterLayout;
use crate::mapping::MAX_LISTED;

impl RegisterLayout {
    /// The header line and one box-drawn grid per batch, as tilus's
    /// `visualize_layout` prints them: each cell is `thread: local`, or
    /// `[threads]: local` for a replicated element. Ranks above 3 drop
    /// size-1 dimensions and merge the leading ones into the batch.
    ///
    /// ```
    /// let text = retile_register::spatial(&[3, 2])?.visualize()?;
    /// assert_eq!(text, "\
    /// RegisterLayout(shape=[3, 2], mode_shape=[3, 2], spatial_modes=[0, 1], local_modes=[])
    /// ┌──────┬──────┐
    /// │ 0: 0 │ 1: 0 │
    /// ├──────┼──────┤
    /// │ 2: 0 │ 3: 0 │
    /// ├──────┼──────┤
    /// │ 4: 0 │ 5: 0 │
    /// └──────┴──────┘");
    /// # Ok::<(), retile_register::RegisterError>(())
    /// ```
    pub fn visualize(&self) -> Result<String> {
        let cells = product(self.shape.iter().copied(), "the tile size")?;
        if cells > MAX_LISTED {
            return Err(RegisterError::Operation(format!(
                "the tile has {cells} elements, more than retile draws ({MAX_LISTED})"
            )));
        }
        let view = self.with_shape(&batch_shape(&self.shape))?;
        let [batches, rows, cols] = [view.shape[0], view.shape[1], view.shape[2]];
        let mut text = self.to_string();
        for b in 0..batches {
            let mut table = Vec::with_capacity(rows as usize);
            for i in 0..rows {
                let row = (0..cols)
                    .map(|j| view.cell(&[b, i, j]))
                    .collect::<Result<Vec<_>>>()?;
                table.push(row);
            }
            text.push('\n');
            text.push_str(&grid(&table));
        }
        Ok(text)
    }

    fn cell(&self, coord: &[i64]) -> Result<String> {
        let holders = self.holders(coord)?;
        let local = holders.first().map_or(0, |h| h.1);
        let threads: Vec<i64> = holders.iter().map(|h| h.0).collect();
        Ok(match threads.as_slice() {
            [t] => format!("{t}: {local}"),
            _ => format!("{}: {local}", py_list(&threads)),
        })
    }
}

/// The shape as (batch, rows, columns).
fn batch_shape(shape: &[i64]) -> Vec<i64> {
    let mut s = shape.to_vec();
    if s.len() > 3 {
        s.retain(|&x| x > 1);
        while s.len() > 3 {
            let merged = s[0] * s[1];
            s.splice(0..2, [merged]);
        }
    }
    while s.len() < 3 {
        s.insert(0, 1);
    }
    s
}

/// tabulate's `simple_grid` format with left-aligned cells.
fn grid(table: &[Vec<String>]) -> String {
    let columns = table.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            table
                .iter()
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let rule = |left: &str, mid: &str, right: &str| -> String {
        let bars: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
        format!("{left}{}{right}", bars.join(mid))
    };
    let mut lines = vec![rule("┌", "┬", "┐")];
    for (r, row) in table.iter().enumerate() {
        if r > 0 {
            lines.push(rule("├", "┼", "┤"));
        }
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        lines.push(format!("│ {} │", cells.join(" │ ")));
    }
    lines.push(rule("└", "┴", "┘"));
    lines.join("\n")
}
