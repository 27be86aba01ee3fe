//! Small helpers over lists of integers, written as tilus writes them.

use crate::error::{RegisterError, Result};

/// Writes integers as Python writes a list: `[1, 2]`.
pub(crate) fn py_list(items: &[i64]) -> String {
    let parts: Vec<String> = items.iter().map(i64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// Whether some value occurs twice in `items`.
pub(crate) fn has_repeats(items: &[i64]) -> bool {
    let mut sorted = items.to_vec();
    sorted.sort_unstable();
    sorted.windows(2).any(|w| w[0] == w[1])
}

/// The product of `items`, or an overflow error naming `what`.
pub(crate) fn product(items: impl IntoIterator<Item = i64>, what: &str) -> Result<i64> {
    items.into_iter().try_fold(1i64, |acc, x| {
        acc.checked_mul(x)
            .ok_or_else(|| RegisterError::Overflow(what.to_string()))
    })
}
