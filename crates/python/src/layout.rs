//! `retile.Layout` and the algebra's free functions under pycute's names.

use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use retile_layout::{IntTuple, Layout as RLayout, LayoutError, Tiler};

/// A layout error as a ValueError naming the rule.
pub fn layout_err(e: LayoutError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// An int or nested tuple (or list) of ints as an IntTuple.
pub fn int_tuple(obj: &Bound<'_, PyAny>) -> PyResult<IntTuple> {
    if let Ok(t) = obj.downcast::<PyTuple>() {
        return t
            .iter()
            .map(|x| int_tuple(&x))
            .collect::<PyResult<_>>()
            .map(IntTuple::Tuple);
    }
    if let Ok(l) = obj.downcast::<PyList>() {
        return l
            .iter()
            .map(|x| int_tuple(&x))
            .collect::<PyResult<_>>()
            .map(IntTuple::Tuple);
    }
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(
            "expected an int or a tuple of ints, got a bool",
        ));
    }
    // the common case without a Python method call
    if obj.is_exact_instance_of::<pyo3::types::PyInt>() {
        if let Ok(v) = obj.extract::<i64>() {
            return Ok(IntTuple::Int(v));
        }
    }
    match obj
        .call_method0("__index__")
        .and_then(|i| i.extract::<i64>())
    {
        Ok(v) => Ok(IntTuple::Int(v)),
        Err(_) => Err(PyTypeError::new_err(format!(
            "expected an int or a (nested) tuple of ints, got {}",
            obj.repr().map(|r| r.to_string()).unwrap_or_default()
        ))),
    }
}

/// An IntTuple as an int or nested tuple.
pub fn to_py(py: Python<'_>, t: &IntTuple) -> PyResult<PyObject> {
    match t {
        IntTuple::Int(v) => Ok(v.into_pyobject(py)?.into_any().unbind()),
        IntTuple::Tuple(items) => {
            let items: Vec<PyObject> = items
                .iter()
                .map(|i| to_py(py, i))
                .collect::<PyResult<_>>()?;
            Ok(PyTuple::new(py, items)?.into_any().unbind())
        }
    }
}

/// A CuTe layout: a function from coordinates to offsets, given by a shape
/// and a stride (nested tuples or ints). Without a stride the layout is
/// compact column-major, as in pycute.
///
/// Example::
///
///     >>> L = retile.Layout((4, 2), (1, 4))
///     >>> str(L), L(5), L((1, 1)), L.shape, retile.size(L)
///     ('(4,2):(1,4)', 5, 5, (4, 2), 8)
///     >>> retile.Layout.parse("((2,2),3):((1,4),8)") == retile.Layout(((2, 2), 3), ((1, 4), 8))
///     True
#[pyclass(module = "retile._retile", name = "Layout", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    pub inner: RLayout,
}

impl Layout {
    pub fn wrap(inner: RLayout) -> Layout {
        Layout { inner }
    }
}

/// A layout argument: a Layout, or an int `n` standing for `n:1`.
/// A Layout is borrowed, not copied.
pub fn as_layout<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<std::borrow::Cow<'a, RLayout>> {
    if let Ok(l) = obj.downcast::<Layout>() {
        return Ok(std::borrow::Cow::Borrowed(&l.get().inner));
    }
    if let Ok(IntTuple::Int(n)) = int_tuple(obj) {
        return RLayout::vector(n, 1)
            .map(std::borrow::Cow::Owned)
            .map_err(layout_err);
    }
    Err(PyTypeError::new_err(format!(
        "expected a retile.Layout (or an int n for n:1), got {}",
        obj.repr().map(|r| r.to_string()).unwrap_or_default()
    )))
}

