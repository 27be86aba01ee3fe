"""retile.Stream of several arrays (arrays=...) and of HCS plates (plate=...,
image=...): frames appended in random interleavings, every array read back
plane for plane with zarr-python, plates validated by ome-zarr-models and
opened by ome-zarr, and each bad input refused with one clear error,
nothing claimed lost."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import retile

zarr = pytest.importorskip("zarr")

DTYPES = ["uint8", "uint16", "int32", "float32", "float64", "int8", "uint64"]


def frames_of(shape, dtype, planes, seed):
    """`planes` planes of `shape[1:]` of random `dtype` values."""
    rng = np.random.default_rng(seed)
    full = (planes, *shape[1:])
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(full).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=full, dtype=dt, endpoint=True)


def array_at(root, key, options):
    """The array that holds level 0 of `key`: the array itself, or level 0 of its image."""
    image = options.get("pyramid") or options.get("ngff")
    return zarr.open_array(str(Path(root) / key / "0" if image else Path(root) / key), mode="r")


def stream_interleaved(s, data, rng):
    """Appends every array's frames, one to three planes at a time, the
    arrays taken in a random order."""
    at = {key: 0 for key in data}
    while at:
        key = rng.choice(sorted(at))
        n = int(rng.integers(1, 4))
        a = data[key][at[key]:at[key] + n]
        assert s.append(a, key=key) == a.nbytes
        at[key] += len(a)
        if at[key] == len(data[key]):
            del at[key]


def spec_of(rank, dtype, seed):
    """A shape (unbounded first extent) and tile of `rank` dimensions."""
    rng = np.random.default_rng(seed)
    extents = [int(rng.integers(1, 7)) for _ in range(rank - 1)]
    tiles = [int(rng.integers(1, e + 1)) for e in extents]
    return dict(shape=[0, *extents], tile=[int(rng.integers(1, 4)), *tiles], dtype=dtype)


KEYS = ["cam0", "run/cam1", "run/deep/cam2", "pos-3", "run/cam_4.b"]
EXTRAS = [dict(), dict(codec="zstd:1"), dict(shard=None), dict(ngff=True), dict(codec="blosc-lz4:1")]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(2, 5))
def test_arrays_of_every_rank_in_random_interleavings_read_back(tmp_path, seed, count):
    rng = np.random.default_rng(seed)
    out = tmp_path / f"acq-{seed}-{count}.zarr"
    arrays, data = {}, {}
    for i, key in enumerate(KEYS[:count]):
        rank = int(rng.integers(1, 6))
        dtype = DTYPES[int(rng.integers(0, len(DTYPES)))]
        extra = EXTRAS[int(rng.integers(0, len(EXTRAS)))]
        if rank == 1 and extra.get("ngff"):
            extra = {}  # an OME-Zarr image has 2 to 5 dimensions
        options = dict(spec_of(rank, dtype, seed + i), **extra)
        if options.get("shard", 0) is None:
            options["shard"] = [2] + [1] * (rank - 1)
        arrays[key] = options
        data[key] = frames_of(options["shape"], dtype, int(rng.integers(1, 12)), seed + i)
    with retile.Stream(str(out), arrays=arrays) as s:
        assert s.keys == sorted(arrays)
        stream_interleaved(s, data, rng)
    assert sorted(s.summary) == sorted(arrays)
    for key, options in arrays.items():
        assert s.summary[key]["planes"] == len(data[key])
        stored = array_at(out, key, options)
        assert stored.shape == data[key].shape
        for p in range(len(data[key])):
            np.testing.assert_array_equal(stored[p], data[key][p])
    # the root and every group between it and the arrays are Zarr groups
    root = zarr.open_group(str(out), mode="r")
    for key in arrays:
        parts = key.split("/")
        for n in range(len(parts)):
            meta = json.loads((out.joinpath(*parts[:n]) / "zarr.json").read_text())
            assert meta["node_type"] == "group", key
        assert key in root


def test_a_pyramid_and_a_plain_array_side_by_side(tmp_path):
    out = tmp_path / "two.zarr"
    a = frames_of([0, 32, 32], "uint16", 9, 1)
    b = frames_of([0, 5, 3, 4], "float32", 7, 2)
    arrays = {"cam0": dict(shape=[0, 32, 32], tile=[4, 8, 8], dtype="uint16", pyramid="mean", codec="zstd:1"),
              "cam1": dict(shape=[0, 5, 3, 4], tile=[2, 5, 3, 4], dtype=np.float32, fill=float("nan"))}
    s = retile.Stream(str(out), arrays=arrays)
    stream_interleaved(s, {"cam0": a, "cam1": b}, np.random.default_rng(3))
    summary = s.finish()
    assert len(summary["cam0"]["levels"]) > 1
    np.testing.assert_array_equal(zarr.open_array(str(out / "cam0" / "0"))[...], a)
    level1 = zarr.open_array(str(out / "cam0" / "1"))[...]
    expected = a.astype(np.float64).reshape(9, 16, 2, 16, 2).mean(axis=(2, 4))
    np.testing.assert_allclose(level1, expected, atol=1)
    np.testing.assert_array_equal(zarr.open_array(str(out / "cam1"))[...], b)


def test_one_pool_of_tiling_and_writer_threads_serves_every_array(tmp_path):
    def threads(prefix):
        names = [Path(f"/proc/self/task/{t}/comm").read_text().strip() for t in os.listdir("/proc/self/task")]
        return sum(n.startswith(prefix) for n in names)

    one = dict(shape=[0, 16, 16], tile=[2, 8, 8], dtype="u8", writers=5)
    s = retile.Stream(str(tmp_path / "pools.zarr"), arrays={f"cam{i}": dict(one) for i in range(4)}, threads=3)
    for i in range(4):
        s.append(np.full((2, 16, 16), i, np.uint8), key=f"cam{i}")
    assert threads("retile-tiler-") == 3
    assert threads("retile-zarr-wri") == 5
    s.finish()


def test_the_memory_budget_is_stated_and_an_array_past_it_refused(tmp_path):
    one = dict(shape=[0, 64, 64], tile=[4, 32, 32], dtype="u16")
    s = retile.Stream(str(tmp_path / "fits.zarr"), arrays={"a": one, "b": one})
    need = s.memory["arrays"]["a"]
    assert s.memory == {"budget": None, "bytes": 2 * need, "arrays": {"a": need, "b": need}}
    s.finish()
    fits = retile.Stream(str(tmp_path / "exact.zarr"), arrays={"a": one, "b": one}, memory=2 * need)
    assert fits.memory["budget"] == 2 * need
    fits.finish()
    out = tmp_path / "over.zarr"
    with pytest.raises(ValueError, match=rf"the array 'b' needs {need} bytes of tile buffers but only {need - 1} of the acquisition's memory budget of {2 * need - 1} bytes are left"):
        retile.Stream(str(out), arrays={"a": one, "b": one}, memory=2 * need - 1)
    assert not out.exists(), "nothing is made for a refused acquisition"


PLATE = dict(name="screen 7", rows=["A", "B", "C"], columns=["1", "2", "3", "4"], fields=2,
             wells=["A/1", "A/3", "B/2", "C/4"])


def test_a_plate_with_missing_wells_is_valid_ngff_and_reads_back(tmp_path):
    from ome_zarr_models.v05.hcs import HCS
    from ome_zarr_models.v05.well import Well
    from ome_zarr.io import parse_url
    from ome_zarr.reader import Reader

    out = tmp_path / "plate.zarr"
    image = dict(shape=[0, 2, 16, 16], tile=[1, 1, 8, 8], dtype="uint16", pyramid="mean",
                 dim_names=["t", "c", "y", "x"], dim_types=["time", "channel", "space", "space"])
    keys = [f"{w}/{f}" for w in PLATE["wells"] for f in range(PLATE["fields"])]
    # every field as long (ome-zarr's reader stitches the plate into one grid)
    data = {k: frames_of(image["shape"], "uint16", 3, i) for i, k in enumerate(keys)}
    with retile.Stream(str(out), plate=PLATE, image=image) as s:
        assert s.keys == sorted(keys)
        stream_interleaved(s, data, np.random.default_rng(5))
    group = zarr.open_group(str(out), mode="r")
    hcs = HCS.from_zarr(group)
    plate = hcs.ome_attributes.plate
    assert [w.path for w in plate.wells] == PLATE["wells"]
    assert [(w.rowIndex, w.columnIndex) for w in plate.wells] == [(0, 0), (0, 2), (1, 1), (2, 3)]
    assert plate.field_count == 2 and plate.name == "screen 7"
    for w in PLATE["wells"]:
        well = Well.from_zarr(group[w])
        assert [i.path for i in well.ome_attributes.well.images] == ["0", "1"]
    nodes = list(Reader(parse_url(str(out)))())
    assert nodes and any(spec.__class__.__name__ == "Plate" for spec in nodes[0].specs)
    for k, frames in data.items():
        stored = zarr.open_array(str(out / k / "0"), mode="r")
        for p in range(len(frames)):
            np.testing.assert_array_equal(stored[p], frames[p])
    assert not (out / "A" / "2").exists(), "a well not listed is not made"


def test_every_well_when_wells_is_none(tmp_path):
    from ome_zarr_models.v05.hcs import HCS

    out = tmp_path / "full.zarr"
    plate = dict(rows=["A", "B"], columns=["1", "2", "3"], fields=1, wells=None)
    s = retile.Stream(str(out), plate=plate, image=dict(shape=[0, 4, 4], tile=[1, 4, 4], dtype="u8"))
    for k in s.keys:
        s.append(np.full((1, 4, 4), ord(k[0]) + int(k[2]), np.uint8), key=k)
    s.finish()
    hcs = HCS.from_zarr(zarr.open_group(str(out), mode="r"))
    assert [w.path for w in hcs.ome_attributes.plate.wells] == ["A/1", "A/2", "A/3", "B/1", "B/2", "B/3"]
    assert zarr.open_array(str(out / "B" / "3" / "0" / "0"))[0, 0, 0] == ord("B") + 3


def test_bad_inputs_get_one_clear_error_each_and_lose_nothing(tmp_path):
    out = tmp_path / "bad.zarr"
    arrays = {"cam0": dict(shape=[0, 4, 4], tile=[2, 4, 4], dtype="u16"),
              "cam1": dict(shape=[0, 3], tile=[1, 3], dtype="u8")}
    s = retile.Stream(str(out), arrays=arrays)
    good = np.arange(3 * 16, dtype=np.uint16).reshape(3, 4, 4)
    s.append(good, key="cam0")
    with pytest.raises(ValueError, match="no array has the key 'cam9'; the keys are 'cam0', 'cam1'"):
        s.append(good, key="cam9")
    with pytest.raises(ValueError, match=r"a frame of 'cam0' is whole planes of 32 bytes \(4 x 4 u16 elements\), but this one is 30 bytes: nothing of it was taken"):
        s.append(good.reshape(-1)[:15], key="cam0")
    with pytest.raises(ValueError, match="this stream writes 2 arrays: say which with key="):
        s.append(good)
    with pytest.raises(ValueError, match="the stream's dtype is u8"):
        s.append(good, key="cam1")
    s.append(np.ones((2, 3), np.uint8), key="cam1")
    summary = s.finish()
    assert summary["cam0"]["planes"] == 3 and summary["cam1"]["planes"] == 2
    np.testing.assert_array_equal(zarr.open_array(str(out / "cam0"))[...], good)
    np.testing.assert_array_equal(zarr.open_array(str(out / "cam1"))[...], np.ones((2, 3), np.uint8))
    single = retile.Stream(None, shape=(0, 2), tile=(1, 2), dtype="u8")
    with pytest.raises(ValueError, match="this stream writes one array: append without key"):
        single.append(bytes(2), key="cam0")


@pytest.mark.parametrize("kwargs, message", [
    (dict(arrays={"cam0": dict(shape=[0, 2], tile=[1, 2], dtype="u8", backend="cpu")}), r"arrays\['cam0'\]: unknown field `backend`"),
    (dict(arrays={"cam0": dict(tile=[1, 2], dtype="u8")}), r"arrays\['cam0'\]: missing field `shape`"),
    (dict(arrays={"cam0/": dict(shape=[0, 2], tile=[1, 2], dtype="u8")}), "the array key 'cam0/' has an empty part"),
    (dict(arrays={"a": dict(shape=[0, 2], tile=[1, 2], dtype="u8"), "a/b": dict(shape=[0, 2], tile=[1, 2], dtype="u8")}), "'a' is both an array and the group"),
    (dict(arrays={"cam0": dict(shape=[0, 2], tile=[1, 2], dtype="u8", codec="zip")}), "array 'cam0': "),
    (dict(arrays={}), "arrays is empty"),
    (dict(arrays={"cam0": dict(shape=[0, 2], tile=[1, 2], dtype="u8")}, shard=[1, 1]), "shard describe each array"),
    (dict(plate=dict(rows=["A", "A"], columns=["1"], fields=1), image=dict(shape=[0, 2], tile=[1, 2], dtype="u8")), "the plate's rows name 'A' is given twice"),
    (dict(plate=dict(rows=["A"], columns=["1"], fields=1, wells=["B/1"]), image=dict(shape=[0, 2], tile=[1, 2], dtype="u8")), "the well 'B/1' is not ROW/COLUMN"),
    (dict(plate=dict(rows=["A"], columns=["1"], fields=1)), "a plate needs image="),
    (dict(plate=dict(rows=["A"], columns=["1"], fields=1, well=["A/1"]), image=dict(shape=[0, 2], tile=[1, 2], dtype="u8")), "plate: unknown field `well`"),
])
def test_bad_descriptions_are_refused_before_anything_is_made(tmp_path, kwargs, message):
    out = tmp_path / "refused.zarr"
    with pytest.raises(ValueError, match=message):
        retile.Stream(str(out), **kwargs)
    assert not out.exists()


def test_a_key_that_is_not_a_field_of_the_plate_is_refused(tmp_path):
    s = retile.Stream(str(tmp_path / "p.zarr"), plate=dict(rows=["A"], columns=["1", "2"], fields=1, wells=["A/2"]),
                      image=dict(shape=[0, 2], tile=[1, 2], dtype="u8"))
    for key in ["A/1/0", "A/2/1", "A/2"]:
        with pytest.raises(ValueError, match=f"no array has the key '{key}'; the keys are 'A/2/0'"):
            s.append(bytes(2), key=key)
    s.append(bytes([7, 8]), key="A/2/0")
    s.finish()
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "p.zarr" / "A" / "2" / "0" / "0"))[...], [[7, 8]])


def test_each_array_has_its_own_attributes_records_and_dropped_frames(tmp_path):
    out = tmp_path / "acq.zarr"
    each = dict(shape=(0, 8, 8), tile=(2, 8, 8), dtype="uint16")
    with retile.Stream(out, arrays={"cam0": dict(each, attributes={"laser": 488}), "run/cam1": dict(each)}) as s:
        s.append(np.ones((8, 8), np.uint16), key="cam0", metadata={"t": 0})
        s.skip(2, key="run/cam1")
        s.append(np.full((8, 8), 2, np.uint16), key="run/cam1", metadata={"t": 1})
        s.set_attributes({"laser": 561}, key="cam0")
        s.set_attributes({"gain": 2}, key="run/cam1")
        with pytest.raises(ValueError, match="cam9"):
            s.skip(1, key="cam9")
        with pytest.raises(ValueError, match="ome"):
            s.set_attributes({"ome": {}}, key="cam0")
    assert s.summary["run/cam1"]["skipped_planes"] == 2 and s.summary["cam0"]["skipped_planes"] == 0
    cam0, cam1 = zarr.open_array(str(out / "cam0"), mode="r"), zarr.open_array(str(out / "run/cam1"), mode="r")
    attrs = [cam0.attrs.asdict(), cam1.attrs.asdict()]
    # retile's record of each array beside the user's attributes
    assert [a.pop("retile")["array"]["shape"] for a in attrs] == [[0, 8, 8], [0, 8, 8]]
    assert attrs == [{"laser": 561}, {"gain": 2}]
    assert np.array_equal(cam1[...], np.stack([np.zeros((8, 8)), np.zeros((8, 8)), np.full((8, 8), 2)]))
    records = lambda key: [json.loads(t) if t else None for t in zarr.open_array(str(out / key / "frame_metadata"))[:]]
    assert records("cam0") == [{"t": 0}]
    assert records("run/cam1") == [None, None, {"t": 1}]
