//! `retile._retile`: the native part of the `retile` Python package (the
//! streaming tiler, the CuTe layout algebra and the calculator).

use pyo3::prelude::*;

mod acquire;
mod banks;
mod calc;
mod error;
mod layout;
mod rechunk;
mod retiling;
mod slabs;
mod stream;

/// The native module; import `retile` instead.
#[pymodule]
fn _retile(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    stream::register(m)?;
    layout::register(m)?;
    banks::register(m)?;
    calc::register(m)?;
    rechunk::register(m)?;
    slabs::register(m)?;
    Ok(())
}
