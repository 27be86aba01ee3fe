"""Reads a store written by `retile stream` back with zarr-python and
compares every element with numpy: level 0 with the input (a raw file, or
the synthetic pattern: element i holds i, truncated to the element type),
and each pyramid level with numpy's halving of the level above it
(crates/python/tests/pyramid_reference.py). Used by crates/cli/tests/ranks.rs;
the one argument is a JSON object: store, input ("synthetic" or a path),
shape, dtype (numpy's name), tile, pyramid (a method or null)."""
import json
import pathlib
import sys

import numpy as np
import zarr

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python" / "tests"))
from pyramid_reference import default_halved, halve, level_shapes  # noqa: E402

case = json.loads(sys.argv[1])
shape, dtype = tuple(case["shape"]), np.dtype(case["dtype"])
count = int(np.prod(shape))
if case["input"] == "synthetic":
    bits = np.arange(count, dtype=np.uint64).astype(f"u{dtype.itemsize}")
    data = bits.view(dtype).reshape(shape)
else:
    data = np.fromfile(case["input"], dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)
store = pathlib.Path(case["store"])
if case["pyramid"] is None:
    levels, wanted = [zarr.open_array(str(store), mode="r")], [data]
else:
    halved = default_halved(len(shape))
    shapes = level_shapes(shape, case["tile"], halved)
    levels = [zarr.open_array(str(store / str(k)), mode="r") for k in range(len(shapes))]
    assert not (store / str(len(shapes))).exists(), f"more than {len(shapes)} levels"
    wanted = [data]
    for _ in shapes[1:]:
        wanted.append(halve(wanted[-1], halved, case["pyramid"]))
for k, (level, want) in enumerate(zip(levels, wanted)):
    got = level[...]
    assert got.shape == want.shape, f"level {k}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"level {k}: dtype {got.dtype} != {want.dtype}"
    bits = f"u{got.dtype.itemsize}"
    assert np.array_equal(got.view(bits), want.view(bits)), f"level {k}: values differ"
print(f"zarr-python read back {len(levels)} level(s) of {store}: every element right")