/// A tiler argument as pycute takes it: a Layout, an int `n` (`n:1`),
/// None (`_`: the mode is left as it is) or a tuple of these (one per mode).
pub fn as_tiler(obj: &Bound<'_, PyAny>) -> PyResult<Tiler> {
    if obj.is_none() {
        return Ok(Tiler::Underscore);
    }
    if let Ok(l) = obj.downcast::<Layout>() {
        return Ok(Tiler::Layout(l.get().inner.clone()));
    }
    if let Ok(t) = obj.downcast::<PyTuple>() {
        return t
            .iter()
            .map(|x| as_tiler(&x))
            .collect::<PyResult<_>>()
            .map(Tiler::Modes);
    }
    if let Ok(t) = obj.downcast::<PyList>() {
        return t
            .iter()
            .map(|x| as_tiler(&x))
            .collect::<PyResult<_>>()
            .map(Tiler::Modes);
    }
    if let Ok(IntTuple::Int(n)) = int_tuple(obj) {
        return RLayout::vector(n, 1).map(Tiler::Layout).map_err(layout_err);
    }
    Err(PyTypeError::new_err(format!(
        "expected a tiler: a retile.Layout, an int, None or a tuple of these, got {}",
        obj.repr().map(|r| r.to_string()).unwrap_or_default()
    )))
}

#[pymethods]
impl Layout {
    #[new]
    #[pyo3(signature = (shape, stride=None))]
    fn new(shape: &Bound<'_, PyAny>, stride: Option<&Bound<'_, PyAny>>) -> PyResult<Layout> {
        let shape = int_tuple(shape)?;
        let inner = match stride {
            None => RLayout::from_shape(shape),
            Some(s) if s.is_none() => RLayout::from_shape(shape),
            Some(s) => RLayout::new(shape, int_tuple(s)?),
        };
        inner.map(Layout::wrap).map_err(layout_err)
    }

    /// Parses CuTe notation, e.g. ``Layout.parse("(4,2):(1,4)")``; a shape
    /// alone (``"(4,2)"``) is compact column-major.
    ///
    /// Example::
    ///
    ///     >>> retile.Layout.parse("(4,2)")
    ///     Layout((4,2):(1,4))
    #[staticmethod]
    fn parse(text: &str) -> PyResult<Layout> {
        match text.parse::<RLayout>() {
            Ok(l) => Ok(Layout::wrap(l)),
            Err(e) => match text.parse::<IntTuple>() {
                Ok(shape) => RLayout::from_shape(shape)
                    .map(Layout::wrap)
                    .map_err(layout_err),
                Err(_) => Err(layout_err(e)),
            },
        }
    }

    /// The shape as an int or nested tuple, e.g. ``(4, (2, 3))``.
    ///
    /// Example::
    ///
    ///     >>> retile.Layout.parse("(4,2):(1,4)").shape
    ///     (4, 2)
    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<PyObject> {
        to_py(py, &self.inner.shape())
    }

    /// The stride, congruent with the shape.
    ///
    /// Example::
    ///
    ///     >>> retile.Layout.parse("(4,2):(1,4)").stride
    ///     (1, 4)
    #[getter]
    fn stride(&self, py: Python<'_>) -> PyResult<PyObject> {
        to_py(py, &self.inner.stride())
    }

    /// The size of the domain (the product of the shape).
    ///
    /// Example::
    ///
    ///     >>> retile.Layout((4, 2)).size()
    ///     8
    fn size(&self) -> PyResult<i64> {
        self.inner.size().map_err(layout_err)
    }

    /// The size of the codomain, ``L(size-1) + 1``.
    ///
    /// Example::
    ///
    ///     >>> retile.Layout((4, 2), (2, 1)).cosize()
    ///     8
    fn cosize(&self) -> PyResult<i64> {
        self.inner.cosize().map_err(layout_err)
    }

    /// The number of top-level modes (an int shape has rank 1).
    ///
    /// Example::
    ///
    ///     >>> retile.Layout(((2, 2), 3)).rank()
    ///     2
    fn rank(&self) -> usize {
        self.inner.rank()
    }

    /// The nesting depth (an int shape has depth 0).
    ///
    /// Example::
    ///
    ///     >>> retile.Layout(((2, 2), 3)).depth()
    ///     2
    fn depth(&self) -> usize {
        self.inner.depth()
    }

    /// Mode ``i`` as a layout (``L[i]`` does the same).
    ///
    /// Example::
    ///
    ///     >>> retile.Layout.parse("((2,2),3):((1,4),8)").mode(0)
    ///     Layout((2,2):(1,4))
    fn mode(&self, i: usize) -> PyResult<Layout> {
        self.inner.mode(i).map(Layout::wrap).map_err(layout_err)
    }

