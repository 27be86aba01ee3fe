//! `retile.Stream`: the streaming tiler, taking any buffer without a copy.

use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::error::stream_err;
use pyo3::exceptions::{PyResourceWarning, PyRuntimeError, PyRuntimeWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use retile_stream::{
    backend_named, pyramid_named, Acquisition, ArrayOptions, Continuation, DType, DimRef,
    PyramidOptions, S3Options, StreamDType, StreamError, Summary, ZarrOptions,
};

/// The pyramid of the `pyramid`, `levels` and `downsample` arguments
/// (`None`: no pyramid; `levels` or `downsample` without a method is an
/// error), as every array's description reads them.
pub(crate) fn pyramid_options(
    pyramid: Option<&str>,
    levels: Option<usize>,
    downsample: Option<Vec<bool>>,
) -> PyResult<Option<PyramidOptions>> {
    pyramid_named(pyramid, levels, downsample).map_err(stream_err)
}

/// The element type named by `dtype`: retile's names (`u16`), numpy's
/// names (`uint16`), a `numpy.dtype` or a numpy scalar type.
fn dtype_of(dtype: &Bound<'_, PyAny>) -> PyResult<DType> {
    let name: String = if let Ok(text) = dtype.extract::<String>() {
        text
    } else if let Ok(name) = dtype.getattr("name").and_then(|n| n.extract::<String>()) {
        name
    } else if let Ok(name) = dtype
        .getattr("__name__")
        .and_then(|n| n.extract::<String>())
    {
        name
    } else {
        dtype.str()?.to_string()
    };
    name.parse::<DType>().map_err(|e| stream_err(e.into()))
}

/// Every array's summary by key (one summary, a plain stream's).
type Summaries = Vec<(String, Summary)>;

/// What a buffer's element is, from its struct-module format.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Kind {
    Unsigned,
    Signed,
    Float,
    /// `B`, `c`, `x`: raw bytes, accepted for any dtype.
    Bytes,
    Other,
}

fn dtype_kind(d: DType) -> Kind {
    match d {
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => Kind::Unsigned,
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => Kind::Signed,
        _ => Kind::Float,
    }
}

/// Checks that a buffer of `format` and `itemsize` holds `dtype` elements
/// (or raw bytes); the message says what was given and what is expected.
pub(crate) fn check_format(format: &str, itemsize: usize, dtype: DType) -> PyResult<()> {
    let (order, code) = match format.chars().next() {
        Some(c @ ('@' | '=' | '<' | '>' | '!')) => (Some(c), &format[1..]),
        _ => (None, format),
    };
    let kind = match code {
        "B" | "c" | "x" => Kind::Bytes,
        "H" | "I" | "L" | "Q" | "N" => Kind::Unsigned,
        "b" | "h" | "i" | "l" | "q" | "n" => Kind::Signed,
        "e" | "f" | "d" => Kind::Float,
        _ => Kind::Other,
    };
    if kind == Kind::Bytes && itemsize == 1 {
        return Ok(());
    }
    let wrong = || {
        PyValueError::new_err(format!(
            "the buffer holds elements of format '{format}' ({itemsize} bytes each) but the stream's dtype is {dtype} ({} bytes, Zarr {}); pass data of that type, or its raw bytes (e.g. memoryview(data).cast('B'))",
            dtype.size(),
            dtype.zarr_name()
        ))
    };
    if matches!(order, Some('>' | '!')) && itemsize > 1 {
        return Err(PyValueError::new_err(format!(
            "the buffer is big-endian (format '{format}'); the stream takes little-endian elements: convert it first (e.g. data.astype(data.dtype.newbyteorder('<')))"
        )));
    }
    if itemsize != dtype.size() {
        return Err(wrong());
    }
    // bfloat16 has no struct format: any 2-byte element is taken as its bits
    let matches = dtype == DType::BF16 || kind == dtype_kind(dtype);
    match matches {
        true => Ok(()),
        false => Err(wrong()),
    }
}

/// A buffer held for the duration of one append (released on drop, under the GIL).
pub(crate) struct HeldBuffer(Box<pyo3::ffi::Py_buffer>);

