//! Swizzles and swizzled layouts in the calculator: `Swizzle(B, M, S)` (or
//! `Sw<B,M,S>`), `composition(Swizzle(..), L)` (or `Sw<B,M,S> o L`), and
//! the algebra's functions on a swizzled layout, as CuTe's C++ defines them
//! on a `ComposedLayout`: each acts on the inner layout and keeps the
//! swizzle.

use retile_layout as cute;
use retile_layout::{ComposedLayout, Swizzle};

use crate::algebra::{arity, tiler_op};
use crate::args::bind;
use crate::error::CalcError;
use crate::value::Value;

/// Names this module adds (the algebra's names also take swizzled layouts).
///
/// ```
/// use retile_calc::{evaluate, swizzle::FUNCTIONS};
/// assert_eq!(FUNCTIONS, ["Swizzle", "Sw"]);
/// assert_eq!(evaluate("Swizzle(3, 4, 3)")?, evaluate("Sw<3,4,3>")?);
/// assert_eq!(evaluate("Sw(2, 0, 3)")?.to_string(), "Sw<2,0,3>");
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
pub const FUNCTIONS: &[&str] = &["Swizzle", "Sw"];

/// Calls `name` when it is a swizzle function or its arguments hold a
/// swizzle or a swizzled layout; `None` otherwise (a plain layout's call).
///
/// ```
/// use retile_calc::evaluate;
/// assert_eq!(evaluate("Swizzle(3, 4, 3)").unwrap().to_string(), "Sw<3,4,3>");
/// let c = evaluate("composition(Sw<3,4,3>, (8,64):(64,1))").unwrap();
/// assert_eq!(c.to_string(), "Sw<3,4,3> o (8,64):(64,1)");
/// assert_eq!(c, evaluate("Sw<3,4,3> o (8,64):(64,1)").unwrap());
/// assert_eq!(evaluate("eval(Sw<3,4,3> o (8,64):(64,1), (2,0))").unwrap().to_string(), "144");
/// assert_eq!(evaluate("size(Sw<3,4,3>)").unwrap().to_string(), "1024");
/// assert_eq!(evaluate("cosize(Sw<3,4,3> o (8,32):(32,1))").unwrap().to_string(), "256");
/// assert_eq!(evaluate("Sw<0,4,3> o 8:1").unwrap().to_string(), "8:1");
/// ```
pub fn call(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Option<Result<Value, CalcError>> {
    if FUNCTIONS.contains(&name) {
        return Some(make(name, args, kwargs));
    }
    let swizzled = |v: &Value| matches!(v, Value::Swizzle(_) | Value::Composed(_));
    if !args.iter().any(swizzled) {
        return None;
    }
    if let Some((key, _)) = kwargs.first() {
        return Some(Err(CalcError::new(format!(
            "{name} takes no keyword arguments (got {key}=...); give its arguments in order"
        ))));
    }
    Some(match (name, &args[0]) {
        ("composition", _) => composition(args),
        ("crd2idx", _) => crd2idx(args),
        (_, Value::Composed(c)) => on_composed(name, c, args),
        (_, Value::Swizzle(s)) => on_swizzle(name, *s, args),
        _ => Err(not_defined(name)),
    })
}

/// `crd2idx(coord, C)` for a swizzled layout `C`.
fn crd2idx(args: &[Value]) -> Result<Value, CalcError> {
    match args {
        [coord, Value::Composed(c)] => Ok(Value::Int(c.eval_coord(&coord.to_int_tuple()?)?)),
        _ => Err(not_defined("crd2idx")),
    }
}

/// `Swizzle(bits, base, shift)`.
fn make(name: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value, CalcError> {
    let bound = bind(name, args, kwargs, &["bits", "base", "shift"], &[])?;
    let swizzle = Swizzle::new(bound.int("bits")?, bound.int("base")?, bound.int("shift")?)?;
    Ok(Value::Swizzle(swizzle))
}

fn not_defined(name: &str) -> CalcError {
    CalcError::new(format!(
        "{name} is not defined on a swizzle or a swizzled layout here; apply it to the \
         layout inside and swizzle the result: composition(Swizzle(B,M,S), {name}(L, ...))"
    ))
}

/// A swizzle over a layout, C++'s `composition(Swizzle, [offset,] Layout)`:
/// a swizzle of no bits gives the layout itself (with no offset).
fn swizzled(swizzle: Swizzle, offset: i64, layout: cute::Layout) -> Value {
    if swizzle.is_identity() && offset == 0 {
        Value::Layout(layout)
    } else {
        Value::Composed(ComposedLayout::new(swizzle, offset, layout))
    }
}

/// `composition(A, B)` or `composition(Sw, offset, L)` where a swizzle takes part.
fn composition(args: &[Value]) -> Result<Value, CalcError> {
    let name = "composition";
    match args {
        [Value::Swizzle(s), offset, layout] => {
            Ok(swizzled(*s, offset.to_int()?, layout.to_layout()?))
        }
        [_, _, _] => Err(CalcError::new(
            "composition of three takes a swizzle, an offset and a layout: composition(Swizzle(B,M,S), offset, L)",
        )),
        [Value::Swizzle(s), b] => Ok(swizzled(*s, 0, b.to_layout()?)),
        [Value::Composed(c), b] => Ok(Value::Composed(c.compose(&b.to_tiler()?)?)),
        [_, _] => Err(CalcError::new(
            "composition with a swizzle on the right (CuTe makes a new swizzle from the \
             left layout's bits) is not supported; swizzle last: composition(Swizzle(B,M,S), L)",
        )),
        _ => {
            arity(name, args, 2, 3)?;
            Err(CalcError::new("internal error: composition arguments unmatched"))
        }
    }
}

/// An algebra function on a swizzled layout: the inner layout's answer,
/// swizzled again where the answer is a layout of the same elements.
fn on_composed(name: &str, c: &ComposedLayout, args: &[Value]) -> Result<Value, CalcError> {
    let inner = c.layout();
    if let Some(op) = tiler_op(name) {
        arity(name, args, 2, 2)?;
        return Ok(Value::Composed(
            c.with_layout(op(inner, &args[1].to_tiler()?)?),
        ));
    }
    let layout = |v: cute::Layout| Ok(Value::Composed(c.with_layout(v)));
    match name {
        "blocked_product" | "raked_product" => {
            arity(name, args, 2, 2)?;
            let b = args[1].to_layout()?;
            layout(if name == "blocked_product" {
                cute::blocked_product(inner, &b)?
            } else {
                cute::raked_product(inner, &b)?
            })
        }
        "coalesce" => {
            arity(name, args, 1, 2)?;
            layout(match args.get(1) {
                Some(profile) => cute::coalesce_profile(inner, &profile.to_int_tuple()?)?,
                None => cute::coalesce(inner)?,
            })
        }
        "complement" => {
            // C++: the complement of the inner layout, a plain layout
            let mut plain = args.to_vec();
            plain[0] = Value::Layout(inner.clone());
            crate::algebra::call(name, &plain).unwrap_or_else(|| Err(not_defined(name)))
        }
        "mode" => {
            arity(name, args, 2, 2)?;
            let index = args[1].to_int()?;
            let i = usize::try_from(index).map_err(|_| {
                CalcError::new(format!(
                    "mode index {index} is negative; modes are numbered from 0"
                ))
            })?;
            Ok(Value::Composed(c.mode(i)?))
        }
        "eval" => {
            arity(name, args, 2, 2)?;
            Ok(Value::Int(c.eval_coord(&args[1].to_int_tuple()?)?))
        }
        "size" | "cosize" | "rank" | "depth" | "flatten" => {
            arity(name, args, 1, 1)?;
            Ok(match name {
                "size" => Value::Int(c.size()?),
                "cosize" => Value::Int(c.cosize()?),
                "rank" => Value::Int(c.rank() as i64),
                "depth" => Value::Int(c.depth() as i64),
                _ => Value::Composed(c.flatten()),
            })
        }
        _ => Err(not_defined(name)),
    }
}

/// The functions a swizzle alone answers (pycute's `size`, `cosize` and call).
fn on_swizzle(name: &str, s: Swizzle, args: &[Value]) -> Result<Value, CalcError> {
    match name {
        "size" | "cosize" => {
            arity(name, args, 1, 1)?;
            Ok(Value::Int(s.size()))
        }
        "eval" => {
            arity(name, args, 2, 2)?;
            Ok(Value::Int(s.apply(args[1].to_int()?)))
        }
        _ => Err(not_defined(name)),
    }
}
