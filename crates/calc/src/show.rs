//! Drawings of calculator values, as `retile show` prints them: text grids
//! (CuTe's `print_layout`, tilus's `visualize_layout`, device sticks, bank
//! reports) or SVG pictures (`retile show --svg`).

use retile_draw as draw;
use retile_layout::ComposedLayout;

use crate::error::CalcError;
use crate::value::Value;

/// How a value is drawn.
///
/// ```
/// use retile_calc::{evaluate, show::{drawing, Format}};
/// let v = evaluate("(2,3):(3,1)")?;
/// assert!(drawing(&v, Format::Text, None)?.contains(" 1  | 3 | 4 | 5 |"));
/// assert!(drawing(&v, Format::Svg, None)?.starts_with("<svg"));
/// let device = evaluate("device_layout([512, 256], float16)")?;
/// assert!(drawing(&device, Format::Svg, None).is_err());
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A text grid.
    Text,
    /// An SVG picture.
    Svg,
}

impl From<draw::DrawError> for CalcError {
    fn from(e: draw::DrawError) -> Self {
        CalcError::caused_by(e)
    }
}

/// Instructions a text bank report lists.
const LISTED: usize = 16;

/// The drawing of `value`: a layout or swizzled layout as a grid of
/// offsets, a register layout as its threads' registers, a device layout
/// as its sticks (text only), a transpose plan as its loads and stores
/// (SVG only), a bank analysis as its conflicts. With `tile = Some((rows,
/// cols))`, a layout is drawn as a thread-value layout over that tile.
///
/// ```
/// use retile_calc::{evaluate, show::{drawing, Format}};
/// let v = evaluate("Sw<1,0,1> o (2,2):(2,1)")?;
/// assert!(drawing(&v, Format::Text, None)?.contains(" 1  | 3 | 2 |"));
/// assert!(drawing(&v, Format::Svg, None)?.contains(r#"data-row="1" data-col="0" data-offset="3""#));
/// let tv = evaluate("((4,8),(2,2)):((32,1),(16,8))")?;
/// assert!(drawing(&tv, Format::Svg, Some((16, 8)))?.contains("T31"));
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
pub fn drawing(
    value: &Value,
    format: Format,
    tile: Option<(i64, i64)>,
) -> Result<String, CalcError> {
    if let Some((rows, cols)) = tile {
        let tv = value.to_layout().map_err(|e| {
            CalcError::new(format!(
                "a tile is given, so the value must be a thread-value layout: {}",
                e.message()
            ))
        })?;
        return match format {
            Format::Svg => Ok(draw::tv_svg(&tv, rows, cols)?),
            Format::Text => Err(CalcError::new(
                "a thread-value layout over a tile is drawn as SVG only; add --svg (format=\"svg\")",
            )),
        };
    }
    match (value, format) {
        (Value::Device(l), Format::Text) => l.render_sticks().map_err(CalcError::caused_by),
        (Value::Device(_), Format::Svg) => Err(CalcError::new(
            "device layouts are drawn as text only; leave out --svg",
        )),
        (Value::Register(l), Format::Text) => Ok(format!("{}\n", l.visualize()?)),
        (Value::Register(l), Format::Svg) => Ok(draw::register_svg(l)?),
        (Value::Composed(c), Format::Text) => Ok(retile_layout::render_composed(c)?),
        (Value::Composed(c), Format::Svg) => Ok(draw::layout_svg(c)?),
        (Value::Banks(b), Format::Text) => Ok(b.details(LISTED)),
        (Value::Banks(b), Format::Svg) => Ok(draw::banks_svg(b)?),
        (Value::Transpose(retile_copy::TransposePlan::Applies(t)), Format::Svg) => Ok(draw::copy_svg(t)?),
        (Value::Transpose(p), _) => Err(CalcError::new(format!(
            "{p} is drawn as SVG only, and only when it applies (retile plan copy prints it as text)"
        ))),
        (other, Format::Text) => Ok(retile_layout::render_grid(&other.to_layout()?)?),
        (other, Format::Svg) => Ok(draw::layout_svg(&ComposedLayout::from(other.to_layout()?))?),
    }
}
