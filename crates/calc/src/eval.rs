//! Evaluation of expression trees.

use retile_layout::Layout;

use crate::error::CalcError;
use crate::syntax::{BinaryOp, Expr, ExprKind, Link, MethodCall};
use crate::value::Value;
use crate::{algebra, banks, copy, device, register, swizzle};

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

// Evaluation recurses once per level of brackets and calls (at most
// `MAX_DEPTH`, checked by the parser), never once per link of a chain. The
// functions on that recursive path keep small stack frames: each form is
// evaluated by its own function, so that no frame holds the temporaries of
// every form (in a debug build those add up to kilobytes per level).

fn eval_all(items: &[Expr]) -> Result<Vec<Value>, CalcError> {
    let mut values = Vec::with_capacity(items.len());
    for item in items {
        values.push(eval(item)?);
    }
    Ok(values)
}

fn eval_kind(expr: &Expr) -> Result<Value, CalcError> {
    match &expr.kind {
        ExprKind::Int(v) => Ok(Value::Int(*v)),
        ExprKind::Tuple(items) => eval_all(items).map(grouped),
        ExprKind::List(items) => eval_all(items).map(Value::List),
        ExprKind::Tiler(items) => eval_tiler(items),
        ExprKind::Underscore => Ok(Value::Underscore),
        ExprKind::Name(name) => Ok(name_value(name)),
        ExprKind::Binary { op, lhs, rhs } => eval_binary(*op, lhs, rhs),
        ExprKind::Chain { first, links } => eval_chain(first, links),
        ExprKind::Methods { receiver, calls } => eval_methods(receiver, calls),
        ExprKind::Call { name, args, kwargs } => eval_call(name, args, kwargs),
    }
}

fn eval_tiler(items: &[Expr]) -> Result<Value, CalcError> {
    let modes = eval_all(items)?
        .iter()
        .map(Value::to_tiler)
        .collect::<Result<_, _>>()?;
    Ok(Value::Tiler(retile_layout::Tiler::Modes(modes)))
}

fn eval_binary(op: BinaryOp, lhs: &Expr, rhs: &Expr) -> Result<Value, CalcError> {
    let lhs = eval(lhs)?;
    let rhs = eval(rhs)?;
    binary(op, lhs, rhs)
}

/// `first * a / b ...`, in a loop; `first o a o b ...` by [`eval_composition`].
fn eval_chain(first: &Expr, links: &[Link]) -> Result<Value, CalcError> {
    if links.first().is_some_and(|l| l.op == BinaryOp::Compose) {
        return eval_composition(first, links);
    }
    let mut value = eval(first)?;
    for link in links {
        let rhs = eval(&link.rhs)?;
        value = binary(link.op, value, rhs).map_err(|e| e.or_column(link.column))?;
    }
    Ok(value)
}

/// `a o b o c ...`: every operand evaluated, then composed right to left,
/// in a loop, by `composition` itself; `Sw o n o L` with an integer `n` is
/// `composition(Sw, n, L)`, the swizzled layout with offset `n`.
fn eval_composition(first: &Expr, links: &[Link]) -> Result<Value, CalcError> {
    let mut operands = Vec::with_capacity(links.len() + 1);
    operands.push(eval(first)?);
    for link in links {
        operands.push(eval(&link.rhs)?);
    }
    let Some(mut value) = operands.pop() else {
        return Err(CalcError::new(
            "internal error: a composition without operands",
        ));
    };
    while let Some(left) = operands.pop() {
        // the `o` between `left` and `value`
        let column = links[operands.len()].column;
        let offset_form =
            matches!(left, Value::Int(_)) && matches!(operands.last(), Some(Value::Swizzle(_)));
        let swizzle = if offset_form { operands.pop() } else { None };
        let args = match swizzle {
            Some(swizzle) => vec![swizzle, left, value],
            None => vec![left, value],
        };
        value = call("composition", false, &args, &[]).map_err(|e| e.or_column(column))?;
    }
    Ok(value)
}

/// `receiver.f(..).g(..) ...`, in a loop.
fn eval_methods(receiver: &Expr, calls: &[MethodCall]) -> Result<Value, CalcError> {
    let mut value = eval(receiver)?;
    for method in calls {
        value = call_method(value, method).map_err(|e| e.or_column(method.column))?;
    }
    Ok(value)
}

fn eval_call(name: &str, args: &[Expr], kwargs: &[(String, Expr)]) -> Result<Value, CalcError> {
    let args = eval_all(args)?;
    let kwargs = eval_kwargs(kwargs)?;
    call(name, false, &args, &kwargs)
}

fn eval_kwargs(kwargs: &[(String, Expr)]) -> Result<Vec<(String, Value)>, CalcError> {
    let mut values = Vec::with_capacity(kwargs.len());
    for (key, value) in kwargs {
        values.push((key.clone(), eval(value)?));
    }
    Ok(values)
}

/// `receiver.name(args)`: the function called with the receiver first.
fn call_method(receiver: Value, method: &MethodCall) -> Result<Value, CalcError> {
    let mut values = Vec::with_capacity(method.args.len() + 1);
    values.push(receiver);
    values.extend(eval_all(&method.args)?);
    call(&method.name, true, &values, &eval_kwargs(&method.kwargs)?)
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
        BinaryOp::Compose => call("composition", false, &[lhs, rhs], &[]),
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
    if !method {
        if let Some(result) = swizzle::call(name, args, kwargs) {
            return result;
        }
    }
    if algebra::FUNCTIONS.contains(&name) {
        if let Some((key, _)) = kwargs.first() {
            return Err(CalcError::new(format!(
                "{name} takes no keyword arguments (got {key}=...); give its arguments in order"
            )));
        }
    }
    if method {
        let function = algebra::FUNCTIONS
            .iter()
            .chain(swizzle::FUNCTIONS)
            .chain(device::FUNCTIONS)
            .chain(copy::FUNCTIONS)
            .chain(banks::FUNCTIONS)
            .any(|f| *f == name);
        return Err(CalcError::new(if function {
            format!("{name} is a function, not a method: write {name}(...)")
        } else {
            format!(
                "unknown method '{name}'; register layouts have the methods {}, flatten, size",
                register::FUNCTIONS.join(", ")
            )
        }));
    }
    if let Some(result) = algebra::call(name, args) {
        return result;
    }
    if let Some(result) = device::call(name, args, kwargs) {
        return result;
    }
    if let Some(result) = copy::call(name, args, kwargs) {
        return result;
    }
    if let Some(result) = banks::call(name, args, kwargs) {
        return result;
    }
    let known: Vec<&str> = algebra::FUNCTIONS
        .iter()
        .chain(swizzle::FUNCTIONS)
        .chain(device::FUNCTIONS)
        .chain(register::FUNCTIONS)
        .chain(copy::FUNCTIONS)
        .chain(banks::FUNCTIONS)
        .copied()
        .collect();
    Err(CalcError::new(format!(
        "unknown function '{name}'; known: {}",
        known.join(", ")
    )))
}
