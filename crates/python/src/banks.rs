//! `retile.bank_conflicts` and its result, `retile.BankConflicts`:
//! shared-memory bank conflicts and the swizzle that removes them.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use retile_calc::{evaluate, Value};
use retile_copy::{BankAnalysis, BankReport};

use crate::layout::{int_tuple, ComposedLayout, Layout, Swizzle};

/// A conflict report as a dict: ``wavefronts``, ``ideal``, ``conflicts``,
/// ``degree`` and ``instructions`` (one dict per instruction).
fn report_dict<'py>(py: Python<'py>, r: &BankReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("wavefronts", r.wavefronts())?;
    d.set_item("ideal", r.ideal())?;
    d.set_item("conflicts", r.conflicts())?;
    d.set_item("degree", r.degree())?;
    let instructions = r
        .instructions
        .iter()
        .map(|c| {
            let i = PyDict::new(py);
            i.set_item("warp", c.warp)?;
            i.set_item("step", c.step)?;
            i.set_item("phases", c.phases)?;
            i.set_item("wavefronts", c.wavefronts)?;
            i.set_item("ideal", c.ideal)?;
            i.set_item("degree", c.degree)?;
            Ok(i)
        })
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("instructions", instructions)?;
    Ok(d)
}

/// Bank conflicts of an access pattern against a shared-memory layout, and
/// the swizzle that removes them (made by ``retile.bank_conflicts``). It
/// draws itself in Jupyter: cells coloured by bank, before and after.
///
/// Example::
///
///     >>> r = retile.bank_conflicts(retile.Layout((32, 32), (32, 1)), threads=retile.Layout((32, 32), (1, 32)), element_bytes=4)
///     >>> r.wavefronts, r.ideal, r.conflicts, r.degree, r.swizzle, r.after["conflicts"]
///     (1024, 32, 992, 32, Swizzle(5,0,5), 0)
#[pyclass(module = "retile._retile", name = "BankConflicts", frozen)]
pub struct BankConflicts {
    pub inner: BankAnalysis,
}

#[pymethods]
impl BankConflicts {
    /// Wavefronts of every instruction as the layout is.
    ///
    /// Example::
    ///
    ///     >>> retile.bank_conflicts(retile.Layout(32), threads=32, element_bytes=4).wavefronts
    ///     1
    #[getter]
    fn wavefronts(&self) -> i64 {
        self.inner.report.wavefronts()
    }

    /// Wavefronts without conflicts.
    ///
    /// Example::
    ///
    ///     >>> retile.bank_conflicts(retile.Layout(32), threads=32, element_bytes=4).ideal
    ///     1
    #[getter]
    fn ideal(&self) -> i64 {
        self.inner.report.ideal()
    }

    /// Wavefronts beyond the ideal.
    ///
    /// Example::
    ///
    ///     >>> retile.bank_conflicts(retile.Layout(32), threads=32, element_bytes=4).conflicts
    ///     0
    #[getter]
    fn conflicts(&self) -> i64 {
        self.inner.report.conflicts()
    }

    /// The worst phase's conflict degree (1: none).
    ///
    /// Example::
    ///
    ///     >>> retile.bank_conflicts(retile.Layout(32, 2), threads=32, element_bytes=4).degree
    ///     2
    #[getter]
    fn degree(&self) -> i64 {
        self.inner.report.degree()
    }

