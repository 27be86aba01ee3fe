"""Appending to a store retile wrote (issue 29, item 6: resume):
`retile.Stream(output, mode="a")` goes on from the store's last claimed
plane, taking shape, dtype, tile, shards, codec, fill and pyramid from the
store. A recording appended in pieces, over every rank from 1 to 5, with
and without shards, codecs and pyramids, bounded and unbounded, reads back
with zarr-python as numpy's array (every pyramid level as numpy's halving);
a writer killed with SIGKILL at random moments is resumed until every plane
is in; stores retile did not write and contradicting arguments are refused
with one clear error each, and nothing claimed is lost."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import retile
from pyramid_reference import default_halved, halve, level_shapes, random_array

zarr = pytest.importorskip("zarr")

DTYPES = ["u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "f2", "f4", "f8"]
METHODS = ["mean", "min", "max", "decimate", "median"]
CODECS = ["none", "zstd:1", "blosc-lz4:1"]


def claimed(path):
    """Planes the array at `path` claims, as zarr-python reads it."""
    return zarr.open_array(str(path), mode="r").shape[0]


def level0(out, pyramid):
    return out / "0" if pyramid else out


@st.composite
def recordings(draw):
    rank = draw(st.integers(1, 5))
    planes = draw(st.integers(1, 10))
    return dict(
        rank=rank,
        shape=[planes] + [draw(st.integers(1, 6)) for _ in range(rank - 1)],
        tile=[draw(st.integers(1, 4)) for _ in range(rank)],
        dtype=draw(st.sampled_from(DTYPES)),
        bounded=draw(st.booleans()),
        shard=draw(st.none() | st.lists(st.integers(1, 3), min_size=rank, max_size=rank)),
        codec=draw(st.sampled_from(CODECS)),
        pyramid=draw(st.none() | st.sampled_from(METHODS)) if rank >= 2 else None,
        fill=draw(st.sampled_from([0, 1])),
        cuts=sorted(draw(st.lists(st.integers(0, planes), min_size=1, max_size=3))),
        again=draw(st.booleans()),
        seed=draw(st.integers(0, 2**32 - 1)),
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=recordings())
def test_a_recording_appended_in_pieces_reads_back_as_if_streamed_whole(tmp_path_factory, c):
    data = random_array(np.random.default_rng(c["seed"]), c["shape"], c["dtype"])
    out = tmp_path_factory.mktemp("resume") / "r.zarr"
    planes = c["shape"][0]
    options = dict(shape=[planes if c["bounded"] else 0] + c["shape"][1:], tile=c["tile"],
                   dtype=np.dtype(c["dtype"]), shard=c["shard"], codec=c["codec"], pyramid=c["pyramid"],
                   fill=c["fill"])
    ends = c["cuts"] + [planes]
    for piece, (start, end) in enumerate(zip([0] + ends[:-1], ends)):
        if piece == 0:
            s = retile.Stream(str(out), **options)
        elif c["bounded"] and start == planes:
            with pytest.raises(ValueError, match=f"holds all {planes} planes"):
                retile.Stream(str(out), mode="a")
            continue
        else:
            # the options given again agree with the store's; left out, they are its
            s = retile.Stream(str(out), mode="a", **(options if c["again"] else {}))
        assert s.planes_claimed == start, (piece, c)
        for plane in data[start:end]:
            s.append(np.ascontiguousarray(plane))
        if c["bounded"] and end < planes:
            # a bounded stream cut short says so, having written what it took
            with pytest.raises(RuntimeError, match="the input ended after"):
                s.finish()
        else:
            s.finish()
        got = zarr.open_array(str(level0(out, c["pyramid"])), mode="r")[...]
        bits = f"u{data.dtype.itemsize}"
        assert got.shape == data[:end].shape, (piece, got.shape, c)
        assert np.array_equal(got.view(bits), data[:end].view(bits)), (piece, c)
    if c["pyramid"] is None:
        return
    halved = default_halved(c["rank"])
    shapes = level_shapes(c["shape"], c["tile"], halved)
    want = data
    for k in range(len(shapes)):
        got = zarr.open_array(str(out / str(k)), mode="r")[...]
        bits = f"u{want.dtype.itemsize}"
        assert got.shape == want.shape and np.array_equal(got.view(bits), want.view(bits)), (k, c)
        want = halve(want, halved, c["pyramid"])
    assert not (out / str(len(shapes))).exists()


@pytest.mark.parametrize("shard", [None, (2, 1, 1), (3, 2, 1)])
def test_levels_that_halve_the_first_dimension_are_made_again_from_level_0(tmp_path, shard):
    rng = np.random.default_rng(11)
    data = rng.integers(0, 1000, size=(37, 6, 10), dtype=np.uint16)
    options = dict(shape=(0, 6, 10), tile=(2, 4, 4), dtype="u16", shard=shard, pyramid="max",
                   downsample=(True, True, True), levels=3)
    whole = tmp_path / "whole.zarr"
    with retile.Stream(str(whole), **options) as s:
        s.append(data)
    out = tmp_path / "pieces.zarr"
    with retile.Stream(str(out), **options) as s:
        s.append(data[:9])
    for end in (14, 15, 30, 37):
        with retile.Stream(str(out), mode="a") as s:
            s.append(data[s.planes_claimed:end])
    for k in range(3):
        got = zarr.open_array(str(out / str(k)), mode="r")[...]
        assert np.array_equal(got, zarr.open_array(str(whole / str(k)), mode="r")[...]), k
    np.testing.assert_array_equal(zarr.open_array(str(out / "0"), mode="r")[...], data)


def test_attributes_are_kept_and_updated_and_records_go_on_at_the_arrays_planes(tmp_path):
    out = tmp_path / "a.zarr"
    with retile.Stream(str(out), shape=(0, 4), tile=(3, 4), dtype="u8", attributes={"sample": "m7"}) as s:
        s.append(np.ones((4, 4), np.uint8))
    with retile.Stream(str(out), mode="a", attributes={"run": 2}) as s:
        assert s.planes_claimed == 4
        s.append(np.full(4, 2, np.uint8), metadata={"t": 4})
        s.append(np.full(4, 3, np.uint8))
    array = zarr.open_array(str(out), mode="r")
    attrs = array.attrs.asdict()
    assert attrs.pop("retile")["array"] == {"shape": [0, 4], "tile": [3, 4], "dtype": "u8"}
    assert attrs == {"sample": "m7", "run": 2}
    np.testing.assert_array_equal(array[...], np.array([[1] * 4] * 4 + [[2] * 4, [3] * 4], np.uint8))
    texts = zarr.open_array(str(out / "frame_metadata"), mode="r")[...].tolist()
    assert [json.loads(t) if t else None for t in texts] == [None] * 4 + [{"t": 4}, None]
    assert claimed(out) == 6
    # a store with per-plane metadata goes on: the planes taken again keep their records
    with retile.Stream(str(out), mode="a") as s:
        s.append(np.full(4, 6, np.uint8), metadata={"t": 6})
    with retile.Stream(str(out), mode="a") as s:
        assert s.planes_claimed == 7  # the stream takes plane 6 again, from the store
        s.append(np.full(4, 7, np.uint8), metadata={"t": 7})
    texts = zarr.open_array(str(out / "frame_metadata"), mode="r")[...].tolist()
    assert [json.loads(t) if t else None for t in texts] == [None] * 4 + [{"t": 4}, None, {"t": 6}, {"t": 7}]
    np.testing.assert_array_equal(zarr.open_array(str(out), mode="r")[6:], [[6] * 4, [7] * 4])


@pytest.mark.parametrize("first", [1020, 1027, 1030])
def test_records_go_on_across_their_chunks(tmp_path, first):
    out = tmp_path / "r.zarr"
    planes = np.arange(first + 12, dtype=np.uint32).reshape(-1, 1)
    with retile.Stream(str(out), shape=(0, 1), tile=(5, 1), dtype="uint32") as s:
        for p in range(first):
            s.append(planes[p], metadata={"p": p})
    with retile.Stream(str(out), mode="a") as s:
        for p in range(s.planes_claimed, len(planes)):
            s.append(planes[p], metadata=None if p % 7 == 0 else {"p": p})
    texts = zarr.open_array(str(out / "frame_metadata"), mode="r")[...].tolist()
    want = [None if p >= first and p % 7 == 0 else {"p": p} for p in range(len(planes))]
    assert [json.loads(t) if t else None for t in texts] == want
    np.testing.assert_array_equal(zarr.open_array(str(out), mode="r")[...], planes)


def test_a_store_zarr_python_wrote_is_refused_and_left_as_it_was(tmp_path):
    out = tmp_path / "z.zarr"
    foreign = zarr.create_array(str(out), shape=(4, 8), chunks=(2, 8), dtype="uint16", fill_value=0)
    foreign[...] = np.arange(32, dtype=np.uint16).reshape(4, 8)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    with pytest.raises(ValueError, match="was not written by retile") as refused:
        retile.Stream(str(out), mode="a")
    assert "\n" not in str(refused.value)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    np.testing.assert_array_equal(zarr.open_array(str(out), mode="r")[...], np.arange(32).reshape(4, 8))


CONTRADICTIONS = [
    (dict(shape=(0, 4, 7)), "shape"),
    (dict(tile=(2, 2, 3)), "tile"),
    (dict(dtype="u8"), "dtype"),
    (dict(dtype=np.float32), "dtype"),
    (dict(shard=(1, 1, 1)), "shard"),
    (dict(codec="zstd:2"), "codec"),
    (dict(codec="none"), "codec"),
    (dict(shuffle="bit"), "codec"),
    (dict(fill=7), "fill"),
    (dict(pyramid="max"), "pyramid"),
    (dict(levels=1), "levels"),
    (dict(downsample=(True, True, True)), "downsample"),
    (dict(dim_names=["a", "b", "c"]), "dim_names"),
    (dict(units=["second", None, None]), "units"),
    (dict(scale=[1.0, 2.0, 2.0]), "scale"),
]


@pytest.mark.parametrize("wrong,named", CONTRADICTIONS, ids=[n + str(i) for i, (_, n) in enumerate(CONTRADICTIONS)])
def test_an_argument_that_contradicts_the_store_is_refused_and_nothing_claimed_is_lost(tmp_path, wrong, named):
    out = tmp_path / "c.zarr"
    options = dict(shape=(0, 4, 6), tile=(3, 2, 3), dtype="u16", shard=(2, 1, 1), codec="blosc-zstd:1",
                   pyramid="mean")
    data = np.arange(7 * 24, dtype=np.uint16).reshape(7, 4, 6)
    with retile.Stream(str(out), **options) as s:
        s.append(data)
    with pytest.raises(ValueError, match=f"{named}=.* contradicts the store") as refused:
        retile.Stream(str(out), mode="a", **wrong)
    assert "\n" not in str(refused.value)
    assert not (out / ".retile.lock").exists()
    np.testing.assert_array_equal(zarr.open_array(str(out / "0"), mode="r")[...], data)
    assert [claimed(out / str(k)) for k in range(2)] == [7, 7]


@pytest.mark.parametrize("kwargs,message", [
    (dict(mode="x"), "mode='x' is not a mode"),
    (dict(mode="a", overwrite=True), "overwrite=True deletes it"),
    (dict(mode="a", arrays={"cam0": dict(shape=(0, 4), tile=(1, 4), dtype="u8")}), "cannot append yet"),
])
def test_modes_that_cannot_be_are_refused(tmp_path, kwargs, message):
    out = tmp_path / "m.zarr"
    with retile.Stream(str(out), shape=(0, 4), tile=(1, 4), dtype="u8") as s:
        s.append(bytes(8))
    with pytest.raises(ValueError, match=message):
        retile.Stream(str(out), **kwargs)
    assert claimed(out) == 2


def test_appending_needs_a_local_store_retile_wrote(tmp_path):
    with pytest.raises(ValueError, match="holds no Zarr store to append to"):
        retile.Stream(str(tmp_path / "none.zarr"), mode="a")
    with pytest.raises(ValueError, match="give its output"):
        retile.Stream(None, mode="a")
    with pytest.raises(ValueError, match="S3 .* is not built yet"):
        retile.Stream("s3://bucket/run.zarr", mode="a")


def test_a_second_writer_is_refused_while_one_appends(tmp_path):
    out = tmp_path / "l.zarr"
    with retile.Stream(str(out), shape=(0, 4), tile=(1, 4), dtype="u8") as s:
        s.append(bytes(8))
    with retile.Stream(str(out), mode="a") as s:
        with pytest.raises(ValueError, match="being written by another stream"):
            retile.Stream(str(out), mode="a")
        s.append(bytes(4))
    assert claimed(out) == 3


WRITER = """
import sys, time, json
import numpy as np, retile
out, raw, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
data = np.load(raw)
s = retile.Stream(out, mode=options.pop("mode"), **options)
print(s.planes_claimed, flush=True)
for plane in data[s.planes_claimed:]:
    s.append(plane)
    time.sleep(0.004)
