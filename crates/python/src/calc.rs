//! The calculator: `retile.eval`, `retile.show` and typed results.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use retile_calc::show::{drawing, Format};
use retile_calc::{evaluate as calc_evaluate, CalcError, Value};

use crate::banks::BankConflicts;
use crate::layout::{ComposedLayout, Layout, Swizzle};

fn calc_err(e: CalcError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Evaluates one calculator expression and returns the text ``retile eval``
/// prints for it; a bad expression raises ValueError with the message
/// ``retile eval`` prints after ``error:``.
///
/// Example::
///
///     >>> retile.eval("coalesce((2,(1,6)):(1,(6,2)))")
///     '12:1'
#[pyfunction]
fn eval(py: Python<'_>, expr: &str) -> PyResult<String> {
    let expr = expr.to_owned();
    py.allow_threads(move || calc_evaluate(&expr).map(|v| v.to_string()))
        .map_err(calc_err)
}

/// The drawing ``retile show`` prints: a layout as a grid of offsets, a
/// device layout as its sticks, a register layout as its threads'
/// registers; ``format="svg"`` draws an SVG picture instead (``retile show
/// --svg``), and ``tile=(rows, cols)`` draws a layout as a thread-value
/// layout over that tile (SVG only).
///
/// Example::
///
///     >>> print(retile.show("(2,3):(3,1)"), end="")  # doctest: +SKIP
///     >>> retile.show("Sw<3,3,3> o (8,64):(64,1)", format="svg").startswith("<svg")
///     True
///     >>> "T31" in retile.show("((4,8),(2,2)):((32,1),(16,8))", format="svg", tile=(16, 8))
///     True
#[pyfunction]
#[pyo3(signature = (expr, format="text", tile=None))]
fn show(py: Python<'_>, expr: &str, format: &str, tile: Option<(i64, i64)>) -> PyResult<String> {
    let format = match format {
        "text" => Format::Text,
        "svg" => Format::Svg,
        other => {
            return Err(PyValueError::new_err(format!(
                "format must be \"text\" or \"svg\", got {other:?}"
            )))
        }
    };
    let expr = expr.to_owned();
    py.allow_threads(move || drawing(&calc_evaluate(&expr)?, format, tile))
        .map_err(calc_err)
}

/// A calculator value as Python: ints, bools, tuples, lists, `retile.Layout`,
/// None for `_`, names and tilers as text, and dicts (with a "kind" key) for
/// register layouts, device layouts and transpose plans.
fn to_python(py: Python<'_>, v: &Value) -> PyResult<PyObject> {
    Ok(match v {
        Value::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        Value::Tuple(items) => {
            let items = items
                .iter()
                .map(|x| to_python(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any().unbind()
        }
        Value::List(items) => {
            let items = items
                .iter()
                .map(|x| to_python(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        Value::Layout(l) => Layout::wrap(l.clone())
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        Value::Tiler(t) => t.to_string().into_pyobject(py)?.into_any().unbind(),
        Value::Underscore => py.None(),
        Value::Name(n) => n.into_pyobject(py)?.into_any().unbind(),
        Value::Register(l) => {
            let d = PyDict::new(py);
            d.set_item("kind", "register")?;
            d.set_item("shape", l.shape().to_vec())?;
            d.set_item("mode_shape", l.mode_shape().to_vec())?;
            d.set_item("spatial_modes", l.spatial_modes().to_vec())?;
            d.set_item("local_modes", l.local_modes().to_vec())?;
            d.set_item("text", l.to_string())?;
            d.into_any().unbind()
        }
        Value::Device(l) => {
            let d = PyDict::new(py);
            d.set_item("kind", "device")?;
            d.set_item("host_size", l.host_size().to_vec())?;
            d.set_item("device_size", l.device_size().to_vec())?;
            d.set_item("dim_map", l.dim_map().to_vec())?;
            d.set_item("dtype", l.dtype().long_name())?;
            d.set_item("text", l.to_string())?;
            d.into_any().unbind()
        }
        Value::Transpose(p) => {
            let d = PyDict::new(py);
            d.set_item("kind", "transpose")?;
            match p {
                retile_copy::TransposePlan::Applies(t) => {
                    d.set_item("applies", true)?;
                    d.set_item("load_width", t.load_width)?;
                    d.set_item("loads", t.loads)?;
                    d.set_item("store_width", t.store_width)?;
                    d.set_item("stores", t.stores)?;
                    d.set_item("extracts", t.extracts)?;
                    d.set_item("reason", py.None())?;
                }
                retile_copy::TransposePlan::Rejected { reason } => {
                    d.set_item("applies", false)?;
                    for k in ["load_width", "loads", "store_width", "stores", "extracts"] {
                        d.set_item(k, py.None())?;
                    }
                    d.set_item("reason", reason)?;
                }
            }
            d.set_item("text", p.to_string())?;
            d.into_any().unbind()
        }
        Value::Swizzle(s) => Swizzle { inner: *s }.into_pyobject(py)?.into_any().unbind(),
        Value::Composed(c) => ComposedLayout::wrap(c.clone())
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        Value::Banks(b) => BankConflicts {
            inner: (**b).clone(),
        }
        .into_pyobject(py)?
        .into_any()
        .unbind(),
    })
}

/// Evaluates an expression and returns its value as Python objects
/// (``retile.Layout`` for layouts; dicts with a ``kind`` for register,
/// device and transpose values; the wrappers in ``retile`` turn those into
/// objects).
///
/// Example::
///
///     >>> retile.evaluate("idx2crd(9, (2,4))")
///     (1, 4)
#[pyfunction]
fn evaluate(py: Python<'_>, expr: &str) -> PyResult<PyObject> {
    let owned = expr.to_owned();
    let value = py
        .allow_threads(move || calc_evaluate(&owned))
        .map_err(calc_err)?;
    to_python(py, &value)
}

/// Registers the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(eval, m)?)?;
    m.add_function(wrap_pyfunction!(show, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    Ok(())
}
