"""Where retile.dask.to_zarr's time goes in dask_peer's setting: per-worker tasks and durations."""
import os, sys, time, collections
sys.path.insert(0, "bench")
import dask, distributed, numpy as np
import dask_peer as P   # reuses source(), cluster(), tile, shard, codec
import retile.dask
KW = dict(pyramid="mean", levels=4) if os.environ.get("PYR") == "1" else {}

def run(client, x, label):
    out = P.fresh("diag.zarr")
    for rep in range(3):
        with distributed.get_task_stream(client) as ts:
            t = time.perf_counter()
            retile.dask.to_zarr(x, out, tile=P.tile, shard=P.shard, codec=P.codec, overwrite=True, **KW)
            wall = time.perf_counter() - t
        per = collections.defaultdict(list)
        t0 = min(s["startstops"][0]["start"] for s in ts.data)
        for s in ts.data:
            name = s["key"][0] if isinstance(s["key"], tuple) else s["key"]
            for ss in s["startstops"]:
                if ss["action"] == "compute" and "_write_block" in str(name):
                    per[s["worker"]].append((ss["start"] - t0, ss["stop"] - t0))
        counts = collections.Counter(len(v) for v in per.values())
        durs = [b - a for v in per.values() for a, b in v]
        starts = [a for v in per.values() for a, _ in v]
        ends = [b for v in per.values() for _, b in v]
        kinds = collections.Counter(str(s["key"][0] if isinstance(s["key"], tuple) else s["key"]).split("-")[0] for s in ts.data)
        print(f"{label} rep {rep}: wall {wall:.2f} s; write tasks on {len(per)} workers, tasks per worker {dict(counts)}; "
              f"durations mean {np.mean(durs):.2f} max {max(durs):.2f}; first start {min(starts):.2f} last start {max(starts):.2f} last end {max(ends):.2f}; "
              f"task kinds {dict(kinds)}", flush=True)

if __name__ == "__main__":
    dask.config.set({"distributed.worker.daemon": True})
    c, client = P.cluster(int(os.environ.get("NW", "16")))
    try:
        x = P.source()
        run(client, x, "misaligned")
        aligned = x.rechunk(P.shard_shape).persist(); distributed.wait(aligned)
        where = collections.Counter(len(v) for v in collections.Counter(w for ws in client.who_has(aligned).values() for w in ws).items())
        print("aligned chunks per worker:", sorted(collections.Counter(w for ws in client.who_has(aligned).values() for w in ws).values()), flush=True)
        run(client, aligned, "aligned")
    finally:
        client.close(); c.close()
