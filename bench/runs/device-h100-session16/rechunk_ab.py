"""retile.rechunk(client=) with whichever retile is first on the path:
dask_peer's array written by retile.dask.to_zarr as the source (once),
then re-tiled as dask_peer re-tiles it, ROUNDS times; seconds each, the
tasks' count, the store read back.

    python3 rechunk_ab.py DIR LABEL   (environment as bench/dask_peer.py's; ROUNDS=3)
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import dask  # noqa: E402

import dask_peer as p  # noqa: E402
import retile  # noqa: E402
import retile.dask  # noqa: E402


def main():
    label = sys.argv[2]
    os.makedirs(p.work, exist_ok=True)
    c, client = p.cluster(max(p.workers))
    try:
        src = os.path.join(p.work, "retile.zarr")
        if not os.path.exists(src):
            retile.dask.to_zarr(p.source(), src, tile=p.tile, shard=p.shard, codec=p.codec, overwrite=True)
        new_tile = (p.tile[0] // 2 or 1, p.tile[1] * 2, p.tile[2] * 2)
        new_shard = (2, max(1, p.shard[1] // 2), max(1, p.shard[2] // 2))
        out = os.path.join(p.work, "rechunked.zarr")
        for r in range(int(os.environ.get("ROUNDS", "3"))):
            started = time.perf_counter()
            s = retile.rechunk(src, out, tile=new_tile, shard=new_shard, codec=p.codec, client=client,
                               overwrite=True)
            seconds = time.perf_counter() - started
            print(f"{label} ({retile.__file__}): round {r}: {seconds:.2f} s ({p.gb / seconds:.2f} GB/s), "
                  f"{s['slabs']} tasks", flush=True)
        import dask.array as da
        print(f"{label}: read back equal: {bool((da.from_zarr(out) == da.from_zarr(src)).all().compute())}",
              flush=True)
    finally:
        client.close()
        c.close()


if __name__ == "__main__":
    dask.config.set({"distributed.worker.daemon": True})
    main()
