"""Multiscale pyramids written while streaming, read back with zarr-python
and checked level by level against numpy computing each level from the
whole array at once; every group validated by ome-zarr-models and opened by
ome-zarr-py (the OME-Zarr readers napari uses)."""
import json

import numpy as np
import pytest
import zarr

import retile
from pyramid_reference import halve, random_array

ome_zarr_models = pytest.importorskip("ome_zarr_models", reason="pip install ome-zarr-models (CI installs it)")
from ome_zarr_models.v05.image import Image  # noqa: E402

DTYPES = ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f2", "f4", "f8"]
METHODS = ["mean", "min", "max", "decimate", "median"]


def levels_of(path):
    group = zarr.open_group(str(path), mode="r")
    meta = group.attrs["ome"]["multiscales"][0]
    return group, meta, [group[d["path"]] for d in meta["datasets"]]


def case(seed):
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(2, 6))
    shape = [int(rng.integers(1, 10)) for _ in range(rank)]
    tile = [int(rng.integers(1, 5)) for _ in range(rank)]
    halved = [bool(rng.integers(0, 2)) for _ in range(rank)]
    # NGFF needs 2 or 3 space axes: the last two dimensions are space; halve at least one
    halved[-1] = halved[-1] or not any(halved)
    return dict(
        rng=rng, shape=shape, tile=tile, halved=halved,
        dtype=DTYPES[seed % len(DTYPES)], method=METHODS[(seed // len(DTYPES)) % len(METHODS)],
        unbounded=bool(rng.integers(0, 2)), levels=int(rng.integers(2, 5)),
        shard=[int(rng.integers(1, 3)) for _ in range(rank)] if rng.integers(0, 2) else None,
        codec=["none", "zstd:1", "blosc-lz4:1"][int(rng.integers(0, 3))],
    )


@pytest.mark.parametrize("seed", range(110))
def test_every_level_equals_numpy(tmp_path, seed):
    c = case(seed)
    data = random_array(c["rng"], c["shape"], c["dtype"])
    stream_shape = [0 if c["unbounded"] else c["shape"][0]] + c["shape"][1:]
    out = tmp_path / "image.zarr"
    try:
        s = retile.Stream(out, shape=stream_shape, tile=c["tile"], dtype=np.dtype(c["dtype"]), shard=c["shard"],
                          codec=c["codec"], pyramid=c["method"], levels=c["levels"], downsample=c["halved"])
    except ValueError as e:
        # more levels than the extents allow is refused with a clear message
        assert "would be the same" in str(e), e
        return
    raw = data.tobytes()
    cuts = sorted(c["rng"].integers(0, len(raw) + 1, size=3))
    for a, b in zip([0] + list(cuts), list(cuts) + [len(raw)]):
        assert s.append(raw[a:b]) == b - a
    summary = s.finish()
    group, meta, arrays = levels_of(out)
    assert len(arrays) == c["levels"] == len(summary["levels"])
    want = data
    for k, a in enumerate(arrays):
        if k:
            want = halve(want, c["halved"], c["method"])
        assert a.shape == want.shape, (k, a.shape, want.shape)
        assert list(a.metadata.dimension_names) == [ax["name"] for ax in meta["axes"]]
        got = a[...]
        assert got.dtype == want.dtype
        assert np.array_equal(got.view(f"u{got.dtype.itemsize}"), want.view(f"u{want.dtype.itemsize}")), (k, c)
    Image.from_zarr(group)  # raises if the group is not valid NGFF 0.5


def test_ngff_metadata_scales_translations_and_units(tmp_path):
    out = tmp_path / "image.zarr"
    with retile.Stream(out, shape=(0, 64, 96), tile=(4, 16, 16), dtype="u16", pyramid="mean",
                       dim_names=["t", "y", "x"], dim_types=["time", "space", "space"],
                       units=["second", None, "micrometer"], scale=[0.1, 0.5, 0.25]) as s:
        s.append(np.arange(8 * 64 * 96, dtype=np.uint16))
    group, meta, arrays = levels_of(out)
    assert group.attrs["ome"]["version"] == "0.5"
    assert meta["axes"] == [{"name": "t", "type": "time", "unit": "second"},
                            {"name": "y", "type": "space"},
                            {"name": "x", "type": "space", "unit": "micrometer"}]
    assert meta["type"] == "mean"
    # until a level fits in one tile along y and x: 96 -> 48 -> 24 -> 12
    assert [a.shape for a in arrays] == [(8, 64, 96), (8, 32, 48), (8, 16, 24), (8, 8, 12)]
    t2 = meta["datasets"][2]["coordinateTransformations"]
    assert t2[0] == {"type": "scale", "scale": [0.1, 2.0, 1.0]}
    assert t2[1] == {"type": "translation", "translation": [0.0, 0.75, 0.375]}
    assert "translation" not in json.dumps(meta["datasets"][0])
    Image.from_zarr(group)


def test_ome_zarr_py_opens_the_pyramid(tmp_path):
    ome_zarr = pytest.importorskip("ome_zarr", reason="pip install ome-zarr (CI installs it)")
    from ome_zarr.io import parse_url
    from ome_zarr.reader import Reader
    out = tmp_path / "image.zarr"
    data = np.arange(4 * 3 * 40 * 50, dtype=np.uint8).reshape(4, 3, 40, 50)
    with retile.Stream(out, shape=(0, 3, 40, 50), tile=(2, 1, 16, 16), dtype="u8", pyramid="max",
                       dim_names=["t", "c", "y", "x"], dim_types=["time", "channel", "space", "space"],
                       shard=(1, 1, 2, 2), codec="zstd:1") as s:
        s.append(data)
    nodes = list(Reader(parse_url(str(out)))())
    pyramid = nodes[0].data
    assert [tuple(level.shape) for level in pyramid] == [(4, 3, 40, 50), (4, 3, 20, 25), (4, 3, 10, 13)]
    assert np.array_equal(np.asarray(pyramid[0]), data)
    assert np.array_equal(np.asarray(pyramid[1]), halve(data, [False, False, True, True], "max"))


def test_ngff_alone_is_one_level_and_plain_stays_an_array(tmp_path):
    with retile.Stream(tmp_path / "one.zarr", shape=(2, 8, 8), tile=(1, 4, 4), dtype="u8", ngff=True) as s:
        s.append(bytes(128))
    group, meta, arrays = levels_of(tmp_path / "one.zarr")
    assert len(arrays) == 1 and arrays[0].shape == (2, 8, 8)
    Image.from_zarr(group)
    with retile.Stream(tmp_path / "plain.zarr", shape=(2, 8, 8), tile=(1, 4, 4), dtype="u8") as s:
        s.append(bytes(128))
    assert isinstance(zarr.open(str(tmp_path / "plain.zarr"), mode="r"), zarr.Array)


def test_pyramid_options_are_checked(tmp_path):
    with pytest.raises(ValueError, match="only with pyramid"):
        retile.Stream(tmp_path / "a.zarr", shape=(0, 8, 8), tile=(1, 4, 4), dtype="u8", levels=3)
    with pytest.raises(ValueError, match="unknown downsampling method"):
        retile.Stream(tmp_path / "b.zarr", shape=(0, 8, 8), tile=(1, 4, 4), dtype="u8", pyramid="average")
    with pytest.raises(ValueError, match="2 or 3 space axes"):
        retile.Stream(tmp_path / "c.zarr", shape=(0, 8, 8), tile=(1, 4, 4), dtype="u8", pyramid="mean",
                      dim_types=["time", "time", "space"])
    with pytest.raises(ValueError, match="unit"):
        retile.Stream(tmp_path / "d.zarr", shape=(0, 8, 8), tile=(1, 4, 4), dtype="u8", ngff=True,
                      units=["second", "parsecs", None])
    with pytest.raises(ValueError, match="describe an OME-Zarr image"):
        retile.Stream(tmp_path / "e.zarr", shape=(0, 8, 8), tile=(1, 4, 4), dtype="u8", scale=[1, 1, 1])
