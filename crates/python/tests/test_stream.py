"""retile.Stream: numpy arrays of every dtype, split anywhere, read back
with zarr-python; sharded and compressed stores; clear errors; the GIL is
released while tiling."""

import json
import threading
import time

import numpy as np
import pytest

import retile

zarr = pytest.importorskip("zarr")

# every dtype zarr-python reads (bf16 below, on its own)
DTYPES = ["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f16", "f32", "f64"]
NUMPY = {"u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "i8": "int8",
         "i16": "int16", "i32": "int32", "i64": "int64", "f16": "float16", "f32": "float32", "f64": "float64"}


def data_of(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(NUMPY[dtype])
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)


def random_pieces(array, rng, typed):
    """The array cut at random points: typed views on element boundaries, or
    raw byte views (format 'B') cut anywhere, inside elements included."""
    if typed:
        flat = array.reshape(-1)
        cuts = sorted(rng.integers(0, flat.size + 1, size=6).tolist())
        bounds = [0] + cuts + [flat.size]
        return [flat[a:b] for a, b in zip(bounds, bounds[1:])]
    raw = memoryview(array).cast("B")
    cuts = sorted(rng.integers(0, len(raw) + 1, size=7).tolist())
    bounds = [0] + cuts + [len(raw)]
    return [raw[a:b] for a, b in zip(bounds, bounds[1:])]


def read(path):
    return zarr.open_array(str(path), mode="r")[...]


