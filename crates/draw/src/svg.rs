//! A small SVG writer: integer coordinates, escaped text, elements in the
//! order they are added, so that the same drawing is the same bytes.

use std::fmt::Write;

use crate::palette;

/// Pixels per character of the monospace font at [`FONT`] px (0.6 em).
pub(crate) const CHAR_WIDTH: i64 = 7;
/// The font size of labels, in px.
pub(crate) const FONT: i64 = 12;
/// The height of one line of text, in px.
pub(crate) const LINE: i64 = 16;

/// `text` with `&`, `<`, `>` and `"` escaped, and characters XML cannot
/// hold (controls) written as `U+XXXX`.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => {
                let _ = write!(out, "U+{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// An SVG document being written.
pub(crate) struct Svg {
    body: String,
    title: String,
}

impl Svg {
    /// An empty drawing whose `<title>` is `title`.
    pub fn new(title: &str) -> Svg {
        Svg {
            body: String::new(),
            title: title.to_string(),
        }
    }

    /// A rectangle of class `class`, with `data-*` attributes.
    pub fn rect(&mut self, x: i64, y: i64, w: i64, h: i64, class: &str, data: &[(&str, i64)]) {
        self.rect_tagged(x, y, w, h, class, None, data);
    }

    /// A rectangle with a text `data-*` attribute (`tag`) before the numeric ones.
    #[allow(clippy::too_many_arguments)]
    pub fn rect_tagged(
        &mut self,
        x: i64,
        y: i64,
        w: i64,
        h: i64,
        class: &str,
        tag: Option<(&str, &str)>,
        data: &[(&str, i64)],
    ) {
        let _ = write!(
            self.body,
            r#"<rect x="{x}" y="{y}" width="{w}" height="{h}" class="{class}""#
        );
        if let Some((key, value)) = tag {
            let _ = write!(self.body, r#" data-{key}="{}""#, escape(value));
        }
        for (key, value) in data {
            let _ = write!(self.body, r#" data-{key}="{value}""#);
        }
        self.body.push_str("/>\n");
    }

    /// Text lines centred at `(x, y)` (the middle of the block of lines).
    pub fn label(&mut self, x: i64, y: i64, class: &str, lines: &[&str]) {
        let top = y - (lines.len() as i64 - 1) * (LINE - 3) / 2;
        let _ = write!(self.body, r#"<text x="{x}" y="{top}" class="{class}">"#);
        for (k, line) in lines.iter().enumerate() {
            if k == 0 {
                self.body.push_str(&escape(line));
            } else {
                let _ = write!(
                    self.body,
                    r#"<tspan x="{x}" dy="{}">{}</tspan>"#,
                    LINE - 3,
                    escape(line)
                );
            }
        }
        self.body.push_str("</text>\n");
    }

    /// Left-aligned text at `(x, y)` (its baseline).
    pub fn text(&mut self, x: i64, y: i64, class: &str, text: &str) {
        let _ = writeln!(
            self.body,
            r#"<text x="{x}" y="{y}" class="{class}">{}</text>"#,
            escape(text)
        );
    }

    /// A line of class `class`.
    pub fn line(&mut self, (x1, y1): (i64, i64), (x2, y2): (i64, i64), class: &str) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" class="{class}"/>"#
        );
    }

    /// Opens a group with `class` and a `data-*` name.
    pub fn open(&mut self, class: &str, name: &str) {
        let _ = writeln!(
            self.body,
            r#"<g class="{class}" data-name="{}">"#,
            escape(name)
        );
    }

    /// Closes the last group.
    pub fn close(&mut self) {
        self.body.push_str("</g>\n");
    }

    /// The document, `width x height` px.
    pub fn finish(self, width: i64, height: i64) -> String {
        let mut out = String::with_capacity(self.body.len() + 8192);
        let _ = writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="{FONT}">"#
        );
        let _ = writeln!(out, "<title>{}</title>", escape(&self.title));
        out.push_str(&style());
        out.push_str(&palette::defs());
        let _ = writeln!(
            out,
            r#"<rect x="0" y="0" width="{width}" height="{height}" class="page"/>"#
        );
        out.push_str(&self.body);
        out.push_str("</svg>\n");
        out
    }
}

/// The style sheet: cells, labels, rules, and the palette's classes.
fn style() -> String {
    let mut css = String::from(
        "<style>\n\
         .page{fill:#fff}\n\
         .cell{stroke:#555;stroke-width:0.5}\n\
         .none{fill:#fff;stroke:#999;stroke-width:0.5}\n\
         .lab{text-anchor:middle;dominant-baseline:central;font-size:11px;fill:#000;paint-order:stroke;stroke:#fff;stroke-width:2px}\n\
         .lab.dark{fill:#fff;stroke:#000}\n\
         .head{text-anchor:middle;dominant-baseline:central;font-size:10px;fill:#444}\n\
         .title{font-size:13px;font-weight:bold;fill:#000}\n\
         .note{font-size:12px;fill:#222}\n\
         .gap{text-anchor:middle;dominant-baseline:central;font-size:14px;fill:#666}\n\
         .rule{stroke:#000;stroke-width:1.5}\n\
         .rule2{stroke:#000;stroke-width:2.5}\n\
         .rule3{stroke:#000;stroke-width:3.5}\n\
         .frame{fill:none;stroke:#000;stroke-width:1.5}\n\
         .mark{fill:none;stroke:#000;stroke-width:3}\n\
         .vec{fill:none;stroke:#000;stroke-width:1.5}\n\
         .edge{fill:none;stroke:#000;stroke-width:1;stroke-dasharray:4 3}\n\
         .shard{stroke:#000;stroke-width:4}\n",
    );
    css.push_str(&palette::css());
    css.push_str("</style>\n");
    css
}
