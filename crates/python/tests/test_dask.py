"""retile.dask.to_zarr and retile.rechunk(client=...) on a LocalCluster of
worker processes started here on 127.0.0.1 (and on the local threaded
scheduler): random arrays of rank 2 to 5 in dask chunks that do not line
up with the shards, read back equal with zarr-python; pyramids against the
numpy reference and validated by ome-zarr-models; a worker killed in the
middle of a job; a failing task; a worker's memory; S3."""
import contextlib
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import zarr
from hypothesis import given, settings, strategies as st

import retile

da = pytest.importorskip("dask.array", reason="pip install 'retile[dask]' (./test.sh installs it)")
distributed = pytest.importorskip("distributed", reason="pip install 'retile[dask]' (./test.sh installs it)")
import retile.dask  # noqa: E402
import cloudpickle  # noqa: E402

# the workers cannot import this module: its functions travel by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])
from pyramid_reference import halve, random_array  # noqa: E402

DTYPES = ["u1", "i2", "u2", "i4", "f4", "f8", "u8"]


@pytest.fixture(scope="module")
def client():
    """A cluster of two worker processes on 127.0.0.1, closed at the end."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       death_timeout=60, memory_limit=None)
    c = distributed.Client(cluster, timeout=60)
    try:
        yield c
    finally:
        c.close(timeout=30)
        cluster.close(timeout=30)


def case(seed):
    """A random array, its dask chunks (lined up with nothing), tile and shard."""
    rng = np.random.default_rng(seed)
    rank = 2 + seed % 4
    shape = [int(rng.integers(1, 24))] + [int(rng.integers(1, 12)) for _ in range(rank - 1)]
    tile = [int(rng.integers(1, 5)) for _ in range(rank)]
    shard = [int(rng.integers(1, 3)) for _ in range(rank)] if rng.integers(0, 2) else None
    chunks = tuple(int(rng.integers(1, n + 1)) for n in shape)
    data = random_array(rng, shape, DTYPES[seed % len(DTYPES)])
    codec = ["none", "zstd:1", "blosc-lz4:1"][seed % 3]
    return data, chunks, tile, shard, codec


def same(a, b):
    """Equal bit for bit (NaNs too)."""
    return a.shape == b.shape and np.array_equal(a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}"))


@pytest.mark.parametrize("seed", range(16))
def test_random_arrays_on_the_cluster_read_back_equal(client, tmp_path, seed):
    data, chunks, tile, shard, codec = case(seed)
    out = tmp_path / "a.zarr"
    summary = retile.dask.to_zarr(da.from_array(data, chunks=chunks), str(out), tile=tile,
                                  shard=shard, codec=codec)
    assert summary["planes"] == data.shape[0] and summary["bytes"] == data.nbytes
    got = zarr.open_array(str(out), mode="r")
    assert got.dtype == data.dtype and same(got[...], data), (seed, chunks, tile, shard)
    assert not (out / ".retile.lock").exists()


@pytest.mark.parametrize("seed", range(4))
def test_one_dimensional_arrays_on_the_cluster_read_back_equal(client, tmp_path, seed):
    rng = np.random.default_rng(500 + seed)
    data = random_array(rng, [int(rng.integers(1, 3000))], DTYPES[seed % len(DTYPES)])
    tile, shard = int(rng.integers(1, 64)), [None, [int(rng.integers(1, 5))]][seed % 2]
    out = tmp_path / "a.zarr"
    summary = retile.dask.to_zarr(da.from_array(data, chunks=int(rng.integers(1, 400))), str(out), tile=(tile,),
                                  shard=shard, codec=["none", "blosc-lz4:1"][seed % 2])
    assert summary["planes"] == data.shape[0] and summary["bytes"] == data.nbytes
    assert same(zarr.open_array(str(out), mode="r")[...], data), (seed, tile, shard)


@pytest.mark.parametrize("seed", range(16, 28))
def test_random_arrays_on_the_threaded_scheduler_read_back_equal(tmp_path, seed):
    data, chunks, tile, shard, codec = case(seed)
    out = tmp_path / "a.zarr"
    with distributed_off():
        retile.dask.to_zarr(da.from_array(data, chunks=chunks), str(out), tile=tile, shard=shard,
                            codec=codec, dim_names=[f"d{i}" for i in range(data.ndim)])
    got = zarr.open_array(str(out), mode="r")
    assert same(got[...], data)
    assert list(got.metadata.dimension_names) == [f"d{i}" for i in range(data.ndim)]


def distributed_off():
    """The threaded scheduler while inside, though a distributed client exists."""
    import dask
    return dask.config.set(scheduler="threads")


@pytest.mark.parametrize("kind", ["numpy", "sliceable"])
def test_numpy_arrays_and_sliceable_objects_are_cut_up_by_retile(client, tmp_path, kind):
    data = random_array(np.random.default_rng(5), (37, 9, 5), "u2")

    class Sliceable:
        shape, dtype = data.shape, data.dtype

        def __getitem__(self, index):
            return data[index]

        ndim = 3

    x = data if kind == "numpy" else Sliceable()
    summary = retile.dask.to_zarr(x, str(tmp_path / "a.zarr"), tile=(4, 4, 4), shard=(2, 1, 2))
    assert same(zarr.open_array(str(tmp_path / "a.zarr"), mode="r")[...], data)
    assert summary["slabs"] >= 2


@pytest.mark.parametrize("seed", range(6))
def test_an_array_of_one_shard_row_is_cut_along_its_other_dimensions(client, tmp_path, seed):
    rng = np.random.default_rng(300 + seed)
    rank = 2 + seed % 4
    tile = [int(rng.integers(1, 4)) for _ in range(rank)]
    shape = [int(rng.integers(1, tile[0] + 1))] + [int(rng.integers(2 * t + 1, 4 * t + 3)) for t in tile[1:]]
    data = random_array(rng, shape, DTYPES[seed % len(DTYPES)])
    chunks = tuple(int(rng.integers(1, n + 1)) for n in shape)
    out = tmp_path / "a.zarr"
    summary = retile.dask.to_zarr(da.from_array(data, chunks=chunks), str(out), tile=tile,
                                  codec=["none", "blosc-zstd:1"][seed % 2])
    assert summary["slabs"] >= 2, summary  # one slab, cut into blocks for the 2 workers
    assert same(zarr.open_array(str(out), mode="r")[...], data), (seed, shape, tile)


def test_a_dask_array_in_whole_shards_is_written_block_by_dask_block():
    units = [4, 6, 10]
    x = da.zeros((10, 12, 25), dtype="u1", chunks=((4, 4, 2), (6, 6), (10, 10, 5)))
    y, bounds = retile.dask._blocks(x, units, parallelism=2)
    assert y is x  # not rechunked: no data moves between workers
    assert bounds[2] == [(0, 10), (10, 20), (20, 25)]
    # chunks that cut a shard are realigned to planned blocks
    z, bounds = retile.dask._blocks(x.rechunk((3, 12, 25)), units, parallelism=2)
    assert z.chunks == ((8, 2), (12,), (25,)) and bounds[0] == [(0, 8), (8, 10)]


@pytest.mark.parametrize("threads", [1, 3, 16, 64])
@pytest.mark.parametrize("halved", [None, [False, True, True]], ids=["flat", "pyramid"])
def test_planned_blocks_cover_the_array_in_whole_units(threads, halved):
    shape, units = (5, 40, 33), (4, 8, 10)
    bounds = retile.dask._block_bounds(shape, units, 2, threads, halved)
    for dim, n, unit in zip(bounds, shape, units):
        assert dim[0][0] == 0 and dim[-1][1] == n
        assert all(a % unit == 0 and a < b for a, b in dim)
        assert all(b == c for (_, b), (c, _) in zip(dim, dim[1:]))
    blocks = np.prod([len(d) for d in bounds])
    if halved:
        # as many blocks as threads where the units allow (2 x 5 x 3: the 3
        # elements past the last whole unit of 10 join the block before them,
        # as a pyramid's block is at least a unit wide)
        assert blocks >= min(threads, 2 * 5 * 3)
        assert all(b - a >= unit for dim, unit in zip(bounds[1:], units[1:]) for a, b in dim)
    else:
        # the 3 elements past the last whole unit are a block of their own
        assert blocks >= min(threads, 2 * 5 * 4)


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4)), min_size=1, max_size=6),
       st.lists(st.lists(st.integers(0, 5), max_size=2), max_size=40))
@settings(max_examples=300, deadline=None)
def test_tasks_are_spread_over_the_workers_by_their_threads(workers, holders):
    workers = {f"w{i}": (f"h{host}", threads) for i, (host, threads) in enumerate(workers)}
    holders = [[f"w{k}" for k in held] for held in holders]
    chosen = retile.dask._spread(workers, holders)
    assert len(chosen) == len(holders) and all(w in workers for w in chosen)
    total = sum(threads for _, threads in workers.values())
    room = {w: -(-len(holders) * threads // total) for w, (_, threads) in workers.items()}
    assert all(chosen.count(w) <= room[w] for w in workers), (chosen, room)
    # a task goes elsewhere than a holder of its block only once every holder is full
    for task, held in enumerate(holders):
        held = [w for w in held if w in workers]
        if held and chosen[task] not in held:
            assert all(chosen.count(w) == room[w] for w in held)


def test_blocks_held_by_one_worker_are_written_by_every_worker(client, tmp_path):
    """Left to Dask, the worker holding the blocks writes them all, one
    after the other: retile spreads its tasks over the workers instead."""
    data = random_array(np.random.default_rng(11), (8, 16, 16), "u2")
    first = sorted(client.nthreads())[0]
    x = client.persist(da.from_array(data, chunks=(2, 16, 16)), workers=[first])
    distributed.wait(x)
    assert {w for ws in client.who_has(x).values() for w in ws} == {first}
    with distributed.get_task_stream(client) as stream:
        retile.dask.to_zarr(x, str(tmp_path / "s.zarr"), tile=(2, 8, 8), codec="none")
    ran = [t["worker"] for t in stream.data if "_write_block" in str(t["key"])]
    assert sorted(ran.count(w) for w in client.nthreads()) == [2, 2], ran
    assert same(zarr.open_array(str(tmp_path / "s.zarr"), mode="r")[...], data)


def pyramid_case(seed):
    rng = np.random.default_rng(100 + seed)
    rank = 2 + seed % 4
    shape = [int(rng.integers(2, 40))] + [int(rng.integers(2, 12)) for _ in range(rank - 1)]
    tile = [int(rng.integers(1, 4)) for _ in range(rank)]
    halved = [bool(rng.integers(0, 2)) for _ in range(rank)]
    if rank == 5:
        halved[1] = False
    halved[-1] = halved[-1] or not any(halved[1:])
    method = ["mean", "min", "max", "decimate", "median"][seed % 5]
    shard = [int(rng.integers(1, 3)) for _ in range(rank)] if rng.integers(0, 2) else None
    data = random_array(rng, shape, DTYPES[seed % len(DTYPES)])
    chunks = tuple(int(rng.integers(1, n + 1)) for n in shape)
    return data, chunks, tile, halved, method, shard, int(rng.integers(2, 4))


@pytest.fixture(params=[1, 2], ids=["one-phase", "two-phases"])
def phases(request, monkeypatch):
    """A pyramid written in one phase (every level of a block in one task)
    and in two (level 0, then the levels below from level 1), whatever
    ``to_zarr`` would choose for the array."""
    monkeypatch.setattr(retile.dask, "_in_two_phases", lambda *a: request.param == 2)
    return request.param


@pytest.mark.parametrize("seed", range(12))
def test_pyramids_equal_numpy_and_are_valid_ngff(client, tmp_path, seed, phases):
    from ome_zarr_models.v05.image import Image
    data, chunks, tile, halved, method, shard, levels = pyramid_case(seed)
    out = tmp_path / "p.zarr"
    try:
        summary = retile.dask.to_zarr(da.from_array(data, chunks=chunks), str(out), tile=tile,
                                      shard=shard, pyramid=method, levels=levels, downsample=halved)
    except ValueError as e:
        assert "would be the same" in str(e), e
        return
    group = zarr.open_group(str(out), mode="r")
    meta = group.attrs["ome"]["multiscales"][0]
    arrays = [group[d["path"]] for d in meta["datasets"]]
    assert len(arrays) == levels == len(summary["levels"])
    assert summary["phases"] == phases and summary["bytes"] == data.nbytes
    want = data
    for k, a in enumerate(arrays):
        if k:
            want = halve(want, halved, method)
        assert a.shape == want.shape == tuple(summary["levels"][k]["shape"]), (k, seed)
        assert same(a[...], want), (k, seed, halved)
        stored = sum(f.stat().st_size for f in (out / str(k) / "c").rglob("*") if f.is_file()) \
            if (out / str(k) / "c").exists() else 0
        assert summary["levels"][k]["stored_bytes"] == stored, (k, summary["levels"])
    Image.from_zarr(group)


def test_a_pyramid_from_chunks_of_level_0_shards_is_written_in_two_phases(tmp_path):
    """The benchmark's pyramid: a level-3 shard spans 8192 planes' elements,
    so chunks of one level-0 shard would all move to make blocks of every
    level; chunks on no shard move either way, and go in one phase."""
    def job(**pyramid):
        return retile._retile._SlabJob(str(tmp_path / "j.zarr"), dict(
            shape=[256, 2048, 2048], tile=[64, 256, 256], dtype="uint16", shard=[1, 4, 4], **pyramid))
    four = job(pyramid="mean", levels=4)
    assert four.block_units == [64, 8192, 8192] and four.top_units == [64, 1024, 1024]
    assert four.level_units(1) == [64, 4096, 4096]
    x = da.zeros((256, 2048, 2048), dtype="uint16", chunks=(64, 1024, 1024))
    assert retile.dask._in_two_phases(four, x, 16)
    assert not retile.dask._in_two_phases(job(), x, 16)  # no pyramid
    assert not retile.dask._in_two_phases(four, x.rechunk((24, 1032, 1032)), 16)  # on no shard
    assert not retile.dask._in_two_phases(four, x.rechunk((64, 2048, 2048)), 16)  # on every level's
    assert not retile.dask._in_two_phases(four, np.zeros((256, 8, 8), "uint16"), 16)  # cut up by retile


def test_two_phase_blocks_are_checked(tmp_path):
    job = retile._retile._SlabJob(str(tmp_path / "t.zarr"), dict(
        shape=[4, 12, 10], tile=[2, 3, 5], dtype="uint8", pyramid="mean", levels=2))
    assert job.top_units == job.block_units == [2, 6, 10] and job.level_units(1) == [2, 3, 5]
    job.begin()
    with pytest.raises(ValueError, match="multiple of 6 elements along dimension 1"):
        job.write_top([0, 3, 0], [2, 3, 10], np.zeros((2, 3, 10), np.uint8))
    with pytest.raises(ValueError, match="no level 2"):
        job.write_levels(2, [0, 0, 0], [2, 3, 3], np.zeros((2, 3, 3), np.uint8))
    with pytest.raises(ValueError, match="is 60 bytes; 30 bytes were given"):
        job.write_levels(1, [0, 0, 0], [2, 6, 5], np.zeros((2, 3, 5), np.uint8))
    with pytest.raises(ValueError, match="multiple of 6 elements along dimension 1"):
        job.halve_top([0, 3, 0], [2, 3, 10], np.zeros((2, 3, 10), np.uint8))
    summary = job.write_top([0, 6, 0], [4, 6, 10], np.full((4, 6, 10), 7, np.uint8))
    child = job.halve_top([0, 6, 0], [4, 6, 10], np.full((4, 6, 10), 7, np.uint8))
    assert len(summary["levels"]) == 1 and child == bytes([7]) * (4 * 3 * 5)
    job.close()
    flat = retile._retile._SlabJob(str(tmp_path / "f.zarr"), dict(shape=[4, 6], tile=[2, 3], dtype="uint8"))
    flat.begin()
    with pytest.raises(ValueError, match="no level 1 to hand on"):
        flat.write_top([0, 0], [4, 6], np.zeros((4, 6), np.uint8))
    flat.close()


@pytest.mark.parametrize("seed", range(6))
def test_a_pyramid_of_one_shard_row_is_cut_along_its_other_dimensions(client, tmp_path, seed):
    from ome_zarr_models.v05.image import Image
    rng = np.random.default_rng(400 + seed)
    rank = 3 + seed % 3
    tile = [int(rng.integers(1, 4)) for _ in range(rank)]
    halved = [False] + [True] * (rank - 1)
    if rank == 5:
        halved[1] = False
    # one slab, and 2 to 3 units of 2 (levels = 2) tiles along the halved dimensions
    shape = [tile[0]] + [int(rng.integers(4 * t, 6 * t + 2)) if h else int(rng.integers(1, 4))
                         for t, h in zip(tile[1:], halved[1:])]
    data = random_array(rng, shape, DTYPES[seed % len(DTYPES)])
    out = tmp_path / "p.zarr"
    summary = retile.dask.to_zarr(da.from_array(data, chunks=tuple(max(1, n // 3) for n in shape)), str(out),
                                  tile=tile, pyramid="mean", levels=2, downsample=halved)
    assert summary["slabs"] >= 2, summary
    group = zarr.open_group(str(out), mode="r")
    assert same(group["0"][...], data)
    want = halve(data, halved, "mean")
    assert same(group["1"][...], want), (seed, shape, tile)
    Image.from_zarr(group)


def test_slabs_are_aligned_to_every_level_when_the_first_dimension_is_halved(tmp_path):
    job = retile._retile._SlabJob(str(tmp_path / "j.zarr"), dict(
        shape=[100, 8, 8], tile=[2, 8, 8], dtype="uint8", shard=[3, 1, 1], pyramid="mean",
        levels=4, downsample=[True, True, True]))
    assert job.slab_planes == 2 * 3 * 8
    assert job.level_shapes == [[100, 8, 8], [50, 4, 4], [25, 2, 2], [13, 1, 1]]
    job.begin()
    with pytest.raises(ValueError, match="multiple of 48 planes"):
        job.write_slab(24, np.zeros((24, 8, 8), np.uint8))
    assert job.halved == [True, True, True] and job.block_units == [48, 64, 64]
    job.close()
    # closed unfinished: the store claims nothing and is unlocked
    assert zarr.open_group(str(tmp_path / "j.zarr"), mode="r")["0"].shape == (0, 8, 8)
    assert not (tmp_path / "j.zarr" / ".retile.lock").exists()


def test_blocks_that_cut_a_shard_or_miss_their_shape_are_refused(tmp_path):
    job = retile._retile._SlabJob(str(tmp_path / "b.zarr"), dict(
        shape=[8, 10, 6], tile=[2, 2, 3], dtype="uint8", shard=[1, 2, 1]))
    assert job.block_units == [2, 4, 3]
    job.begin()
    with pytest.raises(ValueError, match="multiple of 4 elements along dimension 1"):
        job.write_block([0, 2, 0], [2, 4, 3], np.zeros((2, 4, 3), np.uint8))
    with pytest.raises(ValueError, match="is 24 bytes; 12 bytes were given"):
        job.write_block([0, 0, 0], [2, 4, 3], np.zeros((2, 2, 3), np.uint8))
    with pytest.raises(ValueError, match="C-contiguous"):
        job.write_block([0, 0, 0], [2, 4, 3], np.zeros((2, 4, 6), np.uint8)[:, :, ::2])
    with pytest.raises(ValueError):
        job.write_block([0, 0, 0], [2, 4, 3], np.zeros((2, 4, 3), np.uint16))
    job.write_block([6, 8, 3], [2, 2, 3], np.full((2, 2, 3), 5, np.uint8))  # the ragged end
    job.finish()
    got = zarr.open_array(str(tmp_path / "b.zarr"), mode="r")[...]
    assert (got[6:, 8:, 3:] == 5).all() and (got[:6] == 0).all()


def boom(block, fail):
    if fail:
        raise RuntimeError("this slab fails on purpose")
    return block


def late_or_boom(block, fail):
    """Fails at once, or passes the block on a second late: the failing
    task's siblings are still running when it fails."""
    if not fail:
        time.sleep(1.0)
    return boom(block, fail)


