"""Camera-like frames for the benchmarks, in one raw file: a smooth scene plus
shot noise and a slow drift, the same bytes in every script and run (seeded),
made once per size and read into the page cache before use.

A frame is (height, width) or (channels, height, width); channel k's scene is
brighter by 100 * k. u16 is the camera's own type; u8 is the u16 value / 5,
f32 the u16 value / 3 (full mantissas, as processed data has)."""
import os
import subprocess

import numpy as np

DTYPES = ("uint8", "uint16", "float32")


def _scene(rows, columns):
    """The smooth scene (u16) at rows `rows` and columns `columns` ((start, end) each)."""
    yy, xx = np.mgrid[rows[0]:rows[1], columns[0]:columns[1]]
    return (200 + 800 * (np.sin(yy / 97.0) * np.cos(xx / 61.0)) ** 2).astype(np.uint16)


def _plane(scene, rng, t, dtype):
    """One plane of `scene`'s shape in `dtype`: the scene, noise, the drift."""
    noise = rng.integers(0, 64, size=scene.shape, dtype=np.uint16)
    value = (scene + noise + (t % 50)).astype(np.uint16)
    if dtype == "uint16":
        return value
    if dtype == "uint8":
        return (value // 5).astype(np.uint8)
    return (value.astype(np.float32) / np.float32(3)).astype(np.float32)


def frames_raw(work, planes, frame, dtype="uint16"):
    """The path of `planes` frames of shape `frame` ((height, width) or
    (channels, height, width)) of `dtype` (one of DTYPES) under `work`, page-cached."""
    frame, dtype = tuple(int(n) for n in frame), np.dtype(dtype).name
    if dtype not in DTYPES or len(frame) not in (2, 3):
        raise ValueError(f"frames are 2-D or 3-D of {', '.join(DTYPES)}, not {frame} {dtype}")
    dims = "x".join(map(str, frame))
    name = f"frames-{planes}-{dims}.raw" if dtype == "uint16" else f"frames-{planes}-{dims}-{dtype}.raw"
    raw = os.path.join(work, name)
    if not os.path.exists(raw):
        rng = np.random.default_rng(7)
        scene = _scene((0, frame[-2]), (0, frame[-1]))
        channels = frame[0] if len(frame) == 3 else 1
        scenes = [scene + np.uint16(100 * k) for k in range(channels)]
        with open(raw + ".part", "wb") as f:
            for t in range(planes):
                for s in scenes:
                    _plane(s, rng, t, dtype).tofile(f)
        os.replace(raw + ".part", raw)  # a run killed while writing leaves no short file behind
    subprocess.run(["cat", raw], stdout=subprocess.DEVNULL, check=True)
    return raw


def frames_file(work, planes, height, width):
    """The path of `planes` frames of `height` x `width` u16 under `work`, page-cached."""
    return frames_raw(work, planes, (height, width), "uint16")


def scene_block(location):
    """The frames the Dask benchmarks make in their tasks, at `location`
    (a dask block's ((z0, z1), (y0, y1), (x0, x1))): the scene, the plane's
    index and noise seeded by z0."""
    (z0, z1), rows, columns = location
    base = _scene(rows, columns)
    rng = np.random.default_rng(z0)
    return np.stack([base + np.uint16(z) + rng.integers(0, 64, base.shape, dtype=np.uint16)
                     for z in range(z0, z1)])
