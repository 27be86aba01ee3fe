//! `retile.Layout`, `retile.Swizzle`, `retile.ComposedLayout` and the
//! algebra's free functions under pycute's names.

use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use retile_layout::{
    ComposedLayout as RComposed, IntTuple, Layout as RLayout, LayoutError, Swizzle as RSwizzle,
    Tiler,
};

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

    /// The SVG drawing, a grid of offsets (Jupyter shows it); None if it
    /// cannot be drawn.
    ///
    /// Example::
    ///
    ///     >>> 'data-offset="5"' in retile.Layout((2, 3), (3, 1))._repr_svg_()
    ///     True
    fn _repr_svg_(&self, py: Python<'_>) -> Option<String> {
        let inner = retile_layout::ComposedLayout::from(self.inner.clone());
        py.allow_threads(move || retile_draw::layout_svg(&inner).ok())
    }
}

/// CuTe's ``Swizzle<B,M,S>`` (pycute's ``Swizzle(bits, base, shift)``):
/// ``o ^ ((o & yyy) >> S)``, the ``B`` bits at ``M + max(0,S)`` xored into
/// the ``B`` bits at ``M - min(0,S)``; a negative shift moves the bits up.
/// ``size()`` and ``cosize()`` are ``2**(B + M + |S|)``, as pycute's.
///
/// Example::
///
///     >>> sw = retile.Swizzle(3, 4, 3)
///     >>> sw(128), sw.size(), str(sw), sw
///     (144, 1024, 'Sw<3,4,3>', Swizzle(3,4,3))
///     >>> retile.Swizzle(2, 0, -3)(1)
///     9
#[pyclass(module = "retile._retile", name = "Swizzle", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Swizzle {
    pub inner: RSwizzle,
}

#[pymethods]
impl Swizzle {
    #[new]
    fn new(bits: i64, base: i64, shift: i64) -> PyResult<Swizzle> {
        RSwizzle::new(bits, base, shift)
            .map(|inner| Swizzle { inner })
            .map_err(layout_err)
    }

    /// ``B``, the bits xored.
    ///
    /// Example::
    ///
    ///     >>> retile.Swizzle(3, 4, 5).bits
    ///     3
    #[getter]
    fn bits(&self) -> i64 {
        self.inner.bits()
    }

    /// ``M``, the low bits kept.
    ///
    /// Example::
    ///
    ///     >>> retile.Swizzle(3, 4, 5).base
    ///     4
    #[getter]
    fn base(&self) -> i64 {
        self.inner.base()
    }

    /// ``S``, how far the read bits are above the written ones (below when negative).
    ///
    /// Example::
    ///
    ///     >>> retile.Swizzle(3, 4, -5).shift
    ///     -5
    #[getter]
    fn shift(&self) -> i64 {
        self.inner.shift()
    }

    /// The size of the domain, ``2**(B + M + |S|)``.
    ///
    /// Example::
    ///
    ///     >>> retile.Swizzle(3, 3, 3).size()
    ///     512
    fn size(&self) -> i64 {
        self.inner.size()
    }

    /// The size of the codomain: the size.
    ///
    /// Example::
    ///
    ///     >>> retile.Swizzle(3, 3, 3).cosize()
    ///     512
    fn cosize(&self) -> i64 {
        self.inner.cosize()
    }

    fn __call__(&self, offset: i64) -> i64 {
        self.inner.apply(offset)
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        let s = &self.inner;
        format!("Swizzle({},{},{})", s.bits(), s.base(), s.shift())
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<(PyObject, (i64, i64, i64))> {
        let class = py.get_type::<Swizzle>().into_any().unbind();
        let s = &self.inner;
        Ok((class, (s.bits(), s.base(), s.shift())))
    }
}

/// A swizzled layout, pycute's ``ComposedLayout(swizzle, offset, layout)``:
/// ``c -> swizzle(offset + layout(c))``. Its size, rank, shape and modes are
/// the inner layout's; its ``cosize()`` too, as CuTe's C++ answers (pycute
/// answers the swizzle's). It draws itself in Jupyter.
///
/// Example::
///
///     >>> C = retile.ComposedLayout(retile.Swizzle(3, 4, 3), 0, retile.Layout((8, 64), (64, 1)))
///     >>> str(C), C((2, 0)), C.size(), C.cosize(), len(C)
///     ('Sw<3,4,3> o (8,64):(64,1)', 144, 512, 512, 2)
///     >>> retile.composition(retile.Swizzle(3, 4, 3), retile.Layout((8, 64), (64, 1))) == C
///     True
#[pyclass(module = "retile._retile", name = "ComposedLayout", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ComposedLayout {
    pub inner: RComposed,
}

impl ComposedLayout {
    pub fn wrap(inner: RComposed) -> ComposedLayout {
        ComposedLayout { inner }
    }
}

