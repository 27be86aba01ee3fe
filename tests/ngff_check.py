"""Reads an OME-Zarr image written by `retile stream --pyramid mean`
(synthetic input, only the last two dimensions halved) as the OME-Zarr
tools do: the group is validated by ome-zarr-models, opened by ome-zarr-py,
level 0 holds the synthetic pattern (element i = i, truncated to the dtype)
and each level k+1 is the 2 x 2 mean of level k, rounded half to even."""
import sys

import numpy as np
import zarr
from ome_zarr.io import parse_url
from ome_zarr.reader import Reader
from ome_zarr_models.v05.image import Image

path, shape, dtype, levels = sys.argv[1], [int(x) for x in sys.argv[2].split(",")], sys.argv[3], int(sys.argv[4])
group = zarr.open_group(path, mode="r")
Image.from_zarr(group)
pyramid = list(Reader(parse_url(path))())[0].data
assert len(pyramid) == levels, f"{len(pyramid)} levels, not {levels}"
want = np.arange(np.prod(shape), dtype=np.uint64).astype(dtype).reshape(shape)
for k, level in enumerate(pyramid):
    if k:
        h, w = want.shape[-2:]
        pad = [(0, 0)] * (want.ndim - 2) + [(0, h % 2), (0, w % 2)]
        s = np.pad(want.astype(np.int64), pad)
        n = np.pad(np.ones(want.shape, np.int64), pad)
        blocks = lambda a: a.reshape(a.shape[:-2] + (a.shape[-2] // 2, 2, a.shape[-1] // 2, 2)).sum(axis=(-3, -1))
        want = np.round(blocks(s) / blocks(n)).astype(dtype)  # n is 1, 2 or 4: exact, then half to even
    got = np.asarray(level)
    assert got.shape == want.shape and np.array_equal(got, want), f"level {k} differs"
print(f"ome-zarr-models validated {path}; ome-zarr-py opened {levels} levels, each equal to numpy's")
