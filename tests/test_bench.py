"""The benchmark scripts (bench/writers.py, bench/scaling.py, bench/frames.py)
measure what they say: the frames are the same bytes every run, the codec
ceiling compresses every chunk of any shape, the storage ceiling writes the
stream's bytes, a store that reads back wrong is reported and never timed,
and a small run of every writer end to end gives a figure for each.

    python3 -m pytest tests/test_bench.py -q

Needs numpy, zarr, numcodecs, hypothesis, pytest, tensorstore, acquire-zarr,
matplotlib, the retile package, and the release CLI: RETILE=path, else
$CARGO_TARGET_DIR/release/retile, else target/release/retile.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import frames  # noqa: E402
import writers  # noqa: E402


def retile_cli():
    """The release CLI the end-to-end runs measure; a missing one fails the test, saying how to build it."""
    for path in (os.environ.get("RETILE"),
                 os.path.join(os.environ.get("CARGO_TARGET_DIR", ""), "release", "retile"),
                 os.path.join(ROOT, "target", "release", "retile")):
        if path and os.access(path, os.X_OK):
            return path
    pytest.fail("no retile CLI: `cargo build --release -p retile`, or RETILE=/path/to/retile")


def test_frames_file_is_the_earlier_scripts_bytes(tmp_path):
    """frames_file keeps the bytes every earlier benchmark used: the scene, the seeded noise, the drift."""
    raw = frames.frames_file(str(tmp_path), 3, 20, 30)
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:20, 0:30]
    scene = (200 + 800 * (np.sin(yy / 97.0) * np.cos(xx / 61.0)) ** 2).astype(np.uint16)
    want = np.stack([(scene + rng.integers(0, 64, size=(20, 30), dtype=np.uint16) + (t % 50)).astype(np.uint16)
                     for t in range(3)])
    assert np.array_equal(np.fromfile(raw, dtype=np.uint16).reshape(3, 20, 30), want)


@pytest.mark.parametrize("dtype", frames.DTYPES)
@pytest.mark.parametrize("frame", [(17, 23), (3, 9, 14)])
def test_frames_raw_every_type_and_rank(tmp_path, dtype, frame):
    raw = frames.frames_raw(str(tmp_path), 4, frame, dtype)
    data = np.fromfile(raw, dtype=dtype)
    assert data.size == 4 * int(np.prod(frame))
    assert frames.frames_raw(str(tmp_path), 4, frame, dtype) == raw  # made once, found again
    u16 = np.fromfile(frames.frames_raw(str(tmp_path), 4, frame, "uint16"), dtype=np.uint16)
    want = {"uint16": u16, "uint8": (u16 // 5).astype(np.uint8), "float32": u16.astype(np.float32) / np.float32(3)}
    assert np.array_equal(data, want[dtype])  # the mapping frames.py documents


def test_frames_raw_refuses_what_it_cannot_make(tmp_path):
    with pytest.raises(ValueError):
        frames.frames_raw(str(tmp_path), 2, (4, 4), "int64")
    with pytest.raises(ValueError):
        frames.frames_raw(str(tmp_path), 2, (4,), "uint16")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_chunks_of_cover_the_frames_padded(data):
    """Every chunk has the chunk's shape, and the chunks laid out on their grid are the frames padded with zeros."""
    rank = data.draw(st.integers(1, 5))
    shape = tuple(data.draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank)))
    chunk = tuple(data.draw(st.integers(1, n + 2)) for n in shape)
    a = np.arange(int(np.prod(shape)), dtype=np.uint16).reshape(shape) + 1
    got = writers.chunks_of(a, chunk)
    grid = [-(-n // c) for n, c in zip(shape, chunk)]
    assert len(got) == int(np.prod(grid)) and all(x.shape == chunk for x in got)
    whole = np.zeros([g * c for g, c in zip(grid, chunk)], dtype=a.dtype)
    for idx, x in zip(np.ndindex(*grid), got):
        whole[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, chunk))] = x
    assert np.array_equal(whole[tuple(slice(0, n) for n in shape)], a)
    assert whole.sum() == a.sum()  # the padding is zeros


def small_bench(tmp_path, case="default", cores=1, **over):
    args = {"case": case, "planes": "6", "frame": "40,70", "dtype": None, "chunk": "4,16,32", "shard": "1,2,2",
            "pyramid": False}
    args.update(over)
    c = writers.make_case(type("Args", (), args))
    b = writers.Bench(retile="/nonexistent", work=str(tmp_path), case=c, cores=cores, all_cpus=os.sched_getaffinity(0))
    b.raw = frames.frames_raw(str(tmp_path), c.planes, c.frame, c.dtype)
    b.frames = np.fromfile(b.raw, dtype=c.dtype).reshape(c.shape)
    return b


