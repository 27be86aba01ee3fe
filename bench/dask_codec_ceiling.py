#!/usr/bin/env python3
"""Where retile.dask.to_zarr's time goes (issue #30), on a LocalCluster of
16 one-thread worker processes (127.0.0.1), from a dask array of 256
frames of 2048x2048 u16 persisted in chunks of whole shards (64x1024x1024),
so that no data moves between workers: the whole to_zarr; the same blocks
written by tasks run directly (each task's time); and c-blosc (numcodecs)
alone compressing the same blocks' chunks in the same workers, that is the
codec's ceiling on this cluster. blosc-zstd:1, then uncompressed; two
rounds each.

    python3 bench/dask_codec_ceiling.py DIR      # e.g. /dev/shm/dd on the device host
"""
import os, sys, time, shutil
import numpy as np, dask, dask.array as da, distributed
import retile, retile.dask
from retile._retile import _SlabJob
W = sys.argv[1] if len(sys.argv) > 1 else "/dev/shm/dd"
os.makedirs(W, exist_ok=True)
shape, tile, shard = (256, 2048, 2048), (64, 256, 256), (1, 4, 4)
ss = tuple(t * s for t, s in zip(tile, shard))
def frames(block, block_info=None):
    z0 = block_info[None]["array-location"][0][0]
    rng = np.random.default_rng(z0)
    return (200 + rng.integers(0, 64, block.shape, dtype=np.uint16)).astype(np.uint16)
def write_block(origin, extent, block, codec):
    t0 = time.perf_counter()
    job = _SlabJob(f"{W}/r.zarr", dict(shape=list(shape), tile=list(tile), dtype="uint16", shard=list(shard), codec=codec, writers=1), threads=1)
    t1 = time.perf_counter()
    s = job.write_block(origin, extent, np.ascontiguousarray(block))
    t2 = time.perf_counter()
    return (t1 - t0, t2 - t1, s["seconds"], os.getpid())
def codec_alone(block, codec):
    from numcodecs import Blosc, blosc
    blosc.set_nthreads(1)
    c = Blosc(cname="zstd", clevel=1, shuffle=Blosc.SHUFFLE) if codec != "none" else None
    t0 = time.perf_counter()
    n = 0
    for y in range(0, block.shape[1], 256):
        for x in range(0, block.shape[2], 256):
            ch = np.ascontiguousarray(block[:, y:y+256, x:x+256])
            n += len(c.encode(ch)) if c else ch.nbytes
    return time.perf_counter() - t0
if __name__ == "__main__":
    dask.config.set({"distributed.worker.daemon": True})
    c = distributed.LocalCluster(n_workers=16, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None, memory_limit=None)
    client = distributed.Client(c)
    x = da.map_blocks(frames, da.empty(shape, chunks=ss, dtype=np.uint16), dtype=np.uint16).persist()
    distributed.wait(x)
    for codec in ["blosc-zstd:1", "none"]:
        for rep in range(2):
            shutil.rmtree(f"{W}/r.zarr", ignore_errors=True)
            t = time.perf_counter()
            retile.dask.to_zarr(x, f"{W}/r.zarr", tile=tile, shard=shard, codec=codec, overwrite=True)
            whole = time.perf_counter() - t
            job = _SlabJob(f"{W}/r.zarr", dict(shape=list(shape), tile=list(tile), dtype="uint16", shard=list(shard), codec=codec), overwrite=True)
            job.begin()
            d = x.to_delayed()
            t = time.perf_counter()
            futs = [client.compute(dask.delayed(write_block, pure=False)([i*64, j*1024, k*1024], [64, 1024, 1024], d[i, j, k], codec)) for i in range(4) for j in range(2) for k in range(2)]
            res = client.gather(futs)
            direct = time.perf_counter() - t
            job.finish()
            t = time.perf_counter()
            pr = client.gather([client.compute(dask.delayed(codec_alone, pure=False)(d[i, j, k], codec)) for i in range(4) for j in range(2) for k in range(2)])
            pwall = time.perf_counter() - t
            mk = [r[0] for r in res]; wr = [r[1] for r in res]; ss_ = [r[2] for r in res]
            print(f"{codec} rep {rep}: to_zarr {whole:.2f} s; direct tasks wall {direct:.2f} s, job make {max(mk):.3f}, write_block mean {np.mean(wr):.2f} max {max(wr):.2f} (stream seconds mean {np.mean(ss_):.2f}); numcodecs alone per block mean {np.mean(pr):.2f} max {max(pr):.2f} wall {pwall:.2f}; pids {len(set(r[3] for r in res))}", flush=True)
    client.close(); c.close()
    shutil.rmtree(W, ignore_errors=True)
