"""Shared helpers: where the reference corpora are, and how their JSON
inputs become retile (and pycute) objects."""

import json
from pathlib import Path

import pytest

HERE = Path(__file__).resolve()
# crates/python/tests/conftest.py: parents[3] is the repository root, parents[4]
# its parent, which holds shared/oracles/
REPO = HERE.parents[3]
ORACLES = HERE.parents[4] / "shared" / "oracles"
# the same corpora as copied into the Rust crates' test data
COPIES = {
    "cute_public.json": REPO / "crates" / "layout" / "tests" / "data",
    "tilus_public.json": REPO / "crates" / "calc" / "tests" / "data",
    "device_public.json": REPO / "crates" / "device" / "tests" / "data",
    "wave_itt_cases.json": REPO / "crates" / "copy" / "tests" / "data",
}


def load(name):
    """A reference corpus: shared/oracles/ beside the repository, else the
    copy in the Rust crate's tests/data/."""
    for path in (ORACLES / name, COPIES[name] / name):
        if path.exists():
            return json.loads(path.read_text())
    pytest.fail(f"reference corpus {name} is in neither {ORACLES} nor {COPIES[name]}")


def tup(x):
    """JSON lists as nested tuples."""
    return tuple(tup(v) for v in x) if isinstance(x, list) else x


def layout_of(module, j):
    return module.Layout(tup(j["shape"]), tup(j["stride"]))


def tiler_of(module, j):
    """A corpus tiler as pycute writes it: None = `_`, int n, a layout, or a tuple (by mode)."""
    if j is None or isinstance(j, int):
        return j
    if isinstance(j, dict):
        return layout_of(module, j["layout"])
    return tuple(tiler_of(module, t) for t in j)
