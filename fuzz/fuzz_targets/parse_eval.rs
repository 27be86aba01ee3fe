//! Parses and evaluates arbitrary text as a calculator expression, as a
//! layout, a tiler, a swizzle and a swizzled layout, and draws whatever
//! results, as text and as SVG: none of it may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use retile_calc::show::{drawing, Format};
use retile_calc::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(value) = retile_calc::evaluate(text) {
        let _ = value.to_string();
        let _ = drawing(&value, Format::Text, None);
        let _ = drawing(&value, Format::Svg, None);
        let _ = drawing(&value, Format::Svg, Some((4, 8)));
        if let Value::Composed(c) = &value {
            let _ = c.table(c.size().unwrap_or(0).min(256));
        }
        if let Ok(layout) = value.to_layout() {
            let _ = layout.table(layout.size().unwrap_or(0).min(256));
        }
    }
    let _ = text.parse::<retile_layout::Layout>();
    let _ = text.parse::<retile_layout::Tiler>();
    let _ = text.parse::<retile_layout::Swizzle>();
    if let Ok(c) = text.parse::<retile_layout::ComposedLayout>() {
        let _ = c.eval(c.size().unwrap_or(0));
    }
});