impl HeldBuffer {
    pub(crate) fn get(obj: &Bound<'_, PyAny>) -> PyResult<HeldBuffer> {
        let mut view = Box::new(std::mem::MaybeUninit::<pyo3::ffi::Py_buffer>::zeroed());
        // SAFETY: `obj` is a live object and `view` points to writable storage for a Py_buffer.
        let rc = unsafe {
            pyo3::ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), pyo3::ffi::PyBUF_FULL_RO)
        };
        if rc != 0 {
            let err = PyErr::fetch(obj.py());
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "append takes an object with the buffer protocol (a numpy array, bytes, bytearray, memoryview), got {}: {err}",
                obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            )));
        }
        // SAFETY: PyObject_GetBuffer succeeded, so the view is initialised.
        let view = unsafe { Box::from_raw(Box::into_raw(view).cast::<pyo3::ffi::Py_buffer>()) };
        Ok(HeldBuffer(view))
    }

    /// The address and length in bytes of the buffer's memory, and the
    /// size of one of its elements.
    pub(crate) fn extent(&self) -> (usize, usize, usize) {
        (
            self.0.buf as usize,
            self.0.len.max(0) as usize,
            self.0.itemsize.max(1) as usize,
        )
    }

    pub(crate) fn is_c_contiguous(&self) -> bool {
        // SAFETY: the view is a live buffer obtained by PyObject_GetBuffer.
        unsafe { pyo3::ffi::PyBuffer_IsContiguous(&*self.0, b'C' as std::os::raw::c_char) != 0 }
    }

    pub(crate) fn format(&self) -> String {
        match self.0.format.is_null() {
            true => "B".into(),
            // SAFETY: a non-null format is a NUL-terminated string owned by the view.
            false => unsafe { CStr::from_ptr(self.0.format) }
                .to_string_lossy()
                .into_owned(),
        }
    }
}

impl Drop for HeldBuffer {
    fn drop(&mut self) {
        // SAFETY: the view was obtained by PyObject_GetBuffer and is released once;
        // HeldBuffer is only dropped on a thread holding the GIL.
        unsafe { pyo3::ffi::PyBuffer_Release(&mut *self.0) }
    }
}

/// A stream of a row-major tensor into tiles (Zarr v3 chunks), taking its
/// input in pieces of any size.
///
/// Mirrors ``retile stream``: ``shape`` and ``tile`` are slowest dimension
/// first, a first extent of 0 is unbounded; ``output=None`` only measures.
/// ``pyramid="mean"`` (or min, max, decimate, median) also writes a
/// multiscale pyramid as an OME-Zarr (NGFF 0.5) image, with ``levels``,
/// ``downsample`` (per dimension, whether each level halves it),
/// ``dim_names``, ``dim_types``, ``units`` and ``scale`` as
/// ``retile stream`` takes them; ``ngff=True`` writes a one-level image.
/// ``sync="rows"`` syncs every row of files to the disk before it is
/// claimed, so that every claim survives a power loss (slower; the default
/// ``"end"`` syncs once, before the last claim).
/// ``codec_on="auto"`` (or ``"gpu"``, ``"cpu"``) says where a
/// ``backend="cuda"`` stream compresses ``zstd``, ``blosc-lz4`` and
/// ``blosc-zstd`` chunks (nvCOMP on the GPU, or the CPU's writer threads);
/// the summary's ``codec_on`` says where it did, and why.
/// ``attributes={...}`` (a dict of JSON values) are the array's user
/// attributes (an image's: its group's), beside retile's own keys (``ome``
/// and ``retile`` are refused); ``set_attributes`` updates them while the
/// stream runs, and ``append(frame, metadata={...})`` records metadata for
/// each plane, in the string array ``frame_metadata`` inside the output.
/// Both are written with the claims of the planes. ``skip(n)`` adds ``n``
/// planes of the fill value for dropped frames.
/// ``input_order=["t", "z", "c", "y", "x"]`` says in which order the
/// elements arrive, slowest first, when it is not the stored order: names
/// of ``dim_names`` (or of the default axes of the rank without them) or
/// stored indices; any permutation. Frames are then slabs of the input's
/// slowest dimension. When that is not the stored first, the stream must be
/// bounded, holds every epoch until the input ends and claims it all then.
/// ``memory=BYTES`` gives the stream as many epoch buffers as fit (at least
/// two, as ``retile stream --memory``): more of them absorb bursts of input
/// and let the writers work on more epochs at once.
///
/// Example::
///
///     import numpy as np, retile
///     with retile.Stream("out.zarr", shape=(0, 480, 640), tile=(16, 128, 128),
///                        dtype="uint16", codec="zstd:1", shard=(1, 2, 2)) as s:
///         for frame in frames:          # each a (480, 640) uint16 array
///             s.append(frame)
///     print(s.summary["planes"])
///
/// A stream that is never finished finishes itself when it is dropped or
/// collected, or at interpreter exit if it is still alive then: every
/// complete plane it took is written, the store closed, and a
/// ``ResourceWarning`` says so (a ``RuntimeWarning`` says what was lost,
/// if finishing failed).
#[pyclass(module = "retile._retile", name = "Stream")]
pub struct Stream {
    shared: Arc<Shared>,
    /// The element type of a plain stream (`None`: several arrays).
    dtype: Option<DType>,
    finished: Mutex<Option<Py<PyDict>>>,
}