#[pymethods]
impl ComposedLayout {
    #[new]
    #[pyo3(signature = (swizzle, offset, layout))]
    fn new(swizzle: &Swizzle, offset: i64, layout: &Layout) -> ComposedLayout {
        ComposedLayout::wrap(RComposed::new(swizzle.inner, offset, layout.inner.clone()))
    }

    /// Parses ``"Sw<3,4,3> o (8,64):(64,1)"`` (or ``"Sw<3,4,3> o 16 o L"``).
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<1,0,1> o 4:1").layoutA
    ///     Layout(4:1)
    #[staticmethod]
    fn parse(text: &str) -> PyResult<ComposedLayout> {
        text.parse().map(ComposedLayout::wrap).map_err(layout_err)
    }

    /// The swizzle, applied last (pycute's ``layoutB``).
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<1,0,1> o 4:1").swizzle
    ///     Swizzle(1,0,1)
    #[getter]
    fn swizzle(&self) -> Swizzle {
        Swizzle {
            inner: self.inner.swizzle(),
        }
    }

    /// pycute's name of the swizzle.
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<1,0,1> o 4:1").layoutB
    ///     Swizzle(1,0,1)
    #[getter(layoutB)]
    fn layout_b(&self) -> Swizzle {
        self.swizzle()
    }

    /// The offset added before the swizzle.
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<1,0,1> o 8 o 4:1").offset
    ///     8
    #[getter]
    fn offset(&self) -> i64 {
        self.inner.offset()
    }

    /// The inner layout, applied first (pycute's ``layoutA``).
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<1,0,1> o (2,2):(2,1)").layout
    ///     Layout((2,2):(2,1))
    #[getter]
    fn layout(&self) -> Layout {
        Layout::wrap(self.inner.layout().clone())
    }

    /// pycute's name of the inner layout.
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<1,0,1> o (2,2):(2,1)").layoutA
    ///     Layout((2,2):(2,1))
    #[getter(layoutA)]
    fn layout_a(&self) -> Layout {
        self.layout()
    }

    /// The inner layout's shape.
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<1,0,1> o (2,3):(3,1)").shape
    ///     (2, 3)
    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<PyObject> {
        to_py(py, &self.inner.shape())
    }

    /// The size of the domain (the inner layout's).
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<1,0,1> o (2,3):(3,1)").size()
    ///     6
    fn size(&self) -> PyResult<i64> {
        self.inner.size().map_err(layout_err)
    }

    /// The size of the codomain: the inner layout's, as C++'s ``cosize``.
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<3,3,3> o (4,8):(8,1)").cosize()
    ///     32
    fn cosize(&self) -> PyResult<i64> {
        self.inner.cosize().map_err(layout_err)
    }

    /// Top-level modes.
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<1,0,1> o (2,3):(3,1)").rank()
    ///     2
    fn rank(&self) -> usize {
        self.inner.rank()
    }

    /// Nesting depth.
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<1,0,1> o ((2,2),3):((1,2),4)").depth()
    ///     2
    fn depth(&self) -> usize {
        self.inner.depth()
    }

    /// The inner layout flattened, swizzled the same.
    ///
    /// Example::
    ///
    ///     >>> str(retile.ComposedLayout.parse("Sw<1,0,1> o ((2,2),3):((1,2),4)").flatten())
    ///     'Sw<1,0,1> o (2,2,3):(1,2,4)'
    fn flatten(&self) -> ComposedLayout {
        ComposedLayout::wrap(self.inner.flatten())
    }

    /// ``[C(0), C(1), ...]`` for the first ``count`` indices (all by default).
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<1,0,1> o 4:1").table()
    ///     [0, 1, 3, 2]
    #[pyo3(signature = (count=None))]
    fn table(&self, count: Option<i64>) -> PyResult<Vec<i64>> {
        let n = match count {
            Some(n) => n,
            None => self.size()?,
        };
        self.inner.table(n).map_err(layout_err)
    }

    /// The SVG drawing (Jupyter shows it); None if it cannot be drawn.
    ///
    /// Example::
    ///
    ///     >>> retile.ComposedLayout.parse("Sw<1,0,1> o (2,2):(2,1)")._repr_svg_().startswith("<svg")
    ///     True
    fn _repr_svg_(&self, py: Python<'_>) -> Option<String> {
        let inner = self.inner.clone();
        py.allow_threads(move || retile_draw::layout_svg(&inner).ok())
    }

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

    fn __getitem__(&self, i: isize) -> PyResult<ComposedLayout> {
        let rank = self.inner.rank() as isize;
        let j = if i < 0 { i + rank } else { i };
        if j < 0 || j >= rank {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "mode {i} does not exist: the layout has rank {rank}"
            )));
        }
        self.inner
            .mode(j as usize)
            .map(ComposedLayout::wrap)
            .map_err(layout_err)
    }

    fn __len__(&self) -> usize {
        self.inner.rank()
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        format!("ComposedLayout({})", self.inner)
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<(PyObject, (String,))> {
        let parse = py.get_type::<ComposedLayout>().getattr("parse")?.unbind();
        Ok((parse, (self.inner.to_string(),)))
    }
}

