//! The calculator's error: a message, the column it points at, and the
//! library error that caused it.

use thiserror::Error;

/// An error of the calculator, with the column it points at when known.
///
/// ```
/// use retile_calc::evaluate;
/// let err = evaluate("size((2,3):(1,2)").unwrap_err();
/// assert_eq!(err.to_string(), "at column 17: expected ')', found the end of the expression");
/// ```
#[derive(Debug, Clone, Error)]
#[error("{}{message}", column.map(|c| format!("at column {c}: ")).unwrap_or_default())]
pub struct CalcError {
    column: Option<usize>,
    message: String,
    /// The algebra's (or planner's) own error, where one was the cause.
    #[source]
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

/// Errors are equal when they say the same thing at the same column.
impl PartialEq for CalcError {
    fn eq(&self, other: &Self) -> bool {
        (self.column, &self.message) == (other.column, &other.message)
    }
}

impl Eq for CalcError {}

impl CalcError {
    /// An error without a position.
    ///
    /// ```
    /// use retile_calc::CalcError;
    /// let err = CalcError::new("shapes differ");
    /// assert_eq!((err.to_string().as_str(), err.column()), ("shapes differ", None));
    /// assert_eq!(retile_calc::evaluate(" ").unwrap_err(), CalcError::new("empty expression"));
    /// ```
    pub fn new(message: impl Into<String>) -> Self {
        CalcError {
            column: None,
            message: message.into(),
            source: None,
        }
    }

    /// An error at a 1-based column.
    ///
    /// ```
    /// use retile_calc::CalcError;
    /// let err = CalcError::at(5, "expected ')'");
    /// assert_eq!(err.to_string(), "at column 5: expected ')'");
    /// assert_eq!((err.message(), err.column()), ("expected ')'", Some(5)));
    /// ```
    pub fn at(column: usize, message: impl Into<String>) -> Self {
        CalcError {
            column: Some(column),
            message: message.into(),
            source: None,
        }
    }

    /// The error of a library call: its message, and itself kept as the source.
    ///
    /// ```
    /// use std::error::Error;
    /// let err = retile_calc::evaluate("complement((2,2):(1,1), 4)").unwrap_err();
    /// assert!(err.source().is_some());
    /// ```
    pub fn caused_by(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        CalcError {
            column: None,
            message: e.to_string(),
            source: Some(std::sync::Arc::new(e)),
        }
    }

    /// The same error (column and source kept) saying `message`.
    pub(crate) fn with_message(self, message: String) -> Self {
        CalcError { message, ..self }
    }

    /// The message without the column.
    ///
    /// ```
    /// let err = retile_calc::evaluate("spatial(0)").unwrap_err();
    /// assert_eq!(err.message(), "Shape must only be positive integers, got [0]");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The 1-based column the error points at, if known.
    ///
    /// ```
    /// use retile_calc::evaluate;
    /// assert_eq!(evaluate("size((2,3):(1,2)").unwrap_err().column(), Some(17));
    /// assert_eq!(evaluate("spatial(0)").unwrap_err().column(), Some(1));
    /// ```
    pub fn column(&self) -> Option<usize> {
        self.column
    }

    /// Sets the column if none is set yet (the innermost position wins).
    pub(crate) fn or_column(mut self, column: usize) -> Self {
        self.column.get_or_insert(column);
        self
    }
}

impl From<retile_layout::LayoutError> for CalcError {
    fn from(e: retile_layout::LayoutError) -> Self {
        CalcError::caused_by(e)
    }
}