VARIANTS = [
    dict(),
    dict(codec="zstd:1"),
    dict(shard=(1, 2, 2), codec="blosc-lz4:1"),
    dict(shard=(2, 2, 3), codec="gzip:1", buffered_io=True),
    dict(shard=(1, 2, 1), codec="blosc-zstd:1", shuffle="bit", writers=2),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
def test_every_dtype_split_at_random_reads_back(tmp_path, dtype, variant):
    opts = VARIANTS[variant]
    rng = np.random.default_rng(hash((dtype, variant)) % 2**32)
    planes, shape, tile = 11, (19, 33), (4, 8, 16)
    array = data_of(dtype, (planes,) + shape, variant)
    out = tmp_path / "a.zarr"
    taken = 0
    with retile.Stream(out, shape=(0,) + shape, tile=tile, dtype=dtype, dim_names=["t", "y", "x"], **opts) as s:
        for piece in random_pieces(array, rng, typed=variant % 2 == 0):
            taken += s.append(piece)
    assert taken == array.nbytes
    summary = s.summary
    assert summary["bytes"] == array.nbytes and summary["planes"] == planes
    back = read(out)
    assert back.dtype == array.dtype and back.shape == array.shape
    np.testing.assert_array_equal(back, array)
    meta = json.loads((out / "zarr.json").read_text())
    assert meta["dimension_names"] == ["t", "y", "x"]


def test_bounded_shape_with_numpy_dtype_names_and_fill(tmp_path):
    array = data_of("i16", (5, 7, 9), 3)
    out = tmp_path / "b.zarr"
    s = retile.Stream(str(out), (5, 7, 9), (2, 4, 4), np.dtype("int16"), fill=-3, codec="zstd")
    assert s.dtype == "i16" and s.zarr_dtype == "int16" and not s.finished
    assert s.append(array) == array.nbytes
    summary = s.finish()
    assert s.finished and s.summary == summary
    for key in ["bytes", "planes", "epochs", "tiles", "seconds", "gigabytes_per_second", "scatter_seconds",
                "wait_seconds", "sink_seconds", "buffer_bytes", "stored_bytes", "files", "omitted_chunks",
                "encode_seconds", "write_seconds"]:
        assert key in summary, key
    np.testing.assert_array_equal(read(out), array)
    assert zarr.open_array(str(out), mode="r").fill_value == -3
    # numpy scalar types name dtypes too
    retile.Stream(None, (0, 4), (1, 4), np.uint16).finish()
    retile.Stream(None, (0, 4), (1, 4), "float32").finish()


def test_bf16_takes_two_byte_elements():
    s = retile.Stream(None, (0, 8), (2, 8), "bf16", fill=1.5)
    bits = np.arange(64, dtype=np.uint16)
    assert s.append(bits) == 128
    assert s.append(bits.view(np.float16)) == 128
    with pytest.raises(ValueError, match="bf16"):
        s.append(np.zeros(4, np.float32))
    assert s.finish()["planes"] == 16


def test_bytes_bytearray_memoryview_and_any_shape():
    s = retile.Stream(None, (0, 4, 4), (2, 2, 2), "u8")
    assert s.append(bytes(16)) == 16
    assert s.append(bytearray(16)) == 16
    assert s.append(memoryview(bytes(16))) == 16
    assert s.append(np.zeros((2, 2, 2, 2), np.uint8)) == 16
    assert s.append(b"") == 0
    assert s.bytes_taken == 64
    assert s.finish()["planes"] == 4


def test_past_a_bounded_shape_fewer_bytes_are_taken():
    s = retile.Stream(None, (2, 4), (1, 4), "u8")
    assert s.append(bytes(12)) == 8
    assert s.finish()["planes"] == 2


def test_non_contiguous_wrong_dtype_and_after_finish_raise():
    s = retile.Stream(None, (0, 4, 8), (1, 4, 8), "u16")
    a = np.zeros((4, 16), np.uint16)
    with pytest.raises(ValueError, match="C-contiguous"):
        s.append(a[:, ::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        s.append(np.asfortranarray(np.zeros((4, 8), np.uint16)))
    with pytest.raises(ValueError, match=r"format 'f'.*u16"):
        s.append(np.zeros((4, 8), np.float32))
    with pytest.raises(ValueError, match="u16"):
        s.append(np.zeros((4, 8), np.int16))
    with pytest.raises(ValueError, match="big-endian"):
        s.append(np.zeros((4, 8), ">u2"))
    with pytest.raises(TypeError, match="buffer protocol"):
        s.append([1, 2, 3])
    # a contiguous slice of rows is fine
    assert s.append(np.ascontiguousarray(a[:, ::2])) == 64
    assert s.append(np.zeros((8, 8), np.uint16)[2:6]) == 64
    s.finish()
    with pytest.raises(RuntimeError, match="the stream is finished"):
        s.append(np.zeros((4, 8), np.uint16))
    with pytest.raises(RuntimeError, match="the stream is finished"):
        s.finish()


def test_bad_arguments_are_value_errors_and_store_errors_os_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown dtype 'u24'"):
        retile.Stream(None, (0, 4), (1, 4), "u24")
    with pytest.raises(ValueError, match="fill: '-1' is not a u16 value"):
        retile.Stream(None, (0, 4), (1, 4), "u16", fill=-1)
    with pytest.raises(ValueError):
        retile.Stream(None, (0, 4), (1, 4), "u16", codec="lzma")
    with pytest.raises(ValueError, match="take effect only with an output"):
        retile.Stream(None, (0, 4), (1, 4), "u16", shard=(1, 1))
    with pytest.raises(ValueError, match="unknown backend"):
        retile.Stream(None, (0, 4), (1, 4), "u16", backend="tpu")
    with pytest.raises(ValueError):
        retile.Stream(None, (0, 4), (1, 4, 4), "u16")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file.txt").write_text("mine")
    with pytest.raises(ValueError, match="already exists and is not empty"):
        retile.Stream(tmp_path / "taken", (0, 4), (1, 4), "u8")
    assert (tmp_path / "taken" / "file.txt").read_text() == "mine"
    with pytest.raises(OSError, match="sink: "):
        s = retile.Stream(tmp_path / "taken" / "file.txt" / "a.zarr", (0, 4), (1, 4), "u8")
        s.append(bytes(4))
        s.finish()


def test_with_block_finishes_even_when_an_exception_propagates(tmp_path):
    out = tmp_path / "c.zarr"
    frames = data_of("u16", (5, 6, 10), 1)
    with pytest.raises(KeyError):
        with retile.Stream(out, (0, 6, 10), (2, 3, 5), "u16") as s:
            s.append(frames)
            s.append(bytes(7))  # part of a plane: dropped when the stream is finished
            raise KeyError("camera unplugged")
    # the 7 bytes of a plane were dropped: finishing raised under the KeyError, which propagated
    assert s.finished and s.summary is None
    np.testing.assert_array_equal(read(out), frames)
    # a partial plane without an exception is an error at the end of the block
    with pytest.raises(RuntimeError, match="ended inside a plane"):
        with retile.Stream(tmp_path / "d.zarr", (0, 6, 10), (2, 3, 5), "u16") as s:
            s.append(frames)
            s.append(bytes(7))
    np.testing.assert_array_equal(read(tmp_path / "d.zarr"), frames)


def test_overwrite_replaces_a_store(tmp_path):
    out = tmp_path / "e.zarr"
    with retile.Stream(out, (0, 4), (2, 4), "u8") as s:
        s.append(bytes(range(16)))
    with pytest.raises(ValueError, match="already exists"):
        retile.Stream(out, (0, 4), (2, 4), "u8")
    with retile.Stream(out, (0, 4), (2, 4), "u16", overwrite=True) as s:
        s.append(np.arange(8, dtype=np.uint16))
    np.testing.assert_array_equal(read(out), np.arange(8, dtype=np.uint16).reshape(2, 4))


def test_the_gil_is_released_while_tiling():
    big = np.ones((64, 1024, 1024), np.uint16)  # 128 MiB
    s = retile.Stream(None, (0, 1024, 1024), (16, 128, 128), "u16")
    count = 0
    stop = False

    def spin():
        nonlocal count
        while not stop:
            count += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.05)
        slowest = 0
        progressed = []
        for _ in range(3):
            before = count
            started = time.perf_counter()
            s.append(big)
            slowest = max(slowest, time.perf_counter() - started)
            progressed.append(count - before)
    finally:
        stop = True
        t.join()
    s.finish()
    # with the GIL held for the whole append the other thread could not count at all
    assert min(progressed) > 0, (progressed, slowest)
    assert sum(progressed) > 1000, (progressed, slowest)


def test_a_finished_stream_leaves_no_lock_behind_at_once(tmp_path):
    """The store is unlocked when ``finish`` returns, not a moment later: a
    writer task once let go of the store after saying it was done, and 1
    stream in 6 into /dev/shm (where the last sync is instant) still had
    its lock file when the ``with`` block ended."""
    import os
    import tempfile
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else str(tmp_path)
    frame = np.random.default_rng(0).integers(0, 1000, (512, 512)).astype(np.uint16)
    with tempfile.TemporaryDirectory(dir=base) as where:
        for k in range(60):
            path = os.path.join(where, f"s{k}.zarr")
            codec = ["none", "blosc-lz4:1", "blosc-zstd:1"][k % 3]
            with retile.Stream(path, shape=(0, 512, 512), tile=(16, 128, 128), dtype="uint16",
                               shard=(1, 2, 2), codec=codec) as s:
                for _ in range(32):
                    s.append(frame)
            assert not os.path.exists(os.path.join(path, ".retile.lock")), f"stream {k} ({codec})"
            assert sorted(os.listdir(path)) == ["c", "zarr.json"]


def test_one_stream_owns_a_store_and_another_is_refused_naming_it(tmp_path):
    import os
    path = tmp_path / "owned.zarr"
    frames = np.arange(6 * 16 * 16, dtype=np.uint16).reshape(6, 16, 16)
    first = retile.Stream(path, shape=(0, 16, 16), tile=(2, 8, 8), dtype="u16")
    first.append(frames[:4])
    for overwrite in (False, True):
        with pytest.raises(ValueError, match=f"being written by another stream.*process {os.getpid()}"):
            retile.Stream(path, shape=(0, 16, 16), tile=(2, 8, 8), dtype="u16", overwrite=overwrite)
        with pytest.raises(ValueError, match="being written by another stream"):
            retile.Stream(path / "inner", shape=(0, 16, 16), tile=(2, 8, 8), dtype="u16", overwrite=overwrite)
    first.finish()
    assert not (path / ".retile.lock").exists()
    np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[:], frames[:4])
    with retile.Stream(path, shape=(0, 16, 16), tile=(2, 8, 8), dtype="u16", overwrite=True) as s:
        s.append(frames)
    np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[:], frames)


