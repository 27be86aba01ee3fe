//! The register-layout functions of the calculator, written as in tilus:
//! `local(2, 1).spatial(8, 4)`, `reduce(L, dims=[0], keepdims=True)`.

use retile_register::{self as reg, RegisterError, RegisterLayout};

use crate::args::bind;
use crate::error::CalcError;
use crate::value::Value;

/// Names only this module answers to.
///
/// ```
/// use retile_calc::{evaluate, register::FUNCTIONS};
/// assert!(FUNCTIONS.contains(&"spatial") && FUNCTIONS.contains(&"num_threads"));
/// assert_eq!(evaluate("num_threads(local(2, 1).spatial(8, 4))")?.to_string(), "32");
/// // as methods, only these names (and flatten, size) are known
/// let err = evaluate("spatial(4).coalesce()").unwrap_err();
/// assert!(err.message().contains("coalesce is a function, not a method"), "{err}");
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
pub const FUNCTIONS: &[&str] = &[
    "register_layout",
    "spatial",
    "local",
    "repeat",
    "column_spatial",
    "column_local",
    "replicated",
    "auto_local_spatial",
    "compose",
    "concat",
    "divide",
    "left_divide",
    "reduce",
    "reduce_to",
    "squeeze",
    "unsqueeze",
    "permute",
    "reshape",
    "tv_layout",
    "from_tv",
    "holders",
    "element",
    "num_threads",
    "local_size",
];

/// Names shared with the layout algebra, answered here for a register layout.
const SHARED: &[&str] = &["flatten", "size"];

/// The primitives that, called as a method, compose onto the receiver.
const PRIMITIVES: &[&str] = &[
    "spatial",
    "local",
    "repeat",
    "column_spatial",
    "column_local",
];

impl From<RegisterError> for CalcError {
    fn from(e: RegisterError) -> Self {
        CalcError::caused_by(e)
    }
}