/// What a stream's object and the interpreter-exit hook both reach.
struct Shared {
    inner: Mutex<Acquisition>,
    /// `finish` was called (the store is closed, whatever it returned).
    closed: AtomicBool,
}

/// Every stream made and not yet dropped, finished at interpreter exit.
static LIVE: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

impl Shared {
    /// Finishes the stream (the GIL released meanwhile) unless it was
    /// finished; `None` if it was.
    fn finish(&self, py: Python<'_>) -> Option<Result<Summaries, StreamError>> {
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        let result = py.allow_threads(|| {
            // a poisoned lock still holds the stream: a panic stopped an append
            let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            if self.closed.swap(true, Ordering::AcqRel) {
                return None;
            }
            Some(inner.finish())
        });
        result
    }

    /// Finishes a stream its user never finished, and warns: a
    /// `ResourceWarning` when every plane taken was written, a
    /// `RuntimeWarning` saying what was lost otherwise. `when` says why
    /// it is finished now.
    fn finish_unfinished(&self, py: Python<'_>, when: &str) {
        let (category, message) = match self.finish(py) {
            None => return,
            Some(Ok(summaries)) => (
                py.get_type::<PyResourceWarning>(),
                format!(
                    "retile.Stream was never finished; it was finished {when}: its {} planes were written and the store closed (call finish() or use `with`)",
                    summaries.iter().map(|(_, s)| s.planes).sum::<u64>()
                ),
            ),
            Some(Err(e)) => (
                py.get_type::<PyRuntimeWarning>(),
                format!("retile.Stream was never finished, and finishing it {when} failed: {e}"),
            ),
        };
        let Ok(text) = std::ffi::CString::new(message) else {
            return;
        };
        if let Err(e) = PyErr::warn(py, &category, &text, 1) {
            // warnings turned into errors have nowhere to go from here
            e.write_unraisable(py, None);
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.shared.closed.load(Ordering::Acquire) {
            return;
        }
        Python::with_gil(|py| {
            self.shared
                .finish_unfinished(py, "when it was dropped or collected")
        });
    }
}

/// Finishes every stream still alive and unfinished (registered with
/// `atexit`, which runs before the interpreter stops its threads).
#[pyfunction]
fn _finish_live_streams(py: Python<'_>) {
    let live: Vec<Arc<Shared>> = match LIVE.lock() {
        Ok(mut live) => std::mem::take(&mut *live)
            .iter()
            .filter_map(Weak::upgrade)
            .collect(),
        Err(_) => return,
    };
    for shared in live {
        shared.finish_unfinished(py, "at interpreter exit");
    }
}

pub(crate) fn summary_dict<'py>(py: Python<'py>, s: &Summary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("bytes", s.bytes)?;
    d.set_item("planes", s.planes)?;
    d.set_item("skipped_planes", s.skipped_planes)?;
    d.set_item("epochs", s.epochs)?;
    d.set_item("tiles", s.tiles)?;
    d.set_item("seconds", s.seconds)?;
    d.set_item("gigabytes_per_second", s.gigabytes_per_second())?;
    d.set_item("scatter_seconds", s.scatter_seconds)?;
    d.set_item("wait_seconds", s.wait_seconds)?;
    d.set_item("sink_seconds", s.sink_seconds)?;
    d.set_item("setup_seconds", s.setup_seconds)?;
    d.set_item("setup_detail", s.setup_detail.as_deref())?;
    d.set_item("buffer_bytes", s.buffer_bytes)?;
    d.set_item("stored_bytes", s.sink.stored_bytes)?;
    d.set_item("files", s.sink.files)?;
    d.set_item("omitted_chunks", s.sink.omitted_chunks)?;
    d.set_item("encode_seconds", s.sink.encode_seconds)?;
    d.set_item("write_seconds", s.sink.write_seconds)?;
    d.set_item("writer_threads", s.sink.threads)?;
    d.set_item("uploaded_bytes", s.sink.uploaded_bytes)?;
    d.set_item("requests", s.sink.requests)?;
    d.set_item("codec_on", s.codec_on.clone())?;
    let levels = pyo3::types::PyList::empty(py);
    for level in &s.levels {
        let l = PyDict::new(py);
        l.set_item("shape", level.shape.clone())?;
        l.set_item("tiles", level.tiles)?;
        l.set_item("stored_bytes", level.sink.stored_bytes)?;
        l.set_item("files", level.sink.files)?;
        levels.append(l)?;
    }
    d.set_item("levels", levels)?;
    Ok(d)
}

