//! # retile-calc: the calculator language of `retile eval`
//!
//! Expressions in CuTe notation (`(2,2):(1,4)`, tilers `<2:1,4>`, `_`) and
//! Python-style calls that nest: `logical_divide((4,2,3):(2,1,8), 4:2)`.
//!
//! ```
//! use retile_calc::evaluate;
//! assert_eq!(evaluate("coalesce((2,(1,6)):(1,(6,2)))").unwrap().to_string(), "12:1");
//! assert_eq!(evaluate("idx2crd(9, (2,4))").unwrap().to_string(), "(1,4)");
//! let err = evaluate("composition((4,3):(1,5), 6:1)").unwrap_err();
//! assert!(err.to_string().contains("Shape Divisibility"));
//! ```

pub mod algebra;
mod args;
pub mod banks;
pub mod copy;
pub mod device;
mod error;
mod eval;
pub mod register;
pub mod show;
pub mod swizzle;
mod syntax;
mod value;

pub use error::CalcError;
pub use eval::eval;
pub use syntax::{
    describe_char, parse, BinaryOp, Expr, ExprKind, Link, MethodCall, MAX_DEPTH, MAX_LEN,
};
pub use value::Value;

/// Parses and evaluates one expression.
///
/// ```
/// assert_eq!(retile_calc::evaluate("max_common_vector(8:1, (2,4):(1,2))").unwrap().to_string(), "8");
/// ```
pub fn evaluate(text: &str) -> Result<Value, CalcError> {
    if text.trim().is_empty() {
        return Err(CalcError::new("empty expression"));
    }
    eval(&parse(text)?)
}
