//! A store read back by zarr-python and compared with numpy
//! (`zarr_readback.py`), run by the interpreter `PYTHON` names (`python3`
//! by default), which needs zarr and numpy.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `zarr_readback.py` on `case` (store, input, shape, dtype, tile,
/// pyramid); its status says whether every element was right.
pub fn zarr_readback(case: &serde_json::Value) -> Output {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zarr_readback.py");
    Command::new(&python)
        .arg(&script)
        .arg(case.to_string())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python} (set PYTHON): {e}"))
}