/// The dimensions of `input_order=[...]`: names (str) or stored indices (int).
fn dim_refs(order: &[Bound<'_, PyAny>]) -> PyResult<Vec<DimRef>> {
    order
        .iter()
        .map(|d| match d.extract::<usize>() {
            Ok(index) => Ok(DimRef::Index(index)),
            Err(_) => d.extract::<String>().map(DimRef::Name).map_err(|_| {
                PyValueError::new_err(format!(
                    "input_order takes dimension names (str) or indices (int), not {d}"
                ))
            }),
        })
        .collect()
}

/// Records `metadata` for the planes an append of `len` bytes to the array
/// `key` names starts.
fn record(
    inner: &Acquisition,
    key: Option<&str>,
    len: u64,
    metadata: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let metadata = json_object(metadata, "metadata")?;
    let user = inner.user(key).map_err(stream_err)?.ok_or_else(|| {
        PyValueError::new_err(
            "metadata= is stored with the planes: a stream without an output keeps none",
        )
    })?;
    let stream = inner.stream(key).map_err(stream_err)?;
    let spec = stream.plan().spec();
    if !spec.epochs_in_input_order() {
        return Err(PyValueError::new_err(format!(
            "metadata= is recorded per plane of the stored first dimension, but the input order {:?} is slowest along dimension {}: no append starts such a plane",
            spec.input_order(),
            spec.input_order()[0]
        )));
    }
    let plane_bytes = inner.plane_bytes(key).map_err(stream_err)?.max(1);
    let taken = stream.bytes_taken();
    // planes are counted in the array: a stream appending to a store began
    // at its plane `first_plane`
    let before = inner.first_plane(key).map_err(stream_err)?;
    let first = taken.div_ceil(plane_bytes) + before;
    let end = taken.saturating_add(len).div_ceil(plane_bytes) + before;
    if end <= first {
        return Err(PyValueError::new_err(format!(
            "metadata= goes with the planes an append starts, and this append starts none (it continues plane {}): give the metadata with the append that starts the plane",
            taken / plane_bytes + before
        )));
    }
    user.record(first, end - first, &metadata)
        .map_err(stream_err)
}

/// `value` as a JSON object: a dict whose keys are strings and whose values
/// are JSON values (str, int, float, bool, None, list, dict), unchanged by
/// a round trip through JSON; `what` names it in the error.
fn json_object(value: &Bound<'_, PyAny>, what: &str) -> PyResult<serde_json::Value> {
    let py = value.py();
    if !value.is_instance_of::<PyDict>() {
        return Err(PyValueError::new_err(format!(
            "{what} must be a dict of JSON values, not {}",
            value.get_type().name()?
        )));
    }
    let json = py.import("json")?;
    let options = PyDict::new(py);
    options.set_item("allow_nan", false)?;
    let text: String = json
        .call_method("dumps", (value,), Some(&options))
        .map_err(|e| {
            PyValueError::new_err(format!(
                "{what} must hold only JSON values (str, int, float, bool, None, list, dict): {e}"
            ))
        })?
        .extract()?;
    if !json.call_method1("loads", (&text,))?.eq(value)? {
        return Err(PyValueError::new_err(format!(
            "{what} must hold only JSON values: JSON would change it (keys must be str, sequences lists)"
        )));
    }
    serde_json::from_str(&text).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

/// The summary of a plain stream, or every array's by key.
fn summaries_dict<'py>(
    py: Python<'py>,
    single: bool,
    summaries: &Summaries,
) -> PyResult<Bound<'py, PyDict>> {
    match (single, summaries.as_slice()) {
        (true, [(_, summary)]) => summary_dict(py, summary),
        _ => {
            let d = PyDict::new(py);
            for (key, summary) in summaries {
                d.set_item(key, summary_dict(py, summary)?)?;
            }
            Ok(d)
        }
    }
}

fn busy() -> PyErr {
    PyRuntimeError::new_err(
        "the stream is in use by another thread; append from one thread at a time",
    )
}