def files_in(path):
    return sorted((str(p.relative_to(path)), p.stat().st_size) for p in path.rglob("*") if p.is_file())


@pytest.mark.parametrize("scheduler", ["distributed", "threads"])
def test_a_failing_task_fails_the_job_and_the_store_claims_nothing(client, tmp_path, scheduler, phases):
    data = random_array(np.random.default_rng(1), (40, 6, 6), "u2")
    x = da.from_array(data, chunks=(8, 6, 6))
    x = x.map_blocks(boom, fail=False)
    bad = da.map_blocks(lambda b, block_info=None: late_or_boom(b, block_info[0]["chunk-location"][0] == 2),
                        x, dtype=x.dtype)
    out = tmp_path / "f.zarr"
    local = distributed_off() if scheduler == "threads" else contextlib.nullcontext()
    with local, pytest.raises(RuntimeError, match="fails on purpose"):
        retile.dask.to_zarr(bad, str(out), tile=(4, 3, 3), shard=(2, 1, 1), pyramid="mean", retries=0)
    group = zarr.open_group(str(out), mode="r")
    assert all(group[k].shape[0] == 0 for k in group.array_keys())
    assert not (out / ".retile.lock").exists()
    # no task of the failed job still writes: the store stays as it was left
    left = files_in(out)
    time.sleep(1.5)
    assert files_in(out) == left
    # the store is not locked: the same job again, and it reads back
    summary = retile.dask.to_zarr(x, str(out), tile=(4, 3, 3), shard=(2, 1, 1), pyramid="mean", overwrite=True)
    assert summary["phases"] == phases and len(summary["levels"]) == 2
    assert same(zarr.open_group(str(out), mode="r")["0"][...], data)
    assert same(zarr.open_group(str(out), mode="r")["1"][...], halve(data, [False, True, True], "mean"))


