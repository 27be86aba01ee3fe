//! Bank conflicts: a shared-memory tile coloured by bank, the lanes of its
//! worst instruction outlined, before and after the suggested swizzle.

use retile_copy::{BankAnalysis, BankReport};
use retile_layout::{ComposedLayout, GridAxes};

use crate::error::Result;
use crate::grid::{elision, Axis, Grid};
use crate::layout::leaves;
use crate::page::{Lines, MARGIN};
use crate::palette;
use crate::svg::{Svg, LINE};

/// Instructions listed under each panel.
const LISTED: usize = 8;

/// Draws a bank-conflict analysis: the shared-memory tile as its layout's
/// grid, each cell coloured by the bank of its element and labelled with
/// its offset over `b<bank>`; the lanes of the first phase of the costliest
/// instruction outlined and labelled `L<lane>` (same colour, different
/// offset: a conflict); beside it, the same with the suggested swizzle.
///
/// ```
/// use retile_copy::{AccessPattern, BankAnalysis, Banks};
/// let rows = AccessPattern::from_tv(&"(8,8):(1,8)".parse()?, 1, 32)?; // thread t reads row t
/// let a = BankAnalysis::new("(8,8):(8,1)".parse()?, rows, 32, Banks::default())?;
/// let svg = retile_draw::banks_svg(&a)?;
/// assert_eq!(svg.matches("data-bank=").count(), 128); // two panels of 64
/// assert!(svg.contains(r#"data-panel="as given" data-row="4" data-col="0" data-offset="32" data-bank="0" data-lane="4""#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn banks_svg(analysis: &BankAnalysis) -> Result<String> {
    let axes = GridAxes::of(analysis.memory.layout())?;
    let rows = Axis::new(axes.row_count, &leaves(&axes.rows));
    let cols = Axis::new(axes.col_count, &leaves(&axes.cols));
    let worst = worst(&analysis.report);
    let lanes = highlighted(analysis, worst);
    let mut panels = vec![("as given".to_string(), &analysis.memory, &analysis.report)];
    if let Some(s) = &analysis.suggestion {
        panels.push((format!("with {}", s.swizzle), &s.memory, &s.report));
    }
    let mut lines = Lines::default();
    lines.push(
        "title",
        format!(
            "bank conflicts of {} in {}",
            analysis.pattern.source, analysis.memory
        ),
    );
    lines.push(
        "note",
        format!(
            "{} banks of {} bytes, {}-bit elements, warps of {}; each cell: its offset and bank b; colour = bank",
            analysis.banks.banks, analysis.banks.bank_bytes, analysis.element_bits, analysis.pattern.warp
        ),
    );
    if let Some(i) = worst {
        let instruction = &analysis.pattern.instructions[i];
        lines.push(
            "note",
            format!(
                "outlined: the first phase of instruction {i} (warp {}, access {}), each cell labelled with its lane L",
                instruction.warp, instruction.step
            ),
        );
    }
    if let Some(note) = &axes.note {
        lines.push("note", note.clone());
    }
    if let Some(elided) = elision(&rows, &cols) {
        lines.push("note", elided);
    }
    let chars = 1 + analysis
        .memory
        .cosize()?
        .max(analysis.banks.banks)
        .to_string()
        .len() as i64;
    let top = MARGIN + lines.height() + LINE;
    let mut grids = Vec::new();
    let mut left = MARGIN;
    for _ in &panels {
        let grid = Grid::new(rows.clone(), cols.clone(), chars, 2, left, top);
        left = grid.right() + 3 * MARGIN;
        grids.push(grid);
    }
    let mut svg = Svg::new(&lines.0[0].1);
    lines.write(&mut svg, MARGIN);
    let mut bottom = top;
    let mut right = MARGIN;
    for ((name, memory, report), grid) in panels.iter().zip(&grids) {
        svg.text(grid.x0, top - 4, "note", name);
        draw_panel(&mut svg, grid, &axes, memory, analysis, name, &lanes)?;
        let mut y = grid.bottom() + LINE;
        svg.text(grid.x0, y, "note", &report.to_string());
        for (k, c) in report.instructions.iter().take(LISTED).enumerate() {
            y += LINE;
            let text = format!("instruction {k} {c}");
            svg.text(grid.x0, y, "note", &text);
        }
        if report.instructions.len() > LISTED {
            y += LINE;
            svg.text(
                grid.x0,
                y,
                "note",
                &format!("... {} more", report.instructions.len() - LISTED),
            );
        }
        bottom = bottom.max(y);
        right = right.max(grid.right());
    }
    let text_width = panels.len() as i64 * 62 * crate::svg::CHAR_WIDTH;
    let width = (right + MARGIN).max(lines.width()).max(text_width);
    Ok(svg.finish(width, bottom + MARGIN))
}

/// The first instruction with the most wavefronts.
fn worst(report: &BankReport) -> Option<usize> {
    let most = report.instructions.iter().map(|c| c.wavefronts).max()?;
    report
        .instructions
        .iter()
        .position(|c| c.wavefronts == most)
}

/// Tile index -> lane, for the first phase of instruction `worst`.
fn highlighted(analysis: &BankAnalysis, worst: Option<usize>) -> Vec<(i64, i64)> {
    let Some(instruction) = worst.and_then(|i| analysis.pattern.instructions.get(i)) else {
        return Vec::new();
    };
    let per_phase = instruction.lanes_per_phase(analysis.element_bits, analysis.banks);
    let mut out: Vec<(i64, i64)> = instruction
        .lanes
        .iter()
        .take(per_phase)
        .enumerate()
        .filter_map(|(lane, a)| Some((a.as_ref()?, lane as i64)))
        .flat_map(|(a, lane)| a.elements.iter().map(move |&e| (e, lane)))
        .collect();
    out.sort_unstable();
    out
}

#[allow(clippy::too_many_arguments)]
fn draw_panel(
    svg: &mut Svg,
    grid: &Grid,
    axes: &GridAxes,
    memory: &ComposedLayout,
    analysis: &BankAnalysis,
    name: &str,
    lanes: &[(i64, i64)],
) -> Result<()> {
    svg.open("cells", name);
    let mut marks = Vec::new();
    for (i, j) in grid.cells() {
        let Some((x, y)) = grid.cell(i, j) else {
            continue;
        };
        let offset = memory.apply(axes.offset(i, j)?)?;
        let bank = analysis
            .banks
            .bank_of_element(offset, analysis.element_bits);
        let index = i + axes.row_count * j;
        let lane = lanes
            .binary_search_by_key(&index, |&(e, _)| e)
            .ok()
            .map(|k| lanes[k].1);
        let mut data = vec![("row", i), ("col", j), ("offset", offset), ("bank", bank)];
        if let Some(lane) = lane {
            data.push(("lane", lane));
            marks.push((x, y));
        }
        svg.rect_tagged(
            x,
            y,
            grid.cell_w,
            grid.cell_h,
            &palette::class(bank),
            Some(("panel", name)),
            &data,
        );
        let first = match lane {
            Some(lane) => format!("L{lane}"),
            None => offset.to_string(),
        };
        let (cx, cy) = (x + grid.cell_w / 2, y + grid.cell_h / 2);
        svg.label(cx, cy, palette::label(bank), &[&first, &format!("b{bank}")]);
    }
    svg.close();
    grid.frame(svg);
    svg.open("marks", name);
    for (x, y) in marks {
        svg.rect(x + 1, y + 1, grid.cell_w - 2, grid.cell_h - 2, "mark", &[]);
    }
    svg.close();
    Ok(())
}
