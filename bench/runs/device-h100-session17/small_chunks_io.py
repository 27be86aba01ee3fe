"""Direct against buffered I/O for small chunks into a real disk, beside tensorstore.

The CLI (`retile stream`, synthetic input, codec none, default --sync end: every
file synced before it exits) with and without --buffered-io, and tensorstore
(zarr3, the same chunks and shards, from numpy frames, then os.sync), interleaved,
best of REPS, into DIR on the disk; each store removed after its run.

    python3 small_chunks_io.py RETILE DIR
"""
import os, shutil, subprocess, sys, time
import numpy as np

retile, work = sys.argv[1], sys.argv[2]
planes, H, W = int(os.environ.get("PLANES", "128")), 2048, 2048
reps = int(os.environ.get("REPS", "2"))
cases = [  # (label, chunk, shard or None)
    ("8 MiB chunks 64x256x256, shard 1x4x4", (64, 256, 256), (1, 4, 4)),
    ("128 KiB chunks 1x256x256, shard 1x8x8", (1, 256, 256), (1, 8, 8)),
    ("128 KiB chunks 1x256x256, no shard", (1, 256, 256), None),
    ("8 KiB chunks 1x64x64, shard 1x32x32", (1, 64, 64), (1, 32, 32)),
]
frames = np.random.default_rng(1).integers(0, 4096, size=(planes, H, W), dtype=np.uint16)
gb = frames.nbytes / 1e9
os.makedirs(work, exist_ok=True)


def cli(chunk, shard, buffered):
    out = os.path.join(work, "cli.zarr")
    cmd = [retile, "stream", "--shape", f"{planes},{H},{W}", "--tile", ",".join(map(str, chunk)),
           "--dtype", "u16", "--output", out, "--overwrite"]
    if shard:
        cmd += ["--shard", ",".join(map(str, shard))]
    if buffered:
        cmd.append("--buffered-io")
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode:
        raise RuntimeError(r.stderr[-300:])
    shutil.rmtree(out)
    return wall


def ts(chunk, shard):
    import tensorstore as tstore
    out = os.path.join(work, "ts.zarr")
    inner = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if shard:
        grid = [c * s for c, s in zip(chunk, shard)]
        codecs = [{"name": "sharding_indexed", "configuration": {"chunk_shape": list(chunk), "codecs": inner}}]
    else:
        grid, codecs = list(chunk), inner
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": out},
            "metadata": {"shape": [planes, H, W], "data_type": "uint16",
                         "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": grid}},
                         "codecs": codecs},
            "create": True, "delete_existing": True}
    t = time.perf_counter()
    a = tstore.open(spec).result()
    step = grid[0]
    for t0 in range(0, planes, step):
        a[t0:t0 + step].write(frames[t0:t0 + step]).result()
    os.sync()
    wall = time.perf_counter() - t
    shutil.rmtree(out)
    return wall


def disk_ceiling(n=8, mib=256):
    procs = [subprocess.Popen(["dd", "if=/dev/zero", f"of={work}/dd{k}", "bs=16M", f"count={mib // 16}", "oflag=direct"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for k in range(n)]
    t = time.perf_counter()
    for p in procs:
        p.wait()
    wall = time.perf_counter() - t
    for k in range(n):
        os.remove(f"{work}/dd{k}")
    return n * mib * 2**20 / wall / 1e9


print(f"the disk alone: {disk_ceiling():.2f} GB/s (8 parallel direct writes of 256 MiB)")
print(f"{planes} frames of {H}x{W} u16 ({gb:.2f} GB) into {work}, codec none, best of {reps}, GB/s of input")
for label, chunk, shard in cases:
    best = {"direct": 1e9, "buffered": 1e9, "tensorstore": 1e9}
    for _ in range(reps):
        best["direct"] = min(best["direct"], cli(chunk, shard, False))
        best["buffered"] = min(best["buffered"], cli(chunk, shard, True))
        best["tensorstore"] = min(best["tensorstore"], ts(chunk, shard))
    d, b, t = (gb / best[k] for k in ("direct", "buffered", "tensorstore"))
    print(f"{label}: direct {d:.2f} | buffered {b:.2f} ({b / d:.2f}x direct) | tensorstore {t:.2f} "
          f"| direct / ts {d / t:.2f}x, buffered / ts {b / t:.2f}x", flush=True)
