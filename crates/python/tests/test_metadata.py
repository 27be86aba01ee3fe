"""A stream's metadata and its dropped frames (issue 29, items 4 and 5):
user attributes set at the start and updated mid-stream, seen by zarr-python
after the next claim, never over retile's own keys; per-plane metadata in
the `frame_metadata` string array, read by zarr-python alone for every
plane of every rank, with and without pyramids and shards, never behind the
array's claims; `skip(n)` planes of the fill value, whose chunks are not
stored, counted in the summary."""

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import retile

zarr = pytest.importorskip("zarr")


def wait_for(condition, what, seconds=20.0):
    """Polls `condition` until it is true (claims are made by the writer
    threads, a moment after the append that completes their rows)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {seconds} s for {what}")
        time.sleep(0.01)


def claimed(path):
    """Planes the array at `path` claims (0 before its first zarr.json)."""
    try:
        return zarr.open_array(str(path), mode="r").shape[0]
    except (FileNotFoundError, ValueError, KeyError):
        return 0


def frame_records(path):
    """The per-plane records of the output at `path`, decoded, as
    zarr-python alone reads them (None for a plane given none)."""
    texts = zarr.open_array(os.path.join(str(path), "frame_metadata"), mode="r")[...]
    return [json.loads(t) if t else None for t in texts.tolist()]


def user_attributes(node):
    """A node's attributes as zarr-python reads them, less retile's record
    of the array (the attribute `retile`, checked to be one): the user's."""
    attrs = node.attrs.asdict()
    record = attrs.pop("retile")
    assert record["version"] == 1 and {"shape", "tile", "dtype"} <= set(record["array"])
    return attrs


# attributes --------------------------------------------------------------------

def test_attributes_are_the_arrays_and_updates_are_seen_after_the_next_claim(tmp_path):
    out = tmp_path / "a.zarr"
    given = {"sample": "mouse 7", "stage": {"x": 1.5, "y": [1, 2, None]}, "ok": True}
    frame = np.zeros((4, 4), np.uint16)
    with retile.Stream(str(out), shape=(0, 4, 4), tile=(1, 4, 4), dtype="u16",
                       attributes=given) as s:
        # the stream's first zarr.json (no plane claimed) already holds them
        assert user_attributes(zarr.open_array(str(out), mode="r")) == given
        s.append(frame)
        wait_for(lambda: claimed(out) == 1, "the first claim")
        s.set_attributes({"temperature": 37.0, "ok": False})
        # nothing is claimed meanwhile, so nothing is written
        assert user_attributes(zarr.open_array(str(out), mode="r")) == given
        s.append(frame)
        wait_for(lambda: claimed(out) == 2, "the second claim")
        expected = {**given, "temperature": 37.0, "ok": False}
        assert user_attributes(zarr.open_array(str(out), mode="r")) == expected
        s.set_attributes({"last": "before finish"})
    expected["last"] = "before finish"
    array = zarr.open_array(str(out), mode="r")
    assert user_attributes(array) == expected
    assert array.shape == (2, 4, 4)


@pytest.mark.parametrize("pyramid", [None, "mean"])
def test_an_images_attributes_are_its_groups_and_ome_is_untouched(tmp_path, pyramid):
    kwargs = dict(shape=(0, 8, 8), tile=(1, 4, 4), dtype="u8", ngff=True, pyramid=pyramid)
    plain, user = tmp_path / "plain.zarr", tmp_path / "user.zarr"
    frames = np.arange(3 * 64, dtype=np.uint8).reshape(3, 8, 8)
    with retile.Stream(str(plain), **kwargs) as s:
        s.append(frames)
    with retile.Stream(str(user), attributes={"sample": "m7"}, **kwargs) as s:
        s.append(frames[0])
        wait_for(lambda: claimed(user / "0") >= 1, "level 0's first claim")
        s.set_attributes({"objective": "20x"})
        s.append(frames[1:])
    ome = zarr.open_group(str(plain), mode="r").attrs["ome"]
    attrs = user_attributes(zarr.open_group(str(user), mode="r"))
    assert attrs == {"ome": ome, "sample": "m7", "objective": "20x"}
    np.testing.assert_array_equal(zarr.open_array(str(user / "0"), mode="r")[...], frames)
    models = pytest.importorskip("ome_zarr_models.v05.image")
    models.Image.from_zarr(zarr.open_group(str(user), mode="r"))


NOT_JSON = [
    ([1, 2], "must be a dict"),
    ("text", "must be a dict"),
    (3, "must be a dict"),
    ({"a": object()}, "only JSON values"),
    ({"a": float("nan")}, "only JSON values"),
    ({"a": np.int64(3)}, "only JSON values"),
    ({1: "int key"}, "JSON would change it"),
    ({"a": (1, 2)}, "JSON would change it"),
    ({"ome": {}}, "'ome' is retile's own"),
    ({"retile": 1}, "'retile' is retile's own"),
]


