"""numpy references for retile's multiscale pyramids, shared by the
Python tests and the command's read-back script
(crates/cli/tests/readback.py): each level computed from the whole array
at once, exactly as retile defines it (README: integer means round half to
even, float means are summed in f64 in a fixed order)."""
import itertools

import numpy as np


def exact(values):
    """Integers as Python ints (exact sums of 64-bit values), floats as float64."""
    return values.astype(object) if values.dtype.kind in "iu" else values.astype(np.float64)


def half_even(total, count):
    """total / count rounded half to even, elementwise on Python ints."""
    q = total // count
    r = total - q * count
    up = (2 * r > count) | ((2 * r == count) & (q % 2 == 1))
    return q + up.astype(object)


def halve(a, halved, method):
    """The next level of `a`: blocks 2 long along every halved dimension (1 at an odd edge)."""
    out_shape = tuple((n + 1) // 2 if h else n for n, h in zip(a.shape, halved))
    values, valid = [], []
    # block members in row-major order: rows (all but the last offset), then the last offset
    for offsets in itertools.product(*[(0, 1) if h else (0,) for h in halved]):
        v = a[tuple(slice(o, None, 2) if h else slice(None) for o, h in zip(offsets, halved))]
        pad = [(0, want - got) for want, got in zip(out_shape, v.shape)]
        values.append(np.pad(v, pad))
        valid.append(np.pad(np.ones(v.shape, bool), pad))
    V, M = np.stack(values), np.stack(valid)
    count = M.sum(axis=0)
    if method == "decimate":
        return V[0]
    if method in ("min", "max"):
        sentinel = np.finfo(a.dtype).max if a.dtype.kind == "f" else (np.iinfo(a.dtype).max if method == "min" else np.iinfo(a.dtype).min)
        if a.dtype.kind == "f" and method == "max":
            sentinel = -sentinel
        filled = np.where(M, V, np.array(sentinel, a.dtype))
        return filled.min(axis=0) if method == "min" else filled.max(axis=0)
    if method == "median":
        big = np.finfo(a.dtype).max if a.dtype.kind == "f" else np.iinfo(a.dtype).max
        s = np.sort(np.where(M, V, np.array(big, a.dtype)), axis=0)
        lo = np.take_along_axis(s, np.maximum(count // 2 - 1, 0)[None], axis=0)[0]
        hi = np.take_along_axis(s, (count // 2)[None], axis=0)[0]
        two = mean_of(np.stack([lo, hi]), np.ones((2,) + lo.shape, bool), a.dtype, pairs=True)
        return np.where(count == 1, s[0], two)
    return mean_of(V, M, a.dtype, pairs=halved[-1])


def mean_of(V, M, dtype, pairs):
    """The mean of the valid members, summed as retile sums: each row's pair first, then rows in order."""
    count = M.sum(axis=0)
    X = exact(V)
    if dtype.kind in "iu":
        total = np.where(M, X, 0).sum(axis=0)
        return half_even(total, count.astype(object)).astype(dtype)
    acc = np.zeros(V.shape[1:], np.float64)
    step = 2 if pairs else 1
    for r in range(0, len(V), step):
        row = np.where(M[r + 1], X[r] + X[r + 1], X[r]) if pairs else X[r]
        acc = np.where(M[r], acc + row, acc)
    return (acc / count).astype(dtype)


def random_array(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (rng.integers(0, 2001, size=shape) / 8.0 - 125.0).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def default_halved(rank):
    """Which dimensions a pyramid halves by default: all but the first, and
    the channel axis of the default 5-D axes (t, c, z, y, x)."""
    return [d > 0 and not (rank == 5 and d == 1) for d in range(rank)]


def level_shapes(shape, tile, halved):
    """Level 0's shape and each level's after it, until a level fits in one
    tile along every halved dimension."""
    shapes = [list(shape)]
    while not all(not h or n <= t for n, t, h in zip(shapes[-1], tile, halved)):
        shapes.append([(n + 1) // 2 if h else n for n, h in zip(shapes[-1], halved)])
    return shapes
