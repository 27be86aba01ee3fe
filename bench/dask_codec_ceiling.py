#!/usr/bin/env python3
"""Where retile.dask.to_zarr's time goes (issue #30), on a LocalCluster of
WORKERS one-thread worker processes (127.0.0.1), from a dask array of
camera-like u16 frames persisted in chunks of whole shards, so that no data
moves between workers. For blosc-zstd:1 and then uncompressed, two rounds
each, it prints:

1. the whole to_zarr;
2. the same blocks written by tasks run directly (each task's write_block);
3. c-blosc (numcodecs, one thread) alone compressing the same blocks'
   chunks in the same workers: the codec's ceiling on this cluster.

    python3 bench/dask_codec_ceiling.py DIR      # e.g. /dev/shm/dd on the device host

Environment: PLANES=256, SIZE=2048 (frames SIZE x SIZE), TILE=64,256,256,
SHARD=1,4,4, WORKERS=16.
"""
import os
import shutil
import sys
import time

import dask
import dask.array as da
import distributed
import numpy as np

import retile.dask
from retile._retile import _SlabJob

import cloudpickle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frames as _frames  # noqa: E402

cloudpickle.register_pickle_by_value(_frames)  # the workers cannot import it

work = sys.argv[1]
size = int(os.environ.get("SIZE", "2048"))
shape = (int(os.environ.get("PLANES", "256")), size, size)
tile = tuple(int(n) for n in os.environ.get("TILE", "64,256,256").split(","))
shard = tuple(int(n) for n in os.environ.get("SHARD", "1,4,4").split(","))
workers = int(os.environ.get("WORKERS", "16"))
shard_shape = tuple(t * k for t, k in zip(tile, shard))
out = os.path.join(work, "r.zarr")


def frames(block, block_info=None):
    """Camera-like frames, dask_peer.py's: a smooth pattern, its plane index and a little noise."""
    return _frames.scene_block(block_info[None]["array-location"])


def options(codec):
    return dict(shape=list(shape), tile=list(tile), dtype="uint16", shard=list(shard), codec=codec)


def write_block(origin, extent, block, codec):
    """A task of to_zarr's, run directly: its write_block's seconds."""
    job = _SlabJob(out, dict(options(codec), writers=1), threads=1)
    started = time.perf_counter()
    job.write_block(origin, extent, np.ascontiguousarray(block))
    return time.perf_counter() - started


def codec_alone(block, codec):
    """c-blosc alone (one thread) on the block's chunks: its seconds."""
    from numcodecs import Blosc, blosc
    blosc.set_nthreads(1)
    name = codec.split(":")[0].split("-")[-1]
    c = Blosc(cname=name, clevel=1, shuffle=Blosc.SHUFFLE) if codec != "none" else None
    started = time.perf_counter()
    for index in np.ndindex(*(-(-n // t) for n, t in zip(block.shape, tile))):
        chunk = np.ascontiguousarray(block[tuple(slice(i * t, (i + 1) * t) for i, t in zip(index, tile))])
        if c is not None:
            c.encode(chunk)
    return time.perf_counter() - started


def on_blocks(client, x, fn, codec):
    """`fn(origin, extent, block, codec)` on every block of x, in its
    worker: the wall time and each block's result."""
    blocks = x.to_delayed()
    bounds = retile.dask._chunk_bounds(x.chunks)
    calls = []
    for index in np.ndindex(*blocks.shape):
        box = [bounds[d][k] for d, k in enumerate(index)]
        calls.append(dask.delayed(fn, pure=False)([a for a, _ in box], [b - a for a, b in box], blocks[index], codec))
    started = time.perf_counter()
    results = client.gather(client.compute(calls))
    return time.perf_counter() - started, results


def main(client):
    x = da.map_blocks(frames, da.empty(shape, chunks=shard_shape, dtype=np.uint16), dtype=np.uint16).persist()
    distributed.wait(x)
    print(f"{shape} u16 ({x.nbytes / 1e9:.2f} GB) in {x.npartitions} chunks of whole shards {shard_shape}, "
          f"tile {tile}, {workers} workers x 1 thread", flush=True)
    for codec in ["blosc-zstd:1", "none"]:
        for rep in range(2):
            started = time.perf_counter()
            retile.dask.to_zarr(x, out, tile=tile, shard=shard, codec=codec, overwrite=True)
            whole = time.perf_counter() - started
            job = _SlabJob(out, options(codec), overwrite=True)
            job.begin()
            direct, tasks = on_blocks(client, x, write_block, codec)
            job.finish()
            alone, codecs = on_blocks(client, x, lambda o, e, b, c: codec_alone(b, c), codec)
            print(f"{codec} rep {rep}: to_zarr {whole:.2f} s; its tasks run directly {direct:.2f} s "
                  f"(write_block mean {np.mean(tasks):.2f}, max {max(tasks):.2f} s); c-blosc alone on the "
                  f"same blocks {alone:.2f} s (mean {np.mean(codecs):.2f}, max {max(codecs):.2f} s); "
                  f"to_zarr at {alone / whole:.2f} of the codec alone", flush=True)


if __name__ == "__main__":
    dask.config.set({"distributed.worker.daemon": True})
    os.makedirs(work, exist_ok=True)
    cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, memory_limit=None)
    client = distributed.Client(cluster)
    try:
        main(client)
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(work, ignore_errors=True)
