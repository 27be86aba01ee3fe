//! The store's errors: a destination's own (the file system's or the
//! object store's), and the stream's error that names what was being
//! written where.

use std::path::Path;

use retile_plan::StreamError;

/// An error of a destination: the file system's or the object store's.
pub(crate) type DestError = Box<dyn std::error::Error + Send + Sync>;

/// The stream's error for `e`, met while `doing` in the store at `path`.
pub(crate) fn store_error(path: &Path, doing: &str, e: impl Into<DestError>) -> StreamError {
    StreamError::Store {
        doing: doing.to_owned(),
        path: path.to_owned(),
        source: e.into(),
    }
}

/// `text` quoted for a one-line message: control characters escaped (a
/// newline as `\n`), at most 200 characters.
pub(crate) fn quoted(text: &str) -> String {
    let shown: String = text
        .chars()
        .take(200)
        .flat_map(|c| match c.is_control() {
            true => c.escape_default().collect::<Vec<_>>(),
            false => vec![c],
        })
        .collect();
    match text.chars().count() > 200 {
        true => format!("'{shown}...'"),
        false => format!("'{shown}'"),
    }
}
