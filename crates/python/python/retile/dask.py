"""retile on Dask: an array written by the tasks of whatever Dask scheduler
is active (a ``dask.distributed.Client``, or the local threaded one).

``to_zarr(x, output, tile=..., ...)`` writes ``x`` (a ``dask.array.Array``;
a numpy array, or any object with ``shape``, ``dtype`` and slicing, is cut
up by retile) as ``retile.Stream`` writes one array, with the same keyword
arguments. The array is cut into blocks of whole shards: along its first
dimension into slabs of whole shard rows (of every pyramid level: where a
level halves the first dimension too, a slab is a multiple of
``2**(levels-1)`` rows), and along the next dimensions too, into whole
shards of every level, where there would be fewer slabs than the
scheduler's threads. A dask
array whose chunks already start at shard boundaries is written block by
dask block, with no data moved between workers; any other is realigned to
the blocks whatever its chunks are. A pyramid from a dask array whose
chunks lie on whole shards of level 0 but not of every level (a level-3
shard of a 4-level pyramid spans 8 of level 0 along each halved
dimension) is written in two phases, so that level 0 stays where it is:
its chunks are written into level 0 and halved into level 1 by one task
each, then boxes of whole shards of every level below are made from
those level-1 pieces and written by one task each. On a ``distributed`` cluster the tasks
are spread over the workers by their threads, each where its block is
held when that worker has room. Each task streams its block through
retile's engine in its worker, the GIL released, writing every level's
shards for it. The caller makes the store ready
(locking it) before any task runs and writes the metadata claiming the
array only once every task has succeeded: until then, and after a failure,
the store claims no plane. A task that fails, or runs again after its
worker died, rewrites its own shards whole, so retries leave the same
store.

Needs the ``dask`` extra: ``pip install 'retile[dask]'`` (``dask[array]``
and ``distributed``).

Example::

    >>> import dask.array as da, numpy as np, retile.dask, tempfile, os, zarr
    >>> x = da.arange(64 * 32, dtype="uint16").reshape(64, 32).rechunk((10, 7))
    >>> out = os.path.join(tempfile.mkdtemp(), "x.zarr")
    >>> retile.dask.to_zarr(x, out, tile=(8, 16), shard=(2, 2))["planes"]
    64
    >>> bool((zarr.open_array(out)[:] == x.compute()).all())
    True
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from urllib.parse import urlparse

try:
    import dask
    import dask.array as da
except ImportError as e:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "retile.dask needs Dask: install retile's dask extra, pip install 'retile[dask]' "
        "(dask[array] and distributed)"
    ) from e

import numpy as np

from ._retile import _SlabJob

__all__ = ["to_zarr"]

#: About this many bytes of level 0 go in one task's slab, unless fewer
#: slabs than the scheduler's threads would result.
SLAB_BYTES = 128 << 20

# the keyword arguments of retile.Stream that describe the array
_ARRAY_KEYS = (
    "shard", "codec", "fill", "dim_names", "shuffle", "writers", "buffered_io", "pyramid",
    "levels", "downsample", "ngff", "dim_types", "units", "scale", "codec_on", "sync",
    "attributes",
)


def _client():
    """The ``distributed`` client of the active scheduler, or ``None``
    (a local one: threads, processes, synchronous)."""
    try:
        from distributed import Client
    except ImportError:
        return None
    scheduler = dask.base.get_scheduler()
    client = getattr(scheduler, "__self__", None)
    return client if isinstance(client, Client) else None


def _parallelism(client) -> int:
    """Threads that run tasks at once: the cluster's, or this machine's."""
    if client is not None:
        threads = sum(client.nthreads().values())
        if threads:
            return threads
    return os.cpu_count() or 1


def _workers(client) -> dict:
    """Each worker of ``client``'s cluster: its host and its task threads
    (empty without a cluster)."""
    if client is None:
        return {}
    return {
        address: (info.get("host") or urlparse(address).hostname, max(1, int(info.get("nthreads", 1))))
        for address, info in client.scheduler_info().get("workers", {}).items()
    }


def _host_threads(workers: dict) -> dict:
    """Task threads on each host of ``workers`` (as ``_workers`` gives them)."""
    hosts: dict = {}
    for host, threads in workers.values():
        hosts[host] = hosts.get(host, 0) + threads
    return hosts


def _task_threads(client) -> dict:
    """Task threads on each host of ``client``'s cluster (empty without one)."""
    return _host_threads(_workers(client))


