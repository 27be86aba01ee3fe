#!/usr/bin/env python3
"""retile's multiscale pyramid beside acquire-zarr's, on the same frames,
chunks, shards and method, into the same file system, in one run; each
writer is also run without a pyramid, so that what the pyramid costs is
measured in the same run, and the disk's direct-I/O speed is the ceiling.

Set up once (any directory outside the repository):
    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install acquire-zarr numpy zarr
Run:
    /tmp/peers/bin/python bench/pyramid_peer.py target/release/retile /tmp/peerwork

Prints GB/s of input end to end (best of two interleaved runs), retile's
ratio to acquire-zarr with a pyramid (target >= 5), and each writer's
pyramid cost: the throughput it loses to the pyramid, 1 - (GB/s with) /
(GB/s without) (target for retile <= 25 %; a mean pyramid of 4 levels
adds 1/4 + 1/16 + 1/64 = 33 % more bytes, so a writer at the disk's speed
loses 1 - 1 / 1.33 = 25 %). retile's levels are checked against numpy
(level k+1 = the mean of 2 x 2 blocks of level k, rounded half to even)
on three planes, and both writers' level shapes are printed.
"""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import zarr
import acquire_zarr as az

from frames import frames_file

retile, work = os.path.abspath(sys.argv[1]), sys.argv[2]
planes = int(os.environ.get("PEER_PLANES", "256"))
H = W = int(os.environ.get("PEER_SIZE", "2048"))
LEVELS = 4
os.makedirs(work, exist_ok=True)

# (name, chunk, shard (chunks per shard), codec)
CASES = [
    ("shards 1x4x4, none", (64, 256, 256), (1, 4, 4), "none"),
    ("shards 1x4x4, blosc-lz4:1", (64, 256, 256), (1, 4, 4), "blosc-lz4:1"),
]


def disk_ceiling():
    """GB/s of a 2 GiB dd into the work directory: with direct I/O, or (a file
    system without it, such as tmpfs) with an fdatasync at the end."""
    path = os.path.join(work, "dd.probe")
    for how, flag in (("direct I/O", "oflag=direct"), ("buffered, synced", "conv=fdatasync")):
        t = time.perf_counter()
        done = subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=4M", "count=512", flag],
                              capture_output=True)
        dt = time.perf_counter() - t
        if os.path.exists(path):
            os.remove(path)
        if done.returncode == 0:
            return 512 * 4 * 2**20 / 1e9 / dt, how
    raise SystemExit(f"dd could not write to {work}")


def run_acquire(out, frames, chunk, shard, codec, pyramid):
    kinds = [az.DimensionType.TIME, az.DimensionType.SPACE, az.DimensionType.SPACE]
    dims = [az.Dimension(name=n, kind=k, array_size_px=s, chunk_size_px=c, shard_size_chunks=k_)
            for n, k, s, c, k_ in zip("tyx", kinds, (0, H, W), chunk, shard)]
    comp = None
    if codec != "none":
        name, level = codec.split(":")
        comp = az.CompressionSettings(compressor=az.Compressor.BLOSC1, level=int(level), shuffle=1,
                                      codec=az.CompressionCodec.BLOSC_ZSTD if name == "blosc-zstd" else az.CompressionCodec.BLOSC_LZ4)
    extra = {}
    if pyramid:
        extra = dict(downsampling_method=az.DownsamplingMethod.MEAN, max_levels=LEVELS - 1)
    arr = az.ArraySettings(dimensions=dims, data_type=az.DataType.UINT16, compression=comp, **extra)
    t = time.perf_counter()
    s = az.ZarrStream(az.StreamSettings(arrays=[arr], store_path=out, overwrite=True))
    for i in range(planes):
        s.append(frames[i])
    s.close()
    return time.perf_counter() - t


