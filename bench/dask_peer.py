#!/usr/bin/env python3
"""retile on Dask (issue #30) beside Dask's own writers, in one run, on the
same LocalCluster of worker processes (127.0.0.1), from the same dask
array (camera-like u16 frames made by the tasks and held in the workers'
memory before the clock starts, in dask chunks that line up with no
shard), into the same file system:

1. retile.dask.to_zarr vs dask.array.to_zarr into a zarr-python sharded
   array whose shards are retile's (the dask array rechunked to whole
   shards first, as zarr-python needs), then both from the array held in
   chunks of whole shards (neither moving data between workers);
2. the same with a 4-level mean pyramid vs ome-zarr-py's write_image
   (method local_mean, 4 levels, the same chunks; from the array's
   chunks, then from chunks of whole shards, which retile writes in two
   phases), and the codec's
   ceiling: c-blosc alone (numcodecs, one thread a worker) on every
   level's tiles of the same array, its seconds spread evenly over the
   workers (no writer using numcodecs' c-blosc is faster; retile's c-blosc
   keeps a zstd context per thread, which in Dask's workers, where glibc
   maps every large allocation, is faster than this);
3. retile.rechunk(client=) vs dask.array.from_zarr + rechunk + to_zarr
   into the same sharded layout;
4. retile.dask.to_zarr's scaling with WORKERS workers (one thread each).

Each figure is printed beside the peer's and the ratio (peer seconds /
retile seconds: above 1, retile is faster); every store is read back
(level 0 compared with the source on the cluster, the levels' shapes
checked, and each of retile's levels compared with its parent halved).

    python3 bench/dask_peer.py DIR
Environment: PLANES=256, SIZE=2048 (frames SIZE x SIZE), TILE=64,256,256,
SHARD=1,4,4, CODEC=blosc-zstd:1, WORKERS=2,4,8,16 (the comparisons use the
largest), REPS=1 (best of).
"""
import os
import shutil
import sys
import time

import dask
import dask.array as da
import distributed
import numpy as np
import zarr

import retile
import retile.dask

import cloudpickle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frames as _frames  # noqa: E402

cloudpickle.register_pickle_by_value(_frames)  # the workers cannot import it

work = os.path.abspath(sys.argv[1])
planes = int(os.environ.get("PLANES", "256"))
size = int(os.environ.get("SIZE", "2048"))
tile = tuple(int(t) for t in os.environ.get("TILE", "64,256,256").split(","))
shard = tuple(int(t) for t in os.environ.get("SHARD", "1,4,4").split(","))
codec = os.environ.get("CODEC", "blosc-zstd:1")
workers = [int(w) for w in os.environ.get("WORKERS", "2,4,8,16").split(",")]
reps = int(os.environ.get("REPS", "1"))
shape = (planes, size, size)
shard_shape = tuple(t * k for t, k in zip(tile, shard))
gb = np.prod(shape) * 2 / 1e9


def frames(block, block_info=None):
    """Camera-like frames: a smooth pattern, its plane index and a little noise."""
    return _frames.scene_block(block_info[None]["array-location"])