    /// The layout with its nesting removed.
    ///
    /// Example::
    ///
    ///     >>> str(retile.Layout.parse("((2,2),3):((1,4),8)").flatten())
    ///     '(2,2,3):(1,4,8)'
    fn flatten(&self) -> Layout {
        Layout::wrap(self.inner.flatten())
    }

    /// ``[L(0), L(1), ...]`` for the first ``count`` indices (all by
    /// default); more than 2**24 entries raise MemoryError.
    ///
    /// Example::
    ///
    ///     >>> retile.Layout((2, 2), (2, 1)).table()
    ///     [0, 2, 1, 3]
    #[pyo3(signature = (count=None))]
    fn table(&self, count: Option<i64>) -> PyResult<Vec<i64>> {
        let n = match count {
            Some(n) => n,
            None => self.inner.size().map_err(layout_err)?,
        };
        self.inner.table(n).map_err(|e| match e {
            LayoutError::TooLarge { .. } => PyMemoryError::new_err(format!(
                "{e}; take a prefix with table(count), or evaluate L(i) where it is needed"
            )),
            e => layout_err(e),
        })
    }

    /// ``L(i)`` for an int index, ``L(coord)`` or ``L(c0, c1, ...)`` for a
    /// coordinate (tuples matched mode by mode, an int split over the shape
    /// below it).
    #[pyo3(signature = (*args))]
    fn __call__(&self, args: &Bound<'_, PyTuple>) -> PyResult<i64> {
        let coord = match args.len() {
            0 => {
                return Err(PyTypeError::new_err(
                    "call a layout with an index or a coordinate",
                ))
            }
            1 => int_tuple(&args.get_item(0)?)?,
            _ => int_tuple(args.as_any())?,
        };
        match coord {
            IntTuple::Int(i) => self.inner.eval(i),
            c => self.inner.eval_coord(&c),
        }
        .map_err(layout_err)
    }

    fn __getitem__(&self, i: isize) -> PyResult<Layout> {
        let rank = self.inner.rank() as isize;
        let j = if i < 0 { i + rank } else { i };
        if j < 0 || j >= rank {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "mode {i} does not exist: the layout has rank {rank}"
            )));
        }
        self.mode(j as usize)
    }

    fn __len__(&self) -> usize {
        self.inner.rank()
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        format!("Layout({})", self.inner)
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<(PyObject, (String,))> {
        let parse = py.get_type::<Layout>().getattr("parse")?.unbind();
        Ok((parse, (self.inner.to_string(),)))
    }
}

fn wrap(r: retile_layout::Result<RLayout>) -> PyResult<Layout> {
    r.map(Layout::wrap).map_err(layout_err)
}

/// Size of a layout's domain, or the product of an int tuple (pycute's ``size``).
///
/// Example::
///
///     >>> retile.size(retile.Layout((4, 2))), retile.size((2, (3, 4)))
///     (8, 24)
#[pyfunction]
fn size(x: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Ok(l) = x.downcast::<Layout>() {
        return l.get().size();
    }
    int_tuple(x)?.size().map_err(layout_err)
}

/// Size of a layout's codomain (pycute's ``cosize``).
///
/// Example::
///
///     >>> retile.cosize(retile.Layout((4, 2), (2, 1)))
///     8
#[pyfunction]
fn cosize(x: &Bound<'_, PyAny>) -> PyResult<i64> {
    as_layout(x)?.cosize().map_err(layout_err)
}

/// Rank of a layout or int tuple.
///
/// Example::
///
///     >>> retile.rank(retile.Layout((4, 2))), retile.rank(5)
///     (2, 1)
#[pyfunction]
fn rank(x: &Bound<'_, PyAny>) -> PyResult<usize> {
    if let Ok(l) = x.downcast::<Layout>() {
        return Ok(l.get().inner.rank());
    }
    Ok(int_tuple(x)?.rank())
}

/// Depth of a layout or int tuple.
///
/// Example::
///
///     >>> retile.depth(retile.Layout(((2, 2), 3))), retile.depth(4)
///     (2, 0)
#[pyfunction]
fn depth(x: &Bound<'_, PyAny>) -> PyResult<usize> {
    if let Ok(l) = x.downcast::<Layout>() {
        return Ok(l.get().inner.depth());
    }
    Ok(int_tuple(x)?.depth())
}