def slow(block):
    time.sleep(0.3)
    return block


@pytest.mark.parametrize("pyramid", [None, "two-phases"])
def test_a_worker_killed_in_the_middle_of_a_job_the_job_completes_through_retries(tmp_path, pyramid, monkeypatch):
    levels = {}
    if pyramid:
        monkeypatch.setattr(retile.dask, "_in_two_phases", lambda *a: True)
        levels = dict(pyramid="mean", levels=2)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None, memory_limit=None)
    c = distributed.Client(cluster, timeout=60)
    try:
        data = random_array(np.random.default_rng(2), (96, 32, 32), "u2")
        x = da.from_array(data, chunks=(5, 32, 32)).map_blocks(slow)
        out = tmp_path / "k.zarr"
        pids = c.run(os.getpid)
        victim = list(pids.values())[0]
        import threading

        def kill_when_writing():
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if (out / "0" / "c" if pyramid else out / "c").exists():
                    os.kill(victim, 9)
                    return
                time.sleep(0.01)

        killer = threading.Thread(target=kill_when_writing)
        killer.start()
        summary = retile.dask.to_zarr(x, str(out), tile=(2, 16, 16), shard=(1, 2, 2), codec="zstd:1", **levels)
        killer.join()
        assert summary["planes"] == 96 and summary["phases"] == (2 if pyramid else 1)
        assert victim not in c.run(os.getpid).values(), "the worker was not killed"
        if pyramid:
            group = zarr.open_group(str(out), mode="r")
            assert same(group["0"][...], data)
            assert same(group["1"][...], halve(data, [False, True, True], "mean"))
        else:
            assert same(zarr.open_array(str(out), mode="r")[...], data)
    finally:
        c.close(timeout=30)
        cluster.close(timeout=30)