def run_retile(out, raw, chunk, shard, codec, pyramid):
    cmd = [retile, "stream", "--shape", f"0,{H},{W}", "--tile", ",".join(map(str, chunk)), "--dtype", "u16",
           "--input", raw, "--output", out, "--codec", codec, "--shard", ",".join(map(str, shard))]
    if pyramid:
        cmd += ["--pyramid", "mean", "--levels", str(LEVELS)]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"retile failed: {r.stderr.strip()}")
    return time.perf_counter() - t


def level_arrays(out):
    node = zarr.open(out, mode="r")
    if isinstance(node, zarr.Array):
        return [node]
    found = []
    for k in range(16):
        try:
            found.append(node[str(k)])
        except KeyError:
            break
    return found


def mean_2x2(a):
    """Level k+1 from level k: 2 x 2 means, rounded half to even (the edge reduces what exists)."""
    h, w = a.shape
    p = np.zeros(((h + 1) // 2 * 2, (w + 1) // 2 * 2), dtype=np.int64)
    n = np.zeros_like(p)
    p[:h, :w], n[:h, :w] = a, 1
    s = p.reshape(p.shape[0] // 2, 2, p.shape[1] // 2, 2).sum(axis=(1, 3))
    c = n.reshape(n.shape[0] // 2, 2, n.shape[1] // 2, 2).sum(axis=(1, 3))
    return np.round(s / c).astype(a.dtype)  # c is 1, 2 or 4: s / c is exact, np.round is half to even


def check_retile(out, frames):
    levels = level_arrays(out)
    ok = len(levels) == LEVELS
    for t in (0, planes // 2, planes - 1):
        want = np.asarray(frames[t])
        for k, a in enumerate(levels):
            if k:
                want = mean_2x2(want)
            ok &= a.shape[0] == planes and np.array_equal(a[t], want)
    return ok, [a.shape for a in levels]


raw = frames_file(work, planes, H, W)
frames = np.memmap(raw, dtype=np.uint16, mode="r", shape=(planes, H, W))
gb = planes * H * W * 2 / 1e9
print(f"{planes} frames of {H}x{W} u16 ({gb:.2f} GB), page-cached, mean pyramid of {LEVELS} levels; "
      "disk ({1}): {0:.2f} GB/s".format(*disk_ceiling()))
for name, chunk, shard, codec in CASES:
    best, shapes, good = {}, {}, True
    for _ in range(int(os.environ.get("PEER_RUNS", "2"))):
        for who in ("retile", "acquire-zarr"):
            for pyramid in (True, False):
                out = os.path.join(work, f"{who}.zarr")
                shutil.rmtree(out, ignore_errors=True)
                subprocess.run(["sync"])
                run = run_retile if who == "retile" else run_acquire
                dt = run(out, raw if who == "retile" else frames, chunk, shard, codec, pyramid)
                if pyramid:
                    if who == "retile":
                        ok, shapes[who] = check_retile(out, frames)
                        good &= ok
                    else:
                        shapes[who] = [a.shape for a in level_arrays(out)]
                key = (who, pyramid)
                best[key] = max(best.get(key, 0.0), gb / dt)
                shutil.rmtree(out, ignore_errors=True)
    r, a = best[("retile", True)], best[("acquire-zarr", True)]
    cost = lambda who: 1 - best[(who, True)] / best[(who, False)]
    print(f"{name:28s} pyramid: retile {r:5.2f} GB/s  acquire-zarr {a:5.2f} GB/s  ratio {r / a:5.2f}  | "
          f"without: retile {best[('retile', False)]:5.2f}  acquire-zarr {best[('acquire-zarr', False)]:5.2f} GB/s  | "
          f"pyramid cost: retile {100 * cost('retile'):4.0f} %  acquire-zarr {100 * cost('acquire-zarr'):4.0f} %  | "
          f"retile levels {'equal to numpy' if good else 'WRONG'}")
    print(f"{'':28s} level shapes: retile {shapes['retile']}  acquire-zarr {shapes['acquire-zarr']}")