    /// One dict per instruction: ``warp``, ``step``, ``phases``, ``wavefronts``, ``ideal``, ``degree``.
    ///
    /// Example::
    ///
    ///     >>> retile.bank_conflicts(retile.Layout(32, 2), threads=32, element_bytes=4).instructions[0]["wavefronts"]
    ///     2
    #[getter]
    fn instructions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        report_dict(py, &self.inner.report)?
            .get_item("instructions")?
            .ok_or_else(|| PyValueError::new_err("internal error: a report without instructions"))
    }

    /// The suggested swizzle (None: no conflicts, or none that helps).
    ///
    /// Example::
    ///
    ///     >>> retile.bank_conflicts(retile.Layout(32), threads=32, element_bytes=4).swizzle is None
    ///     True
    #[getter]
    fn swizzle(&self) -> Option<Swizzle> {
        self.inner
            .suggestion
            .as_ref()
            .map(|s| Swizzle { inner: s.swizzle })
    }

    /// The shared-memory layout with the suggested swizzle, or None.
    ///
    /// Example::
    ///
    ///     >>> str(retile.bank_conflicts(retile.Layout((8, 8), (8, 1)), threads=retile.Layout((8, 8), (1, 8)), element_bytes=4).swizzled)
    ///     'Sw<1,2,3> o (8,8):(8,1)'
    #[getter]
    fn swizzled(&self) -> Option<ComposedLayout> {
        self.inner
            .suggestion
            .as_ref()
            .map(|s| ComposedLayout::wrap(s.memory.clone()))
    }

    /// The conflicts with the suggested swizzle (a dict as ``report()``), or None.
    ///
    /// Example::
    ///
    ///     >>> r = retile.bank_conflicts(retile.Layout((8, 8), (8, 1)), threads=retile.Layout((8, 8), (1, 8)), element_bytes=4)
    ///     >>> r.wavefronts, r.after["wavefronts"], r.after["conflicts"]
    ///     (16, 8, 0)
    #[getter]
    fn after<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.inner
            .suggestion
            .as_ref()
            .map(|s| report_dict(py, &s.report))
            .transpose()
    }

    /// The conflicts as the layout is, as a dict: ``wavefronts``, ``ideal``,
    /// ``conflicts``, ``degree``, ``instructions``.
    ///
    /// Example::
    ///
    ///     >>> retile.bank_conflicts(retile.Layout(32), threads=32, element_bytes=4).report()["conflicts"]
    ///     0
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        report_dict(py, &self.inner.report)
    }

    /// The report in lines, as ``retile banks`` prints it.
    ///
    /// Example::
    ///
    ///     >>> "as given" in retile.bank_conflicts(retile.Layout(32), threads=32, element_bytes=4).details()
    ///     True
    #[pyo3(signature = (listed=16))]
    fn details(&self, listed: usize) -> String {
        self.inner.details(listed)
    }

    /// The SVG picture (Jupyter shows it); None if it cannot be drawn.
    ///
    /// Example::
    ///
    ///     >>> retile.bank_conflicts(retile.Layout(32), threads=32, element_bytes=4)._repr_svg_().startswith("<svg")
    ///     True
    fn _repr_svg_(&self) -> Option<String> {
        retile_draw::banks_svg(&self.inner).ok()
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        self.inner.to_string()
    }
}

/// An argument as calculator text: a Layout, ComposedLayout or Swizzle as
/// its notation, an int, a string as it is, or an object with an ``expr``
/// (retile's RegisterLayout, TransposePlan).
fn arg_text(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(l) = obj.downcast::<Layout>() {
        return Ok(l.get().inner.to_string());
    }
    if let Ok(c) = obj.downcast::<ComposedLayout>() {
        return Ok(c.get().inner.to_string());
    }
    if let Ok(text) = obj.extract::<String>() {
        return Ok(text);
    }
    if let Ok(expr) = obj.getattr("expr").and_then(|e| e.extract::<String>()) {
        return Ok(expr);
    }
    match int_tuple(obj) {
        Ok(t) => Ok(t.to_string()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "expected a retile.Layout, ComposedLayout, register layout, int or calculator text, got {}",
            obj.repr().map(|r| r.to_string()).unwrap_or_default()
        ))),
    }
}

/// The bank conflicts of ``threads`` accessing the shared-memory ``layout``
/// (tile index -> element offset; a Layout or ComposedLayout): ``threads``
/// is a thread count (thread ``t`` reads vectors ``t``, ``t + threads``,
/// ...), a thread-value Layout ``(thread, value) -> tile index`` or a
/// register layout; each thread reads ``vector_bytes`` at a time (default:
/// one element). Returns a ``BankConflicts`` with the swizzle that removes
/// the conflicts; a bad argument raises ValueError.
///
/// Example::
///
///     >>> r = retile.bank_conflicts(retile.Layout((8, 8), (8, 1)), threads=retile.Layout((8, 8), (1, 8)), element_bytes=4)
///     >>> r.wavefronts, r.ideal, r.swizzle
///     (16, 8, Swizzle(1,2,3))
#[pyfunction]
#[pyo3(signature = (layout, threads, vector_bytes=None, element_bytes=None, banks=32, bank_bytes=4, warp=32))]
#[allow(clippy::too_many_arguments)]
fn bank_conflicts(
    py: Python<'_>,
    layout: &Bound<'_, PyAny>,
    threads: &Bound<'_, PyAny>,
    vector_bytes: Option<i64>,
    element_bytes: Option<i64>,
    banks: i64,
    bank_bytes: i64,
    warp: i64,
) -> PyResult<BankConflicts> {
    let element_bytes = element_bytes.ok_or_else(|| {
        PyValueError::new_err("bank_conflicts needs element_bytes, the bytes of one element")
    })?;
    let vector = vector_bytes
        .map(|v| format!(", vector_bytes={v}"))
        .unwrap_or_default();
    let expr = format!(
        "bank_conflicts({}, threads={}, element_bytes={element_bytes}{vector}, banks={banks}, bank_bytes={bank_bytes}, warp={warp})",
        arg_text(layout)?,
        arg_text(threads)?
    );
    let value = py
        .allow_threads(move || evaluate(&expr))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    match value {
        Value::Banks(b) => Ok(BankConflicts { inner: *b }),
        other => Err(PyValueError::new_err(format!(
            "internal error: bank_conflicts gave {}",
            other.type_name()
        ))),
    }
}

/// Registers the class and the function.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BankConflicts>()?;
    m.add_function(wrap_pyfunction!(bank_conflicts, m)?)?;
    Ok(())
}
