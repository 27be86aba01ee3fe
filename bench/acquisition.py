#!/usr/bin/env python3
"""Several arrays in one stream (issue #29) beside one stream of the same
total size: the same camera-like frames, chunks, shards and codec, into the
same directory, in one run, interleaved, best of REPS. The acquisition
streams ARRAYS arrays (cam0, cam1, ...), frames appended round robin with
key=; the single stream takes all the frames as one array. Every store is
read back by zarr-python and compared with the frames.

    python3 bench/acquisition.py DIR [CODEC ...]     (default: none blosc-lz4:1 blosc-zstd:1)
Environment: PLANES=384 (2048x2048 u16 frames in all), ARRAYS=2, REPS=2
"""
import os
import shutil
import sys
import time

import numpy as np
import zarr

import retile

work = os.path.abspath(sys.argv[1])
codecs = sys.argv[2:] or ["none", "blosc-lz4:1", "blosc-zstd:1"]
planes = int(os.environ.get("PLANES", "384"))
arrays = int(os.environ.get("ARRAYS", "2"))
reps = int(os.environ.get("REPS", "2"))
H = W = 2048
chunk, shard = (64, 256, 256), (1, 4, 4)
rng = np.random.default_rng(7)
yy, xx = np.mgrid[0:H, 0:W]
base = (200 + 800 * (np.sin(yy / 97.0) * np.cos(xx / 61.0)) ** 2).astype(np.uint16)
frames = np.stack([base + rng.integers(0, 64, size=(H, W), dtype=np.uint16) for _ in range(planes)])
gb = frames.nbytes / 1e9
keys = [f"cam{k}" for k in range(arrays)]
os.makedirs(work, exist_ok=True)


def one(out, codec):
    t = time.perf_counter()
    with retile.Stream(out, shape=(0, H, W), tile=chunk, dtype="uint16", shard=shard, codec=codec) as s:
        for f in frames:
            s.append(f)
    return time.perf_counter() - t


def several(out, codec):
    each = dict(shape=(0, H, W), tile=chunk, dtype="uint16", shard=shard, codec=codec)
    t = time.perf_counter()
    with retile.Stream(out, arrays={k: dict(each) for k in keys}) as s:
        for i, f in enumerate(frames):
            s.append(f, key=keys[i % arrays])
    return time.perf_counter() - t


def read_back(out, name):
    if name == "one":
        return np.array_equal(zarr.open_array(out, mode="r")[...], frames)
    group = zarr.open_group(out, mode="r")
    return all(np.array_equal(group[k][...], frames[i::arrays]) for i, k in enumerate(keys))


print(f"{planes} frames {H}x{W} u16 ({gb:.2f} GB) in all, chunk {chunk}, shard {shard}, {os.cpu_count()} cores, "
      f"{arrays} arrays against one, into {work}")
for codec in codecs:
    best = {}
    for rep in range(reps):
        for name, fn in [("one", one), ("several", several)]:
            out = os.path.join(work, name + ".zarr")
            shutil.rmtree(out, ignore_errors=True)
            secs = fn(out, codec)
            ok = read_back(out, name)
            print(f"  {codec} rep {rep} {name:8s} {gb / secs:6.2f} GB/s{'' if ok else '  READ BACK DIFFERENT'}")
            if ok:
                best[name] = max(best.get(name, 0), gb / secs)
            shutil.rmtree(out, ignore_errors=True)
    ratio = best.get("several", 0) / max(best.get("one", 1e-9), 1e-9)
    print(f"{codec}: one stream {best.get('one', 0):.2f}, {arrays} arrays {best.get('several', 0):.2f} GB/s; "
          f"{arrays} arrays / one {ratio:.2f}x")