def _spread(workers: dict, holders: list) -> list:
    """A worker for each of ``len(holders)`` tasks, so that none runs more
    than its part of them (its share of the cluster's task threads, rounded
    up) and a task's block stays where it is held where that worker has
    room: ``holders[i]`` are the workers holding task ``i``'s block. The
    others go to the worker, then the host, with the fewest tasks per
    thread. Left to Dask, a worker holding two blocks writes both, one
    after the other, while another has none: on 16 one-thread workers that
    made a job about 1.5x longer.

    >>> _spread({"a": ("h", 1), "b": ("h", 1)}, [["a"], ["a"], ["a"], []])
    ['a', 'a', 'b', 'b']
    """
    total = sum(threads for _, threads in workers.values())
    room = {w: math.ceil(len(holders) * threads / max(1, total)) for w, (_, threads) in workers.items()}
    taken = dict.fromkeys(workers, 0)
    host_threads = _host_threads(workers)
    host_taken = dict.fromkeys(host_threads, 0)
    chosen: list = [None] * len(holders)

    def take(task, worker):
        chosen[task] = worker
        taken[worker] += 1
        host_taken[workers[worker][0]] += 1

    for task, held in enumerate(holders):
        free = [w for w in held if w in room and taken[w] < room[w]]
        if free:
            take(task, free[0])
    for task in range(len(holders)):
        if chosen[task] is None and workers:
            take(task, min(workers, key=lambda w: (taken[w] / workers[w][1],
                                                   host_taken[workers[w][0]] / host_threads[workers[w][0]], w)))
    return chosen


def _placed(client, x, keys) -> list:
    """The worker each task should run on, one a key of ``keys`` (the
    keys of ``x``'s blocks, or ``None`` for tasks with no block), as
    ``_spread`` chooses them; ``None`` each without a cluster."""
    if client is None:
        return [None] * len(keys)
    held = client.who_has(x) if x is not None else {}
    return _spread(_workers(client), [list(held.get(key, ())) for key in keys])


def _on(worker):
    """The context in which a task made is meant for ``worker`` (it may
    run elsewhere once that worker is gone); none for ``None``."""
    if worker is None:
        return contextlib.nullcontext()
    return dask.annotate(workers=[worker], allow_other_workers=True)


def _fair_share(hosts: dict, tasks: int) -> int:
    """Threads for one task's tiling and writing: its machine's cores shared
    by the tasks that run there at once (its workers' task threads, or
    fewer where the job has fewer tasks than the cluster has threads; each
    worker process has pools of its own, and 16 processes each with pools
    of 16 threads would run 512 threads on 16 cores); 0 (every core)
    outside a ``distributed`` worker, where one process's tasks share its
    pools."""
    try:
        from distributed import get_worker
        host = urlparse(get_worker().address).hostname
    except (ImportError, ValueError):
        return 0
    here = max(1, hosts.get(host, 1))
    at_once = min(here, max(1, math.ceil(tasks * here / max(1, sum(hosts.values())))))
    return max(1, (os.cpu_count() or 1) // at_once)


def _slab_bounds(total: int, unit: int, unit_bytes: int, parallelism: int) -> list[tuple[int, int]]:
    """Slabs of whole units of ``unit`` planes covering ``total`` planes:
    about ``SLAB_BYTES`` each, but at least one per thread where the units
    allow."""
    units = max(1, math.ceil(total / unit))
    by_bytes = max(1, SLAB_BYTES // max(1, unit_bytes))
    per_slab = max(1, min(by_bytes, math.ceil(units / parallelism)))
    step = per_slab * unit
    return [(start, min(start + step, total)) for start in range(0, total, step)]


def _even_bounds(extent: int, unit: int, pieces: int, narrow: bool = True) -> list[tuple[int, int]]:
    """At most ``pieces`` parts of whole units of ``unit`` covering ``extent``
    (the last the rest; merged into the one before when less than a unit,
    unless ``narrow`` allows it)."""
    units = max(1, math.ceil(extent / unit))
    step = math.ceil(units / max(1, min(pieces, units))) * unit
    bounds = [(start, min(start + step, extent)) for start in range(0, extent, step)]
    if not narrow and len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] < unit:
        bounds[-2:] = [(bounds[-2][0], extent)]
    return bounds


def _block_bounds(shape, units, itemsize: int, parallelism: int, halved=None) -> list[list[tuple[int, int]]]:
    """The bounds of the blocks along each dimension: slabs along the first
    (``_slab_bounds``), then the next dimensions cut into whole units until
    there are as many blocks as threads (or the units allow no more). Along
    a dimension in ``halved`` (a pyramid's) no block is narrower than a
    unit, or the whole extent: a short last part joins the one before."""
    halved = halved or [False] * len(shape)
    plane_bytes = math.prod(shape[1:]) * itemsize
    bounds = [_slab_bounds(shape[0], units[0], units[0] * plane_bytes, parallelism)]
    for extent, unit, h in zip(shape[1:], units[1:], halved[1:]):
        blocks = math.prod(len(b) for b in bounds)
        bounds.append(_even_bounds(extent, unit, math.ceil(parallelism / blocks), narrow=not h))
    return bounds


def _chunk_bounds(chunks) -> list[list[tuple[int, int]]]:
    """The bounds of a dask array's chunks along each dimension."""
    out = []
    for sizes in chunks:
        starts = np.cumsum((0,) + tuple(sizes))
        out.append([(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])])
    return out


