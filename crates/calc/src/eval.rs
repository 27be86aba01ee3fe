//! Evaluation of expression trees.

use retile_layout::Layout;

use crate::syntax::{BinaryOp, Expr, ExprKind};
use crate::value::Value;
use crate::CalcError;
use crate::{algebra, copy, device, register};

/// Evaluates an expression tree; errors carry the column of the failing part.
///
/// ```
/// use retile_calc::{eval, parse, Value};
/// let v = eval(&parse("size((2,3):(1,2))").unwrap()).unwrap();
/// assert_eq!(v, Value::Int(6));
/// ```
pub fn eval(expr: &Expr) -> Result<Value, CalcError> {
    eval_kind(expr).map_err(|e| e.or_column(expr.column))
}

fn eval_all(items: &[Expr]) -> Result<Vec<Value>, CalcError> {
    items.iter().map(eval).collect()
}

fn eval_kind(expr: &Expr) -> Result<Value, CalcError> {
    Ok(match &expr.kind {
        ExprKind::Int(v) => Value::Int(*v),
        ExprKind::Tuple(items) => grouped(eval_all(items)?),
        ExprKind::List(items) => Value::List(eval_all(items)?),
        ExprKind::Tiler(items) => Value::Tiler(retile_layout::Tiler::Modes(
            eval_all(items)?
                .iter()
                .map(Value::to_tiler)
                .collect::<Result<_, _>>()?,
        )),
        ExprKind::Underscore => Value::Underscore,
        ExprKind::Name(name) => name_value(name),
        ExprKind::Binary { op, lhs, rhs } => binary(*op, eval(lhs)?, eval(rhs)?)?,
        ExprKind::Call {
            name,
            receiver,
            args,
            kwargs,
        } => {
            let mut values = Vec::with_capacity(args.len() + 1);
            if let Some(r) = receiver {
                values.push(eval(r)?);
            }
            values.extend(eval_all(args)?);
            let kwargs = kwargs
                .iter()
                .map(|(k, v)| Ok((k.clone(), eval(v)?)))
                .collect::<Result<Vec<_>, CalcError>>()?;
            call(name, receiver.is_some(), &values, &kwargs)?
        }
    })
}

/// A parenthesised register layout is the layout (Python grouping); other
/// one-item tuples stay tuples, as CuTe's `(4)` differs from `4`.
fn grouped(mut items: Vec<Value>) -> Value {
    match items.as_slice() {
        [Value::Register(_)] => items.remove(0),
        _ => Value::Tuple(items),
    }
}

fn name_value(name: &str) -> Value {
    match name {
        "True" | "true" => Value::Bool(true),
        "False" | "false" => Value::Bool(false),
        _ => Value::Name(name.to_string()),
    }
}

fn binary(op: BinaryOp, lhs: Value, rhs: Value) -> Result<Value, CalcError> {
    match op {
        BinaryOp::Colon => Ok(Value::Layout(Layout::new(
            lhs.to_int_tuple()?,
            rhs.to_int_tuple()?,
        )?)),
        BinaryOp::Eq => Ok(Value::Bool(lhs == rhs)),
        BinaryOp::Mul | BinaryOp::Div
            if matches!((&lhs, &rhs), (Value::Register(_), Value::Register(_))) =>
        {
            let (a, b) = (register::register(&lhs)?, register::register(&rhs)?);
            Ok(Value::Register(if op == BinaryOp::Mul {
                a.compose(b)?
            } else {
                a.divide(b)?
            }))
        }
        BinaryOp::Mul | BinaryOp::Div => Err(CalcError::new(format!(
            "'{}' is not defined for {} and {}",
            if op == BinaryOp::Mul { "*" } else { "/" },
            lhs.type_name(),
            rhs.type_name()
        ))),
    }
}

fn call(
    name: &str,
    method: bool,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value, CalcError> {
    if let Some(result) = register::call(name, method, args, kwargs) {
        return result;
    }
    if let Some(result) = algebra::call(name, args) {
        if let Some((key, _)) = kwargs.first() {
            return Err(CalcError::new(format!(
                "{name} takes no keyword argument '{key}'"
            )));
        }
        if method {
            return Err(CalcError::new(format!(
                "{name} is a function, not a method: write {name}(...)"
            )));
        }
        return result;
    }
    if method {
        return Err(CalcError::new(format!(
            "{name} is a function, not a method: write {name}(...)"
        )));
    }
    if let Some(result) = device::call(name, args, kwargs) {
        return result;
    }
    if let Some(result) = copy::call(name, args, kwargs) {
        return result;
    }
    let known: Vec<&str> = algebra::FUNCTIONS
        .iter()
        .chain(device::FUNCTIONS)
        .chain(register::FUNCTIONS)
        .chain(copy::FUNCTIONS)
        .copied()
        .collect();
    Err(CalcError::new(format!(
        "unknown function '{name}'; known: {}",
        known.join(", ")
    )))
}
