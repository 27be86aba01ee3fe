"""Camera-like u16 frames for the benchmarks, in one raw file: a smooth
scene plus shot noise and a slow drift, the same bytes in every script and
run (seeded), made once per size and read into the page cache before use."""
import os
import subprocess

import numpy as np


def frames_file(work, planes, height, width):
    """The path of `planes` frames of `height` x `width` u16 under `work`, page-cached."""
    raw = os.path.join(work, f"frames-{planes}-{height}x{width}.raw")
    if not os.path.exists(raw):
        rng = np.random.default_rng(7)
        yy, xx = np.mgrid[0:height, 0:width]
        scene = (200 + 800 * (np.sin(yy / 97.0) * np.cos(xx / 61.0)) ** 2).astype(np.uint16)
        with open(raw, "wb") as f:
            for t in range(planes):
                noise = rng.integers(0, 64, size=(height, width), dtype=np.uint16)
                (scene + noise + (t % 50)).astype(np.uint16).tofile(f)
    subprocess.run(["cat", raw], stdout=subprocess.DEVNULL, check=True)
    return raw
