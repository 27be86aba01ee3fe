//! The layout-algebra functions of the calculator.

use retile_layout as cute;
use retile_layout::IntTuple;

use crate::error::CalcError;
use crate::value::Value;

/// Names this module answers to, for help and error messages.
///
/// ```
/// use retile_calc::{algebra::FUNCTIONS, evaluate};
/// assert!(FUNCTIONS.contains(&"coalesce") && FUNCTIONS.contains(&"logical_divide"));
/// assert_eq!(evaluate("coalesce((2,4):(1,2))")?.to_string(), "8:1");
/// // an unknown name's error lists these names first
/// let err = evaluate("no_such_function(1)").unwrap_err();
/// assert!(err.message().contains("known: coalesce, filter, composition"), "{err}");
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
pub const FUNCTIONS: &[&str] = &[
    "coalesce",
    "filter",
    "composition",
    "complement",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "right_inverse",
    "left_inverse",
    "max_common_vector",
    "max_common_layout",
    "size",
    "cosize",
    "rank",
    "depth",
    "idx2crd",
    "crd2idx",
    "flatten",
    "make_layout",
    "mode",
    "eval",
];

/// An IntTuple as a calculator value.
///
/// ```
/// use retile_calc::{algebra::tuple_value, Value};
/// use retile_layout::IntTuple;
/// assert_eq!(tuple_value(&IntTuple::Int(5)), Value::Int(5));
/// let t: IntTuple = "(2,(3,4))".parse().unwrap();
/// let v = tuple_value(&t);
/// assert_eq!(v.to_string(), "(2,(3,4))");
/// assert_eq!(v.to_int_tuple()?, t);
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
pub fn tuple_value(t: &IntTuple) -> Value {
    match t {
        IntTuple::Int(v) => Value::Int(*v),
        IntTuple::Tuple(ts) => Value::Tuple(ts.iter().map(tuple_value).collect()),
    }
}

/// Checks the number of arguments: from `min` to `max` (`usize::MAX`: no
/// upper bound).
///
/// ```
/// let err = retile_calc::evaluate("make_layout()").unwrap_err();
/// assert_eq!(err.message(), "make_layout takes at least 1 argument, got 0");
/// let err = retile_calc::evaluate("coalesce(4:1, 4, 4)").unwrap_err();
/// assert_eq!(err.message(), "coalesce takes 1 or 2 arguments, got 3");
/// ```
pub(crate) fn arity(name: &str, args: &[Value], min: usize, max: usize) -> Result<(), CalcError> {
    if args.len() < min || args.len() > max {
        let noun = |n: usize| if n == 1 { "argument" } else { "arguments" };
        let wanted = if min == max {
            format!("{min} {}", noun(min))
        } else if max == usize::MAX {
            format!("at least {min} {}", noun(min))
        } else if max == min + 1 {
            format!("{min} or {max} {}", noun(max))
        } else {
            format!("{min} to {max} {}", noun(max))
        };
        return Err(CalcError::new(format!(
            "{name} takes {wanted}, got {}",
            args.len()
        )));
    }
    Ok(())
}

type Binary = fn(&cute::Layout, &cute::Tiler) -> cute::Result<cute::Layout>;

pub(crate) fn tiler_op(name: &str) -> Option<Binary> {
    Some(match name {
        "logical_divide" => cute::logical_divide,
        "zipped_divide" => cute::zipped_divide,
        "tiled_divide" => cute::tiled_divide,
        "flat_divide" => cute::flat_divide,
        "logical_product" => cute::logical_product,
        "zipped_product" => cute::zipped_product,
        "tiled_product" => cute::tiled_product,
        "flat_product" => cute::flat_product,
        _ => return None,
    })
}

/// Calls the algebra function `name`, or returns `None` if there is none.
///
/// ```
/// use retile_calc::{algebra::call, Value};
/// let a = Value::Layout("(2,2):(1,2)".parse().unwrap());
/// assert_eq!(call("size", &[a]).unwrap().unwrap(), Value::Int(4));
/// ```
pub fn call(name: &str, args: &[Value]) -> Option<Result<Value, CalcError>> {
    if !FUNCTIONS.contains(&name) {
        return None;
    }
    Some(dispatch(name, args))
}

