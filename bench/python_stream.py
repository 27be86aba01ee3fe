"""A stream fed frame by frame from numpy through the Python package, beside
the same stream from `retile stream --input FILE` on the page-cached file,
in one run: same frames, tiles, shards and codec, same file system; GB/s of
input end to end (stream made to store closed), best of three interleaved runs.

    python3 -m pip install ./crates/python numpy
    python3 bench/python_stream.py target/release/retile /tmp/pywork [planes]
"""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import retile

from frames import frames_file

exe, work = os.path.abspath(sys.argv[1]), sys.argv[2]
planes = int(sys.argv[3]) if len(sys.argv) > 3 else 256
H = W = 2048
os.makedirs(work, exist_ok=True)
raw = frames_file(work, planes, H, W)  # page-cached
frames = np.memmap(raw, dtype=np.uint16, mode="r", shape=(planes, H, W))
gb = planes * H * W * 2 / 1e9
CASES = [("shards 1x4x4, none", (1, 4, 4), "none"), ("shards 1x4x4, blosc-lz4:1", (1, 4, 4), "blosc-lz4:1"),
         ("no shards, none", None, "none")]


def from_python(out, shard, codec):
    t = time.perf_counter()
    with retile.Stream(out, shape=(0, H, W), tile=(64, 256, 256), dtype="uint16", shard=shard, codec=codec) as s:
        for i in range(planes):
            s.append(frames[i])
    return time.perf_counter() - t


def from_command(out, shard, codec):
    cmd = [exe, "stream", "--shape", f"0,{H},{W}", "--tile", "64,256,256", "--dtype", "u16", "--input", raw,
           "--output", out, "--codec", codec] + (["--shard", ",".join(map(str, shard))] if shard else [])
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


print(f"{planes} frames of {H}x{W} u16 ({gb:.2f} GB), page-cached")
for name, shard, codec in CASES:
    best = {}
    for _ in range(3):
        for who, run in (("python", from_python), ("command", from_command)):
            out = os.path.join(work, f"{who}.zarr")
            shutil.rmtree(out, ignore_errors=True)
            subprocess.run(["sync"])
            best[who] = max(best.get(who, 0.0), gb / run(out, shard, codec))
            shutil.rmtree(out, ignore_errors=True)
    print(f"{name:28s} python {best['python']:5.2f} GB/s  command {best['command']:5.2f} GB/s  ratio {best['python'] / best['command']:4.2f}")