@pytest.mark.parametrize("bad,message", NOT_JSON, ids=[m + str(i) for i, (_, m) in enumerate(NOT_JSON)])
def test_bad_attributes_are_refused_and_change_nothing(tmp_path, bad, message):
    out = tmp_path / "bad.zarr"
    with pytest.raises(ValueError, match=message):
        retile.Stream(str(out), shape=(0, 4), tile=(1, 4), dtype="u8", attributes=bad)
    assert not out.exists() or not any(out.iterdir())
    with retile.Stream(str(out), shape=(0, 4), tile=(1, 4), dtype="u8",
                       attributes={"kept": 1}, overwrite=True) as s:
        with pytest.raises(ValueError, match=message):
            s.set_attributes(bad)
        s.append(bytes(4))
        if message.startswith("'"):
            return  # reserved keys are attributes' rule, not per-plane metadata's
        with pytest.raises(ValueError, match=message):
            s.append(bytes(4), metadata=bad)
        s.append(bytes(4), metadata={"good": 1})
    assert user_attributes(zarr.open_array(str(out), mode="r")) == {"kept": 1}
    # the refused append took nothing
    assert s.summary["planes"] == 2
    assert frame_records(out) == [None, {"good": 1}]


def test_set_attributes_key_names_the_one_array_and_needs_a_live_output(tmp_path):
    out = tmp_path / "k.zarr"
    s = retile.Stream(str(out), shape=(0, 4), tile=(1, 4), dtype="u8")
    with pytest.raises(ValueError, match="writes one array"):
        s.set_attributes({"a": 1}, key="cam0")
    s.set_attributes({"a": 1}, key=None)
    s.finish()
    with pytest.raises(RuntimeError, match="finished"):
        s.set_attributes({"b": 2})
    assert user_attributes(zarr.open_array(str(out), mode="r")) == {"a": 1}
    measured = retile.Stream(None, shape=(0, 4), tile=(1, 4), dtype="u8")
    with pytest.raises(ValueError, match="without an output"):
        measured.set_attributes({"a": 1})
    with pytest.raises(ValueError, match="without an output"):
        measured.append(bytes(4), metadata={"a": 1})
    with pytest.raises(ValueError, match="attributes take effect only with an output"):
        retile.Stream(None, shape=(0, 4), tile=(1, 4), dtype="u8", attributes={"a": 1})
    measured.finish()


# per-plane metadata --------------------------------------------------------------

def case(seed):
    """A random stream: rank 1 to 5, its shape and tile, a pyramid or none,
    shards or none, how many planes, and which carry metadata."""
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 6))
    plane = [int(rng.integers(1, 7)) for _ in range(rank - 1)]
    tile = [int(rng.integers(1, 4))] + [int(rng.integers(1, n + 1)) for n in plane]
    planes = int(rng.integers(1, 40))
    kwargs = dict(shape=tuple([0] + plane), tile=tuple(tile), dtype="u16")
    if rank >= 2 and rng.random() < 0.4:
        kwargs["pyramid"] = "mean"
    if rng.random() < 0.5:
        kwargs["shard"] = tuple(int(rng.integers(1, 3)) for _ in range(rank))
    records = [({"plane": p, "t_ms": float(rng.random()), "tags": ["é", str(p)]}
                if rng.random() < 0.7 else None) for p in range(planes)]
    return rng, kwargs, planes, records


@pytest.mark.parametrize("seed", range(30))
def test_every_planes_metadata_reads_back_with_zarr_alone_and_never_behind(tmp_path, seed):
    rng, kwargs, planes, records = case(seed)
    out = tmp_path / "m.zarr"
    level0 = out / "0" if "pyramid" in kwargs else out
    plane_shape = kwargs["shape"][1:]
    data = rng.integers(0, 60000, size=(planes, *plane_shape), dtype=np.uint16)
    with retile.Stream(str(out), **kwargs) as s:
        p = 0
        while p < planes:
            # one frame an append, or several frames sharing one record
            n = 1 if rng.random() < 0.7 else int(rng.integers(1, planes - p + 1))
            if records[p] is None:
                s.append(data[p:p + n])
                records[p + 1:p + n] = [None] * (n - 1)
            else:
                s.append(data[p:p + n], metadata=records[p])
                records[p + 1:p + n] = [records[p]] * (n - 1)
            p += n
            # the records of every plane the array claims are stored already
            now = claimed(level0)
            if now and os.path.exists(out / "frame_metadata"):
                stored = frame_records(out)
                assert len(stored) >= now
                assert stored[:now] == records[:now]
            elif now:
                assert all(r is None for r in records[:now])
    np.testing.assert_array_equal(zarr.open_array(str(level0), mode="r")[...], data)
    if any(r is not None for r in records):
        assert frame_records(out) == records
    else:
        assert not (out / "frame_metadata").exists()