@pytest.mark.parametrize("pyramid", [None, "mean"])
def test_rechunk_on_the_cluster_reads_back_equal(client, tmp_path, pyramid):
    data = random_array(np.random.default_rng(3), (45, 20, 13), "i2")
    src = zarr.create_array(str(tmp_path / "src.zarr"), shape=data.shape, chunks=(7, 6, 5), dtype=data.dtype)
    src[...] = data
    summary = retile.rechunk(str(tmp_path / "src.zarr"), str(tmp_path / "dst.zarr"), tile=(4, 8, 8),
                             shard=(2, 1, 2), pyramid=pyramid, client=client, memory=64 << 20)
    assert summary["planes"] == 45 and summary["slabs"] >= 2
    node = zarr.open(str(tmp_path / "dst.zarr"), mode="r")
    level0 = node["0"] if pyramid else node
    assert same(level0[...], data)
    if pyramid:
        assert same(node["1"][...], halve(data, [False, True, True], "mean"))


@pytest.mark.parametrize("seed", range(8))
def test_rechunk_of_one_shard_row_on_the_cluster_is_cut_into_blocks(client, tmp_path, seed):
    """One row of the new shards along the first dimension: the work is
    cut along the next dimensions too, into blocks of whole shards of
    every level, each read from source chunks that do not line up."""
    rng = np.random.default_rng(700 + seed)
    rank = 2 + seed % 3
    tile = [int(rng.integers(1, 4)) for _ in range(rank)]
    pyramid = "mean" if seed % 2 else None
    unit = tile[1] * (2 if pyramid else 1)  # a block of every level along dimension 1
    shape = [int(rng.integers(1, tile[0] + 1)), int(rng.integers(3 * unit, 4 * unit + 2))] + \
        [int(rng.integers(1, 3 * t + 2)) for t in tile[2:]]
    halved = [False] + [True] * (rank - 1)
    data = random_array(rng, shape, DTYPES[seed % len(DTYPES)])
    chunks = [int(rng.integers(1, n + 1)) for n in shape]
    src = zarr.create_array(str(tmp_path / "src.zarr"), shape=data.shape, chunks=chunks, dtype=data.dtype)
    src[...] = data
    summary = retile.rechunk(str(tmp_path / "src.zarr"), str(tmp_path / "dst.zarr"), tile=tile,
                             pyramid=pyramid, levels=2 if pyramid else None, client=client)
    assert summary["slabs"] >= 2, (summary, shape, tile)
    node = zarr.open(str(tmp_path / "dst.zarr"), mode="r")
    assert same((node["0"] if pyramid else node)[...], data)
    if pyramid:
        assert same(node["1"][...], halve(data, halved, "mean"))


