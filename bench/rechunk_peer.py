#!/usr/bin/env python3
"""retile rechunk beside dask's own re-chunking (dask.array.from_zarr ->
rechunk -> to_zarr into a zarr-python sharded array whose shards the new
chunks line up with, on dask's local threaded scheduler: every core of this
machine), on the same source, in one run, best of REPS; both outputs read
back by zarr-python and compared with the source. The ceiling is the
source's own read (zarr-python, every core) and the dask write of an array
already chunked as the target (no rechunk).

    python3 bench/rechunk_peer.py target/release/retile DIR
Environment: PLANES=256 (1024x1024 u16 frames, source chunks 64x256x256, compressed zstd:1),
TILE=1,512,512 SHARD=8,2,2 REPS=2
"""
import os
import shutil
import subprocess
import sys
import time

import dask.array as da
import numpy as np
import zarr

retile, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
planes = int(os.environ.get("PLANES", "256"))
reps = int(os.environ.get("REPS", "2"))
tile = tuple(int(v) for v in os.environ.get("TILE", "1,512,512").split(","))
shard = tuple(int(v) for v in os.environ.get("SHARD", "8,2,2").split(","))
H = W = 1024
os.makedirs(work, exist_ok=True)
src = os.path.join(work, "src.zarr")
if not os.path.exists(src):
    rng = np.random.default_rng(3)
    a = zarr.create_array(src, shape=(planes, H, W), chunks=(64, 256, 256), dtype="u2",
                          compressors=[zarr.codecs.ZstdCodec(level=1)])
    for t in range(0, planes, 64):
        a[t:t + 64] = rng.integers(0, 4096, size=(min(64, planes - t), H, W), dtype=np.uint16)
gb = planes * H * W * 2 / 1e9
truth = zarr.open_array(src, mode="r")[...]


def run_retile(out):
    t = time.perf_counter()
    subprocess.run([retile, "rechunk", src, out, "--tile", ",".join(map(str, tile)),
                    "--shard", ",".join(map(str, shard)), "--codec", "zstd:1"], check=True, capture_output=True)
    return time.perf_counter() - t


def run_dask(out):
    t = time.perf_counter()
    x = da.from_zarr(src).rechunk(tuple(t * s for t, s in zip(tile, shard)))
    z = zarr.create_array(out, shape=x.shape, chunks=tile, shards=tuple(t * s for t, s in zip(tile, shard)),
                          dtype=x.dtype, compressors=[zarr.codecs.ZstdCodec(level=1)])
    da.to_zarr(x, z)
    return time.perf_counter() - t


def read_ceiling():
    t = time.perf_counter()
    zarr.open_array(src, mode="r")[...]
    return gb / (time.perf_counter() - t)


best = {}
for rep in range(reps):
    for name, fn in [("retile", run_retile), ("dask", run_dask)]:
        out = os.path.join(work, name + ".zarr")
        shutil.rmtree(out, ignore_errors=True)
        secs = fn(out)
        ok = np.array_equal(zarr.open_array(out, mode="r")[...], truth)
        print(f"  rep {rep} {name:7s} {gb / secs:6.2f} GB/s{'' if ok else '  READ BACK DIFFERENT'}")
        if ok:
            best[name] = max(best.get(name, 0), gb / secs)
        shutil.rmtree(out, ignore_errors=True)
ceiling = read_ceiling()
print(f"{planes}x{H}x{W} u16 ({gb:.2f} GB), chunks 64x256x256 zstd:1 -> tile {tile} shard {shard} zstd:1, "
      f"{os.cpu_count()} cores: retile {best.get('retile', 0):.2f}, dask {best.get('dask', 0):.2f} GB/s; "
      f"retile/dask {best.get('retile', 0) / max(best.get('dask', 1e-9), 1e-9):.2f}x; "
      f"reading the source alone (zarr-python) {ceiling:.2f} GB/s")