/// Calls the register function `name` (`method`: the receiver is
/// `args[0]`), or returns `None` if it is not one.
///
/// ```
/// use retile_calc::evaluate;
/// let v = evaluate("reduce(spatial(3, 4), dims=[0])").unwrap();
/// assert_eq!(v.to_string(), "RegisterLayout(shape=[4], mode_shape=[4], spatial_modes=[-3, 0], local_modes=[])");
/// ```
pub fn call(
    name: &str,
    method: bool,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Option<Result<Value, CalcError>> {
    let layout = args
        .first()
        .or_else(|| kwargs.iter().find(|(k, _)| k == "layout").map(|(_, v)| v));
    let on_register = matches!(layout, Some(Value::Register(_)));
    if !(FUNCTIONS.contains(&name) || (SHARED.contains(&name) && on_register)) {
        return None;
    }
    if method && PRIMITIVES.contains(&name) {
        return Some(compose_method(name, args, kwargs));
    }
    Some(dispatch(name, args, kwargs))
}

fn compose_method(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value, CalcError> {
    let Some((receiver, shape)) = args.split_first() else {
        return Err(CalcError::new(format!(
            "the method {name} needs a register layout to be called on"
        )));
    };
    let receiver = register(receiver)?;
    let inner = primitive(name, shape, kwargs)?;
    Ok(Value::Register(receiver.compose(&inner)?))
}

/// The register layout inside a value.
pub(crate) fn register(v: &Value) -> Result<&RegisterLayout, CalcError> {
    match v {
        Value::Register(l) => Ok(l),
        other => Err(CalcError::new(format!(
            "expected a register layout, got {}",
            other.type_name()
        ))),
    }
}

fn ints(values: &[Value]) -> Result<Vec<i64>, CalcError> {
    values.iter().map(Value::to_int).collect()
}

fn dispatch(name: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value, CalcError> {
    let r = Value::Register;
    match name {
        "spatial" | "local" | "repeat" | "column_spatial" | "column_local" => {
            primitive(name, args, kwargs).map(r)
        }
        "replicated" => {
            let bound = bind(name, &[], kwargs, &[], &["num_workers"])?;
            let workers = bound.int_or("num_workers", 1)?;
            Ok(r(reg::replicated(&ints(args)?, workers)?))
        }
        "register_layout" => {
            let keys = ["shape", "mode_shape", "spatial_modes", "local_modes"];
            let bound = bind(name, args, kwargs, &keys, &[])?;
            let [a, b, c, d] = keys.map(|k| bound.ints(k));
            Ok(r(RegisterLayout::new(&a?, &b?, &c?, &d?)?))
        }
        "auto_local_spatial" => {
            let bound = bind(name, args, kwargs, &["num_threads", "shape"], &[])?;
            Ok(r(reg::auto_local_spatial(
                bound.int("num_threads")?,
                &bound.ints("shape")?,
            )?))
        }
        "compose" | "concat" | "divide" | "left_divide" => binary(name, args, kwargs).map(r),
        "from_tv" => {
            let bound = bind(name, args, kwargs, &["tv", "shape"], &[])?;
            let tv = bound.need("tv")?.to_layout()?;
            Ok(r(RegisterLayout::from_tv(&tv, &bound.ints("shape")?)?))
        }
        _ => unary(name, args, kwargs),
    }
}

/// `spatial(2, 3, ranks=[1, 0])` and the other primitives: the positional
/// arguments are the shape.
fn primitive(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<RegisterLayout, CalcError> {
    let keywords: &[&'static str] = if name.starts_with("column") {
        &[]
    } else {
        &["ranks"]
    };
    let bound = bind(name, &[], kwargs, &[], keywords)?;
    let ranks = bound
        .get("ranks")
        .map(|_| bound.ints("ranks"))
        .transpose()?;
    let shape = ints(args)?;
    Ok(match name {
        "spatial" => reg::spatial_ranked(&shape, ranks.as_deref())?,
        "column_spatial" => reg::column_spatial(&shape)?,
        "column_local" => reg::column_local(&shape)?,
        _ => reg::local_ranked(&shape, ranks.as_deref())?,
    })
}

fn binary(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<RegisterLayout, CalcError> {
    bind(name, &[], kwargs, &[], &[])?;
    if args.len() != 2 {
        return Err(CalcError::new(format!(
            "{name} takes 2 register layouts, got {} argument{}",
            args.len(),
            if args.len() == 1 { "" } else { "s" }
        )));
    }
    let (a, b) = (register(&args[0])?, register(&args[1])?);
    Ok(match name {
        "compose" => a.compose(b)?,
        "concat" => a.concat(b)?,
        "divide" => a.divide(b)?,
        _ => a.left_divide(b)?,
    })
}

/// Functions of one register layout, `layout` first (the receiver of a
/// method call), then each function's own parameters.
fn unary(name: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value, CalcError> {
    let params: &[&'static str] = match name {
        "reduce" => &["layout", "dims", "keepdims"],
        "squeeze" | "unsqueeze" | "permute" => &["layout", "dims"],
        "reduce_to" | "reshape" => &["layout", "shape"],
        "flatten" => &["layout", "start_dim", "end_dim"],
        "holders" => &["layout", "coord"],
        "element" => &["layout", "thread", "local"],
        _ => &["layout"],
    };
    let bound = bind(name, args, kwargs, params, &[])?;
    let l = register(bound.need("layout")?)?;
    let r = Value::Register;
    Ok(match name {
        "reduce" => r(l.reduce(&bound.ints("dims")?, bound.bool_or("keepdims", false)?)?),
        "squeeze" => r(l.squeeze(&bound.ints("dims")?)?),
        "unsqueeze" => r(l.unsqueeze(&bound.ints("dims")?)?),
        "permute" => r(l.permute(&bound.ints("dims")?)?),
        "reduce_to" => r(l.reduce_to(&bound.ints("shape")?)?),
        "reshape" => r(l.reshape(&bound.ints("shape")?)?),
        "flatten" => r(l.flatten(bound.int_or("start_dim", 0)?, bound.int_or("end_dim", -1)?)?),
        "tv_layout" => Value::Layout(l.tv_layout()?),
        "holders" => Value::List(
            l.holders(&bound.ints("coord")?)?
                .into_iter()
                .map(|(t, v)| Value::Tuple(vec![Value::Int(t), Value::Int(v)]))
                .collect(),
        ),
        "element" => {
            let coord = l.element(bound.int_or("thread", 0)?, bound.int_or("local", 0)?)?;
            Value::Tuple(coord.into_iter().map(Value::Int).collect())
        }
        "num_threads" => Value::Int(l.num_threads()?),
        "local_size" => Value::Int(l.local_size()?),
        _ => Value::Int(l.size()?),
    })
}