#[pymethods]
impl Stream {
    #[new]
    #[pyo3(signature = (output, shape=None, tile=None, dtype=None, shard=None, codec=None, fill=None, dim_names=None, input_order=None, backend="cpu", shuffle=None, writers=None, buffered_io=false, overwrite=false, threads=0, pyramid=None, levels=None, downsample=None, ngff=false, dim_types=None, units=None, scale=None, allow_http=false, retry_seconds=120.0, s3_config=None, codec_on=None, memory=None, sync="end", arrays=None, plate=None, image=None, attributes=None, mode="w"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        output: Option<PathBuf>,
        shape: Option<Vec<u64>>,
        tile: Option<Vec<u64>>,
        dtype: Option<&Bound<'_, PyAny>>,
        shard: Option<Vec<u64>>,
        codec: Option<&str>,
        fill: Option<&Bound<'_, PyAny>>,
        dim_names: Option<Vec<String>>,
        input_order: Option<Vec<Bound<'_, PyAny>>>,
        backend: &str,
        shuffle: Option<String>,
        writers: Option<usize>,
        buffered_io: bool,
        overwrite: bool,
        threads: usize,
        pyramid: Option<String>,
        levels: Option<usize>,
        downsample: Option<Vec<bool>>,
        ngff: bool,
        dim_types: Option<Vec<String>>,
        units: Option<Vec<Option<String>>>,
        scale: Option<Vec<f64>>,
        allow_http: bool,
        retry_seconds: f64,
        s3_config: Option<std::collections::BTreeMap<String, String>>,
        codec_on: Option<String>,
        memory: Option<u64>,
        sync: &str,
        arrays: Option<&Bound<'_, PyDict>>,
        plate: Option<&Bound<'_, PyAny>>,
        image: Option<&Bound<'_, PyAny>>,
        attributes: Option<&Bound<'_, PyAny>>,
        mode: &str,
    ) -> PyResult<Stream> {
        let many = arrays.is_some() || plate.is_some() || image.is_some();
        let appending = match mode {
            "w" => false,
            "a" => true,
            other => {
                return Err(PyValueError::new_err(format!(
                    "mode='{other}' is not a mode; use 'w' (a new store) or 'a' (append to the store retile wrote there)"
                )))
            }
        };
        let missing: Vec<&str> = [
            (shape.is_none(), "shape"),
            (tile.is_none(), "tile"),
            (dtype.is_none(), "dtype"),
        ]
        .into_iter()
        .filter_map(|(missing, name)| missing.then_some(name))
        .collect();
        let one = ArrayOptions {
            shape: shape.unwrap_or_default(),
            tile: tile.unwrap_or_default(),
            dtype: match dtype {
                Some(dtype) => dtype_of(dtype)?.to_string(),
                None => String::new(),
            },
            shard,
            codec: codec.map(str::to_string),
            fill: fill
                .map(|v| v.str().map(|t| t.to_string().into()))
                .transpose()?,
            dim_names,
            input_order: input_order.map(|o| dim_refs(&o)).transpose()?,
            shuffle,
            writers,
            buffered_io,
            pyramid,
            levels,
            downsample,
            ngff,
            dim_types,
            units,
            scale,
            codec_on,
            memory: memory.filter(|_| !many),
            sync: Some(sync.to_string()),
            attributes: attributes
                .map(|a| json_object(a, "attributes"))
                .transpose()?,
        };
        let store = ZarrOptions {
            overwrite,
            s3: S3Options {
                allow_http,
                retry_timeout: Duration::try_from_secs_f64(retry_seconds).map_err(|_| {
                    PyValueError::new_err(format!(
                        "retry_seconds takes a number of seconds, not {retry_seconds}"
                    ))
                })?,
                config: s3_config.clone().unwrap_or_default().into_iter().collect(),
                ..Default::default()
            },
            ..Default::default()
        };
        let inner = match (many, output) {
            (_, output) if appending => {
                let Some(output) = output.filter(|_| !many && !overwrite) else {
                    return Err(PyValueError::new_err(match many {
                        true => "mode='a' appends to one array or image; a stream of several arrays (arrays=, plate=) cannot append yet",
                        false if overwrite => "mode='a' appends to the store there, overwrite=True deletes it: give one of them",
                        false => "mode='a' appends to a store: give its output",
                    }));
                };
                let backend = backend_named(backend, threads).map_err(stream_err)?;
                let continuation =
                    Continuation::open(&output, &one, store, backend).map_err(stream_err)?;
                Acquisition::appending(&continuation, backend).map_err(stream_err)?
            }
            (true, None) => {
                return Err(PyValueError::new_err(
                    "arrays= and plate= write a store: give an output",
                ))
            }
            (true, Some(output)) => {
                let given = one.array_options_given();
                if !given.is_empty() {
                    return Err(PyValueError::new_err(format!(
                        "{} describe each array: give them in each array's dict (arrays={{'cam0': dict(shape=..., ...)}}) or in image=dict(...)",
                        given.join(", ")
                    )));
                }
                crate::acquire::open_acquisition(
                    output, arrays, plate, image, memory, overwrite, backend, threads, store,
                )?
            }
            (false, output) => {
                if !missing.is_empty() {
                    return Err(PyValueError::new_err(format!(
                        "a stream of one array needs its shape, tile and dtype: give {} (or arrays={{...}} or plate=... for several arrays)",
                        missing.join(", ")
                    )));
                }
                let mut given = match output {
                    Some(_) => Vec::new(),
                    None => one.store_options_given(),
                };
                if output.is_none() {
                    given.extend(
                        [
                            (overwrite, "overwrite"),
                            (allow_http, "allow_http"),
                            (s3_config.is_some(), "s3_config"),
                        ]
                        .into_iter()
                        .filter_map(|(given, name)| given.then_some(name)),
                    );
                }
                if !given.is_empty() {
                    return Err(PyValueError::new_err(format!(
                        "{} take effect only with an output (without it the tiler is only measured)",
                        given.join(", ")
                    )));
                }
                let backend = backend_named(backend, threads).map_err(stream_err)?;
                let store = output.map(|path| ZarrOptions { path, ..store });
                let array = one.resolve(store, backend).map_err(stream_err)?;
                Acquisition::single(array, backend).map_err(stream_err)?
            }
        };
        let dtype = match inner.is_single() {
            true => Some(inner.dtype(None).map_err(stream_err)?),
            false => None,
        };
        let shared = Arc::new(Shared {
            inner: Mutex::new(inner),
            closed: AtomicBool::new(false),
        });
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|w| w.strong_count() > 0);
            live.push(Arc::downgrade(&shared));
        }
        Ok(Stream {
            shared,
            dtype,
            finished: Mutex::new(None),
        })
    }

    /// The planes the store claimed when this stream opened it: for a
    /// stream appending to a store (``mode="a"``), the plane its first
    /// append goes on from (0 for a new store). After a crash, feed the
    /// recording from this plane on.
    ///
    /// Example::
    ///
    ///     s = retile.Stream(None, shape=(0, 4), tile=(1, 4), dtype="u8")
    ///     assert s.planes_claimed == 0
    #[getter]
    fn planes_claimed(&self) -> PyResult<u64> {
        let inner = self.shared.inner.try_lock().map_err(|_| busy())?;
        Ok(inner.claimed_at_open())
    }

    /// Appends a piece of the row-major input: any object with the buffer
    /// protocol (a numpy array of any shape, bytes, bytearray, memoryview),
    /// C-contiguous, read in place without a copy. Pieces may split the
    /// input anywhere, even inside an element. The GIL is released while
    /// tiling. Returns the bytes taken (fewer than given only past the end
    /// of a bounded shape).
    ///
    /// ``metadata={...}`` (a dict of JSON values) is recorded for every
    /// plane this append starts (a frame's own plane, when each append is
    /// one frame), and stored with the claim of those planes in the string
    /// array ``frame_metadata`` of the array's output (one JSON text per
    /// plane, ``""`` for a plane given none).
    ///
    /// A stream of several arrays (``arrays=`` or ``plate=``) takes whole
    /// frames (one or more planes) of the array ``key`` names (``"cam0"``,
    /// a plate's ``"A/1/0"``), in any interleaving; ``key`` may be left out
    /// only when there is one array.
    ///
    /// Example::
    ///
    ///     s = retile.Stream(None, shape=(0, 4, 4), tile=(2, 2, 2), dtype="u8")
    ///     assert s.append(bytes(40)) == 40
    #[pyo3(signature = (data, key=None, metadata=None))]
    fn append(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        key: Option<&str>,
        metadata: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let held = HeldBuffer::get(data)?;
        if !held.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "append needs a C-contiguous buffer (row-major, no gaps); this one is strided: pass numpy.ascontiguousarray(data)",
            ));
        }
        let addr = held.0.buf as usize;
        let len = held.0.len.max(0) as usize;
        let mut inner = self.shared.inner.try_lock().map_err(|_| busy())?;
        let dtype = inner.dtype(key).map_err(stream_err)?;
        check_format(&held.format(), held.0.itemsize.max(1) as usize, dtype)?;
        if let Some(metadata) = metadata {
            record(&inner, key, len as u64, metadata)?;
        }
        let stream: &mut Acquisition = &mut inner;
        let taken = py.allow_threads(move || {
            let data: &[u8] = match len {
                0 => &[],
                // SAFETY: the buffer is held (and so kept alive and unresized) by `held`
                // until after this closure returns; it is `len` readable bytes at `addr`.
                _ => unsafe { std::slice::from_raw_parts(addr as *const u8, len) },
            };
            stream.append(key, data)
        });
        drop(inner);
        drop(held);
        taken.map_err(stream_err)
    }

    /// Adds ``planes`` planes of the fill value to the array ``key`` names
    /// (the stream's own array with ``key=None``): frames the camera
    /// dropped. Chunks they fill alone are not stored (a reader sees the
    /// fill value), and the summary counts them as ``skipped_planes``.
    /// Refused, adding nothing, inside a plane (after part of one was
    /// appended), past the end of a bounded shape, and past 2**63 - 1
    /// elements or bytes (what Zarr readers can index). A skip costs no
    /// disk, but takes time in proportion to its planes (the fill goes
    /// through the stream, at its speed); Ctrl-C (any exception a signal
    /// handler raises) stops it within 4 MiB or 64 epochs of fill, and the
    /// planes added until then stay, counted in ``skipped_planes``.
    ///
    /// Example::
    ///
    ///     s = retile.Stream(None, shape=(0, 4), tile=(1, 4), dtype="u8")
    ///     s.append(bytes(4)); s.skip(2)
    ///     assert s.finish()["skipped_planes"] == 2
    #[pyo3(signature = (planes, key=None))]
    fn skip(&self, py: Python<'_>, planes: u64, key: Option<&str>) -> PyResult<()> {
        let mut inner = self.shared.inner.try_lock().map_err(|_| busy())?;
        let stream: &mut Acquisition = &mut inner;
        let mut interrupt = None;
        let go_on = || match Python::with_gil(|py| py.check_signals()) {
            Ok(()) => true,
            Err(e) => {
                interrupt = Some(e);
                false
            }
        };
        py.allow_threads(move || stream.skip_while(key, planes, go_on))
            .map_err(stream_err)?;
        interrupt.map_or(Ok(()), Err)
    }

    /// Updates the user attributes of the array ``key`` names (the stream's
    /// own array, or image, with ``key=None``) with ``attributes``' keys (a
    /// dict of JSON values; the other keys are kept, as ``dict.update``).
    /// They are written with the next claim of planes, and by ``finish`` at
    /// the latest.
    ///
    /// Example::
    ///
    ///     import os, tempfile, zarr
    ///     out = os.path.join(tempfile.mkdtemp(), "a.zarr")
    ///     with retile.Stream(out, (0, 4), (1, 4), "u8", attributes={"a": 1}) as s:
    ///         s.set_attributes({"b": 2})
    ///     assert zarr.open_array(out).attrs.asdict() == {"a": 1, "b": 2}
    #[pyo3(signature = (attributes, key=None))]
    fn set_attributes(&self, attributes: &Bound<'_, PyAny>, key: Option<&str>) -> PyResult<()> {
        let attributes = json_object(attributes, "attributes")?;
        if self.finished() {
            return Err(stream_err(StreamError::Finished));
        }
        let inner = self.shared.inner.try_lock().map_err(|_| busy())?;
        let user = inner.user(key).map_err(stream_err)?.ok_or_else(|| {
            PyValueError::new_err(
                "attributes are stored with the array: a stream without an output has none",
            )
        })?;
        user.set_attributes(attributes).map_err(stream_err)
    }

    /// Writes what is left (every complete plane), closes the store and
    /// returns the summary as a dict (bytes, planes, skipped_planes, epochs, tiles, seconds,
    /// gigabytes_per_second, scatter_seconds, wait_seconds, sink_seconds,
    /// buffer_bytes, stored_bytes, files, omitted_chunks, encode_seconds,
    /// write_seconds, ...); a stream of several arrays returns a dict of
    /// them by key. A second call raises RuntimeError.
    ///
    /// Example::
    ///
    ///     s = retile.Stream(None, shape=(4, 4), tile=(2, 2), dtype="u8")
    ///     s.append(bytes(16))
    ///     assert s.finish()["planes"] == 4
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut inner = self.shared.inner.try_lock().map_err(|_| busy())?;
        let single = inner.is_single();
        let stream: &mut Acquisition = &mut inner;
        let result = py.allow_threads(move || stream.finish());
        self.shared.closed.store(true, Ordering::Release);
        drop(inner);
        let summaries = result.map_err(stream_err)?;
        let d = summaries_dict(py, single, &summaries)?;
        *self.finished.lock().map_err(|_| busy())? = Some(d.clone().unbind());
        Ok(d)
    }

    /// The summary of a finished stream (a dict; for several arrays, a dict
    /// of them by key), or None before `finish`.
    ///
    /// Example::
    ///
    ///     with retile.Stream(None, shape=(2, 2), tile=(1, 2), dtype="u8") as s:
    ///         s.append(bytes(4))
    ///     assert s.summary["bytes"] == 4
    #[getter]
    fn summary(&self, py: Python<'_>) -> PyResult<Option<Py<PyDict>>> {
        Ok(self
            .finished
            .lock()
            .map_err(|_| busy())?
            .as_ref()
            .map(|d| d.clone_ref(py)))
    }

    /// Input bytes taken so far.
    ///
    /// Example::
    ///
    ///     s = retile.Stream(None, shape=(0, 2), tile=(1, 2), dtype="u8")
    ///     s.append(b"abc"); assert s.bytes_taken == 3
    #[getter]
    fn bytes_taken(&self) -> PyResult<u64> {
        Ok(self
            .shared
            .inner
            .try_lock()
            .map_err(|_| busy())?
            .bytes_taken())
    }

    /// The element type's retile name (e.g. ``"u16"``); None for a stream
    /// of several arrays.
    ///
    /// Example::
    ///
    ///     assert retile.Stream(None, (0, 2), (1, 2), "uint16").dtype == "u16"
    #[getter]
    fn dtype(&self) -> Option<String> {
        self.dtype.map(|d| d.to_string())
    }

    /// The element type's numpy / Zarr name (e.g. ``"uint16"``); None for
    /// a stream of several arrays.
    ///
    /// Example::
    ///
    ///     assert retile.Stream(None, (0, 2), (1, 2), "u16").zarr_dtype == "uint16"
    #[getter]
    fn zarr_dtype(&self) -> Option<&'static str> {
        self.dtype.map(|d| d.zarr_name())
    }

    /// The keys of a stream of several arrays, in order (empty for a plain
    /// stream).
    ///
    /// Example::
    ///
    ///     assert retile.Stream(None, (0, 2), (1, 2), "u8").keys == []
    #[getter]
    fn keys(&self) -> PyResult<Vec<String>> {
        let inner = self.shared.inner.try_lock().map_err(|_| busy())?;
        match inner.is_single() {
            true => Ok(Vec::new()),
            false => Ok(inner.keys().map(str::to_string).collect()),
        }
    }

    /// The memory the stream's tile buffers take: ``{"budget": BYTES or
    /// None, "bytes": total, "arrays": {key: bytes}}`` (a plain stream's
    /// one array under the key ``""``).
    ///
    /// Example::
    ///
    ///     s = retile.Stream(None, (0, 2), (1, 2), "u8")
    ///     assert s.memory["bytes"] == s.memory["arrays"][""] > 0
    #[getter]
    fn memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let inner = self.shared.inner.try_lock().map_err(|_| busy())?;
        let budget = inner.budget();
        let d = PyDict::new(py);
        d.set_item("budget", budget.limit)?;
        d.set_item("bytes", budget.total())?;
        let arrays = PyDict::new(py);
        for (key, bytes) in &budget.arrays {
            arrays.set_item(key, bytes)?;
        }
        d.set_item("arrays", arrays)?;
        Ok(d)
    }

    /// Whether `finish` was called: the store is closed (``summary`` is
    /// None if finishing raised, e.g. for input ending inside a plane).
    ///
    /// Example::
    ///
    ///     s = retile.Stream(None, (2, 2), (1, 2), "u8"); s.append(bytes(4)); s.finish()
    ///     assert s.finished
    #[getter]
    fn finished(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Finishes the stream if it is not finished. When an exception is
    /// propagating, the stream is still finished (complete planes are kept)
    /// and an error of finishing is not raised over the original one.
    #[pyo3(signature = (exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if self.finished() {
            return Ok(false);
        }
        let propagating = exc_type.is_some_and(|t| !t.is_none());
        match self.finish(py) {
            Ok(_) => Ok(false),
            Err(_) if propagating => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn __repr__(&self) -> PyResult<String> {
        let inner = self.shared.inner.try_lock().map_err(|_| busy())?;
        let Some(dtype) = self.dtype else {
            let keys: Vec<&str> = inner.keys().collect();
            return Ok(format!(
                "Stream(arrays={keys:?}, bytes_taken={})",
                inner.bytes_taken()
            ));
        };
        let plan = inner.stream(None).map_err(stream_err)?.plan();
        Ok(format!(
            "Stream(dtype={dtype}, bytes_taken={}, {})",
            inner.bytes_taken(),
            plan.to_string().lines().next().unwrap_or("")
        ))
    }
}

/// Registers the class, and the finishing of live streams at interpreter exit.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Stream>()?;
    let hook = wrap_pyfunction!(_finish_live_streams, m)?;
    m.add_function(hook.clone())?;
    m.py().import("atexit")?.call_method1("register", (hook,))?;
    Ok(())
}
