"""Every rank from 1 to 5 streams: seeded random cases with and without an
output, sharded or not, compressed or not, with and without a pyramid
(rank 2 and up), bounded and unbounded, the input split at random bytes;
every store read back with zarr-python and compared with numpy, every
pyramid level with numpy's halving. A 1-D pyramid is a clear error."""
import numpy as np
import pytest

import retile
from pyramid_reference import default_halved, halve, level_shapes, random_array

zarr = pytest.importorskip("zarr")

DTYPES = ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f2", "f4", "f8"]
METHODS = ["mean", "min", "max", "decimate", "median"]
CODECS = ["none", "zstd:1", "blosc-lz4:1"]


def case(seed):
    rng = np.random.default_rng(7000 + seed)
    rank = 1 + seed % 5
    output = seed % 4 != 3
    return dict(
        rng=rng, rank=rank, output=output,
        shape=[int(rng.integers(1, 8)) for _ in range(rank)],
        tile=[int(rng.integers(1, 5)) for _ in range(rank)],
        dtype=DTYPES[int(rng.integers(0, len(DTYPES)))],
        unbounded=bool(rng.integers(0, 2)),
        shard=[int(rng.integers(1, 3)) for _ in range(rank)] if output and rng.integers(0, 2) else None,
        codec=CODECS[int(rng.integers(0, 3))] if output else "none",
        pyramid=METHODS[int(rng.integers(0, len(METHODS)))] if rank >= 2 and rng.integers(0, 3) else None,
    )


@pytest.mark.parametrize("seed", range(40))
def test_every_rank_streams_and_reads_back(tmp_path, seed):
    c = case(seed)
    data = random_array(c["rng"], c["shape"], c["dtype"])
    out = tmp_path / "s.zarr" if c["output"] else None
    stream_shape = [0 if c["unbounded"] else c["shape"][0]] + c["shape"][1:]
    s = retile.Stream(out, shape=stream_shape, tile=c["tile"], dtype=np.dtype(c["dtype"]), shard=c["shard"],
                      codec=c["codec"], pyramid=c["pyramid"])
    raw = data.tobytes()
    cuts = sorted(c["rng"].integers(0, len(raw) + 1, size=3).tolist())
    for a, b in zip([0] + cuts, cuts + [len(raw)]):
        assert s.append(raw[a:b]) == b - a
    summary = s.finish()
    assert summary["planes"] == c["shape"][0] and summary["bytes"] == len(raw), (c, summary)
    if out is None:
        return
    if c["pyramid"] is None:
        levels = [zarr.open_array(str(out), mode="r")]
        wanted = [data]
    else:
        halved = default_halved(c["rank"])
        shapes = level_shapes(c["shape"], c["tile"], halved)
        levels = [zarr.open_array(str(out / str(k)), mode="r") for k in range(len(shapes))]
        assert not (out / str(len(shapes))).exists(), (c, "more levels than expected")
        wanted = [data]
        for _ in shapes[1:]:
            wanted.append(halve(wanted[-1], halved, c["pyramid"]))
    assert len(summary["levels"]) == len(levels)
    for k, (level, want) in enumerate(zip(levels, wanted)):
        got = level[...]
        assert got.shape == want.shape and got.dtype == want.dtype, (k, got.shape, want.shape, c)
        bits = f"u{got.dtype.itemsize}"
        assert np.array_equal(got.view(bits), want.view(bits)), (k, c)


@pytest.mark.parametrize("output", [False, True])
def test_a_one_dimensional_pyramid_is_a_clear_error(tmp_path, output):
    out = tmp_path / "p.zarr" if output else None
    with pytest.raises(ValueError, match=r"(at least 2|2 to 5) dimensions"):
        retile.Stream(out, shape=(0,), tile=(4,), dtype="i64", pyramid="mean")
    assert not (tmp_path / "p.zarr").exists()
