"""The direct-I/O rule (Dest::for_chunks_of) measured on a real disk: the
CLI before it (direct I/O for every chunk), the CLI with it (the page cache below
64 KiB chunks), and the CLI before it with --buffered-io, interleaved, best of
REPS, for chunks of 8 KiB to 8 MiB (codec none, synthetic input, --sync end:
every file synced before the CLI exits), with the disk alone in the same run.

    python3 small_chunks_rule.py OLD_RETILE NEW_RETILE DIR
    CASES="128 KiB,8 MiB" REPS=3 python3 small_chunks_rule.py ...   # some sizes only
"""
import os, shutil, subprocess, sys, time

old, new, work = sys.argv[1:4]
planes, H, W = int(os.environ.get("PLANES", "128")), 2048, 2048
reps = int(os.environ.get("REPS", "2"))
gb = planes * H * W * 2 / 1e9
cases = [  # (uncompressed chunk bytes, chunk, shard)
    ("8 KiB", (1, 64, 64), (1, 32, 32)),
    ("16 KiB", (1, 64, 128), (1, 32, 16)),
    ("32 KiB", (1, 128, 128), (1, 16, 16)),
    ("64 KiB", (1, 128, 256), (1, 16, 8)),
    ("128 KiB", (1, 256, 256), (1, 8, 8)),
    ("8 MiB", (64, 256, 256), (1, 4, 4)),
]
only = [c.strip() for c in os.environ.get("CASES", "").split(",") if c.strip()]
cases = [c for c in cases if not only or c[0] in only]
os.makedirs(work, exist_ok=True)


def run(retile, chunk, shard, *extra):
    out = os.path.join(work, "s.zarr")
    cmd = [retile, "stream", "--shape", f"{planes},{H},{W}", "--tile", ",".join(map(str, chunk)),
           "--shard", ",".join(map(str, shard)), "--dtype", "u16", "--output", out, "--overwrite", *extra]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode:
        raise RuntimeError(r.stderr[-300:])
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
    best = {"direct (before)": 1e9, "rule (after)": 1e9, "buffered (before, --buffered-io)": 1e9}
    for _ in range(reps):
        best["direct (before)"] = min(best["direct (before)"], run(old, chunk, shard))
        best["rule (after)"] = min(best["rule (after)"], run(new, chunk, shard))
        best["buffered (before, --buffered-io)"] = min(best["buffered (before, --buffered-io)"],
                                                      run(old, chunk, shard, "--buffered-io"))
    d, r, b = (gb / v for v in best.values())
    print(f"{label} chunks {chunk}, shard {shard}: direct {d:.2f} | rule {r:.2f} ({r / d:.2f}x direct) "
          f"| buffered {b:.2f} ({b / d:.2f}x direct)", flush=True)
print(f"the disk alone: {disk_ceiling():.2f} GB/s (again, after)")