/// A layout whose modes are the given layouts (pycute's ``make_layout``).
///
/// Example::
///
///     >>> retile.make_layout(retile.Layout(2, 1), retile.Layout((3, 2), (2, 6)))
///     Layout((2,(3,2)):(1,(2,6)))
#[pyfunction]
#[pyo3(signature = (*layouts))]
fn make_layout(layouts: &Bound<'_, PyTuple>) -> PyResult<Layout> {
    let items: Vec<Bound<'_, PyAny>> = match layouts.len() {
        1 if layouts.get_item(0)?.downcast::<Layout>().is_err() => {
            layouts.get_item(0)?.try_iter()?.collect::<PyResult<_>>()?
        }
        _ => layouts.iter().collect(),
    };
    let modes = items
        .iter()
        .map(|x| as_layout(x).map(std::borrow::Cow::into_owned))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Layout::wrap(RLayout::from_modes(modes)))
}

/// Merges modes that are contiguous; with a ``profile``, only within each
/// mode of the profile.
///
/// Example::
///
///     >>> str(retile.coalesce(retile.Layout((2, (1, 6)), (1, (6, 2)))))
///     '12:1'
#[pyfunction]
#[pyo3(signature = (layout, profile=None))]
fn coalesce(layout: &Bound<'_, PyAny>, profile: Option<&Bound<'_, PyAny>>) -> PyResult<Layout> {
    let l = as_layout(layout)?;
    match profile {
        Some(p) if !p.is_none() => wrap(retile_layout::coalesce_profile(&l, &int_tuple(p)?)),
        _ => wrap(retile_layout::coalesce(&l)),
    }
}

/// Removes stride-0 and size-1 modes, then coalesces.
///
/// Example::
///
///     >>> str(retile.filter(retile.Layout((4, 2, 3), (1, 0, 4))))
///     '12:1'
#[pyfunction]
#[pyo3(signature = (layout, profile=None))]
fn filter(layout: &Bound<'_, PyAny>, profile: Option<&Bound<'_, PyAny>>) -> PyResult<Layout> {
    if profile.is_some_and(|p| !p.is_none()) {
        return Err(PyValueError::new_err(
            "filter with a profile is not supported; filter the modes of the layout one by one",
        ));
    }
    wrap(retile_layout::filter(&*as_layout(layout)?))
}