@pytest.mark.parametrize("codec", ["blosc-lz4:1", "blosc-zstd:1", "blosc-zlib:1", "zstd:1", "gzip:1"])
def test_codec_ceiling_compresses_every_chunk(tmp_path, codec):
    b = small_bench(tmp_path, cores=2)
    assert writers.codec_ceiling(b, codec) > 0
    assert writers.codec_ceiling(b, "none") is None


def test_storage_ceiling_writes_the_streams_bytes_and_leaves_nothing(tmp_path, monkeypatch):
    b = small_bench(tmp_path, cores=3)
    monkeypatch.setattr(writers, "STORAGE_BLOCK", 1000)  # many writes per writer, and a short last one
    written = []
    real_write = os.write
    monkeypatch.setattr(writers.os, "write", lambda fd, buf: written.append(real_write(fd, buf)) or written[-1])
    assert writers.storage_ceiling(b) > 0
    assert sum(written) == b.frames.nbytes and max(written) <= 1000
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(b.raw)]


def test_check_store_finds_every_difference(tmp_path):
    b = small_bench(tmp_path)
    path = str(tmp_path / "a.zarr")
    a = zarr.create_array(path, shape=b.frames.shape, chunks=(2, 16, 16), dtype=b.frames.dtype)
    a[...] = b.frames
    args = (b.raw, list(b.case.shape), b.case.dtype)
    assert writers.check_store(path, *args, None) == (True, [list(b.case.shape)])
    assert writers.check_store(path, *args, 1)[0]
    assert not writers.check_store(path, *args, 2)[0]  # levels claimed that are not there
    a[5, 39, 69] = b.frames[5, 39, 69] + 1  # the last element of the last plane
    ok, why = writers.check_store(path, *args, None)
    assert not ok and "differ" in why
    short = zarr.create_array(str(tmp_path / "b.zarr"), shape=(5, 40, 70), chunks=(2, 16, 16), dtype="uint16")
    short[...] = b.frames[:5]
    assert not writers.check_store(str(tmp_path / "b.zarr"), *args, None)[0]  # a plane missing
    g = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    for k, arr in enumerate((b.frames, b.frames[:, ::2, ::2])):
        g.create_array(str(k), shape=arr.shape, chunks=(2, 16, 16), dtype=arr.dtype)[...] = arr
    assert writers.check_store(str(tmp_path / "g.zarr"), *args, 2) == (True, [[6, 40, 70], [6, 20, 35]])
    assert not writers.check_store(str(tmp_path / "g.zarr"), *args, 4)[0]


def test_cases_and_their_overrides():
    for name, c in writers.CASES.items():
        assert len(c["chunk"]) == len(c["shard"]) == len(c["frame"]) + 1, name
    assert writers.CASES["default"] == {"frame": (2048, 2048), "dtype": "uint16", "chunk": (64, 256, 256),
                                        "shard": (1, 4, 4), "planes": 384}
    with pytest.raises(SystemExit):
        writers.main(["x", "/tmp/x", "--case", "nonesuch"])
    with pytest.raises(SystemExit):
        writers.main(["x", "/tmp/x", "--frame", "8,8", "--chunk", "1,4,4,4"])
    with pytest.raises(SystemExit):
        writers.main(["x", "/tmp/x", "lz5:1"])


def run_small(tmp_path, *extra, skip=""):
    out = tmp_path / "figures.json"
    argv = [retile_cli(), str(tmp_path / "work"), *extra, "--planes", "10", "--reps", "1", "--json", str(out)]
    if skip:
        argv += ["--skip", skip]
    writers.main(argv)
    return json.loads(out.read_text())


@pytest.mark.parametrize("case,frame,chunk,shard,dtype", [
    ("default", "70,90", "4,32,32", "1,2,2", "u16"),
    ("ragged", "67,93", "3,32,32", "2,2,2", "u8"),
    ("4d", "2,40,50", "4,1,16,32", "1,1,2,2", "f32"),
])
def test_every_writer_end_to_end(tmp_path, case, frame, chunk, shard, dtype):
    got = run_small(tmp_path, "none", "blosc-zstd:1", "zstd:1", "--case", case, "--frame", frame,
                    "--chunk", chunk, "--shard", shard, "--dtype", dtype)
    for codec in ("none", "blosc-zstd:1"):
        c = got["codecs"][codec]
        assert set(c["best"]) == {"retile", "retile-py", "acquire-zarr", "tensorstore"}, c["problems"]
        assert all(v > 0 for v in c["best"].values()) and not c["problems"]
    assert got["codecs"]["blosc-zstd:1"]["ceilings"]["codec"] > 0
    assert got["codecs"]["none"]["ceilings"]["codec"] is None and got["storage"] > 0
    zstd = got["codecs"]["zstd:1"]
    assert set(zstd["best"]) == {"retile", "retile-py", "acquire-zarr", "tensorstore"}, zstd["problems"]


