"""Where a two-phase pyramid's time goes: dask_peer's array in chunks of
whole shards, retile.dask.to_zarr's 4-level mean pyramid, and its task
stream summarised by kind (first start, last end, mean duration, count),
relative to the job's start; one phase beside it.

    python3 phase_tasks.py DIR   (environment as bench/dask_peer.py's; ROUNDS=2)
"""
import os
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import dask  # noqa: E402
import distributed  # noqa: E402
from dask.utils import key_split  # noqa: E402

import dask_peer as p  # noqa: E402
import retile.dask  # noqa: E402


def main():
    os.makedirs(p.work, exist_ok=True)
    c, client = p.cluster(max(p.workers))
    try:
        x = p.source().rechunk(p.shard_shape).persist()
        distributed.wait(x)
        out = os.path.join(p.work, "pt.zarr")
        for r in range(int(os.environ.get("ROUNDS", "2"))):
            for two in (True, False):
                retile.dask._in_two_phases = lambda *a: two
                with distributed.get_task_stream(client) as ts:
                    t0 = time.time()
                    s = retile.dask.to_zarr(x, out, tile=p.tile, shard=p.shard, codec=p.codec, pyramid="mean",
                                            levels=4, overwrite=True)
                    t1 = time.time()
                kinds = defaultdict(list)
                for t in ts.data:
                    for st in t["startstops"]:
                        if st["action"] == "compute":
                            kinds[key_split(t["key"])].append(
                                (st["start"] - t0, st["stop"] - t0, t["worker"]))
                print(f"round {r}, {s['phases']} phase(s): {t1 - t0:.2f} s", flush=True)
                for k, v in sorted(kinds.items(), key=lambda kv: min(a for a, _, _ in kv[1])):
                    print(f"  {k[:40]:40s} n={len(v):3d} start {min(a for a, _, _ in v):5.2f}  end "
                          f"{max(b for _, b, _ in v):5.2f}  mean {sum(b - a for a, b, _ in v) / len(v):5.2f} s  "
                          f"workers {len(set(w for _, _, w in v))}", flush=True)
    finally:
        client.close()
        c.close()


if __name__ == "__main__":
    dask.config.set({"distributed.worker.daemon": True})
    main()
