//! Shared-memory bank conflicts in the calculator: `bank_conflicts(L,
//! threads=..., vector_bytes=..., element_bytes=...)` for a layout and an
//! access pattern, `transpose_banks(...)` for both sides of an in-thread
//! transpose.

use retile_copy::{AccessPattern, BankAnalysis, Banks, TransposeRequest};
use retile_layout::ComposedLayout;

use crate::args::{bind, Bound};
use crate::error::CalcError;
use crate::value::Value;

/// Names this module answers to.
///
/// ```
/// use retile_calc::{banks::FUNCTIONS, evaluate};
/// assert_eq!(FUNCTIONS, ["bank_conflicts", "transpose_banks"]);
/// // 32 threads reading 32 consecutive floats: one wavefront, no conflicts
/// let v = evaluate("bank_conflicts(32:1, threads=32, element_bytes=4)")?;
/// assert!(v.to_string().contains("wavefronts=1, ideal=1, conflicts=0"), "{v}");
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
pub const FUNCTIONS: &[&str] = &["bank_conflicts", "transpose_banks"];

/// Calls `name` if it is one of [`FUNCTIONS`].
///
/// ```
/// use retile_calc::evaluate;
/// // 32 threads reading the rows of a 32x32 row-major tile of floats, one float at a time
/// let v = evaluate("bank_conflicts((32,32):(32,1), threads=(32,32):(1,32), element_bytes=4)").unwrap();
/// assert_eq!(v.to_string(), "BankConflicts(instructions=32, wavefronts=1024, ideal=32, conflicts=992, \
///     degree=32, swizzle=Sw<5,0,5>, after=32, conflicts_after=0)");
/// let v = evaluate("transpose_banks(threads=256, element_bits=16, max_bits=128, \
///     src=(256,16):(1,256), dst=(256,16):(16,1))").unwrap();
/// assert!(v.to_string().starts_with("(BankConflicts("));
/// ```
pub fn call(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Option<Result<Value, CalcError>> {
    match name {
        "bank_conflicts" => Some(bank_conflicts(args, kwargs)),
        "transpose_banks" => Some(transpose_banks(args, kwargs)),
        _ => None,
    }
}

/// The banks and the warp of a call (`banks=32, bank_bytes=4, warp=32`).
fn hardware(bound: &Bound<'_>) -> Result<(Banks, i64), CalcError> {
    let banks = Banks::new(bound.int_or("banks", 32)?, bound.int_or("bank_bytes", 4)?)?;
    Ok((banks, bound.int_or("warp", 32)?))
}

/// The shared-memory layout argument: a layout, a shape or a swizzled layout.
fn memory(value: &Value) -> Result<ComposedLayout, CalcError> {
    match value {
        Value::Composed(c) => Ok(c.clone()),
        other => Ok(ComposedLayout::from(other.to_layout()?)),
    }
}

fn bank_conflicts(args: &[Value], kwargs: &[(String, Value)]) -> Result<Value, CalcError> {
    let bound = bind(
        "bank_conflicts",
        args,
        kwargs,
        &["layout", "threads", "vector_bytes", "element_bytes"],
        &["banks", "bank_bytes", "warp"],
    )?;
    let memory = memory(bound.need("layout")?)?;
    let element_bytes = bound.int("element_bytes")?;
    let vector_bytes = bound.int_or("vector_bytes", element_bytes)?;
    if element_bytes < 1 || vector_bytes < element_bytes || vector_bytes % element_bytes != 0 {
        return Err(CalcError::new(format!(
            "bank_conflicts needs element_bytes >= 1 and vector_bytes a multiple of it; \
             got element_bytes={element_bytes}, vector_bytes={vector_bytes}"
        )));
    }
    let vector = vector_bytes / element_bytes;
    let (banks, warp) = hardware(&bound)?;
    let pattern = match bound.need("threads")? {
        Value::Int(n) => AccessPattern::threads(*n, vector, memory.size()?, warp)?,
        Value::Register(r) => AccessPattern::from_tv(&r.tv_layout()?, vector, warp)?,
        other => AccessPattern::from_tv(
            &other.to_layout().map_err(|_| {
                CalcError::new(format!(
                "bank_conflicts argument 'threads' must be a thread count, a thread-value layout \
                 (thread, value) -> tile index, or a register layout; got {}",
                other.type_name()
            ))
            })?,
            vector,
            warp,
        )?,
    };
    let analysis = BankAnalysis::new(memory, pattern, element_bytes * 8, banks)?;
    Ok(Value::Banks(Box::new(analysis)))
}

fn transpose_banks(args: &[Value], kwargs: &[(String, Value)]) -> Result<Value, CalcError> {
    let bound = bind(
        "transpose_banks",
        args,
        kwargs,
        &["threads", "element_bits", "max_bits", "src", "dst"],
        &["target", "banks", "bank_bytes", "warp"],
    )?;
    let mut request = TransposeRequest::new(
        bound.int_or("threads", 256)?,
        bound.int_or("element_bits", 16)?,
        bound.int_or("max_bits", 128)?,
        bound.need("src")?.to_layout()?,
        bound.need("dst")?.to_layout()?,
    );
    if let Some(target) = bound.get("target") {
        let Value::Name(target) = target else {
            return Err(CalcError::new(format!(
                "transpose_banks argument 'target' must be a GPU architecture such as gfx942, got {}",
                target.type_name()
            )));
        };
        crate::copy::check_target(target)?;
        request = request.with_target(target);
    }
    let (banks, warp) = hardware(&bound)?;
    match request.banks(warp, banks)? {
        Some(b) => Ok(Value::Tuple(vec![
            Value::Banks(Box::new(b.loads)),
            Value::Banks(Box::new(b.stores)),
        ])),
        None => Err(CalcError::new(format!(
            "the in-thread transpose does not apply: {}",
            request.plan()?
        ))),
    }
}
