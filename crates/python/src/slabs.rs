//! `retile._retile._SlabJob`: one array written in slabs by the tasks of a
//! Dask job (`retile.dask`), the caller making the store ready and claiming
//! it, each task writing its slab with the GIL released.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use retile_rechunk::{read_depth, rechunk_block, slab_job};
use retile_stream::{ArrayOptions, Backend, JobStore, S3Options, SlabJob, ZarrOptions};

use crate::error::{rechunk_err, stream_err};
use crate::retiling::{NewArray, ReTiling};
use crate::stream::{check_format, summary_dict, HeldBuffer};

/// The S3 settings of `allow_http`, `retry_seconds` and `s3_config`.
fn s3_options(
    allow_http: bool,
    retry_seconds: f64,
    s3_config: Option<BTreeMap<String, String>>,
) -> PyResult<S3Options> {
    Ok(S3Options {
        allow_http,
        retry_timeout: Duration::try_from_secs_f64(retry_seconds).map_err(|_| {
            PyValueError::new_err(format!(
                "retry_seconds takes a number of seconds, not {retry_seconds}"
            ))
        })?,
        config: s3_config.unwrap_or_default().into_iter().collect(),
        ..Default::default()
    })
}

/// What a job's slabs are made from: planes given by the task, or read
/// from a Zarr array being re-tiled.
enum Input {
    Given,
    Source(Box<ReTiling>),
}

/// One array written in slabs of whole shard rows (of every level) by the
/// tasks of a job. The caller makes one, calls ``begin()`` (the store made
/// ready and locked, nothing claimed), has the tasks each make their own
/// (same arguments) and call ``write_slab`` (or ``copy_block`` for a
/// re-tiling), then calls ``finish()`` (every level claimed, the store
/// unlocked) or ``close()`` (nothing claimed, the store unlocked). Private:
/// ``retile.dask`` is its user.
#[pyclass(module = "retile._retile", name = "_SlabJob", frozen)]
pub struct PySlabJob {
    job: SlabJob,
    input: Input,
    threads: usize,
    store: Mutex<Option<JobStore>>,
}

#[pymethods]
impl PySlabJob {
    /// The job of writing an array described by `options` (the keyword
    /// arguments of ``retile.Stream``: shape, tile, dtype, shard, codec,
    /// pyramid, ngff, dim_names, ...) at `output`.
    #[new]
    #[pyo3(signature = (output, options, overwrite=false, threads=0, allow_http=false, retry_seconds=120.0, s3_config=None))]
    fn new(
        output: PathBuf,
        options: &Bound<'_, PyDict>,
        overwrite: bool,
        threads: usize,
        allow_http: bool,
        retry_seconds: f64,
        s3_config: Option<BTreeMap<String, String>>,
    ) -> PyResult<PySlabJob> {
        let options: ArrayOptions = crate::acquire::read("to_zarr", options)?;
        let store = ZarrOptions {
            path: output,
            overwrite,
            s3: s3_options(allow_http, retry_seconds, s3_config)?,
            ..Default::default()
        };
        let resolved = options
            .resolve(Some(store), Backend::Cpu { threads })
            .map_err(stream_err)?;
        Ok(PySlabJob {
            job: SlabJob::new(resolved).map_err(stream_err)?,
            input: Input::Given,
            threads,
            store: Mutex::new(None),
        })
    }

    /// The job of re-tiling the Zarr array at `src` into `dst`, as
    /// ``retile.rechunk`` takes them; `memory` bounds each task's bytes.
    #[staticmethod]
    #[pyo3(signature = (src, dst, tile, shard=None, codec="none", pyramid=None, levels=None, downsample=None, memory=None, overwrite=false, threads=0, allow_http=false, s3_config=None))]
    #[allow(clippy::too_many_arguments)]
    fn rechunk(
        src: PathBuf,
        dst: PathBuf,
        tile: Vec<u64>,
        shard: Option<Vec<u64>>,
        codec: &str,
        pyramid: Option<&str>,
        levels: Option<usize>,
        downsample: Option<Vec<bool>>,
        memory: Option<u64>,
        overwrite: bool,
        threads: usize,
        allow_http: bool,
        s3_config: Option<BTreeMap<String, String>>,
    ) -> PyResult<PySlabJob> {
        let s3 = s3_options(allow_http, 120.0, s3_config)?;
        let retiling = NewArray {
            dst,
            tile,
            shard,
            codec,
            pyramid,
            levels,
            downsample,
            memory,
            overwrite,
            threads,
        }
        .re_tiling(&src, s3)?;
        Ok(PySlabJob {
            job: slab_job(&retiling.source, &retiling.job).map_err(rechunk_err)?,
            input: Input::Source(Box::new(retiling)),
            threads,
            store: Mutex::new(None),
        })
    }