/// C++'s ``composition(Swizzle, Layout)``: the swizzled layout, or the
/// layout itself for a swizzle of no bits.
pub fn swizzled(py: Python<'_>, swizzle: RSwizzle, layout: RLayout) -> PyResult<PyObject> {
    Ok(if swizzle.is_identity() {
        Layout::wrap(layout).into_pyobject(py)?.into_any().unbind()
    } else {
        ComposedLayout::wrap(RComposed::new(swizzle, 0, layout))
            .into_pyobject(py)?
            .into_any()
            .unbind()
    })
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
    if let Ok(c) = x.downcast::<ComposedLayout>() {
        return c.get().inner.size().map_err(layout_err);
    }
    if let Ok(s) = x.downcast::<Swizzle>() {
        return Ok(s.get().inner.size());
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
    if let Ok(c) = x.downcast::<ComposedLayout>() {
        return c.get().inner.cosize().map_err(layout_err);
    }
    if let Ok(s) = x.downcast::<Swizzle>() {
        return Ok(s.get().inner.cosize());
    }
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
    if let Ok(c) = x.downcast::<ComposedLayout>() {
        return Ok(c.get().inner.rank());
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
    if let Ok(c) = x.downcast::<ComposedLayout>() {
        return Ok(c.get().inner.depth());
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

/// ``A ∘ B``: ``B`` a layout, an int, None, or a tuple of these applied
/// mode by mode. ``A`` a ``Swizzle`` gives the swizzled layout
/// ``ComposedLayout(A, 0, B)`` (``B`` itself for a swizzle of no bits), as
/// C++'s ``composition(Swizzle, Layout)``; ``A`` a ``ComposedLayout``
/// composes ``B`` with its inner layout.
///
/// Example::
///
///     >>> str(retile.composition(retile.Layout((6, 2), (8, 2)), retile.Layout((4, 3), (3, 1))))
///     '((2,2),3):((24,2),8)'
///     >>> retile.composition(retile.Swizzle(3, 3, 3), retile.Layout((8, 64), (64, 1)))
///     ComposedLayout(Sw<3,3,3> o (8,64):(64,1))
#[pyfunction]
fn composition(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    if let Ok(s) = a.downcast::<Swizzle>() {
        return swizzled(py, s.get().inner, as_layout(b)?.into_owned());
    }
    if let Ok(c) = a.downcast::<ComposedLayout>() {
        let c = &c.get().inner;
        let inner = plain_composition(c.layout(), b)?.inner;
        return Ok(ComposedLayout::wrap(c.with_layout(inner))
            .into_pyobject(py)?
            .into_any()
            .unbind());
    }
    Ok(plain_composition(&*as_layout(a)?, b)?
        .into_pyobject(py)?
        .into_any()
        .unbind())
}

/// The composition of a plain layout with a layout or tiler.
fn plain_composition(a: &RLayout, b: &Bound<'_, PyAny>) -> PyResult<Layout> {
    if let Ok(l) = b.downcast::<Layout>() {
        return wrap(retile_layout::composition(a, &l.get().inner));
    }
    wrap(retile_layout::composition_tiler(a, &as_tiler(b)?))
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

/// `op` on `a`: a plain layout's answer as a Layout, a swizzled layout's
/// (`op` on its inner layout, swizzled the same) as a ComposedLayout.
fn on_layout(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    op: impl FnOnce(&RLayout) -> retile_layout::Result<RLayout>,
) -> PyResult<PyObject> {
    if let Ok(c) = a.downcast::<ComposedLayout>() {
        let c = &c.get().inner;
        let inner = op(c.layout()).map_err(layout_err)?;
        return Ok(ComposedLayout::wrap(c.with_layout(inner))
            .into_pyobject(py)?
            .into_any()
            .unbind());
    }
    Ok(wrap(op(&*as_layout(a)?))?
        .into_pyobject(py)?
        .into_any()
        .unbind())
}

macro_rules! tiler_fn {
    ($name:ident, $doc:literal) => {
        #[doc = $doc]
        #[doc = "\n\nA ``ComposedLayout`` is divided (or multiplied) by its inner layout and keeps its swizzle, as in CuTe's C++."]
        #[pyfunction]
        fn $name(py: Python<'_>, a: &Bound<'_, PyAny>, tiler: &Bound<'_, PyAny>) -> PyResult<PyObject> {
            let tiler = as_tiler(tiler)?;
            on_layout(py, a, |l| retile_layout::$name(l, &tiler))
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
    m.add_class::<Swizzle>()?;
    m.add_class::<ComposedLayout>()?;
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
