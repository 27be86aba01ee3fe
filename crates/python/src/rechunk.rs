//! `retile.rechunk`: an existing Zarr array (v2 or v3) re-tiled into a new
//! store by retile's engine, on every core of this machine, the GIL
//! released.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use retile_rechunk::rechunk as retile_array;
use retile_stream::S3Options;

use crate::error::rechunk_err;
use crate::retiling::{NewArray, ReTiling};
use crate::stream::summary_dict;

/// Re-tiles the Zarr array at `src` (v2 or v3: a directory, or
/// `s3://BUCKET/PREFIX`) into a new store at `dst` (the same kinds) with chunks
/// `tile`, written as `retile.Stream` writes one; returns its summary.
/// `memory` bounds the bytes used (the new array's tile buffers and two
/// slabs of the source's chunks along the first dimension): a source whose
/// chunks are too deep for it is refused with a `MemoryError` naming the
/// figure it needs. `allow_http` and `s3_config` configure S3 (both
/// paths) as for `retile.Stream`. With `client` (a `dask.distributed`
/// client) the re-tiling runs on its cluster (`retile.dask`), each task a
/// slab of whole shard rows, and `memory` bounds each worker's bytes.
///
/// >>> import numpy as np, retile, tempfile, os
/// >>> d = tempfile.mkdtemp()
/// >>> with retile.Stream(os.path.join(d, "a.zarr"), shape=(4, 6), tile=(4, 3), dtype="uint8") as s:
/// ...     _ = s.append(np.arange(24, dtype=np.uint8))
/// >>> retile.rechunk(os.path.join(d, "a.zarr"), os.path.join(d, "b.zarr"), tile=(1, 6))["planes"]
/// 4
#[pyfunction]
#[pyo3(signature = (src, dst, tile, shard=None, codec="none", pyramid=None, levels=None, downsample=None, memory=None, client=None, overwrite=false, threads=0, allow_http=false, s3_config=None))]
#[allow(clippy::too_many_arguments)]
fn rechunk<'py>(
    py: Python<'py>,
    src: PathBuf,
    dst: PathBuf,
    tile: Vec<u64>,
    shard: Option<Vec<u64>>,
    codec: &str,
    pyramid: Option<&str>,
    levels: Option<usize>,
    downsample: Option<Vec<bool>>,
    memory: Option<u64>,
    client: Option<&Bound<'py, PyAny>>,
    overwrite: bool,
    threads: usize,
    allow_http: bool,
    s3_config: Option<std::collections::BTreeMap<String, String>>,
) -> PyResult<Bound<'py, PyDict>> {
    if let Some(client) = client {
        let kwargs = PyDict::new(py);
        kwargs.set_item("client", client)?;
        kwargs.set_item("memory", memory)?;
        kwargs.set_item("shard", shard)?;
        kwargs.set_item("codec", codec)?;
        kwargs.set_item("pyramid", pyramid)?;
        kwargs.set_item("levels", levels)?;
        kwargs.set_item("downsample", downsample)?;
        kwargs.set_item("overwrite", overwrite)?;
        kwargs.set_item("threads", threads)?;
        kwargs.set_item("allow_http", allow_http)?;
        kwargs.set_item("s3_config", s3_config)?;
        let on_cluster = py.import("retile.dask")?.getattr("rechunk")?;
        return Ok(on_cluster
            // as text: a pathlib.Path would fold the // of s3://
            .call(
                (src.to_string_lossy(), dst.to_string_lossy(), tile),
                Some(&kwargs),
            )?
            .downcast_into::<PyDict>()?);
    }
    let s3 = S3Options {
        allow_http,
        config: s3_config.unwrap_or_default().into_iter().collect(),
        ..Default::default()
    };
    let ReTiling { source, job } = NewArray {
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
    let summary = py
        .allow_threads(|| retile_array(&source, &job, |_| {}))
        .map_err(rechunk_err)?;
    summary_dict(py, &summary)
}

/// Adds `rechunk` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rechunk, m)?)
}