    /// Slabs start (and end, but at the array's end) at multiples of this
    /// many planes.
    #[getter]
    fn slab_planes(&self) -> u64 {
        self.job.slab_planes()
    }

    /// Blocks start (and end, but at the array's end) at multiples of
    /// these many elements along each dimension.
    #[getter]
    fn block_units(&self) -> Vec<u64> {
        self.job.block_units()
    }

    /// Blocks written by ``write_top`` start (and end, but at the array's
    /// end) at multiples of these many elements: whole files of level 0,
    /// even along the halved dimensions.
    #[getter]
    fn top_units(&self) -> Vec<u64> {
        self.job.top_units()
    }

    /// Boxes of level `level` written by ``write_levels`` start (and end,
    /// but at the level's end) at multiples of these many elements.
    fn level_units(&self, level: usize) -> Vec<u64> {
        self.job.level_units(level)
    }

    /// Whether the levels halve each dimension (a block of a pyramid is at
    /// least a unit, or the array's extent, wide along a halved dimension
    /// below the first).
    #[getter]
    fn halved(&self) -> Vec<bool> {
        self.job.halved().to_vec()
    }

    /// The whole array's shape.
    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.job.shape().to_vec()
    }

    /// Every level's shape, level 0 first.
    #[getter]
    fn level_shapes(&self) -> Vec<Vec<u64>> {
        self.job.level_shapes()
    }

    /// The bytes of one plane of level 0.
    #[getter]
    fn plane_bytes(&self) -> u64 {
        self.job.plane_bytes()
    }

    /// Refuses a re-tiling whose memory cannot hold a task's stream and
    /// two slabs of the source's chunks (a `MemoryError` naming the
    /// figures); nothing to check for a job of given planes.
    fn check_memory(&self) -> PyResult<()> {
        match &self.input {
            Input::Given => Ok(()),
            Input::Source(s) => read_depth(&s.source, &s.job).map(drop).map_err(rechunk_err),
        }
    }

    /// Bytes one slab's stream holds besides its input.
    #[getter]
    fn stream_memory(&self) -> PyResult<u64> {
        self.job.stream_memory().map_err(stream_err)
    }

    /// The caller's start: the store made ready and locked, claiming
    /// nothing.
    fn begin(&self, py: Python<'_>) -> PyResult<()> {
        let mut store = self.store.lock().map_err(|_| poisoned())?;
        if store.is_some() {
            return Err(PyRuntimeError::new_err("the job was begun already"));
        }
        *store = Some(py.allow_threads(|| self.job.begin()).map_err(stream_err)?);
        Ok(())
    }

    /// The caller's end, once every slab is written: every level claimed
    /// whole, the store unlocked.
    fn finish(&self, py: Python<'_>) -> PyResult<()> {
        let store = self.store.lock().map_err(|_| poisoned())?.take();
        let Some(store) = store else {
            return Err(PyRuntimeError::new_err(
                "finish() ends a job that begin() started",
            ));
        };
        py.allow_threads(|| store.finish()).map_err(stream_err)
    }

    /// The caller's end of a failed job: nothing claimed, the store
    /// unlocked (a no-op when not begun).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let store = self.store.lock().map_err(|_| poisoned())?.take();
        py.allow_threads(move || drop(store));
        Ok(())
    }

    /// A task's work: `data` (a C-contiguous buffer of whole planes of the
    /// array's dtype) as planes `first_plane..` of the array and every
    /// level, written with the GIL released; returns the slab's summary.
    fn write_slab<'py>(
        &self,
        py: Python<'py>,
        first_plane: u64,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.write_held(py, data, |job, bytes, backend| {
            job.write_slab(first_plane, bytes, backend)
        })
    }

    /// A task's work when the array is cut along more than its first
    /// dimension: `data` (a C-contiguous buffer of the array's dtype) as
    /// the box of shape `shape` at element `origin`, written with the GIL
    /// released; returns the block's summary.
    fn write_block<'py>(
        &self,
        py: Python<'py>,
        origin: Vec<u64>,
        shape: Vec<u64>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.write_held(py, data, |job, bytes, backend| {
            job.write_block(&origin, &shape, bytes, backend)
        })
    }

    /// A first-phase task's work for a pyramid written in two: `data` (a
    /// C-contiguous buffer of the array's dtype) as the box of shape
    /// `shape` at element `origin`, written into level 0 alone with the
    /// GIL released; returns the block's summary.
    fn write_top<'py>(
        &self,
        py: Python<'py>,
        origin: Vec<u64>,
        shape: Vec<u64>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.write_held(py, data, |job, bytes, backend| {
            job.write_top(&origin, &shape, bytes, backend)
        })
    }

    /// The first phase's other part: the block ``write_top`` takes,
    /// halved into level 1 with the GIL released (bytes, C order).
    fn halve_top<'py>(
        &self,
        py: Python<'py>,
        origin: Vec<u64>,
        shape: Vec<u64>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let child = self.with_held(py, data, |job, bytes, backend| {
            job.halve_top(&origin, &shape, bytes, backend)
        })?;
        Ok(PyBytes::new(py, &child))
    }

    /// A second-phase task's work: `data` (a C-contiguous buffer of the
    /// array's dtype) as the box of shape `shape` at element `origin` of
    /// level `level`, written with every level below it, the GIL released;
    /// returns the box's summary (its levels from `level` on).
    fn write_levels<'py>(
        &self,
        py: Python<'py>,
        level: usize,
        origin: Vec<u64>,
        shape: Vec<u64>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.write_held(py, data, |job, bytes, backend| {
            job.write_levels(level, &origin, &shape, bytes, backend)
        })
    }

    /// A re-tiling task's work: the box of shape `shape` at element
    /// `origin` of the source (whole planes, or a block of whole shards
    /// of every level) read and written, with the GIL released.
    fn copy_block<'py>(
        &self,
        py: Python<'py>,
        origin: Vec<u64>,
        shape: Vec<u64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let Input::Source(s) = &self.input else {
            return Err(PyValueError::new_err(
                "copy_block re-tiles a source: make the job with _SlabJob.rechunk",
            ));
        };
        let summary = py
            .allow_threads(|| rechunk_block(&s.source, &s.job, &self.job, &origin, &shape, |_| {}))
            .map_err(rechunk_err)?;
        summary_dict(py, &summary)
    }
}

