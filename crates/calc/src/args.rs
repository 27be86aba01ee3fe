//! Matching a call's positional and keyword arguments to the function's
//! parameters, as Python matches them: every function declares its
//! parameters once, and [`bind`] rejects what Python rejects (too many
//! positional arguments, an unknown keyword, a keyword given twice, a
//! keyword naming a parameter already given by position).

use crate::error::CalcError;
use crate::value::Value;

/// A call's arguments matched to the function's parameters.
pub(crate) struct Bound<'a> {
    function: String,
    params: Vec<&'static str>,
    values: Vec<Option<&'a Value>>,
}

/// "1st", "2nd", ... for messages.
fn ordinal(i: usize) -> String {
    let suffix = match (i % 10, i % 100) {
        (1, n) if n != 11 => "st",
        (2, n) if n != 12 => "nd",
        (3, n) if n != 13 => "rd",
        _ => "th",
    };
    format!("{i}{suffix}")
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Matches `args` to `positional` in order and `kwargs` by name to
/// `positional` and `keyword_only`.
///
/// A function whose positional arguments are a free-length list (`spatial(2,
/// 3, ranks=[1, 0])`) passes no `args` here and reads them itself.
pub(crate) fn bind<'a>(
    function: &str,
    args: &'a [Value],
    kwargs: &'a [(String, Value)],
    positional: &[&'static str],
    keyword_only: &[&'static str],
) -> Result<Bound<'a>, CalcError> {
    let params: Vec<&'static str> = positional.iter().chain(keyword_only).copied().collect();
    let names = params.join(", ");
    if args.len() > positional.len() {
        let n = positional.len();
        let takes = if n == 0 {
            "no positional arguments".to_string()
        } else {
            format!(
                "at most {n} positional argument{} ({})",
                plural(n),
                positional.join(", ")
            )
        };
        return Err(CalcError::new(format!(
            "{function} takes {takes}, got {}",
            args.len()
        )));
    }
    let mut values: Vec<Option<&Value>> = vec![None; params.len()];
    for (slot, value) in values.iter_mut().zip(args) {
        *slot = Some(value);
    }
    for (i, (key, value)) in kwargs.iter().enumerate() {
        let Some(p) = params.iter().position(|p| p == key) else {
            let takes = if params.is_empty() {
                "no keyword arguments".to_string()
            } else {
                format!("only {names}")
            };
            return Err(CalcError::new(format!(
                "{function} takes no keyword argument '{key}'; it takes {takes}"
            )));
        };
        if kwargs[..i].iter().any(|(k, _)| k == key) {
            return Err(CalcError::new(format!(
                "{function} got keyword argument '{key}' twice; give it once"
            )));
        }
        if p < args.len() {
            return Err(CalcError::new(format!(
                "{function} got two values for '{key}': the {} positional argument and {key}=...; give it once",
                ordinal(p + 1)
            )));
        }
        values[p] = Some(value);
    }
    Ok(Bound {
        function: function.to_string(),
        params,
        values,
    })
}

impl<'a> Bound<'a> {
    fn index(&self, key: &str) -> usize {
        // Callers name only parameters they declared; an unknown key reads
        // as absent rather than panicking.
        self.params
            .iter()
            .position(|p| *p == key)
            .unwrap_or(usize::MAX)
    }

    /// The argument for parameter `key`, if given.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.values.get(self.index(key)).copied().flatten()
    }

    /// The argument for parameter `key`, which must be given.
    pub(crate) fn need(&self, key: &str) -> Result<&'a Value, CalcError> {
        let i = self.index(key);
        self.get(key).ok_or_else(|| {
            CalcError::new(format!(
                "{} needs argument '{key}': give it as the {} argument or as {key}=...",
                self.function,
                ordinal(i + 1)
            ))
        })
    }

    /// Adds the function and parameter to a conversion's error.
    fn context(&self, key: &str, e: CalcError) -> CalcError {
        let message = format!("{} argument '{key}': {}", self.function, e.message());
        e.with_message(message)
    }

    /// An integer argument, or `default` when absent.
    pub(crate) fn int_or(&self, key: &str, default: i64) -> Result<i64, CalcError> {
        self.get(key).map_or(Ok(default), |v| {
            v.to_int().map_err(|e| self.context(key, e))
        })
    }

    /// An integer argument that must be given.
    pub(crate) fn int(&self, key: &str) -> Result<i64, CalcError> {
        self.need(key)?.to_int().map_err(|e| self.context(key, e))
    }

    /// A list of integers that must be given.
    pub(crate) fn ints(&self, key: &str) -> Result<Vec<i64>, CalcError> {
        self.need(key)?.to_ints().map_err(|e| self.context(key, e))
    }

    /// A boolean argument, `True` or `False` only (Python would take any
    /// value's truth; an integer here is far more often a slip than a
    /// boolean), or `default` when absent.
    pub(crate) fn bool_or(&self, key: &str, default: bool) -> Result<bool, CalcError> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => {
                let got = match other {
                    Value::Int(v) => format!("the integer {v}"),
                    _ => other.type_name().to_string(),
                };
                Err(CalcError::new(format!(
                    "{} argument '{key}' must be True or False, got {got}; write {key}=True or {key}=False",
                    self.function
                )))
            }
        }
    }
}
