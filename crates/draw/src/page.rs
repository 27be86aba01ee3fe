//! The page around the grids: lines of text above and below, margins, and
//! the size of the whole drawing.

use crate::svg::{Svg, LINE};

/// Pixels per character of a line of text (12-13 px monospace, 0.6 em, and room).
const TEXT_CHAR: i64 = 8;

/// The margin around everything, px.
pub(crate) const MARGIN: i64 = 12;

/// Lines of text, each with its class (`title` or `note`).
#[derive(Debug, Default, Clone)]
pub(crate) struct Lines(pub Vec<(&'static str, String)>);

impl Lines {
    /// Adds a line.
    pub fn push(&mut self, class: &'static str, text: impl Into<String>) {
        self.0.push((class, text.into()));
    }

    /// Writes the lines from `top` down; returns the y below them.
    pub fn write(&self, svg: &mut Svg, top: i64) -> i64 {
        let mut y = top;
        for (class, text) in &self.0 {
            y += LINE;
            svg.text(MARGIN, y - 4, class, text);
        }
        y
    }

    /// The width the lines need, px.
    pub fn width(&self) -> i64 {
        self.0
            .iter()
            .map(|(_, t)| t.chars().count() as i64 * TEXT_CHAR + 2 * MARGIN)
            .max()
            .unwrap_or(0)
    }

    /// The height the lines take, px.
    pub fn height(&self) -> i64 {
        self.0.len() as i64 * LINE
    }
}
