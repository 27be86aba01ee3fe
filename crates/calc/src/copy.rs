//! The copy-planner functions of the calculator.

use retile_copy::{vector_width, TransposeRequest};

use crate::args::{check_keywords, keyword, need};
use crate::value::Value;
use crate::CalcError;

/// Names this module answers to.
pub const FUNCTIONS: &[&str] = &["transpose_plan", "vector_width"];

impl From<retile_copy::CopyError> for CalcError {
    fn from(e: retile_copy::CopyError) -> Self {
        CalcError::new(e.to_string())
    }
}

/// Calls the copy function `name`, or returns `None` if it is not one.
///
/// ```
/// use retile_calc::evaluate;
/// let v = evaluate("transpose_plan(threads=256, element_bits=16, max_bits=128, src=(256,16):(1,256), dst=(256,16):(16,1))").unwrap();
/// assert_eq!(v.to_string(), "TransposePlan(applies=true, load_width=2, loads=8, store_width=8, stores=2, extracts=16)");
/// assert_eq!(evaluate("vector_width((8,32):(1,8), (8,32):(1,16), element_bits=16)").unwrap().to_string(), "8");
/// ```
pub fn call(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Option<Result<Value, CalcError>> {
    FUNCTIONS
        .contains(&name)
        .then(|| dispatch(name, args, kwargs))
}

fn dispatch(name: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value, CalcError> {
    let int = |key: &str, default: i64| keyword(kwargs, key).map_or(Ok(default), Value::to_int);
    if name == "vector_width" {
        check_keywords(name, kwargs, &["src", "dst", "element_bits", "max_bits"])?;
        let (src, dst) = (
            need(name, args, kwargs, 0, "src")?.to_layout()?,
            need(name, args, kwargs, 1, "dst")?.to_layout()?,
        );
        return Ok(Value::Int(vector_width(
            &src,
            &dst,
            int("element_bits", 16)?,
            int("max_bits", 128)?,
        )?));
    }
    check_keywords(
        name,
        kwargs,
        &[
            "threads",
            "element_bits",
            "max_bits",
            "src",
            "dst",
            "target",
        ],
    )?;
    let src = need(name, &[], kwargs, 0, "src")?.to_layout()?;
    let dst = need(name, &[], kwargs, 0, "dst")?.to_layout()?;
    let mut request = TransposeRequest::new(
        int("threads", 256)?,
        int("element_bits", 16)?,
        int("max_bits", 128)?,
        src,
        dst,
    );
    if let Some(Value::Name(target)) = keyword(kwargs, "target") {
        request = request.with_target(target);
    }
    Ok(Value::Transpose(request.plan()?))
}
