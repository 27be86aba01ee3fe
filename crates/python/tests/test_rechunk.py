"""retile.rechunk: Zarr arrays written by zarr-python (v2 and v3, sharded and
not, compressed and not, ranks 1 to 5, every numeric dtype) re-tiled into
new stores that zarr-python reads back equal; a pyramid's levels against
numpy; what is refused, and how."""
import re

import numpy as np
import numcodecs
import pytest
import zarr

import retile
from pyramid_reference import halve, random_array

DTYPES = ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f2", "f4", "f8"]


def source(path, rng, fmt, sharded, compressed, dtype):
    """A random array of rank 1-5 written by zarr-python at `path`; returns it."""
    rank = int(rng.integers(1, 6))
    shape = tuple(int(rng.integers(1, 12)) for _ in range(rank))
    chunks = tuple(int(rng.integers(1, n + 1)) for n in shape)
    data = random_array(rng, shape, dtype)
    kw = {}
    if fmt == 2:
        kw["compressors"] = [numcodecs.Blosc(cname="lz4")] if compressed else None
    else:
        kw["compressors"] = [zarr.codecs.ZstdCodec(level=1)] if compressed else None
        if sharded:
            kw["shards"] = tuple(c * int(rng.integers(1, 3)) for c in chunks)
    a = zarr.create_array(str(path), shape=shape, chunks=chunks, dtype=data.dtype, zarr_format=fmt, **kw)
    a[...] = data
    return data


@pytest.mark.parametrize("seed", range(48))
def test_a_zarr_python_array_retiled_reads_back_equal(tmp_path, seed):
    rng = np.random.default_rng(seed)
    fmt = 2 if seed % 3 == 0 else 3
    data = source(tmp_path / "src.zarr", rng, fmt, sharded=seed % 2 == 1, compressed=seed % 4 < 2,
                  dtype=DTYPES[seed % len(DTYPES)])
    tile = [int(rng.integers(1, n + 1)) for n in data.shape]
    shard = [int(rng.integers(1, 3)) for _ in data.shape] if rng.integers(0, 2) else None
    codec = ["none", "zstd:1", "blosc-lz4:1"][seed % 3]
    args = dict(tile=tile, shard=shard, codec=codec)
    if rng.integers(0, 2):
        # too little memory names the least that works; with exactly that,
        # every slab is one source chunk deep
        with pytest.raises(MemoryError, match=r"needs at least \d+ bytes") as refused:
            retile.rechunk(tmp_path / "src.zarr", tmp_path / "dst.zarr", memory=1, **args)
        args["memory"] = int(re.search(r"needs at least (\d+) bytes", str(refused.value)).group(1))
    summary = retile.rechunk(tmp_path / "src.zarr", tmp_path / "dst.zarr", **args)
    assert summary["planes"] == data.shape[0]
    out = zarr.open_array(str(tmp_path / "dst.zarr"), mode="r")
    assert out.shape == data.shape and tuple(out.chunks) == tuple(tile)
    got = out[...]
    assert got.dtype == data.dtype
    assert np.array_equal(got.view(f"u{got.dtype.itemsize}"), data.view(f"u{data.dtype.itemsize}"))


def test_a_pyramid_made_while_retiling_equals_numpy(tmp_path):
    rng = np.random.default_rng(5)
    data = random_array(rng, (9, 20, 22), "u2")
    a = zarr.create_array(str(tmp_path / "src.zarr"), shape=data.shape, chunks=(4, 7, 22), dtype=data.dtype)
    a[...] = data
    retile.rechunk(tmp_path / "src.zarr", tmp_path / "img.zarr", tile=(1, 8, 8), pyramid="mean", levels=3)
    group = zarr.open_group(str(tmp_path / "img.zarr"), mode="r")
    want = data
    for k in range(3):
        if k:
            want = halve(want, [False, True, True], "mean")
        assert np.array_equal(group[str(k)][...], want), k


def test_a_slab_that_cannot_fit_the_memory_is_a_memory_error_with_the_figure(tmp_path):
    a = zarr.create_array(str(tmp_path / "src.zarr"), shape=(64, 64, 64), chunks=(64, 64, 64), dtype="u2")
    a[...] = 1
    with pytest.raises(MemoryError, match=r"needs at least \d+ bytes"):
        retile.rechunk(tmp_path / "src.zarr", tmp_path / "dst.zarr", tile=(1, 64, 64), memory=100_000)
    assert not (tmp_path / "dst.zarr").exists()


def test_what_is_not_an_array_or_a_cluster_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a Zarr array"):
        retile.rechunk(tmp_path, tmp_path / "dst.zarr", tile=(1,))
    with pytest.raises(ValueError, match="no such directory"):
        retile.rechunk(tmp_path / "nothing.zarr", tmp_path / "dst.zarr", tile=(1,))
    a = zarr.create_array(str(tmp_path / "src.zarr"), shape=(4, 4), chunks=(2, 2), dtype="u1")
    a[...] = 3
    with pytest.raises(TypeError, match="client= takes a dask.distributed.Client, not object"):
        retile.rechunk(tmp_path / "src.zarr", tmp_path / "dst.zarr", tile=(1, 4), client=object())
    with pytest.raises(ValueError, match="tile"):
        retile.rechunk(tmp_path / "src.zarr", tmp_path / "dst.zarr", tile=(1, 4, 4))


@pytest.mark.parametrize("cname", ["zstd", "lz4hc"])
@pytest.mark.parametrize("level", [1, 5, 9])
@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_blosc_written_by_either_side_reads_back_on_the_other(tmp_path, cname, level, rank):
    """c-blosc's zstd contexts and lz4hc states, one per thread in retile's
    copy (made once, reused for every block, level and size): numcodecs'
    chunks decompressed on 4 of retile's threads and retile's compressed on
    4, both read back equal by the other side, at every rank."""
    rng = np.random.default_rng(10 * level + rank)
    shape = [(3000,), (40, 61), (40, 33, 47), (6, 7, 33, 20), (3, 4, 5, 16, 12)][rank - 1]
    smooth = np.cumsum(rng.integers(-3, 4, size=shape), axis=-1)
    data = (smooth + rng.integers(0, 8, size=shape)).astype(["u2", "f8"][rank % 2])
    chunks = tuple(max(1, n // 3) for n in shape)
    src = zarr.create_array(str(tmp_path / "src.zarr"), shape=data.shape, chunks=chunks, dtype=data.dtype,
                            compressors=[zarr.codecs.BloscCodec(cname=cname, clevel=level, shuffle="shuffle")])
    src[...] = data
    dst = tmp_path / "dst.zarr"
    tile = [max(1, n // 2) for n in shape]
    retile.rechunk(str(tmp_path / "src.zarr"), str(dst), tile=tile, shard=[2] + [1] * (rank - 1),
                   codec=f"blosc-{cname}:{level}", threads=4)
    assert np.array_equal(zarr.open_array(str(dst), mode="r")[...], data)
    again = tmp_path / "again.zarr"
    retile.rechunk(str(dst), str(again), tile=[max(1, n // 4) for n in shape], codec="none", threads=4)
    assert np.array_equal(zarr.open_array(str(again), mode="r")[...], data)
