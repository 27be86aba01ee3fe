//! Fills that stay apart when printed in grey: eight colours of evenly
//! spaced lightness (CIE L* 96 down to 26, one hue each), in an order that
//! puts neighbours far apart in lightness, and for classes 8 to 31 the same
//! colours overlaid with one of three hatchings. Labels on the three darkest
//! colours are white.

use std::fmt::Write;

/// The colours, lightest first, and their CIE L*.
const COLOURS: [(&str, u8); 8] = [
    ("#fff3be", 96),
    ("#8ce6e8", 86),
    ("#ffa298", 76),
    ("#76ae71", 66),
    ("#6286ca", 56),
    ("#9a5f33", 46),
    ("#006285", 39),
    ("#692253", 26),
];

/// Class `k`'s colour: neighbours differ by at least 3 steps of lightness.
const ORDER: [usize; 8] = [0, 4, 1, 5, 2, 6, 3, 7];

/// Distinct classes: 8 colours x 4 hatchings.
pub(crate) const CLASSES: i64 = 32;

/// The colour (lightness index) of class `k`.
fn colour(k: i64) -> usize {
    ORDER[k.rem_euclid(8) as usize]
}

/// Whether labels on class `k` are white.
pub(crate) fn dark(k: i64) -> bool {
    colour(k) >= 5
}

/// The CSS class of palette entry `k` (taken modulo [`CLASSES`]).
pub(crate) fn class(k: i64) -> String {
    format!("cell k{}", k.rem_euclid(CLASSES))
}

/// The label class for text on palette entry `k`.
pub(crate) fn label(k: i64) -> &'static str {
    if dark(k) {
        "lab dark"
    } else {
        "lab"
    }
}

/// The hatching of class `k`: none, `/` lines, dots, crossed lines.
fn hatch(k: i64) -> i64 {
    k.rem_euclid(CLASSES) / 8
}

/// One CSS rule per class.
pub(crate) fn css() -> String {
    let mut out = String::new();
    for k in 0..CLASSES {
        let (fill, _) = COLOURS[colour(k)];
        if hatch(k) == 0 {
            let _ = writeln!(out, ".k{k}{{fill:{fill}}}");
        } else {
            let _ = writeln!(out, ".k{k}{{fill:url(#h{k})}}");
        }
    }
    out
}

/// The hatch patterns of classes 8 to 31.
pub(crate) fn defs() -> String {
    let mut out = String::from("<defs>\n");
    for k in 8..CLASSES {
        let (fill, _) = COLOURS[colour(k)];
        let ink = if dark(k) { "#ffffff" } else { "#000000" };
        let marks = match hatch(k) {
            1 => format!(
                r#"<path d="M0,8 L8,0" stroke="{ink}" stroke-opacity="0.45" stroke-width="1.2"/>"#
            ),
            2 => format!(r#"<circle cx="4" cy="4" r="1.3" fill="{ink}" fill-opacity="0.5"/>"#),
            _ => format!(
                r#"<path d="M0,8 L8,0 M0,0 L8,8" stroke="{ink}" stroke-opacity="0.4" stroke-width="1"/>"#
            ),
        };
        let _ = writeln!(
            out,
            r#"<pattern id="h{k}" patternUnits="userSpaceOnUse" width="8" height="8"><rect width="8" height="8" fill="{fill}"/>{marks}</pattern>"#
        );
    }
    out.push_str("</defs>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CIE L* of an sRGB colour `#rrggbb`.
    fn lightness(hex: &str) -> f64 {
        let channel = |i: usize| {
            let c = f64::from(u8::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16).unwrap()) / 255.0;
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        let y = 0.2126 * channel(0) + 0.7152 * channel(1) + 0.0722 * channel(2);
        116.0 * y.cbrt() - 16.0
    }

    #[test]
    fn the_colours_are_ten_steps_of_lightness_apart_and_neighbours_three_steps() {
        for (hex, l) in COLOURS {
            assert!((lightness(hex) - f64::from(l)).abs() < 1.0, "{hex}");
        }
        for pair in COLOURS.windows(2) {
            assert!(lightness(pair[0].0) - lightness(pair[1].0) >= 7.0);
        }
        for k in 0..CLASSES {
            let (a, b) = (colour(k) as i64, colour(k + 1) as i64);
            assert!((a - b).abs() >= 3, "{k}");
        }
    }

    #[test]
    fn white_labels_go_on_the_dark_colours_only() {
        for k in 0..CLASSES {
            let l = lightness(COLOURS[colour(k)].0);
            assert_eq!(dark(k), l < 50.0, "{k}");
        }
    }
}
