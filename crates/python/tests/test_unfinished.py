"""retile.Stream objects their user never finishes: dropped, collected in a
reference cycle, or alive when the script ends (normally, by an uncaught
exception, by sys.exit). Each finishes itself: every plane it took is
written at every level of its pyramid, the store is closed with no file
left half-written, and a ResourceWarning says so; a stream that cannot
finish (an incomplete plane) says what was lost with a RuntimeWarning."""
import gc
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import retile

zarr = pytest.importorskip("zarr")

FRAME = (32, 32)


def frame(i):
    return np.full(FRAME, i, np.uint16)


def open_stream(path, **kwargs):
    return retile.Stream(path, shape=(0,) + FRAME, tile=(16, 16, 16), dtype="uint16", **kwargs)


def assert_holds(path, planes, pyramid):
    """The store at `path` claims `planes` planes at every level, each the
    frames appended (constant frames: every level's plane i is i), and no
    metadata was left half-replaced."""
    levels = [zarr.open_array(str(path / str(k)), mode="r") for k in range(2)] if pyramid else \
        [zarr.open_array(str(path), mode="r")]
    for k, level in enumerate(levels):
        assert level.shape[0] == planes, (k, level.shape)
        want = np.broadcast_to(np.arange(planes, dtype=np.uint16)[:, None, None], level.shape)
        np.testing.assert_array_equal(level[...], want)
    assert not list(path.rglob("*.partial")), list(path.rglob("*.partial"))


SCRIPT = """
import sys
import numpy as np
import retile
s = retile.Stream(sys.argv[1], shape=(0, 32, 32), tile=(16, 16, 16), dtype="uint16", pyramid="mean")
for i in range(40):
    s.append(np.full((32, 32), i, np.uint16))
"""


@pytest.mark.parametrize("ending, code", [("", 0), ("raise RuntimeError('the script dies')", 1), ("sys.exit(3)", 3)])
def test_a_stream_alive_when_the_script_ends_finishes_itself_and_warns(tmp_path, ending, code):
    out = tmp_path / "exit.zarr"
    script = SCRIPT + textwrap.dedent(ending)
    run = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-c", script, str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == code, run.stderr
    assert "ResourceWarning" in run.stderr and "40 planes were written" in run.stderr, run.stderr
    assert_holds(out, 40, pyramid=True)


def test_a_dropped_stream_finishes_itself_and_warns(tmp_path):
    out = tmp_path / "dropped.zarr"
    s = open_stream(out, pyramid="mean")
    for i in range(40):
        s.append(frame(i))
    with pytest.warns(ResourceWarning, match="40 planes were written"):
        del s
    assert_holds(out, 40, pyramid=True)


def test_a_stream_collected_in_a_reference_cycle_finishes_itself(tmp_path):
    class Camera:
        pass

    out = tmp_path / "cycle.zarr"
    camera = Camera()
    camera.me = camera
    camera.stream = open_stream(out, shard=(1, 2, 2))
    for i in range(21):
        camera.stream.append(frame(i))
    del camera
    with pytest.warns(ResourceWarning, match="21 planes were written"):
        gc.collect()
    assert_holds(out, 21, pyramid=False)


def test_a_stream_that_cannot_finish_says_what_was_lost(tmp_path):
    out = tmp_path / "partial.zarr"
    s = open_stream(out)
    for i in range(10):
        s.append(frame(i))
    s.append(b"abc")
    with pytest.warns(RuntimeWarning, match="3 bytes after the 10 complete planes were dropped"):
        del s
    assert_holds(out, 10, pyramid=False)


def test_finished_streams_do_not_warn(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = open_stream(tmp_path / "a.zarr")
        s.append(frame(0))
        s.finish()
        del s
        with open_stream(tmp_path / "b.zarr") as s:
            s.append(frame(0))
        del s
        gc.collect()
    assert_holds(tmp_path / "a.zarr", 1, pyramid=False)
    assert_holds(tmp_path / "b.zarr", 1, pyramid=False)
