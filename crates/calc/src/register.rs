//! The register-layout functions of the calculator, written as in tilus:
//! `local(2, 1).spatial(8, 4)`, `reduce(L, dims=[0], keepdims=True)`.

use retile_register::{self as reg, RegisterError, RegisterLayout};

use crate::args::{arg, check_keywords, keyword, need};
use crate::value::Value;
use crate::CalcError;

/// Names only this module answers to.
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
        CalcError::new(e.to_string())
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
    let on_register = matches!(args.first(), Some(Value::Register(_)));
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
    let receiver = register(&args[0])?;
    let inner = primitive(name, &args[1..], kwargs)?;
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

fn ranks(kwargs: &[(String, Value)]) -> Result<Option<Vec<i64>>, CalcError> {
    keyword(kwargs, "ranks").map(Value::to_ints).transpose()
}

fn dispatch(name: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value, CalcError> {
    let r = Value::Register;
    match name {
        "spatial" | "local" | "repeat" | "column_spatial" | "column_local" => {
            primitive(name, args, kwargs).map(r)
        }
        "replicated" => {
            check_keywords(name, kwargs, &["num_workers"])?;
            let workers = keyword(kwargs, "num_workers")
                .map(Value::to_int)
                .transpose()?
                .unwrap_or(1);
            Ok(r(reg::replicated(&ints(args)?, workers)?))
        }
        "register_layout" => {
            let keys = ["shape", "mode_shape", "spatial_modes", "local_modes"];
            check_keywords(name, kwargs, &keys)?;
            let [a, b, c, d] =
                [0, 1, 2, 3].map(|i| need(name, args, kwargs, i, keys[i]).and_then(Value::to_ints));
            Ok(r(RegisterLayout::new(&a?, &b?, &c?, &d?)?))
        }
        "auto_local_spatial" => {
            check_keywords(name, kwargs, &["num_threads", "shape"])?;
            let threads = need(name, args, kwargs, 0, "num_threads")?.to_int()?;
            Ok(r(reg::auto_local_spatial(
                threads,
                &need(name, args, kwargs, 1, "shape")?.to_ints()?,
            )?))
        }
        "compose" | "concat" | "divide" | "left_divide" => binary(name, args, kwargs).map(r),
        "from_tv" => {
            check_keywords(name, kwargs, &["tv", "shape"])?;
            let tv = need(name, args, kwargs, 0, "tv")?.to_layout()?;
            Ok(r(RegisterLayout::from_tv(
                &tv,
                &need(name, args, kwargs, 1, "shape")?.to_ints()?,
            )?))
        }
        _ => unary(name, args, kwargs),
    }
}

fn primitive(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<RegisterLayout, CalcError> {
    check_keywords(
        name,
        kwargs,
        if name.starts_with("column") {
            &[]
        } else {
            &["ranks"]
        },
    )?;
    let shape = ints(args)?;
    Ok(match name {
        "spatial" => reg::spatial_ranked(&shape, ranks(kwargs)?.as_deref())?,
        "column_spatial" => reg::column_spatial(&shape)?,
        "column_local" => reg::column_local(&shape)?,
        _ => reg::local_ranked(&shape, ranks(kwargs)?.as_deref())?,
    })
}

fn binary(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<RegisterLayout, CalcError> {
    check_keywords(name, kwargs, &[])?;
    if args.len() != 2 {
        return Err(CalcError::new(format!(
            "{name} takes 2 register layouts, got {} arguments",
            args.len()
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

fn unary(name: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value, CalcError> {
    let l = register(need(name, args, kwargs, 0, "layout")?)?;
    let list = |i: usize, key: &str| need(name, args, kwargs, i, key).and_then(Value::to_ints);
    let int_or = |i: usize, key: &str, default: i64| {
        arg(args, kwargs, i, key).map_or(Ok(default), Value::to_int)
    };
    let r = Value::Register;
    let allowed: &[&str] = match name {
        "reduce" => &["layout", "dims", "keepdims"],
        "squeeze" | "unsqueeze" | "permute" => &["layout", "dims"],
        "reduce_to" | "reshape" => &["layout", "shape"],
        "flatten" => &["layout", "start_dim", "end_dim"],
        "holders" => &["layout", "coord"],
        "element" => &["layout", "thread", "local"],
        _ => &["layout"],
    };
    check_keywords(name, kwargs, allowed)?;
    Ok(match name {
        "reduce" => {
            let keep = matches!(arg(args, kwargs, 2, "keepdims"), Some(Value::Bool(true)));
            r(l.reduce(&list(1, "dims")?, keep)?)
        }
        "squeeze" => r(l.squeeze(&list(1, "dims")?)?),
        "unsqueeze" => r(l.unsqueeze(&list(1, "dims")?)?),
        "permute" => r(l.permute(&list(1, "dims")?)?),
        "reduce_to" => r(l.reduce_to(&list(1, "shape")?)?),
        "reshape" => r(l.reshape(&list(1, "shape")?)?),
        "flatten" => r(l.flatten(int_or(1, "start_dim", 0)?, int_or(2, "end_dim", -1)?)?),
        "tv_layout" => Value::Layout(l.tv_layout()?),
        "holders" => Value::List(
            l.holders(&list(1, "coord")?)?
                .into_iter()
                .map(|(t, v)| Value::Tuple(vec![Value::Int(t), Value::Int(v)]))
                .collect(),
        ),
        "element" => {
            let coord = l.element(int_or(1, "thread", 0)?, int_or(2, "local", 0)?)?;
            Value::Tuple(coord.into_iter().map(Value::Int).collect())
        }
        "num_threads" => Value::Int(l.num_threads()?),
        "local_size" => Value::Int(l.local_size()?),
        _ => Value::Int(l.size()?),
    })
}
