//! `retile.Stream(output, arrays=...)` and `plate=..., image=...`: the
//! Python dicts that describe an acquisition, read as the settings file of
//! `retile stream --config` is (the same keys, the same checks).

use std::collections::BTreeMap;
use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use retile_stream::{Acquisition, AcquisitionSettings, ArrayOptions, Plate, ZarrOptions};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::stream_err;

/// A Python value as JSON: None, bools, numbers, strings, lists, tuples
/// and dicts as themselves (a float that is not finite as its name, which
/// `fill` reads); anything else (a numpy dtype or scalar type) by its
/// `name` or `__name__`, else its `str`.
fn json_of(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = value.downcast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        return match value.extract::<i64>() {
            Ok(n) => Ok(n.into()),
            Err(_) => Ok(value.extract::<u64>()?.into()),
        };
    }
    if let Ok(f) = value.downcast::<PyFloat>() {
        let f = f.value();
        return Ok(serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or_else(|| Value::String(f.to_string().to_lowercase())));
    }
    if let Ok(s) = value.downcast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        return value.try_iter()?.map(|v| json_of(&v?)).collect();
    }
    if let Ok(d) = value.downcast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, v) in d.iter() {
            map.insert(k.str()?.to_string(), json_of(&v)?);
        }
        return Ok(Value::Object(map));
    }
    for attr in ["name", "__name__"] {
        if let Ok(name) = value.getattr(attr).and_then(|n| n.extract::<String>()) {
            return Ok(Value::String(name));
        }
    }
    Ok(Value::String(value.str()?.to_string()))
}

/// `value` read as `T` (an array's options, a plate), or a ValueError
/// naming `what` and the key or type that is wrong.
pub(crate) fn read<T: DeserializeOwned>(what: &str, value: &Bound<'_, PyAny>) -> PyResult<T> {
    serde_json::from_value(json_of(value)?)
        .map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

/// Opens the acquisition that `arrays`, or `plate` and `image`, describe
/// under `output`, with the Stream's own `memory` budget, backend, threads
/// and store settings (`store`: S3 and the like).
#[allow(clippy::too_many_arguments)]
pub fn open_acquisition(
    output: PathBuf,
    arrays: Option<&Bound<'_, PyDict>>,
    plate: Option<&Bound<'_, PyAny>>,
    image: Option<&Bound<'_, PyAny>>,
    memory: Option<u64>,
    overwrite: bool,
    backend: &str,
    threads: usize,
    store: ZarrOptions,
) -> PyResult<Acquisition> {
    let arrays = match arrays {
        None => None,
        Some(arrays) => {
            let mut read_arrays = BTreeMap::new();
            for (key, options) in arrays.iter() {
                let key: String = key.extract().map_err(|_| {
                    PyValueError::new_err("the keys of arrays are strings (e.g. 'cam0')")
                })?;
                let options: ArrayOptions = read(&format!("arrays['{key}']"), &options)?;
                read_arrays.insert(key, options);
            }
            Some(read_arrays)
        }
    };
    let settings = AcquisitionSettings {
        output,
        arrays,
        plate: plate.map(|p| read::<Plate>("plate", p)).transpose()?,
        image: image
            .map(|i| read::<ArrayOptions>("image", i))
            .transpose()?,
        memory,
        overwrite,
        backend: Some(backend.to_string()),
        threads: Some(threads),
    };
    settings.open(store).map_err(stream_err)
}