/// ``A ∘ B``: ``B`` a layout, an int, None, or a tuple of these applied mode by mode.
///
/// Example::
///
///     >>> str(retile.composition(retile.Layout((6, 2), (8, 2)), retile.Layout((4, 3), (3, 1))))
///     '((2,2),3):((24,2),8)'
#[pyfunction]
fn composition(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Layout> {
    let a = as_layout(a)?;
    if let Ok(l) = b.downcast::<Layout>() {
        return wrap(retile_layout::composition(&a, &l.get().inner));
    }
    wrap(retile_layout::composition_tiler(&a, &as_tiler(b)?))
}

/// The layout of the offsets ``layout`` does not reach, up to ``max_idx``
/// (an int or a shape).
///
/// Example::
///
///     >>> str(retile.complement(retile.Layout((2, 2), (1, 4)), 24))
///     '(2,3):(2,8)'
#[pyfunction]
#[pyo3(signature = (layout, max_idx=None))]
fn complement(layout: &Bound<'_, PyAny>, max_idx: Option<&Bound<'_, PyAny>>) -> PyResult<Layout> {
    let cotarget = match max_idx {
        Some(m) if !m.is_none() => int_tuple(m)?,
        _ => IntTuple::Int(1),
    };
    wrap(retile_layout::complement(&*as_layout(layout)?, &cotarget))
}

macro_rules! tiler_fn {
    ($name:ident, $doc:literal) => {
        #[doc = $doc]
        #[pyfunction]
        fn $name(a: &Bound<'_, PyAny>, tiler: &Bound<'_, PyAny>) -> PyResult<Layout> {
            wrap(retile_layout::$name(&*as_layout(a)?, &as_tiler(tiler)?))
        }
    };
}

tiler_fn!(logical_divide, "Splits ``a`` into the tile ``tiler`` and the rest: ``((tile),(rest))``; ``tiler`` a layout, int, None or tuple of these (by mode).\n\nExample::\n\n    >>> str(retile.logical_divide(retile.Layout.parse('(4,2,3):(2,1,8)'), retile.Layout(4, 2)))\n    '((2,2),(2,3)):((4,1),(2,8))'");
tiler_fn!(zipped_divide, "``logical_divide`` with the tile modes gathered first and the rest second.\n\nExample::\n\n    >>> str(retile.zipped_divide(retile.Layout((4, 6)), (retile.Layout(2), retile.Layout(3))))\n    '((2,3),(2,2)):((1,4),(2,12))'");
tiler_fn!(tiled_divide, "``zipped_divide`` with the rest modes unpacked.\n\nExample::\n\n    >>> str(retile.tiled_divide(retile.Layout((4, 6)), (retile.Layout(2), retile.Layout(3))))\n    '((2,3),2,2):((1,4),2,12)'");
tiler_fn!(flat_divide, "``zipped_divide`` with both the tile and rest modes unpacked.\n\nExample::\n\n    >>> str(retile.flat_divide(retile.Layout((4, 6)), (retile.Layout(2), retile.Layout(3))))\n    '(2,3,2,2):(1,4,2,12)'");
tiler_fn!(logical_product, "Repeats ``a`` over the layout ``tiler``: ``(a, rest)``.\n\nExample::\n\n    >>> str(retile.logical_product(retile.Layout((2, 2), (1, 2)), retile.Layout(3, 1)))\n    '((2,2),3):((1,2),4)'");
tiler_fn!(zipped_product, "``logical_product`` by mode, the ``a`` modes first and the repeats second.\n\nExample::\n\n    >>> str(retile.zipped_product(retile.Layout((2, 2)), (retile.Layout(3), retile.Layout(2))))\n    '((2,2),(3,2)):((1,2),(2,1))'");
tiler_fn!(tiled_product, "``zipped_product`` with the repeat modes unpacked.\n\nExample::\n\n    >>> str(retile.tiled_product(retile.Layout((2, 2)), (retile.Layout(3), retile.Layout(2))))\n    '((2,2),3,2):((1,2),2,1)'");
tiler_fn!(flat_product, "``zipped_product`` with both parts unpacked.\n\nExample::\n\n    >>> str(retile.flat_product(retile.Layout((2, 2)), (retile.Layout(3), retile.Layout(2))))\n    '(2,2,3,2):(1,2,2,1)'");

/// Blocked product: mode ``i`` of ``a`` repeated by mode ``i`` of ``b``, ``a`` innermost.
///
/// Example::
///
///     >>> str(retile.blocked_product(retile.Layout(4, 1), retile.Layout((2, 3), (1, 2))))
///     '((4,2),(1,3)):((1,4),(0,8))'
#[pyfunction]
fn blocked_product(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Layout> {
    wrap(retile_layout::blocked_product(
        &*as_layout(a)?,
        &*as_layout(b)?,
    ))
}

/// Raked product: like ``blocked_product`` with ``b`` innermost.
///
/// Example::
///
///     >>> str(retile.raked_product(retile.Layout(4, 1), retile.Layout((2, 3), (1, 2))))
///     '((2,4),(3,1)):((4,1),(8,0))'
#[pyfunction]
fn raked_product(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Layout> {
    wrap(retile_layout::raked_product(
        &*as_layout(a)?,
        &*as_layout(b)?,
    ))
}

/// A layout ``R`` with ``L(R(i)) == i`` on the largest contiguous prefix.
///
/// Example::
///
///     >>> str(retile.right_inverse(retile.Layout((4, 2), (2, 1))))
///     '(2,4):(4,1)'
#[pyfunction]
fn right_inverse(layout: &Bound<'_, PyAny>) -> PyResult<Option<Layout>> {
    if layout.is_none() {
        return Ok(None);
    }
    wrap(retile_layout::right_inverse(&*as_layout(layout)?)).map(Some)
}

/// A layout ``R`` with ``R(L(i)) == i``.
///
/// Example::
///
///     >>> str(retile.left_inverse(retile.Layout((4, 2), (1, 5))))
///     '(5,2):(1,4)'
#[pyfunction]
fn left_inverse(layout: &Bound<'_, PyAny>) -> PyResult<Option<Layout>> {
    if layout.is_none() {
        return Ok(None);
    }
    wrap(retile_layout::left_inverse(&*as_layout(layout)?)).map(Some)
}

/// How many leading elements of ``a`` and ``b`` are contiguous in both.
///
/// Example::
///
///     >>> retile.max_common_vector(retile.Layout(8, 1), retile.Layout((2, 4), (1, 2)))
///     8
#[pyfunction]
fn max_common_vector(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<i64> {
    retile_layout::max_common_vector(&*as_layout(a)?, &*as_layout(b)?).map_err(layout_err)
}

/// The layout of the elements ``a`` and ``b`` both hold contiguously.
///
/// Example::
///
///     >>> str(retile.max_common_layout(retile.Layout(8, 1), retile.Layout((2, 4), (1, 2))))
///     '8:1'
#[pyfunction]
fn max_common_layout(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Layout> {
    wrap(retile_layout::max_common_layout(
        &*as_layout(a)?,
        &*as_layout(b)?,
    ))
}

/// The offset of a coordinate in ``shape`` with ``stride`` (compact
/// column-major when None), as pycute's ``crd2idx``.
///
/// Example::
///
///     >>> retile.crd2idx((1, 2), (2, 4), (4, 1)), retile.crd2idx(3, (2, 4))
///     (6, 3)
#[pyfunction]
#[pyo3(signature = (crd, shape, stride=None))]
fn crd2idx(
    crd: &Bound<'_, PyAny>,
    shape: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
) -> PyResult<i64> {
    let shape = int_tuple(shape)?;
    let stride = match stride {
        Some(s) if !s.is_none() => int_tuple(s)?,
        _ => shape.compact_col_major().map_err(layout_err)?,
    };
    retile_layout::crd2idx(&int_tuple(crd)?, &shape, &stride).map_err(layout_err)
}

/// The coordinate of index ``idx`` in ``shape`` (column-major), as
/// pycute's ``idx2crd`` without a stride.
///
/// Example::
///
///     >>> retile.idx2crd(9, (2, 4))
///     (1, 4)
#[pyfunction]
fn idx2crd(py: Python<'_>, idx: i64, shape: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    let crd = retile_layout::idx2crd(idx, &int_tuple(shape)?).map_err(layout_err)?;
    to_py(py, &crd)
}

/// Registers the class and functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Layout>()?;
    m.add_function(wrap_pyfunction!(size, m)?)?;
    m.add_function(wrap_pyfunction!(cosize, m)?)?;
    m.add_function(wrap_pyfunction!(rank, m)?)?;
    m.add_function(wrap_pyfunction!(depth, m)?)?;
    m.add_function(wrap_pyfunction!(make_layout, m)?)?;
    m.add_function(wrap_pyfunction!(coalesce, m)?)?;
    m.add_function(wrap_pyfunction!(filter, m)?)?;
    m.add_function(wrap_pyfunction!(composition, m)?)?;
    m.add_function(wrap_pyfunction!(complement, m)?)?;
    m.add_function(wrap_pyfunction!(logical_divide, m)?)?;
    m.add_function(wrap_pyfunction!(zipped_divide, m)?)?;
    m.add_function(wrap_pyfunction!(tiled_divide, m)?)?;
    m.add_function(wrap_pyfunction!(flat_divide, m)?)?;
    m.add_function(wrap_pyfunction!(logical_product, m)?)?;
    m.add_function(wrap_pyfunction!(zipped_product, m)?)?;
    m.add_function(wrap_pyfunction!(tiled_product, m)?)?;
    m.add_function(wrap_pyfunction!(flat_product, m)?)?;
    m.add_function(wrap_pyfunction!(blocked_product, m)?)?;
    m.add_function(wrap_pyfunction!(raked_product, m)?)?;
    m.add_function(wrap_pyfunction!(right_inverse, m)?)?;
    m.add_function(wrap_pyfunction!(left_inverse, m)?)?;
    m.add_function(wrap_pyfunction!(max_common_vector, m)?)?;
    m.add_function(wrap_pyfunction!(max_common_layout, m)?)?;
    m.add_function(wrap_pyfunction!(crd2idx, m)?)?;
    m.add_function(wrap_pyfunction!(idx2crd, m)?)?;
    Ok(())
}