def _on_units(bounds, units, halved, shape) -> bool:
    """Whether every block starts at a multiple of its dimension's unit and,
    along a halved dimension below the first, is at least a unit (or the
    whole extent) wide, as a pyramid's blocks must be."""
    for d, (dim, unit) in enumerate(zip(bounds, units)):
        narrowest = min(unit, shape[d]) if d and halved[d] else 1
        if any(start % unit or end - start < narrowest for start, end in dim):
            return False
    return True


def _own_bounds(x, units, halved, planned, shape):
    """The bounds of ``x``'s own chunks where ``x`` is a dask array whose
    chunks start at the units (wide enough along the dimensions
    ``halved``) and are at least as many as the ``planned`` blocks, so
    that they can be written as they lie; ``None`` otherwise."""
    if not isinstance(x, da.Array):
        return None
    own = _chunk_bounds(x.chunks)
    if _on_units(own, units, halved, shape) and math.prod(map(len, own)) >= math.prod(map(len, planned)):
        return own
    return None


def _blocks(x, units, parallelism, halved=None):
    """``x`` as a dask array of blocks of whole units, and its blocks'
    bounds: a dask array's own chunks where they start at the units (wide
    enough along the dimensions ``halved``) and are at least as many as
    planned (so no data moves between workers), the planned blocks
    otherwise."""
    shape = tuple(int(n) for n in x.shape)
    halved = halved or [False] * len(shape)
    planned = _block_bounds(shape, units, np.dtype(x.dtype).itemsize, parallelism, halved)
    own = _own_bounds(x, units, halved, planned, shape)
    if own is not None:
        return x, own
    chunks = tuple(tuple(end - start for start, end in dim) for dim in planned)
    x = x.rechunk(chunks) if isinstance(x, da.Array) else da.from_array(x, chunks=chunks)
    return x, planned


def _task_job(output, options, store, hosts, tasks):
    """A task's own job, with its fair share of the machine's cores for
    tiling and writing where no ``threads`` was asked for."""
    share = _fair_share(hosts, tasks) if store["threads"] == 0 else 0
    if share:
        store = dict(store, threads=share)
        options = dict(options, writers=options.get("writers") or share)
    return _SlabJob(output, options, **store)


def _write_block(output, options, store, origin, shape, block, hosts, tasks):
    """A task: one block written by retile in this worker (the GIL
    released), every level of it."""
    job = _task_job(output, options, store, hosts, tasks)
    return job.write_block(list(origin), list(shape), np.ascontiguousarray(block))


def _write_top(output, options, store, origin, shape, block, hosts, tasks, leave_slot):
    """A first-phase task of a pyramid written in two: one block written
    into level 0 alone; returns its summary. With ``leave_slot`` (every
    first-phase task has a thread of its own) it first leaves its worker's
    task slots (``distributed.secede``), so that the second phase, which
    needs only level 1, runs beside the level-0 writes rather than after
    them."""
    if leave_slot:
        _secede()
    job = _task_job(output, options, store, hosts, tasks)
    return job.write_top(list(origin), list(shape), np.ascontiguousarray(block))


def _halve_top(output, options, store, origin, shape, block, hosts, tasks):
    """The first phase's other task: the block halved into level 1 (bytes)."""
    job = _task_job(output, options, store, hosts, tasks)
    return job.halve_top(list(origin), list(shape), np.ascontiguousarray(block))