def test_pyramid_run_has_levels_and_the_flat_stream(tmp_path):
    got = run_small(tmp_path, "blosc-lz4:1", "--pyramid", "--frame", "64,96", "--chunk", "4,16,16", skip="tensorstore")
    c = got["codecs"]["blosc-lz4:1"]
    assert set(c["best"]) == {"retile", "retile-py", "acquire-zarr", "retile-flat"}, c["problems"]
    assert c["levels"]["retile"] == c["levels"]["retile-py"] == writers.LEVELS
    assert c["levels"]["retile-flat"] == 1


def test_a_store_that_reads_back_wrong_is_reported_not_timed(tmp_path, monkeypatch, capsys):
    def run_wrong(b, out, codec, pyramid):
        a = zarr.create_array(out, shape=b.case.shape, chunks=b.case.chunk, dtype=b.case.dtype)
        a[...] = b.frames
        a[0, 0, 0] = b.frames[0, 0, 0] + 1
        return 1e-9  # would be the fastest writer ever, were it timed

    def run_short(b, out, codec, pyramid):
        a = zarr.create_array(out, shape=(b.case.planes - 1, *b.case.frame), chunks=b.case.chunk, dtype=b.case.dtype)
        a[...] = b.frames[:-1]
        return 1e-9

    def run_broken(b, out, codec, pyramid):
        raise RuntimeError("the writer fell over")

    monkeypatch.setattr(writers, "WRITERS", [("retile", writers.run_cli, True, None), ("wrong", run_wrong, False, None),
                                             ("short", run_short, False, None), ("broken", run_broken, False, None)])
    got = run_small(tmp_path, "none", "--frame", "32,48", "--chunk", "2,16,16", "--shard", "1,1,1")
    c = got["codecs"]["none"]
    assert set(c["best"]) == {"retile"}
    assert c["problems"]["wrong"].startswith("READ BACK WRONG") and c["problems"]["short"].startswith("READ BACK WRONG")
    assert c["problems"]["broken"].startswith("failed: the writer fell over")
    printed = capsys.readouterr().out
    assert re.search(r"wrong +READ BACK WRONG", printed) and re.search(r"short +READ BACK WRONG", printed)


def test_scaling_table_and_plot(tmp_path):
    report = tmp_path / "scaling"
    cores = "1,2" if len(os.sched_getaffinity(0)) >= 2 else "1"
    env = dict(os.environ, PLANES="8", REPS="1", FRAME="48,64", CHUNK="4,16,16", SHARD="1,2,2")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "scaling.py"), retile_cli(), str(tmp_path / "w"),
                    "--cores", cores, "--report", str(report)], check=True, env=env)
    table = (tmp_path / "scaling.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [r.split("|")[1].strip() for r in rows] == cores.split(",")
    for r in rows:  # retile CLI, retile Python, tensorstore and acquire-zarr measured at every core count
        assert "-" not in [cell.strip() for cell in r.split("|")[2:6]], r
    assert (tmp_path / "scaling.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads((tmp_path / "scaling.json").read_text())
    assert [r["cores"] for r in saved["runs"]] == [int(n) for n in cores.split(",")]
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "scaling.py"), "--plot", str(tmp_path / "scaling.json"),
                    "--report", str(tmp_path / "again")], check=True)
    assert (tmp_path / "again.md").read_text() == table


def test_pinning_is_measured_not_assumed():
    """On a Linux kernel, a process pinned to one CPU runs two busy processes at half speed: enforced."""
    code = ("import os, sys; sys.path.insert(0, sys.argv[1]); import writers; cpus = os.sched_getaffinity(0); "
            "os.sched_setaffinity(0, {min(cpus)}); r = writers.pinning(1, cpus); "
            "assert r['enforced'] and r['expected'] == 2 and r['slowdown'] > 1.5, r; "
            "assert writers.pinning(len(cpus), cpus) is None")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.fail("this test needs 2 CPUs to pin one of them")
    subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, "bench")], check=True)