def source():
    """The frames, computed and held in the workers' memory (persisted) in
    dask chunks of 24 x (size/2 + 8), lined up with no shard: what is timed
    is the writing of an array a cluster computed, not its computing."""
    chunks = (24, size // 2 + 8, size // 2 + 8)
    x = da.map_blocks(frames, da.empty(shape, chunks=chunks, dtype=np.uint16), dtype=np.uint16).persist()
    distributed.wait(x)
    return x


def zarr_codecs():
    name, _, level = codec.partition(":")
    level = int(level or 1)
    if name == "none":
        return None
    if name == "zstd":
        return [zarr.codecs.ZstdCodec(level=level)]
    if name.startswith("blosc-"):
        return [zarr.codecs.BloscCodec(cname=name.split("-")[1], clevel=level, shuffle="shuffle")]
    raise SystemExit(f"CODEC {codec}: use none, zstd:L or blosc-NAME:L")


def fresh(name):
    path = os.path.join(work, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


def best(f):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def equal(path, x):
    """Level 0 at `path` equals x, computed on the cluster."""
    return bool((da.from_zarr(path) == x).all().compute())


def report(what, ours, peer):
    print(f"{what:52s} retile {ours:7.2f} s ({gb / ours:5.2f} GB/s)  peer {peer:7.2f} s "
          f"({gb / peer:5.2f} GB/s)  ratio {peer / ours:5.2f}x", flush=True)


def halved(block):
    """The mean of each 2x2 of the last two dimensions (odd edges dropped)."""
    h, w = block.shape[-2] // 2 * 2, block.shape[-1] // 2 * 2
    b = block[..., :h, :w].astype(np.uint32)
    return ((b[..., 0::2, 0::2] + b[..., 1::2, 0::2] + b[..., 0::2, 1::2] + b[..., 1::2, 1::2] + 2) // 4).astype(block.dtype)


def mean_halved(block):
    """retile's mean halving of the last two dimensions (even extents):
    the mean of each 2x2, rounded half to even."""
    b = block.astype(np.uint32)
    total = b[..., 0::2, 0::2] + b[..., 1::2, 0::2] + b[..., 0::2, 1::2] + b[..., 1::2, 1::2]
    q, r = total // 4, total % 4
    return (q + ((r > 2) | ((r == 2) & (q % 2 == 1)))).astype(block.dtype)


def levels_halve(path, levels):
    """Each level k >= 1 of the pyramid at `path` is level k - 1 halved,
    checked on the cluster."""
    for k in range(1, levels):
        parent = da.from_zarr(os.path.join(path, str(k - 1)))
        parent = parent.rechunk((parent.chunks[0][0], -1, -1))
        child = parent.map_blocks(mean_halved, chunks=(parent.chunks[0], (parent.shape[1] // 2,),
                                                      (parent.shape[2] // 2,)))
        if not bool((da.from_zarr(os.path.join(path, str(k))) == child).all().compute()):
            return False
    return True


def codec_seconds(block, levels):
    """c-blosc's seconds (one thread, numcodecs) compressing the tiles of
    ``block`` and of its ``levels - 1`` halvings (made before the clock)."""
    from numcodecs import Blosc, blosc
    blosc.set_nthreads(1)
    name, _, level = codec.partition(":")
    c = Blosc(cname=name.split("-")[-1], clevel=int(level or 1), shuffle=Blosc.SHUFFLE)
    pieces = [block]
    for _ in range(levels - 1):
        pieces.append(halved(pieces[-1]))
    started = time.perf_counter()
    for piece in pieces:
        for index in np.ndindex(*(-(-n // t) for n, t in zip(piece.shape, tile))):
            c.encode(np.ascontiguousarray(piece[tuple(slice(i * t, (i + 1) * t) for i, t in zip(index, tile))]))
    return time.perf_counter() - started


def codec_ceiling(client, x, levels):
    """c-blosc alone on every level's bytes of a ``levels``-level mean
    pyramid of ``x`` (each worker its own blocks, nothing moved), its
    seconds summed and spread evenly over the cluster's threads: a bound
    no writer using numcodecs' c-blosc beats. None for an uncompressed
    CODEC or a codec other than blosc's."""
    if not codec.startswith("blosc-"):
        return None
    seconds = x.map_blocks(lambda b: np.full((1,) * b.ndim, codec_seconds(b, levels)),
                           chunks=(1,) * x.ndim, dtype=float).compute()
    return float(seconds.sum()) / sum(client.nthreads().values())


def pyramids(x, what):
    """retile's 4-level mean pyramid of ``x`` beside ome-zarr-py's
    write_image of the same array, both read back; their seconds (the
    peer's None where ome-zarr-py is not installed)."""
    out = fresh("retile-pyramid.zarr")
    phases = []
    ours = best(lambda: phases.append(retile.dask.to_zarr(
        x, out, tile=tile, shard=shard, codec=codec, pyramid="mean", levels=4, overwrite=True)["phases"]))
    group = zarr.open_group(out, mode="r")
    assert [group[str(k)].shape[1] for k in range(4)] == [-(-size // 2**k) for k in range(4)]
    assert equal(os.path.join(out, "0"), x), "retile's level 0 differs"
    assert levels_halve(out, 4), "a level of retile's pyramid is not its parent halved"
    peer_out = fresh("ome-zarr-py.zarr")

    def ome():
        from ome_zarr.scale import Methods
        from ome_zarr.writer import write_image
        shutil.rmtree(peer_out, ignore_errors=True)
        options = dict(chunks=tile)
        if zarr_codecs():
            options["compressors"] = zarr_codecs()
        write_image(x, zarr.open_group(peer_out, mode="w"), scale_factors=[2, 4, 8], method=Methods.LOCAL_MEAN,
                    axes="tyx", storage_options=options)

    try:
        import ome_zarr  # noqa: F401
    except ImportError:  # a host without it (on the device: bundle it with DASK=1 bench/device_bundle.sh)
        print(f"{what}: retile {ours:.2f} s ({gb / ours:.2f} GB/s), in {phases[0]} phase(s); ome-zarr-py is "
              "not installed here, so its write_image was not run", flush=True)
        return ours, None
    theirs = best(ome)
    datasets = zarr.open_group(peer_out, mode="r").attrs["ome"]["multiscales"][0]["datasets"]
    assert len(datasets) == 4, datasets
    assert equal(os.path.join(peer_out, datasets[0]["path"]), x), "ome-zarr-py's level 0 differs"
    report(what, ours, theirs)
    print(f"  retile wrote it in {phases[0]} phase(s)", flush=True)
    return ours, theirs


def compare(client):
    x = source()
    out = fresh("retile.zarr")
    ours = best(lambda: retile.dask.to_zarr(x, out, tile=tile, shard=shard, codec=codec, overwrite=True))
    assert equal(out, x), "retile's store differs"
    peer_out = fresh("dask.zarr")

    def peer():
        shutil.rmtree(peer_out, ignore_errors=True)
        z = zarr.create_array(peer_out, shape=shape, chunks=tile, shards=shard_shape, dtype="uint16",
                              compressors=zarr_codecs())
        da.to_zarr(x.rechunk(shard_shape), z)

    theirs = best(peer)
    assert equal(peer_out, x), "dask's store differs"
    report("to_zarr vs dask.array.to_zarr (sharded)", ours, theirs)

    # the same array held in chunks of whole shards: neither writer moves data between workers
    aligned = x.rechunk(shard_shape).persist()
    distributed.wait(aligned)
    ours = best(lambda: retile.dask.to_zarr(aligned, out, tile=tile, shard=shard, codec=codec, overwrite=True))
    assert equal(out, x), "retile's store differs"

    def peer_aligned():
        shutil.rmtree(peer_out, ignore_errors=True)
        z = zarr.create_array(peer_out, shape=shape, chunks=tile, shards=shard_shape, dtype="uint16",
                              compressors=zarr_codecs())
        da.to_zarr(aligned, z)

    theirs = best(peer_aligned)
    assert equal(peer_out, x), "dask's store differs"
    report("the same from chunks of whole shards", ours, theirs)
    del aligned

    # the cluster's own part of either: the array's chunks gathered into
    # retile's blocks of whole shards, one per task, in the workers (nothing
    # written); dask's rechunk to whole shards gathers the same here
    units = [t * s for t, s in zip(tile, shard)]
    blocks, _ = retile.dask._blocks(x, units, sum(client.nthreads().values()))
    gather = best(lambda: blocks.map_blocks(
        lambda b: np.zeros((1,) * b.ndim, b.dtype), chunks=(1,) * blocks.ndim).compute())
    print(f"  the chunks gathered into retile's {blocks.npartitions} blocks alone (dask, nothing written): "
          f"{gather:.2f} s ({gb / gather:.2f} GB/s)", flush=True)

    ours, theirs = pyramids(x, "4-level mean pyramid vs ome-zarr-py write_image")
    ceiling = codec_ceiling(client, x, levels=4)
    if ceiling:
        bound = "" if theirs is None else f"; no writer using numcodecs' c-blosc is more than {theirs / ceiling:.2f}x write_image"
        print(f"  c-blosc alone on the pyramid's bytes, spread evenly over the workers: {ceiling:.2f} s "
              f"({gb / ceiling:.2f} GB/s); retile at {ceiling / ours:.2f} of it{bound}", flush=True)
    # from chunks of whole shards of level 0, which retile writes in two phases
    aligned = x.rechunk(shard_shape).persist()
    distributed.wait(aligned)
    pyramids(aligned, "the same from chunks of whole shards")
    del aligned

    src = os.path.join(work, "retile.zarr")
    new_tile = (tile[0] // 2 or 1, tile[1] * 2, tile[2] * 2)
    new_shard = (2, max(1, shard[1] // 2), max(1, shard[2] // 2))
    new_shape = tuple(t * k for t, k in zip(new_tile, new_shard))
    out = fresh("retile-rechunked.zarr")
    ours = best(lambda: retile.rechunk(src, out, tile=new_tile, shard=new_shard, codec=codec, client=client,
                                       overwrite=True))
    assert equal(out, x), "retile's rechunked store differs"
    peer_out = fresh("dask-rechunked.zarr")

    def rechunk_peer():
        shutil.rmtree(peer_out, ignore_errors=True)
        z = zarr.create_array(peer_out, shape=shape, chunks=new_tile, shards=new_shape, dtype="uint16",
                              compressors=zarr_codecs())
        da.to_zarr(da.from_zarr(src).rechunk(new_shape), z)

    theirs = best(rechunk_peer)
    assert equal(peer_out, x), "dask's rechunked store differs"
    report("rechunk(client=) vs dask rechunk + to_zarr", ours, theirs)


def cluster(n):
    c = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                 dashboard_address=None, memory_limit=None)
    return c, distributed.Client(c)


def main():
    os.makedirs(work, exist_ok=True)
    print(f"{shape} u16 ({gb:.2f} GB), tile {tile}, shard {shard}, codec {codec}, "
          f"{os.cpu_count()} cores, best of {reps}", flush=True)
    c, client = cluster(max(workers))
    print(f"comparisons on {max(workers)} workers x 1 thread", flush=True)
    try:
        compare(client)
    finally:
        client.close()
        c.close()
    first = None
    for n in workers:
        c, client = cluster(n)
        try:
            x = source()
            out = fresh("scaling.zarr")
            seconds = best(lambda: retile.dask.to_zarr(x, out, tile=tile, shard=shard, codec=codec,
                                                       overwrite=True))
            assert equal(out, x)
        finally:
            client.close()
            c.close()
        first = first or seconds
        print(f"scaling: {n:3d} workers  {seconds:7.2f} s ({gb / seconds:5.2f} GB/s)  "
              f"speed-up over {workers[0]} workers {first / seconds:5.2f}x", flush=True)


if __name__ == "__main__":
    dask.config.set({"distributed.worker.daemon": True})
    main()