def test_overwrite_deletes_only_a_store_and_follows_a_link(tmp_path):
    path = tmp_path / "mixed.zarr"
    frames = np.arange(4 * 8 * 8, dtype=np.uint8).reshape(4, 8, 8)
    with retile.Stream(path, shape=(0, 8, 8), tile=(2, 4, 4), dtype="u8") as s:
        s.append(frames)
    (path / "input.raw").write_bytes(b"keep me")
    with pytest.raises(ValueError, match="input.raw.*not part of a Zarr store"):
        retile.Stream(path, shape=(0, 8, 8), tile=(2, 4, 4), dtype="u8", overwrite=True)
    assert (path / "input.raw").read_bytes() == b"keep me"
    np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[:], frames)
    (path / "input.raw").unlink()
    link = tmp_path / "link.zarr"
    link.symlink_to(path)
    with retile.Stream(link, shape=(0, 8, 8), tile=(2, 4, 4), dtype="u8", overwrite=True) as s:
        s.append(frames[:2])
    assert link.is_symlink()
    np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[:], frames[:2])


@pytest.mark.parametrize("shard", [None, (2, 2, 2)])
def test_sync_rows_stores_the_same_and_bad_policies_are_value_errors(tmp_path, shard):
    frames = data_of("i32", (9, 16, 16), 5)
    for sync in ("rows", "end"):
        path = tmp_path / f"{sync}.zarr"
        with retile.Stream(path, shape=(0, 16, 16), tile=(2, 8, 8), dtype="i32", shard=shard, sync=sync) as s:
            s.append(frames)
        np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[:], frames)
    with pytest.raises(ValueError, match="unknown sync policy 'always'"):
        retile.Stream(tmp_path / "bad.zarr", shape=(0, 16, 16), tile=(2, 8, 8), dtype="i32", sync="always")
    assert not (tmp_path / "bad.zarr").exists()
    with pytest.raises(ValueError, match="sync take effect only with an output"):
        retile.Stream(None, shape=(0, 16, 16), tile=(2, 8, 8), dtype="i32", sync="rows")


