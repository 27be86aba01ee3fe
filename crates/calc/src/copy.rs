//! The copy-planner functions of the calculator.

use retile_copy::{vector_width, TransposeRequest};

use crate::args::bind;
use crate::error::CalcError;
use crate::value::Value;

/// Names this module answers to.
///
/// ```
/// use retile_calc::{copy::FUNCTIONS, evaluate};
/// assert_eq!(FUNCTIONS, ["transpose_plan", "vector_width"]);
/// let v = evaluate("vector_width((8,32):(1,8), (8,32):(1,16), element_bits=16)")?;
/// assert_eq!(v.to_int()?, 8);
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
pub const FUNCTIONS: &[&str] = &["transpose_plan", "vector_width"];

impl From<retile_copy::CopyError> for CalcError {
    fn from(e: retile_copy::CopyError) -> Self {
        CalcError::caused_by(e)
    }
}

/// Calls the copy function `name`, or returns `None` if it is not one.
///
/// ```
/// use retile_calc::evaluate;
/// let v = evaluate("transpose_plan(threads=256, element_bits=16, max_bits=128, src=(256,16):(1,256), dst=(256,16):(16,1))").unwrap();
/// assert_eq!(v.to_string(), "TransposePlan(applies=true, load_width=2, loads=8, store_width=8, stores=2, extracts=16)");
/// assert_eq!(evaluate("vector_width((8,32):(1,8), (8,32):(1,16), element_bits=16)").unwrap().to_string(), "8");
/// // positional arguments in the order of the keywords above
/// let v = evaluate("transpose_plan(256, 16, 128, (256,16):(1,256), (256,16):(16,1))").unwrap();
/// assert!(v.to_string().starts_with("TransposePlan(applies=true"));
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

/// Checks that `target` names a GPU architecture: an AMD `gfx` name
/// (`gfx90a`, `gfx942`, `gfx950`, `gfx1100`) or an NVIDIA `sm_` name
/// (`sm_80`, `sm_90a`). The planner treats `gfx95*` specially; any other
/// well-formed name plans as no target does.
///
/// ```
/// use retile_calc::copy::check_target;
/// assert!(check_target("gfx942").is_ok() && check_target("sm_90a").is_ok());
/// let err = check_target("garbage").unwrap_err();
/// assert!(err.to_string().contains("gfx942"), "{err}");
/// ```
pub fn check_target(target: &str) -> Result<(), CalcError> {
    let well_formed = |rest: &str, min: usize, max: usize, tail: fn(u8) -> bool| {
        let b = rest.as_bytes();
        (min..=max).contains(&b.len())
            && b[0].is_ascii_digit()
            && b.iter().all(|&c| c.is_ascii_digit() || tail(c))
    };
    let ok = match (target.strip_prefix("gfx"), target.strip_prefix("sm_")) {
        (Some(rest), _) => well_formed(rest, 3, 4, |c| matches!(c, b'a'..=b'f')),
        (_, Some(rest)) => {
            let digits = rest.trim_end_matches(['a', 'f']);
            rest.len() <= digits.len() + 1 && well_formed(digits, 2, 3, |_| false)
        }
        _ => false,
    };
    if ok {
        return Ok(());
    }
    let shown: String = if target.len() > 40 || !target.bytes().all(|c| c.is_ascii_graphic()) {
        "the target given".into()
    } else {
        format!("'{target}'")
    };
    Err(CalcError::new(format!(
        "unknown target {shown}: give a GPU architecture, an AMD gfx name \
         ({}) or an NVIDIA sm_ name ({}); gfx95* has hardware transpose loads, \
         the others plan alike",
        TARGET_EXAMPLES_AMD.join(", "),
        TARGET_EXAMPLES_NVIDIA.join(", ")
    )))
}

/// AMD architectures named in the target message.
const TARGET_EXAMPLES_AMD: &[&str] = &[
    "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1200",
];

/// NVIDIA architectures named in the target message.
const TARGET_EXAMPLES_NVIDIA: &[&str] = &["sm_70", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a"];

fn dispatch(name: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value, CalcError> {
    if name == "vector_width" {
        let bound = bind(
            name,
            args,
            kwargs,
            &["src", "dst", "element_bits", "max_bits"],
            &[],
        )?;
        return Ok(Value::Int(vector_width(
            &bound.need("src")?.to_layout()?,
            &bound.need("dst")?.to_layout()?,
            bound.int_or("element_bits", 16)?,
            bound.int_or("max_bits", 128)?,
        )?));
    }
    let bound = bind(
        name,
        args,
        kwargs,
        &[
            "threads",
            "element_bits",
            "max_bits",
            "src",
            "dst",
            "target",
        ],
        &[],
    )?;
    let mut request = TransposeRequest::new(
        bound.int_or("threads", 256)?,
        bound.int_or("element_bits", 16)?,
        bound.int_or("max_bits", 128)?,
        bound.need("src")?.to_layout()?,
        bound.need("dst")?.to_layout()?,
    );
    match bound.get("target") {
        None => {}
        Some(Value::Name(target)) => {
            check_target(target)?;
            request = request.with_target(target);
        }
        Some(other) => {
            return Err(CalcError::new(format!(
            "transpose_plan argument 'target' must be a GPU architecture such as gfx942, got {}",
            other.type_name()
        )))
        }
    }
    Ok(Value::Transpose(request.plan()?))
}