def test_metadata_goes_with_the_planes_an_append_starts(tmp_path):
    out = tmp_path / "p.zarr"
    with retile.Stream(str(out), shape=(0, 4), tile=(2, 4), dtype="u8") as s:
        s.append(bytes(2), metadata={"first": 0})       # starts plane 0
        with pytest.raises(ValueError, match="starts none"):
            s.append(bytes(1), metadata={"nope": 1})   # continues plane 0
        s.append(bytes(1))
        s.append(bytes(9), metadata={"many": 1})       # ends plane 0, starts 1 and 2
        s.append(bytes(5), metadata={"last": 1})       # starts 3 (byte 12) and 4 (partly)
        s.append(bytes(3))
        assert s.bytes_taken == 20
    assert frame_records(out) == [{"first": 0}, {"many": 1}, {"many": 1}, {"last": 1}, {"last": 1}]


def test_records_past_a_thousand_planes_span_chunks(tmp_path):
    out = tmp_path / "long.zarr"
    planes = 2 * 1024 + 7
    with retile.Stream(str(out), shape=(0, 2), tile=(64, 2), dtype="u8") as s:
        for p in range(planes):
            s.append(bytes([p % 256, 1]), metadata={"p": p})
    assert frame_records(out) == [{"p": p} for p in range(planes)]
    assert sorted(os.listdir(out / "frame_metadata")) == ["0", "1", "2", "zarr.json"]


# dropped frames --------------------------------------------------------------------

def stored_files(path):
    """Every chunk or shard file under `path` (metadata aside), and their bytes."""
    files = [os.path.join(d, f) for d, _, names in os.walk(path) for f in names
             if f != "zarr.json" and "frame_metadata" not in d]
    return files, sum(os.path.getsize(f) for f in files)


@pytest.mark.parametrize("variant", [dict(), dict(shard=(2, 2, 1)), dict(pyramid="mean"),
                                     dict(pyramid="mean", shard=(1, 1, 2), codec="zstd:1")])