impl PySlabJob {
    /// `write` run on the bytes of `data` (a C-contiguous buffer of the
    /// array's dtype) with the GIL released; its summary as a dict.
    fn write_held<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        write: impl FnOnce(
                &SlabJob,
                &[u8],
                Backend,
            ) -> Result<retile_stream::Summary, retile_stream::StreamError>
            + Send,
    ) -> PyResult<Bound<'py, PyDict>> {
        let summary = self.with_held(py, data, write)?;
        summary_dict(py, &summary)
    }

    /// `work` run on the bytes of `data` (a C-contiguous buffer of the
    /// array's dtype) with the GIL released.
    fn with_held<'py, T: Send>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        work: impl FnOnce(&SlabJob, &[u8], Backend) -> Result<T, retile_stream::StreamError> + Send,
    ) -> PyResult<T> {
        let held = HeldBuffer::get(data)?;
        if !held.is_c_contiguous() {
            return Err(PyValueError::new_err(
                "a slab or block is a C-contiguous buffer: pass numpy.ascontiguousarray(data)",
            ));
        }
        let (addr, len, itemsize) = held.extent();
        check_format(&held.format(), itemsize, self.job_dtype())?;
        let backend = Backend::Cpu {
            threads: self.threads,
        };
        let result = py.allow_threads(move || {
            let data: &[u8] = match len {
                0 => &[],
                // SAFETY: the buffer is held (and so kept alive and unresized) by `held`
                // until after this closure returns; it is `len` readable bytes at `addr`.
                _ => unsafe { std::slice::from_raw_parts(addr as *const u8, len) },
            };
            work(&self.job, data, backend)
        });
        drop(held);
        result.map_err(stream_err)
    }

    /// The array's element type.
    fn job_dtype(&self) -> retile_stream::DType {
        self.job.dtype()
    }
}

fn poisoned() -> PyErr {
    PyRuntimeError::new_err("the job's store was left in an unknown state by a failed call")
}

/// Adds `_SlabJob` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySlabJob>()
}
