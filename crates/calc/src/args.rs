//! Reading positional and keyword arguments of a call.

use crate::value::Value;
use crate::CalcError;

/// Positional argument `i`, or keyword `key`.
pub(crate) fn arg<'a>(
    args: &'a [Value],
    kwargs: &'a [(String, Value)],
    i: usize,
    key: &str,
) -> Option<&'a Value> {
    args.get(i)
        .or_else(|| kwargs.iter().find(|(k, _)| k == key).map(|(_, v)| v))
}

/// Keyword-only argument `key`.
pub(crate) fn keyword<'a>(kwargs: &'a [(String, Value)], key: &str) -> Option<&'a Value> {
    kwargs.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

pub(crate) fn need<'a>(
    name: &str,
    args: &'a [Value],
    kwargs: &'a [(String, Value)],
    i: usize,
    key: &str,
) -> Result<&'a Value, CalcError> {
    arg(args, kwargs, i, key).ok_or_else(|| CalcError::new(format!("{name} needs argument {key}")))
}

pub(crate) fn check_keywords(
    name: &str,
    kwargs: &[(String, Value)],
    allowed: &[&str],
) -> Result<(), CalcError> {
    match kwargs.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
        Some((k, _)) => Err(CalcError::new(format!(
            "{name} takes no keyword argument '{k}'; it takes {}",
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}