def _secede():
    """Leaves this ``distributed`` worker's task slots (nothing outside a
    worker)."""
    try:
        from distributed import get_worker, secede
        get_worker()
    except (ImportError, ValueError):
        return
    secede()


def _write_levels(output, options, store, origin, shape, pieces, hosts, tasks):
    """A second-phase task: the box of level 1 at ``origin`` of shape
    ``shape`` made from the first phase's ``pieces`` (each its origin,
    shape and bytes) and written with every level below it."""
    box = np.empty(shape, dtype=options["dtype"])
    covered = 0
    for at, extent, data in pieces:
        lo = [max(a, b) for a, b in zip(origin, at)]
        hi = [min(a + n, b + m) for a, n, b, m in zip(origin, shape, at, extent)]
        if any(h <= l for l, h in zip(lo, hi)):
            continue
        piece = np.frombuffer(data, dtype=box.dtype).reshape(extent)
        box[tuple(slice(l - o, h - o) for l, h, o in zip(lo, hi, origin))] = \
            piece[tuple(slice(l - a, h - a) for l, h, a in zip(lo, hi, at))]
        covered += math.prod(h - l for l, h in zip(lo, hi))
    if covered != math.prod(shape):
        raise RuntimeError(f"level 1's box at {list(origin)} of shape {list(shape)} got {covered} of its "
                           f"{math.prod(shape)} elements from the first phase; this is retile's fault")
    job = _task_job(output, options, store, hosts, tasks)
    summary = job.write_levels(1, list(origin), list(shape), box)
    summary["first_level"] = 1
    return summary


def _combined(summaries, job, seconds):
    """The summary of a job: its tasks' summaries added up (a summary's
    levels start at its ``first_level``, 0 unless a second-phase task's)."""
    add = lambda key: sum(s[key] for s in summaries)  # noqa: E731
    tops = [s for s in summaries if s.get("first_level", 0) == 0]

    def level_sum(k, key):
        return sum(s["levels"][k - s.get("first_level", 0)][key] for s in summaries
                   if 0 <= k - s.get("first_level", 0) < len(s["levels"]))

    levels = [
        {"shape": list(shape), "stored_bytes": level_sum(k, "stored_bytes"), "files": level_sum(k, "files")}
        for k, shape in enumerate(job.level_shapes)
    ]
    total = sum(s["bytes"] for s in tops)
    return {
        "planes": job.shape[0],
        "bytes": total,
        "slabs": len(tops),
        "phases": 1 if len(tops) == len(summaries) else 2,
        "tiles": add("tiles"),
        "stored_bytes": add("stored_bytes"),
        "files": add("files"),
        "omitted_chunks": add("omitted_chunks"),
        "uploaded_bytes": add("uploaded_bytes"),
        "requests": add("requests"),
        "seconds": seconds,
        "gigabytes_per_second": total / max(seconds, 1e-9) / 1e9,
        "levels": levels,
    }


def _run(job, tasks, client, retries):
    """Runs ``tasks`` (delayed objects) on the scheduler, the store begun
    before and finished after every task succeeded (closed, claiming
    nothing, if any failed)."""
    started = time.perf_counter()
    job.begin()
    try:
        summaries = _compute(tasks, client, retries)
    except BaseException:
        job.close()
        raise
    job.finish()
    return _combined(list(summaries), job, time.perf_counter() - started)


def _compute(tasks, client, retries):
    """The tasks' results, returned or raised only once no task runs any
    more: a failed task must not leave its siblings writing into a store
    that is then closed, unlocked and perhaps written again."""
    if client is not None:
        from distributed import wait

        futures = client.compute(tasks, retries=retries)
        wait(futures)  # every task ended, by a result or an error
        return client.gather(futures)
    if dask.config.get("scheduler", None) in (None, "threads", "threading"):
        from concurrent.futures import ThreadPoolExecutor

        # leaving the block waits for the tasks still running
        with ThreadPoolExecutor(_parallelism(None)) as pool:
            return dask.compute(*tasks, scheduler="threads", pool=pool)
    return dask.compute(*tasks)


