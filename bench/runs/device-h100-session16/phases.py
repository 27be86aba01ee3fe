"""A/B on one cluster: retile.dask.to_zarr's 4-level mean pyramid written
in one phase (blocks of whole shards of every level) and in two (level 0
in blocks of its shards, then the levels below from level 1), interleaved,
with dask_peer.py's array, cluster and codec; both stores compared level by
level, and each level checked against its parent halved.

    python3 phases.py DIR   (environment as bench/dask_peer.py's; ROUNDS=3;
                             ALIGNED=1: dask chunks of whole shards)
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import dask  # noqa: E402
import dask.array as da  # noqa: E402

import dask_peer as p  # noqa: E402
import retile.dask  # noqa: E402

rounds = int(os.environ.get("ROUNDS", "3"))


def write(two, x, out):
    retile.dask._in_two_phases = lambda *a: two
    started = time.perf_counter()
    s = retile.dask.to_zarr(x, out, tile=p.tile, shard=p.shard, codec=p.codec, pyramid="mean", levels=4,
                            overwrite=True)
    return time.perf_counter() - started, s


def main():
    os.makedirs(p.work, exist_ok=True)
    c, client = p.cluster(max(p.workers))
    try:
        x = p.source()
        if os.environ.get("ALIGNED"):  # chunks of whole shards: no realigning for level 0
            x = x.rechunk(p.shard_shape).persist()
            p.distributed.wait(x)
        print(f"{p.shape} u16 ({p.gb:.2f} GB), tile {p.tile}, shard {p.shard}, codec {p.codec}, "
              f"{max(p.workers)} workers x 1 thread, dask chunks {x.chunksize}", flush=True)
        outs = {two: os.path.join(p.work, f"phases-{int(two) + 1}.zarr") for two in (False, True)}
        for r in range(rounds):
            for two in (False, True):
                seconds, s = write(two, x, outs[two])
                print(f"round {r}: {s['phases']} phase(s), {s['slabs']} level-0 blocks: {seconds:.2f} s "
                      f"({p.gb / seconds:.2f} GB/s), stored {s['stored_bytes'] / 1e9:.3f} GB", flush=True)
        for k in range(4):
            a, b = (da.from_zarr(os.path.join(outs[two], str(k))) for two in (False, True))
            print(f"level {k}: the two stores equal: {bool((a == b).all().compute())}", flush=True)
        print(f"level 0 equals the source: {p.equal(os.path.join(outs[True], '0'), x)}; "
              f"each level its parent halved: {p.levels_halve(outs[True], 4)}", flush=True)
    finally:
        client.close()
        c.close()


if __name__ == "__main__":
    dask.config.set({"distributed.worker.daemon": True})
    main()
