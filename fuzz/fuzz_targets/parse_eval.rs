//! Parses and evaluates arbitrary text as a calculator expression, as a
//! layout and as a tiler, and draws any layout that results: none of it may
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(value) = retile_calc::evaluate(text) {
        let _ = value.to_string();
        if let Ok(layout) = value.to_layout() {
            let _ = retile_layout::render_grid(&layout);
            let _ = layout.table(layout.size().unwrap_or(0).min(256));
        }
    }
    let _ = text.parse::<retile_layout::Layout>();
    let _ = text.parse::<retile_layout::Tiler>();
});