s.finish()
"""


@pytest.mark.parametrize("options", [
    dict(shape=[0, 8, 12], tile=[2, 4, 4], dtype="uint16"),
    dict(shape=[0, 8, 12], tile=[2, 4, 4], dtype="uint16", shard=[3, 1, 3], codec="zstd:1"),
    dict(shape=[0, 8, 12], tile=[2, 4, 4], dtype="uint16", shard=[2, 2, 1], pyramid="mean"),
])
def test_a_writer_killed_at_random_moments_is_resumed_until_every_plane_is_in(tmp_path, options):
    seed = int.from_bytes(os.urandom(4), "little")
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 50, size=(60, 8, 12), dtype=np.uint16) * (rng.random((60, 8, 12)) < 0.3)
    raw = tmp_path / "data.npy"
    np.save(raw, data)
    out = tmp_path / "k.zarr"
    pyramid = options.get("pyramid")
    for round in range(8):
        exists = (out / "zarr.json").exists()
        start = claimed(level0(out, pyramid)) if exists else 0
        args = dict(mode="a") if exists else dict(options, mode="w", overwrite=True)
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(out), str(raw), json.dumps(args)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        told = child.stdout.readline()
        if told:
            assert int(told) == start, (seed, round)
        if round < 7:
            time.sleep(rng.random() * 0.25)
            child.send_signal(signal.SIGKILL)
        _, err = child.communicate(timeout=60)
        assert "Traceback" not in err, (seed, round, err)
        if round == 7:
            assert child.returncode == 0, (seed, err)
        if (out / "zarr.json").exists():
            got = zarr.open_array(str(level0(out, pyramid)), mode="r")[...]
            # the store never claims what is not stored: its planes are the recording's
            np.testing.assert_array_equal(got, data[: len(got)], err_msg=f"seed {seed}, round {round}")
    assert claimed(level0(out, pyramid)) == 60
    if pyramid:
        halved = default_halved(3)
        want = data
        for k in range(len(level_shapes(data.shape, options["tile"], halved))):
            np.testing.assert_array_equal(zarr.open_array(str(out / str(k)), mode="r")[...], want)
            want = halve(want, halved, pyramid)


@pytest.mark.parametrize("shard", [None, (1, 2, 1)])
def test_a_row_rewritten_with_fill_alone_leaves_no_file_of_a_killed_append(tmp_path, shard):
    out = tmp_path / "f.zarr"
    options = dict(shape=(0, 4, 4), tile=(4, 2, 4), dtype="u16", shard=shard)
    zeros, ones = np.zeros((2, 4, 4), np.uint16), np.ones((2, 4, 4), np.uint16)
    with retile.Stream(str(out), **options) as s:
        s.append(zeros)
    with retile.Stream(str(out), mode="a") as s:
        s.append(ones)
    # the state of an append killed after its row's files were renamed in,
    # before its claim: the files hold planes 2 and 3, the claim says 2
    metadata = json.loads((out / "zarr.json").read_text())
    metadata["shape"][0] = 2
    (out / "zarr.json").write_text(json.dumps(metadata))
    assert any((out / "c").rglob("*"))
    with retile.Stream(str(out), mode="a") as s:
        assert s.planes_claimed == 2
        s.append(zeros)
    np.testing.assert_array_equal(zarr.open_array(str(out), mode="r")[...], np.zeros((4, 4, 4)))
    assert not [p for p in (out / "c").rglob("*") if p.is_file()], "a file of fill alone was left"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rank=st.integers(3, 5), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_a_recording_in_another_order_goes_on_in_its_order(tmp_path_factory, rank, seed, data):
    # the input order is kept in the store's record: the stream goes on in it, and the planes it
    # takes again from the store are put back in that order
    rng = np.random.default_rng(seed)
    planes = int(rng.integers(2, 9))
    shape = [planes] + [int(rng.integers(1, 6)) for _ in range(rank - 1)]
    tile = [int(rng.integers(1, 4)) for _ in range(rank)]
    inner = data.draw(st.permutations(list(range(1, rank))))
    order = [0] + list(inner)
    names = ["t", "c", "z", "y", "x"][5 - rank:]
    array = rng.integers(0, 60000, size=shape).astype(np.uint16)
    frames = np.ascontiguousarray(np.transpose(array, order))
    cut = int(rng.integers(1, planes))
    given_again = data.draw(st.booleans())
    out = tmp_path_factory.mktemp("order") / "o.zarr"
    options = dict(shape=[0] + shape[1:], tile=tile, dtype="uint16", shard=[2] + [1] * (rank - 1),
                   dim_names=names, input_order=[names[d] for d in order])
    with retile.Stream(str(out), **options) as s:
        for frame in frames[:cut]:
            s.append(frame)
    again = dict(input_order=options["input_order"]) if given_again else {}
    with retile.Stream(str(out), mode="a", **again) as s:
        for frame in frames[s.planes_claimed:]:
            s.append(frame)
    np.testing.assert_array_equal(zarr.open_array(str(out), mode="r")[...], array)


def test_a_recording_slowest_along_another_dimension_is_not_continued(tmp_path):
    out = tmp_path / "held.zarr"
    data = np.arange(4 * 3 * 5, dtype=np.uint16).reshape(4, 3, 5)
    with retile.Stream(str(out), shape=data.shape, tile=(2, 1, 5), dtype="uint16",
                       input_order=["y", "t", "x"]) as s:
        s.append(np.ascontiguousarray(np.transpose(data, (1, 0, 2))[:2]))
        with pytest.raises(RuntimeError):
            s.finish()
    with pytest.raises(ValueError, match="claims nothing before its end"):
        retile.Stream(str(out), mode="a")
