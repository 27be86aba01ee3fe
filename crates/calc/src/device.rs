//! The device-layout functions of the calculator.

use retile_device::{DType, DeviceLayout, StridedLayout};

use crate::args::bind;
use crate::error::CalcError;
use crate::value::Value;

/// Names this module answers to.
///
/// ```
/// use retile_calc::{device::FUNCTIONS, evaluate};
/// assert_eq!(FUNCTIONS[0], "device_layout");
/// assert!(FUNCTIONS.contains(&"device_bytes"));
/// let v = evaluate("device_bytes(device_layout([512, 256], float16))")?;
/// assert_eq!(v.to_int()?, 512 * 256 * 2);
/// # Ok::<(), retile_calc::CalcError>(())
/// ```
pub const FUNCTIONS: &[&str] = &[
    "device_layout",
    "host_coord",
    "device_offset",
    "device_bytes",
    "host_stick_dim",
    "view",
    "cute",
];

fn sizes(v: &Value) -> Result<Vec<u64>, CalcError> {
    v.to_ints()?
        .into_iter()
        .map(|x| u64::try_from(x).map_err(|_| CalcError::new(format!("size {x} is negative"))))
        .collect()
}

fn dtype(v: &Value) -> Result<DType, CalcError> {
    match v {
        Value::Name(n) => n
            .parse()
            .map_err(|e: retile_layout::LayoutError| CalcError::caused_by(e)),
        other => Err(CalcError::new(format!(
            "expected a dtype such as float16, got {}",
            other.type_name()
        ))),
    }
}

fn layout(v: &Value) -> Result<&DeviceLayout, CalcError> {
    match v {
        Value::Device(l) => Ok(l),
        other => Err(CalcError::new(format!(
            "expected a device layout, got {}",
            other.type_name()
        ))),
    }
}

/// Calls the device function `name`, or returns `None` if there is none.
///
/// ```
/// use retile_calc::evaluate;
/// let v = evaluate("device_bytes(device_layout([512, 256], float16))").unwrap();
/// assert_eq!(v.to_string(), "262144");
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
    let err = |e: retile_device::DeviceError| CalcError::caused_by(e);
    if name == "device_layout" {
        let bound = bind(
            name,
            args,
            kwargs,
            &["host_size", "dtype", "dim_order"],
            &["device_size", "dim_map"],
        )?;
        let host = sizes(bound.need("host_size")?)?;
        let dt = dtype(bound.need("dtype")?)?;
        let made = match (
            bound.get("dim_order"),
            bound.get("device_size"),
            bound.get("dim_map"),
        ) {
            (None, Some(device), Some(_)) => {
                DeviceLayout::explicit(&host, &sizes(device)?, &bound.ints("dim_map")?, dt)
            }
            (Some(_), None, None) => {
                DeviceLayout::with_dim_order(&host, dt, &bound.ints("dim_order")?)
            }
            (None, None, None) => DeviceLayout::default_for(&host, dt),
            _ => {
                return Err(CalcError::new(
                    "give device_size and dim_map together, or a dim_order",
                ))
            }
        };
        return made.map(Value::Device).map_err(err);
    }
    let params: &[&'static str] = match name {
        "host_coord" | "device_offset" => &["layout", "coord"],
        "view" => &["layout", "size"],
        "cute" => &["layout", "host_stride"],
        _ => &["layout"],
    };
    let bound = bind(name, args, kwargs, params, &[])?;
    let l = layout(bound.need("layout")?)?;
    Ok(match name {
        "host_coord" => match l.host_coord(&sizes(bound.need("coord")?)?).map_err(err)? {
            Some(h) => Value::Tuple(h.into_iter().map(|x| Value::Int(x as i64)).collect()),
            None => Value::Name("padding".into()),
        },
        "device_offset" => Value::Int(
            l.device_offset(&sizes(bound.need("coord")?)?)
                .map_err(err)? as i64,
        ),
        "device_bytes" => Value::Int(l.device_bytes() as i64),
        "host_stick_dim" => l
            .host_stick_dim()
            .map_or(Value::Name("none".into()), |d| Value::Int(d as i64)),
        "view" => Value::Device(l.view(&sizes(bound.need("size")?)?).map_err(err)?),
        _ => {
            let stride = match bound.get("host_stride") {
                Some(_) => bound.ints("host_stride")?,
                None => StridedLayout::contiguous(l.host_size().to_vec())
                    .stride()
                    .to_vec(),
            };
            Value::Layout(l.to_cute(&stride).map_err(err)?)
        }
    })
}