def test_rechunk_on_the_cluster_refuses_memory_too_small_before_writing(client, tmp_path):
    src = zarr.create_array(str(tmp_path / "src.zarr"), shape=(64, 64, 64), chunks=(64, 64, 64), dtype="u2")
    src[...] = 1
    with pytest.raises(MemoryError, match="memory allowed"):
        retile.rechunk(str(tmp_path / "src.zarr"), str(tmp_path / "dst.zarr"), tile=(8, 8, 8),
                       client=client, memory=1 << 20)
    assert not (tmp_path / "dst.zarr").exists()


def peak_reset():
    """Resets this process's peak RSS (Linux: VmHWM); returns its RSS now."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return status_bytes("VmRSS")


def status_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/self/status")


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux's /proc/self/clear_refs")
def test_a_workers_peak_memory_stays_within_the_budget(tmp_path):
    """memory= bounds a worker's bytes: while it re-tiles a source larger
    than budget and overhead together, its peak RSS grows by at most the
    budget and a fixed overhead (the engine's threads, codec contexts,
    allocator arenas: 24-40 MiB measured on a 2-core VM)."""
    overhead = 48 << 20
    shape = (256, 512, 512)  # 128 MiB of u16
    src = zarr.create_array(str(tmp_path / "src.zarr"), shape=shape, chunks=(2, 512, 512), dtype="u2")
    for z in range(0, shape[0], 32):
        src[z:z + 32] = np.random.default_rng(z).integers(0, 60000, (32, 512, 512), dtype=np.uint16)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None, memory_limit=None)
    c = distributed.Client(cluster, timeout=60)
    try:
        c.run(lambda: __import__("retile.dask"))
        for budget in (24 << 20, 64 << 20):
            before = c.run(peak_reset)
            summary = retile.rechunk(str(tmp_path / "src.zarr"), str(tmp_path / "dst.zarr"), tile=(4, 128, 128),
                                     shard=(1, 2, 2), codec="zstd:1", client=c, memory=budget, overwrite=True)
            after = c.run(status_bytes, "VmHWM")
            assert summary["slabs"] >= 2
            for worker, base in before.items():
                grown = after[worker] - base
                assert grown <= budget + overhead, (worker, budget >> 20, grown / 2**20)
        got = zarr.open_array(str(tmp_path / "dst.zarr"), mode="r")
        assert np.array_equal(got[...], src[...])
    finally:
        c.close(timeout=30)
        cluster.close(timeout=30)


def test_without_dask_importing_says_what_to_install():
    code = ("import sys; sys.modules['dask'] = None; sys.modules['dask.array'] = None\n"
            "try:\n    import retile.dask\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install 'retile[dask]'" in out.stdout, out


def test_attributes_and_axes_are_written_by_the_caller(tmp_path):
    data = random_array(np.random.default_rng(6), (10, 6, 6), "u1")
    with distributed_off():
        retile.dask.to_zarr(data, str(tmp_path / "a.zarr"), tile=(2, 3, 3), attributes={"sample": "m7"})
        retile.dask.to_zarr(data, str(tmp_path / "b.zarr"), tile=(2, 3, 3), pyramid="mean", attributes={"sample": "m8"},
                            units=[None, "micrometer", "micrometer"], scale=[1, 0.5, 0.5])
    assert zarr.open_array(str(tmp_path / "a.zarr"), mode="r").attrs["sample"] == "m7"
    group = zarr.open_group(str(tmp_path / "b.zarr"), mode="r")
    assert group.attrs["sample"] == "m8" and same(group["0"][...], data)
    axes = group.attrs["ome"]["multiscales"][0]["axes"]
    assert [a.get("unit") for a in axes] == [None, "micrometer", "micrometer"]


def test_arrays_without_planes_are_refused_before_anything_is_made(tmp_path):
    for x in (np.zeros((0, 4), np.uint8), np.zeros((), np.uint8)):
        with pytest.raises(ValueError, match="with planes"):
            retile.dask.to_zarr(x, str(tmp_path / "x.zarr"), tile=(2, 2))
    assert not (tmp_path / "x.zarr").exists()


def test_unknown_keyword_arguments_are_refused(tmp_path):
    with pytest.raises(TypeError, match="colour"):
        retile.dask.to_zarr(np.zeros((4, 4), np.uint8), str(tmp_path / "x.zarr"), tile=(2, 2), colour="red")


from test_s3 import endpoint  # noqa: E402,F401  (the module's moto server on 127.0.0.1)


@pytest.mark.parametrize("pyramid", [None, "mean"])
def test_to_zarr_and_rechunk_on_the_cluster_into_s3_read_back_equal(client, endpoint, pyramid):
    settings = {"aws_endpoint": endpoint, "aws_access_key_id": "testing",
                "aws_secret_access_key": "testing", "aws_region": "us-east-1"}
    data = random_array(np.random.default_rng(9), (29, 17, 11), "u2")
    url = f"s3://retile-py/dask-{pyramid}.zarr"
    retile.dask.to_zarr(da.from_array(data, chunks=(6, 5, 4)), url, tile=(2, 8, 8), shard=(2, 1, 1),
                        codec="zstd:1", pyramid=pyramid, allow_http=True, s3_config=settings)
    opts = {"endpoint_url": endpoint}
    node = zarr.open(url, mode="r", storage_options=opts)
    assert same((node["0"] if pyramid else node)[...], data)
    again = f"s3://retile-py/dask-{pyramid}-again.zarr"
    source = url + "/0" if pyramid else url
    retile.rechunk(source, again, tile=(5, 4, 4), shard=(1, 2, 2), pyramid=pyramid, client=client,
                   memory=32 << 20, allow_http=True, s3_config=settings)
    node = zarr.open(again, mode="r", storage_options=opts)
    assert same((node["0"] if pyramid else node)[...], data)


def test_the_module_examples_run():
    import doctest
    with distributed_off():
        result = doctest.testmod(retile.dask)
    assert result.failed == 0 and result.attempted >= 3, result


def test_rechunk_of_a_named_array_into_a_pyramid_names_it_by_its_axes(tmp_path):
    data = random_array(np.random.default_rng(8), (6, 10, 12), "u1")
    src = zarr.create_array(str(tmp_path / "src.zarr"), shape=data.shape, chunks=(2, 5, 5), dtype=data.dtype,
                            dimension_names=["t", "y", "x"])
    src[...] = data
    retile.rechunk(str(tmp_path / "src.zarr"), str(tmp_path / "p.zarr"), tile=(2, 4, 4), pyramid="mean")
    group = zarr.open_group(str(tmp_path / "p.zarr"), mode="r")
    assert same(group["0"][...], data) and same(group["1"][...], halve(data, [False, True, True], "mean"))


def run_small(script, tmp_path, **env):
    """A bench/ script run small (16 frames of 256 x 256) on this machine: its output."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", script)
    env = dict(os.environ, PLANES="16", SIZE="256", TILE="8,64,64", SHARD="1,2,2", **env)
    out = subprocess.run([sys.executable, path, str(tmp_path / "bench")], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_the_peer_benchmark_runs_small_and_reads_every_store_back(tmp_path):
    lines = run_small("dask_peer.py", tmp_path, WORKERS="1,2").splitlines()
    assert sum("ratio" in line for line in lines) == 5, lines
    assert sum("retile wrote it in" in line for line in lines) == 2, lines
    assert sum("c-blosc alone on the pyramid's bytes" in line for line in lines) == 1, lines
    assert sum(line.startswith("scaling:") for line in lines) == 2, lines


def test_the_codec_ceiling_benchmark_runs_small(tmp_path):
    lines = run_small("dask_codec_ceiling.py", tmp_path, WORKERS="2").splitlines()
    assert sum("of the codec alone" in line for line in lines) == 4, lines
