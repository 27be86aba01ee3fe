#!/usr/bin/env python3
"""How fast this host hands a file's bytes to a process: pread into
buffers on 1, 2, 4, 8 threads, and a memory mapping populated in windows
(MAP_POPULATE, madvise WILLNEED) and touched. Decides how `retile stream
--input FILE` reads (issue #28 item 2).

    python3 bench/file_reads_probe.py DIR [GB]
"""
import mmap
import os
import sys
import threading
import time

import numpy as np

work = sys.argv[1]
gb = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
os.makedirs(work, exist_ok=True)
path = os.path.join(work, "probe.raw")
size = int(gb * 1e9) // (16 << 20) * (16 << 20)
with open(path, "wb") as f:
    block = np.random.default_rng(1).integers(0, 255, size=16 << 20, dtype=np.uint8).tobytes()
    for _ in range(size // len(block)):
        f.write(block)
piece = 16 << 20


def pread(threads):
    fd = os.open(path, os.O_RDONLY)
    bufs = [bytearray(piece) for _ in range(threads)]
    pieces = size // piece

    def work(k):
        view = memoryview(bufs[k])
        for i in range(k, pieces, threads):
            n = os.preadv(fd, [view], i * piece)
            assert n == piece
    t = time.perf_counter()
    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    [x.start() for x in ts]
    [x.join() for x in ts]
    s = time.perf_counter() - t
    os.close(fd)
    return size / s / 1e9


def mapped(populate, window, touch_threads=1):
    fd = os.open(path, os.O_RDONLY)
    t = time.perf_counter()
    flags = mmap.MAP_SHARED | (mmap.MAP_POPULATE if populate == "map" else 0)
    m = mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ)
    arr = np.frombuffer(m, dtype=np.uint64)
    total = 0
    step = window // 8
    for start in range(0, len(arr), step):
        if populate == "willneed":
            m.madvise(mmap.MADV_WILLNEED, start * 8, min(window, size - start * 8))
        if populate == "populate_read" and hasattr(mmap, "MADV_POPULATE_READ"):
            m.madvise(mmap.MADV_POPULATE_READ, start * 8, min(window, size - start * 8))
        total += int(arr[start:start + step][::512].sum())  # one word per 4 KiB page
    s = time.perf_counter() - t
    del arr
    m.close()
    os.close(fd)
    return size / s / 1e9


print(f"{size / 1e9:.2f} GB in {work}, {os.cpu_count()} cores")
for threads in (1, 2, 4, 8):
    print(f"pread 16 MiB pieces, {threads} threads: {max(pread(threads) for _ in range(2)):.2f} GB/s")
for populate in ("none", "map", "willneed", "populate_read"):
    for window in (16 << 20, 256 << 20):
        if populate == "map" and window != 16 << 20:
            continue
        print(f"mmap, populate {populate}, windows of {window >> 20} MiB, touched: "
              f"{max(mapped(populate, window) for _ in range(2)):.2f} GB/s")
os.remove(path)