def test_skipped_planes_read_as_fill_and_their_chunks_are_not_stored(tmp_path, variant):
    fill = 7
    kwargs = dict(shape=(0, 8, 8), tile=(2, 4, 4), dtype="u16", fill=fill, **variant)
    before = np.arange(2 * 64, dtype=np.uint16).reshape(2, 8, 8) + 100
    after = np.arange(3 * 64, dtype=np.uint16).reshape(3, 8, 8) + 1000
    gap = 1000
    with_gap, without = tmp_path / "gap.zarr", tmp_path / "none.zarr"
    with retile.Stream(str(with_gap), **kwargs) as s:
        s.append(before, metadata={"frame": 0})
        s.skip(gap)
        s.append(after[0], metadata={"frame": 1})
        s.append(after[1:])
    assert s.summary["skipped_planes"] == gap
    assert s.summary["planes"] == 2 + gap + 3
    with retile.Stream(str(without), **kwargs) as s:
        s.append(before)
        s.append(after)
    assert s.summary["skipped_planes"] == 0
    level = "0" if "pyramid" in variant else ""
    read = zarr.open_array(str(with_gap / level), mode="r")[...]
    expected = np.concatenate([before, np.full((gap, 8, 8), fill, np.uint16), after])
    np.testing.assert_array_equal(read, expected)
    # the only files are those of the rows (of tiles, or of shards) that
    # hold a plane with data: the gap's rows cost no disk
    depth = 2 * variant.get("shard", (1,))[0]
    shard = variant.get("shard", (1, 1, 1))
    files_per_row = (2 // shard[1]) * (2 // shard[2])
    data_rows = {p // depth for p in [0, 1, 2 + gap, 3 + gap, 4 + gap]}
    gap_files, gap_bytes = stored_files(with_gap / level)
    assert len(gap_files) == len(data_rows) * files_per_row
    rows = {int(os.path.relpath(f, with_gap / level).split(os.sep)[1]) for f in gap_files}
    assert rows == data_rows
    _, nbytes = stored_files(without / level)
    raw_gap = gap * 8 * 8 * 2
    assert gap_bytes < 2 * nbytes < raw_gap, (gap_bytes, nbytes)
    if "pyramid" in variant:
        # every level below is the halving of the level above, fill included
        reference = expected
        for k in range(1, len(s.summary["levels"])):
            reference = reference.reshape(reference.shape[0], reference.shape[1] // 2, 2,
                                          reference.shape[2] // 2, 2).astype(np.float64)
            reference = np.round(reference.mean(axis=(2, 4))).astype(np.uint16)
            level_k = zarr.open_array(str(with_gap / str(k)), mode="r")[...]
            np.testing.assert_array_equal(level_k, reference)
    records = frame_records(with_gap)
    assert records[:2] == [{"frame": 0}] * 2 and records[2:2 + gap] == [None] * gap
    assert records[2 + gap:] == [{"frame": 1}, None, None]


def test_skip_inside_a_plane_or_past_a_bounded_end_is_refused_and_adds_nothing(tmp_path):
    out = tmp_path / "s.zarr"
    with retile.Stream(str(out), shape=(6, 4), tile=(2, 4), dtype="u8") as s:
        s.append(bytes(range(4)))
        s.append(bytes(2))
        with pytest.raises(ValueError, match="partly appended"):
            s.skip(1)
        s.append(bytes(2))
        with pytest.raises(ValueError, match="past the 6 planes"):
            s.skip(5)
        s.skip(4)
    assert s.summary["skipped_planes"] == 4 and s.summary["planes"] == 6
    read = zarr.open_array(str(out), mode="r")[...]
    np.testing.assert_array_equal(read[0], [0, 1, 2, 3])
    np.testing.assert_array_equal(read[1:], 0)


def test_a_skip_readers_could_not_index_is_refused_before_adding_anything(tmp_path):
    out = tmp_path / "s.zarr"
    with retile.Stream(str(out), shape=(0,), tile=(4,), dtype="u16", fill=3) as s:
        s.append(np.array([1, 2], np.uint16))
        for planes in (2**62, 2**63 - 1):  # 2 bytes a plane: past 2**63 - 1 bytes
            with pytest.raises(ValueError, match=f"cannot index: skip at most {2**62 - 3} planes"):
                s.skip(planes)
        with pytest.raises(OverflowError):
            s.skip(2**64)
        s.skip(3)
    assert s.summary["skipped_planes"] == 3
    np.testing.assert_array_equal(zarr.open_array(str(out), mode="r")[...], [1, 2, 3, 3, 3])


@pytest.mark.parametrize("plane, tile", [((64, 256), (4, 64, 256)), ((), (4,))],
                         ids=["planes of 32 KiB", "1-D, tiles of 4"])
def test_a_long_skip_stops_at_ctrl_c_and_keeps_the_planes_it_added(tmp_path, plane, tile):
    # tiles of 4 elements: each epoch's claim, not its bytes, takes the time;
    # the skip still asks for signals at least every 64 epochs (it once took
    # minutes to notice)
    out = tmp_path / "s.zarr"
    script = textwrap.dedent(f"""
        import json, os, signal, threading
        import numpy as np
        import retile
        # Python keeps SIGINT ignored where it started so (a job run in the
        # background by a shell): Ctrl-C as a terminal would deliver it
        signal.signal(signal.SIGINT, signal.default_int_handler)
        s = retile.Stream({str(out)!r}, shape=(0, *{plane!r}), tile={tile!r}, dtype="u16", fill=9)
        s.append(np.ones({plane!r} or (1,), np.uint16))
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            s.skip(10**12)  # hours of fill
            print("not interrupted")
        except KeyboardInterrupt:
            pass
        s.append(np.full({plane!r} or (1,), 2, np.uint16))
        print(json.dumps(s.finish()))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    skipped = summary["skipped_planes"]
    assert 0 < skipped < 10**12 and summary["planes"] == skipped + 2
    a = zarr.open_array(str(out), mode="r")
    assert a.shape == (skipped + 2, *plane)
    np.testing.assert_array_equal(a[0], 1)
    np.testing.assert_array_equal(a[-1], 2)
    np.testing.assert_array_equal(a[1 + skipped // 2], 9)
    np.testing.assert_array_equal(a[skipped], 9)


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_skip_in_every_rank(tmp_path, rank):
    rng = np.random.default_rng(rank)
    plane = [int(rng.integers(1, 5)) for _ in range(rank - 1)]
    tile = [3] + [int(rng.integers(1, n + 1)) for n in plane]
    out = tmp_path / f"r{rank}.zarr"
    a = rng.integers(1, 200, size=(4, *plane), dtype=np.uint8)
    b = rng.integers(1, 200, size=(2, *plane), dtype=np.uint8)
    with retile.Stream(str(out), shape=tuple([0] + plane), tile=tuple(tile), dtype="u8",
                       fill=255) as s:
        s.append(a)
        s.skip(7)
        s.append(b)
    expected = np.concatenate([a, np.full((7, *plane), 255, np.uint8), b])
    np.testing.assert_array_equal(zarr.open_array(str(out), mode="r")[...], expected)
    assert s.summary["skipped_planes"] == 7
    # planes 6..8 (tile row 2) are fill alone: not one of its chunks is stored
    assert not any(f.startswith("2") for f in os.listdir(out / "c"))
