"""Reads a store written by `retile stream` (synthetic input) with zarr-python,
as a real reader would, and checks every element: the synthetic pattern gives
element i (row-major linear index) the value i, truncated to the dtype.
An s3://BUCKET/PREFIX store is read over s3fs, from the server that
AWS_ENDPOINT_URL names (credentials from the AWS_* variables)."""
import os
import sys

import numpy as np
import zarr

path, shape, dtype = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], sys.argv[3]
options = {}
if path.startswith("s3://"):
    options["storage_options"] = {"endpoint_url": os.environ["AWS_ENDPOINT_URL"]}
array = zarr.open_array(path, mode="r", **options)
assert list(array.shape) == shape, f"shape {array.shape} != {shape}"
assert array.dtype == np.dtype(dtype), f"dtype {array.dtype} != {dtype}"
data = array[...]
expected = np.arange(np.prod(shape), dtype=np.uint64).astype(dtype).reshape(shape)
assert np.array_equal(data, expected), "values differ from the synthetic pattern"
print(f"zarr-python read back {path}: shape {shape} {dtype}, chunks {array.chunks}, every element right")