def test_memory_buys_epoch_buffers_and_too_little_is_refused(tmp_path):
    data = data_of("u16", (40, 64, 64), 7)
    # a stream holds two epoch buffers by default (4 planes of 64x64 u16,
    # tiles in padded slots: a little over 32 KiB each)
    with retile.Stream(None, shape=(0, 64, 64), tile=(4, 32, 32), dtype="u16") as s:
        s.append(data)
    epoch = s.summary["buffer_bytes"] // 2
    assert epoch >= 4 * 64 * 64 * 2
    for memory, buffers in [(2 * epoch, 2), (5 * epoch + 100, 5), (10**12, 64)]:
        out = tmp_path / f"m{memory}.zarr"
        with retile.Stream(str(out), shape=(0, 64, 64), tile=(4, 32, 32), dtype="u16", memory=memory) as s:
            for frame in data:
                s.append(frame)
        assert s.summary["buffer_bytes"] == buffers * epoch
        np.testing.assert_array_equal(zarr.open_array(str(out), mode="r")[:], data)
    with pytest.raises(ValueError, match=f"at least {2 * epoch} bytes"):
        retile.Stream(str(tmp_path / "few.zarr"), shape=(0, 64, 64), tile=(4, 32, 32), dtype="u16", memory=epoch)
    assert not (tmp_path / "few.zarr").exists()


# A stream of 32 MiB in 4 chunks of 8 MiB, run in a child process, printing
# the minor page faults the stream took.
_FAULTS = """
import resource, sys
import numpy as np
import retile
codec, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
smooth = np.cumsum(rng.integers(-3, 4, size=(64, 512, 512)), axis=2)
data = (smooth + rng.integers(0, 8, size=smooth.shape)).astype("uint16")
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
with retile.Stream(out, shape=data.shape, tile=(64, 256, 256), dtype="uint16", codec=codec, writers=2) as s:
    s.append(data)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def stream_faults(codec, out):
    """The page faults of a stream with glibc set as Dask's workers set it:
    every allocation of 128 KiB or more then maps fresh pages."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, MALLOC_TRIM_THRESHOLD_="65536")
    done = subprocess.run([sys.executable, "-c", _FAULTS, codec, str(out)], env=env, capture_output=True,
                          text=True, check=True)
    return int(done.stdout)


@pytest.mark.parametrize("codec", ["blosc-zstd:1", "blosc-zstd:5", "blosc-lz4hc:1"])
def test_blosc_makes_no_context_per_block(tmp_path, codec):
    """c-blosc once made a zstd context or lz4hc state (176-256 KiB) for
    every block, about 1,000 here: 30,000-95,000 page faults more than the
    same stream uncompressed. retile's copy keeps one per thread, so the
    codec faults in at most a page of output per page of input (4,000-5,500
    here)."""
    input_pages = 64 * 512 * 512 * 2 // 4096
    plain = stream_faults("none", tmp_path / "plain.zarr")
    compressed = stream_faults(codec, tmp_path / "c.zarr")
    assert compressed < plain + input_pages, (codec, compressed, plain)