def to_zarr(x, output, *, tile, overwrite=False, threads=0, allow_http=False,
            retry_seconds=120.0, s3_config=None, retries=2, **array):
    """Writes ``x`` at ``output`` (a directory or ``s3://BUCKET/PREFIX``) on
    the active Dask scheduler, as ``retile.Stream(output, shape=x.shape,
    dtype=x.dtype, tile=tile, **array)`` would write it (``shard``,
    ``codec``, ``fill``, ``pyramid``, ``levels``, ``downsample``, ``ngff``,
    ``dim_names``, ``dim_types``, ``units``, ``scale``, ``attributes``, ...
    mean what they mean there); returns the summary (planes, bytes, slabs:
    the blocks written, one a task; stored bytes, files, seconds, each
    level's shape and bytes; phases: 2 for a pyramid written in two).

    ``threads`` tiles each block with that many threads (0: on a
    ``distributed`` cluster, the cores of its machine shared by the tasks
    that run there at once, for tiling and, unless ``writers`` says
    otherwise, for writing; every core with the local scheduler); ``retries``: how often a failed task is run again on a
    ``distributed`` cluster (a task whose worker died is run again by the
    scheduler anyway). A failure raises the task's error; the store then
    claims no plane and is unlocked.
    """
    unknown = sorted(set(array) - set(_ARRAY_KEYS))
    if unknown:
        raise TypeError(f"to_zarr() got unexpected keyword arguments {unknown}; it takes "
                        f"tile and {', '.join(_ARRAY_KEYS)} as retile.Stream does")
    shape = tuple(int(n) for n in x.shape)
    if not shape or shape[0] == 0:
        raise ValueError(f"to_zarr writes arrays of 1 or more dimensions with planes; x's shape is {shape}")
    options = {"shape": list(shape), "tile": list(tile), "dtype": np.dtype(x.dtype).name}
    options.update({k: (list(v) if isinstance(v, tuple) else v)
                    for k, v in array.items() if v is not None})
    store = dict(threads=threads, allow_http=allow_http, retry_seconds=retry_seconds,
                 s3_config=s3_config)
    job = _SlabJob(output, options, overwrite=overwrite, **store)
    client = _client()
    parallelism = _parallelism(client)
    plan = (output, options, store, _task_threads(client))
    if _in_two_phases(job, x, parallelism):
        tasks = _pyramid_tasks(x, job, plan, client, parallelism)
    else:
        tasks = _block_tasks(x, job, plan, client, parallelism)
    return _run(job, tasks, client, retries)


def _in_two_phases(job, x, parallelism) -> bool:
    """Whether a pyramid is written in two phases (``_pyramid_tasks``):
    where ``x`` is a dask array whose chunks lie on whole shards of level 0
    but not on whole shards of every level, so that blocks of every level
    would move all of level 0 between workers and the two phases move only
    level 1. A level-3 shard of 1024 elements spans 8192 of level 0: a
    4-level pyramid of 2048 x 2048 planes in chunks of one shard each is
    written in two phases 1.3-1.7x faster on 16 workers; from chunks on
    no shard both ways move level 0, and one phase was as fast or faster."""
    if len(job.level_shapes) < 2:
        return False
    shape = tuple(int(n) for n in x.shape)
    itemsize = np.dtype(x.dtype).itemsize

    def lies_on(units, halved):
        planned = _block_bounds(shape, units, itemsize, parallelism, halved)
        return _own_bounds(x, units, halved, planned, shape) is not None

    return lies_on(job.top_units, [False] * len(shape)) and not lies_on(job.block_units, job.halved)


def _boxes(bounds):
    """Each block of ``bounds`` (the bounds along each dimension): its
    index, origin and shape."""
    for index in np.ndindex(*map(len, bounds)):
        box = [bounds[d][k] for d, k in enumerate(index)]
        yield index, [a for a, _ in box], [b - a for a, b in box]


def _block_tasks(x, job, plan, client, parallelism):
    """The tasks writing ``x`` in blocks of whole files of every level, one
    a task (every level of the block)."""
    x, bounds = _blocks(x, job.block_units, parallelism, job.halved)
    write = dask.delayed(_write_block, pure=False)
    delayed = x.to_delayed()
    boxes = list(_boxes(bounds))
    places = _placed(client, x, [delayed[index].key for index, _, _ in boxes])
    tasks = []
    for (index, origin, extent), place in zip(boxes, places):
        with _on(place):
            tasks.append(write(*plan[:3], origin, extent, delayed[index], plan[3], delayed.size))
    return tasks


