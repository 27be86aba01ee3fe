//! The widest vector both sides of a copy allow.

use retile_layout::{gcd, max_common_vector, Layout};

use crate::error::{CopyError, Result};

/// The gcd of the strides of `layout`'s non-unit, non-contiguous modes: a
/// vector of `w` elements stays aligned only if `w` divides it (0 = no
/// constraint).
pub(crate) fn alignment(layout: &Layout) -> i64 {
    layout
        .flat_modes()
        .iter()
        .filter(|&&(e, s)| e > 1 && s != 1)
        .fold(0, |g, &(_, s)| gcd(g, s))
}

/// The vector width, in elements, of a copy from `src` to `dst` (both map
/// the same coordinates to offsets): the largest width that fits in
/// `max_bits`, divides `max_common_vector(src, dst)` and keeps every vector
/// aligned on both sides.
///
/// ```
/// let src: retile_layout::Layout = "(8,32):(1,8)".parse().unwrap();
/// let dst: retile_layout::Layout = "(8,32):(1,16)".parse().unwrap();
/// assert_eq!(retile_copy::vector_width(&src, &dst, 16, 128).unwrap(), 8);
/// assert_eq!(retile_copy::vector_width(&src, &dst, 32, 128).unwrap(), 4);
/// ```
pub fn vector_width(src: &Layout, dst: &Layout, element_bits: i64, max_bits: i64) -> Result<i64> {
    if element_bits < 1 || max_bits < element_bits {
        return Err(CopyError::Invalid(format!(
            "element_bits ({element_bits}) must be positive and at most max_bits ({max_bits})"
        )));
    }
    let common = max_common_vector(src, dst)?;
    Ok(widest(
        common,
        max_bits / element_bits,
        gcd(alignment(src), alignment(dst)),
    ))
}

/// No access is wider than this many elements (1-bit elements in 4 KB).
const WIDEST_ACCESS: i64 = 1 << 15;

/// The largest `w <= cap` (and at most [`WIDEST_ACCESS`]) dividing
/// `common` and `align` (align 0 = any).
pub(crate) fn widest(common: i64, cap: i64, align: i64) -> i64 {
    let g = if align == 0 {
        common
    } else {
        gcd(common, align)
    };
    (1..=cap.min(g).clamp(1, WIDEST_ACCESS))
        .rev()
        .find(|w| g % w == 0)
        .unwrap_or(1)
}