fn dispatch(name: &str, args: &[Value]) -> Result<Value, CalcError> {
    let layout = |i: usize| args[i].to_layout();
    if let Some(op) = tiler_op(name) {
        arity(name, args, 2, 2)?;
        return Ok(Value::Layout(op(&layout(0)?, &args[1].to_tiler()?)?));
    }
    let result = match name {
        "coalesce" => {
            arity(name, args, 1, 2)?;
            match args.get(1) {
                Some(profile) => cute::coalesce_profile(&layout(0)?, &profile.to_int_tuple()?)?,
                None => cute::coalesce(&layout(0)?)?,
            }
        }
        "composition" => {
            arity(name, args, 2, 2)?;
            match &args[1] {
                Value::Layout(b) => cute::composition(&layout(0)?, b)?,
                other => cute::composition_tiler(&layout(0)?, &other.to_tiler()?)?,
            }
        }
        "complement" => {
            arity(name, args, 1, 2)?;
            let a = layout(0)?;
            let cotarget = match args.get(1) {
                Some(m) => m.to_int_tuple()?,
                None => IntTuple::Int(cute::filter(&a)?.cosize()?),
            };
            cute::complement(&a, &cotarget)?
        }
        "blocked_product" | "raked_product" => {
            arity(name, args, 2, 2)?;
            let f = if name == "blocked_product" {
                cute::blocked_product
            } else {
                cute::raked_product
            };
            f(&layout(0)?, &layout(1)?)?
        }
        "max_common_vector" => {
            arity(name, args, 2, 2)?;
            return Ok(Value::Int(cute::max_common_vector(
                &layout(0)?,
                &layout(1)?,
            )?));
        }
        "max_common_layout" => {
            arity(name, args, 2, 2)?;
            cute::max_common_layout(&layout(0)?, &layout(1)?)?
        }
        "make_layout" => {
            arity(name, args, 1, usize::MAX)?;
            cute::Layout::from_modes(
                args.iter()
                    .map(Value::to_layout)
                    .collect::<Result<Vec<_>, _>>()?,
            )
        }
        "mode" => {
            arity(name, args, 2, 2)?;
            let index = args[1].to_int()?;
            let i = usize::try_from(index).map_err(|_| {
                CalcError::new(format!(
                    "mode index {index} is negative; modes are numbered from 0"
                ))
            })?;
            layout(0)?.mode(i)?
        }
        _ => return unary_or_query(name, args),
    };
    Ok(Value::Layout(result))
}

fn unary_or_query(name: &str, args: &[Value]) -> Result<Value, CalcError> {
    match name {
        "idx2crd" => {
            arity(name, args, 2, 2)?;
            Ok(tuple_value(&cute::idx2crd(
                args[0].to_int()?,
                &args[1].to_int_tuple()?,
            )?))
        }
        "crd2idx" => {
            arity(name, args, 2, 3)?;
            let coord = args[0].to_int_tuple()?;
            let offset = match args.get(2) {
                Some(stride) => {
                    cute::crd2idx(&coord, &args[1].to_int_tuple()?, &stride.to_int_tuple()?)?
                }
                None => args[1].to_layout()?.eval_coord(&coord)?,
            };
            Ok(Value::Int(offset))
        }
        "eval" => {
            arity(name, args, 2, 2)?;
            Ok(Value::Int(
                args[0].to_layout()?.eval_coord(&args[1].to_int_tuple()?)?,
            ))
        }
        _ => {
            arity(name, args, 1, 1)?;
            let a = args[0].to_layout()?;
            Ok(match name {
                "filter" => Value::Layout(cute::filter(&a)?),
                "right_inverse" => Value::Layout(cute::right_inverse(&a)?),
                "left_inverse" => Value::Layout(cute::left_inverse(&a)?),
                "flatten" => Value::Layout(a.flatten()),
                "size" => Value::Int(a.size()?),
                "cosize" => Value::Int(a.cosize()?),
                "rank" => Value::Int(a.rank() as i64),
                _ => Value::Int(a.depth() as i64),
            })
        }
    }
}