def _pyramid_tasks(x, job, plan, client, parallelism):
    """The tasks writing a pyramid in two phases: blocks of whole files of
    level 0 each written there by one task and halved into level 1 (a
    quarter of the bytes, where two dimensions are halved) by another,
    then boxes of whole files of every level below, each made from the
    level-1 pieces it overlaps and written on a worker holding one of
    them. Returns the level-0 tasks and the second phase's tasks."""
    x, bounds = _blocks(x, job.top_units, parallelism)
    top = dask.delayed(_write_top, pure=False)
    halve = dask.delayed(_halve_top, pure=False)
    delayed = x.to_delayed()
    boxes = list(_boxes(bounds))
    places = _placed(client, x, [delayed[index].key for index, _, _ in boxes])
    leave_slot = client is not None and len(boxes) <= parallelism
    summaries, pieces = [], []
    for (index, origin, extent), place in zip(boxes, places):
        with _on(place):
            summaries.append(top(*plan[:3], origin, extent, delayed[index], plan[3], delayed.size, leave_slot))
            child = halve(*plan[:3], origin, extent, delayed[index], plan[3], delayed.size)
        at, size = zip(*[(o // 2, -(-n // 2)) if h else (o, n)
                         for o, n, h in zip(origin, extent, job.halved)])
        pieces.append((list(at), list(size), child, place))
    level1 = job.level_shapes[1]
    bounds = _block_bounds(level1, job.level_units(1), np.dtype(x.dtype).itemsize, parallelism, job.halved)
    boxes = list(_boxes(bounds))
    overlaps = [[p for p in pieces if _overlap(origin, extent, p[0], p[1])] for _, origin, extent in boxes]
    places = _spread(_workers(client), [[p[3] for p in ps if p[3]] for ps in overlaps]) \
        if client is not None else [None] * len(boxes)
    below = dask.delayed(_write_levels, pure=False)
    tasks = []
    for (_, origin, extent), mine, place in zip(boxes, overlaps, places):
        with _on(place):
            tasks.append(below(*plan[:3], origin, extent, [p[:3] for p in mine], plan[3], len(boxes)))
    return summaries + tasks


def _overlap(origin, extent, at, size) -> bool:
    """Whether the boxes at ``origin`` of ``extent`` and at ``at`` of
    ``size`` share an element."""
    return all(max(o, a) < min(o + n, a + m) for o, n, a, m in zip(origin, extent, at, size))


def _copy_block(src, dst, rechunk, origin, shape, hosts, tasks):
    """A task: the box of shape ``shape`` at element ``origin`` of ``src``
    re-tiled into ``dst``, with its fair share of the machine's cores
    where no ``threads`` was asked for."""
    share = _fair_share(hosts, tasks) if not rechunk.get("threads") else 0
    if share:
        rechunk = dict(rechunk, threads=share)
    job = _SlabJob.rechunk(src, dst, **rechunk)
    return job.copy_block(list(origin), list(shape))


def rechunk(src, dst, tile, *, client, memory=None, retries=2, **rechunk_args):
    """``retile.rechunk(src, dst, tile, ..., client=client)``: the re-tiling
    run by the tasks of ``client``'s cluster, each a block of whole shards
    (of every level): slabs of whole shard rows, cut along the next
    dimensions too where there would be fewer slabs than the cluster's
    threads; each reads its box of the source in slabs of whole source
    chunks along the first dimension. ``memory``
    is what one worker may use: each of its threads' tasks gets an equal
    part of it (a part too small for the new array's buffers and two slabs
    of source chunks is refused before anything is written, with a
    ``MemoryError`` naming the figures)."""
    try:
        from distributed import Client
    except ImportError as e:  # pragma: no cover - exercised without the extra
        raise ImportError("rechunk(client=) needs distributed: pip install 'retile[dask]'") from e
    if not isinstance(client, Client):
        raise TypeError(f"client= takes a dask.distributed.Client, not {type(client).__name__}")
    threads_per_worker = max(client.nthreads().values(), default=1)
    per_task = None if memory is None else int(memory) // max(1, threads_per_worker)
    args = dict(tile=list(tile), memory=per_task, **rechunk_args)
    job = _SlabJob.rechunk(src, dst, **args)
    job.check_memory()
    args.pop("overwrite", None)
    itemsize = job.plane_bytes // max(1, math.prod(job.shape[1:]))
    bounds = _block_bounds(job.shape, job.block_units, itemsize, _parallelism(client), job.halved)
    boxes = list(_boxes(bounds))
    copy = dask.delayed(_copy_block, pure=False)
    hosts = _task_threads(client)
    tasks = []
    for (_, origin, extent), place in zip(boxes, _placed(client, None, [None] * len(boxes))):
        with _on(place):
            tasks.append(copy(str(src), str(dst), args, origin, extent, hosts, len(boxes)))
    return _run(job, tasks, client, retries)
