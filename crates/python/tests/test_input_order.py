"""An input that arrives in another order than the stored one
(``input_order=[...]``): every permutation of rank-4 and rank-5 inputs, and
random ones of ranks 2 to 5 (hypothesis: shapes, tiles, dtypes, shards,
codecs, bounded or not, the input cut at random bytes), each store read back
plane by plane with zarr-python against numpy; one clear error for each bad
order; what a short input claims."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import retile
from pyramid_reference import default_halved, halve, level_shapes, random_array

zarr = pytest.importorskip("zarr")

DTYPES = ["u1", "i2", "u2", "f4", "i8", "f8"]
CODECS = ["none", "zstd:1", "blosc-lz4:1"]
NAMES = {2: ["y", "x"], 3: ["t", "y", "x"], 4: ["t", "z", "y", "x"], 5: ["t", "c", "z", "y", "x"]}


def random_data(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def stream_and_check(path, data, order, tile, shard=None, codec="none", unbounded=False,
                     cuts=(), by_name=False, dim_names=None):
    """Streams `data` (stored order) arriving transposed by `order`, cut at
    `cuts`, and reads the store back plane by plane."""
    rank = data.ndim
    shape = list(data.shape)
    if unbounded:
        shape[0] = 0
    names = dim_names or NAMES.get(rank)
    given_order = [names[d] for d in order] if by_name else list(order)
    raw = np.ascontiguousarray(np.transpose(data, order)).tobytes()
    s = retile.Stream(path, shape=shape, tile=tile, dtype=data.dtype, shard=shard, codec=codec,
                      input_order=given_order, dim_names=dim_names)
    bounds = [0] + sorted(cuts) + [len(raw)]
    for a, b in zip(bounds, bounds[1:]):
        assert s.append(raw[a:b]) == b - a
    summary = s.finish()
    assert summary["planes"] == data.shape[0] and summary["bytes"] == len(raw)
    z = zarr.open_array(str(path), mode="r")
    assert z.shape == data.shape and z.dtype == data.dtype
    if dim_names:
        assert list(z.metadata.dimension_names) == dim_names
    for p in range(data.shape[0]):
        np.testing.assert_array_equal(z[p], data[p], err_msg=f"plane {p}, order {order}")


@pytest.mark.parametrize("rank", [4, 5])
def test_every_permutation_reads_back(tmp_path, rank):
    rng = np.random.default_rng(2900 + rank)
    for i, order in enumerate(itertools.permutations(range(rank))):
        shape = [int(rng.integers(1, 5)) for _ in range(rank)]
        tile = [int(rng.integers(1, 4)) for _ in range(rank)]
        dtype = DTYPES[i % len(DTYPES)]
        data = random_data(rng, shape, dtype)
        shard = [int(rng.integers(1, 3)) for _ in range(rank)] if i % 3 == 0 else None
        nbytes = data.nbytes
        cuts = sorted(int(c) for c in rng.integers(0, nbytes + 1, size=2))
        stream_and_check(tmp_path / f"{i}.zarr", data, order, tile, shard=shard,
                         codec=CODECS[i % len(CODECS)], unbounded=(order[0] == 0 and i % 2 == 0),
                         cuts=cuts, by_name=i % 2 == 1)


@st.composite
def cases(draw):
    rank = draw(st.integers(2, 5))
    shape = draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank))
    tile = [draw(st.integers(1, s + 1)) for s in shape]
    order = draw(st.permutations(range(rank)))
    dtype = draw(st.sampled_from(DTYPES))
    shard = draw(st.one_of(st.none(), st.lists(st.integers(1, 3), min_size=rank, max_size=rank)))
    codec = draw(st.sampled_from(CODECS))
    unbounded = order[0] == 0 and draw(st.booleans())
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    cuts = draw(st.lists(st.integers(0, nbytes), max_size=4))
    seed = draw(st.integers(0, 2**32 - 1))
    return dict(shape=shape, tile=tile, order=list(order), dtype=dtype, shard=shard, codec=codec,
                unbounded=unbounded, cuts=cuts, seed=seed, by_name=draw(st.booleans()))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=cases())
def test_random_orders_read_back(tmp_path_factory, c):
    data = random_data(np.random.default_rng(c["seed"]), c["shape"], c["dtype"])
    path = tmp_path_factory.mktemp("order") / "s.zarr"
    stream_and_check(path, data, c["order"], c["tile"], shard=c["shard"], codec=c["codec"],
                     unbounded=c["unbounded"], cuts=c["cuts"], by_name=c["by_name"])


def test_names_come_from_dim_names(tmp_path):
    rng = np.random.default_rng(5)
    data = random_data(rng, (3, 2, 4, 5), "u2")
    stream_and_check(tmp_path / "n.zarr", data, [2, 0, 3, 1], [2, 1, 3, 2], by_name=True,
                     dim_names=["a", "b", "c", "d"])


@pytest.mark.parametrize("order, says", [
    (["t", "z", "y"], "names 3 dimensions but the array has 4"),
    (["t", "z", "y", "x", "x"], "names 5 dimensions but the array has 4"),
    (["t", "z", "z", "x"], "names dimension 'z' twice"),
    (["t", "z", "q", "x"], "'q' is not a dimension of the array"),
    ([0, 1, 2, 4], "dimension 4 is out of range"),
    ([0, 1, 1, 3], "names dimension 'z' twice"),
    ([0, 1.5, 2, 3], "names (str) or indices (int)"),
])
def test_a_bad_order_is_one_clear_error(tmp_path, order, says):
    with pytest.raises(ValueError, match=None) as e:
        retile.Stream(tmp_path / "bad.zarr", shape=(2, 2, 2, 2), tile=(1, 1, 2, 2), dtype="uint8",
                      input_order=order)
    assert says in str(e.value), str(e.value)
    assert not (tmp_path / "bad.zarr").exists()


def test_a_bad_order_loses_nothing_already_claimed(tmp_path):
    path = tmp_path / "kept.zarr"
    data = np.arange(2 * 3 * 4, dtype="uint16").reshape(2, 3, 4)
    with retile.Stream(path, shape=data.shape, tile=(1, 3, 4), dtype="uint16") as s:
        s.append(data)
    with pytest.raises(ValueError, match="twice"):
        retile.Stream(path, shape=data.shape, tile=(1, 3, 4), dtype="uint16", overwrite=True,
                      input_order=["t", "t", "x"])
    np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[:], data)


def test_an_unbounded_stream_must_arrive_first_dimension_first(tmp_path):
    with pytest.raises(ValueError, match="unbounded"):
        retile.Stream(tmp_path / "u.zarr", shape=(0, 4, 4), tile=(1, 2, 2), dtype="uint8",
                      input_order=["y", "t", "x"])


def test_a_short_input_in_plane_order_claims_its_complete_planes(tmp_path):
    path = tmp_path / "short.zarr"
    data = np.arange(4 * 3 * 5, dtype="uint16").reshape(4, 3, 5)
    raw = np.ascontiguousarray(np.transpose(data, (0, 2, 1))).tobytes()
    s = retile.Stream(path, shape=data.shape, tile=(2, 2, 2), dtype="uint16", input_order=["t", "x", "y"])
    s.append(raw[: 3 * 15 * 2 + 7])
    with pytest.raises(RuntimeError, match="ended inside a plane"):
        s.finish()
    z = zarr.open_array(str(path), mode="r")
    assert z.shape == (3, 3, 5)
    np.testing.assert_array_equal(z[:], data[:3])


def test_a_short_input_slowest_elsewhere_claims_nothing(tmp_path):
    path = tmp_path / "held.zarr"
    data = np.arange(4 * 3 * 5, dtype="uint16").reshape(4, 3, 5)
    raw = np.ascontiguousarray(np.transpose(data, (1, 0, 2))).tobytes()
    s = retile.Stream(path, shape=data.shape, tile=(2, 2, 2), dtype="uint16", input_order=["y", "t", "x"])
    s.append(raw[:-2])
    with pytest.raises(RuntimeError, match="no stored plane was complete"):
        s.finish()
    z = zarr.open_array(str(path), mode="r")
    assert z.shape == (0, 3, 5)


def test_the_plan_states_the_memory_and_a_small_budget_is_refused_with_it(tmp_path):
    # slowest along y (2 tiles of 2): slabs of one tile of y, each 3 epochs of 1 tile
    # of 2x2x64 u8, two slabs held at once
    shape, tile = (5, 4, 64), (2, 2, 64)
    slabs = 2 * 3 * 1 * (2 * 2 * 64)
    with pytest.raises((ValueError, MemoryError), match=f"less than the {slabs} bytes"):
        retile.Stream(tmp_path / "m.zarr", shape=shape, tile=tile, dtype="uint8", memory=slabs - 1,
                      input_order=["y", "t", "x"])
    with retile.Stream(tmp_path / "m.zarr", shape=shape, tile=tile, dtype="uint8", memory=slabs,
                       input_order=["y", "t", "x"]) as s:
        assert s.memory["bytes"] == slabs
        s.append(np.zeros((4, 5, 64), np.uint8))
    # the second slab's buffers are made only if the first's are not back by then
    assert slabs // 2 <= s.summary["buffer_bytes"] <= slabs
    # shards two tiles deep along y: one slab of all of y, held alone
    with retile.Stream(tmp_path / "s.zarr", shape=shape, tile=tile, dtype="uint8", shard=(1, 2, 1),
                       input_order=["y", "t", "x"]) as s:
        assert s.memory["bytes"] == 1 * 3 * 2 * (2 * 2 * 64)
        s.append(np.zeros((4, 5, 64), np.uint8))
    assert s.summary["buffer_bytes"] == 1 * 3 * 2 * (2 * 2 * 64)


def test_a_pyramid_refuses_an_input_slowest_along_another_dimension(tmp_path):
    with pytest.raises(ValueError, match="a pyramid halves stored planes as they complete"):
        retile.Stream(tmp_path / "p.zarr", shape=(4, 64, 64), tile=(1, 32, 32), dtype="uint8",
                      pyramid="mean", input_order=["y", "t", "x"])


@pytest.mark.parametrize("seed", range(24))
def test_a_pyramid_of_a_permuted_input_matches_numpy(tmp_path, seed):
    rng = np.random.default_rng(4100 + seed)
    rank = 3 + seed % 3
    shape = [int(rng.integers(1, 5))] + [int(rng.integers(2, 12)) for _ in range(rank - 1)]
    tile = [int(rng.integers(1, 4)) for _ in range(rank)]
    dtype = ["u1", "i2", "f4", "f8"][seed % 4]
    method = ["mean", "min", "max", "decimate", "median"][seed % 5]
    order = [0] + [int(d) + 1 for d in rng.permutation(rank - 1)]
    data = random_array(rng, shape, dtype)
    out = tmp_path / "p.zarr"
    unbounded = seed % 2 == 0
    raw = np.ascontiguousarray(np.transpose(data, order)).tobytes()
    with retile.Stream(out, shape=[0 if unbounded else shape[0]] + shape[1:], tile=tile, dtype=np.dtype(dtype),
                       pyramid=method, input_order=order, codec="zstd:1" if seed % 3 == 0 else "none") as s:
        cuts = sorted(int(c) for c in rng.integers(0, len(raw) + 1, size=3))
        for a, b in zip([0] + cuts, cuts + [len(raw)]):
            s.append(raw[a:b])
    halved = default_halved(rank)
    shapes = level_shapes(shape, tile, halved)
    want = data
    for k in range(len(shapes)):
        got = zarr.open_array(str(out / str(k)), mode="r")[...]
        bits = f"u{got.dtype.itemsize}"
        assert got.shape == want.shape and np.array_equal(got.view(bits), want.view(bits)), (k, order, method)
        want = halve(want, halved, method)
    assert not (out / str(len(shapes))).exists()


def test_skip_and_metadata_need_the_stored_first_dimension_slowest(tmp_path):
    s = retile.Stream(tmp_path / "k.zarr", shape=(2, 3, 4), tile=(1, 3, 4), dtype="uint8",
                      input_order=["y", "t", "x"])
    with pytest.raises(ValueError, match="skip adds planes of the stored first dimension"):
        s.skip(1)
    with pytest.raises(ValueError, match="metadata= is recorded per plane"):
        s.append(np.zeros((2, 4), np.uint8), metadata={"a": 1})
    s.append(np.zeros((3 * 2 * 4,), np.uint8))
    s.finish()
    # in plane order, both work as in the stored order
    with retile.Stream(tmp_path / "k2.zarr", shape=(3, 3, 4), tile=(1, 3, 4), dtype="uint8",
                       input_order=["t", "x", "y"]) as s:
        s.append(np.ones((4, 3), np.uint8), metadata={"a": 1})
        s.skip(1)
        s.append(np.ones((4, 3), np.uint8))
    z = zarr.open_array(str(tmp_path / "k2.zarr"), mode="r")
    assert z[1].sum() == 0 and z[2].sum() == 12


def test_arrays_each_take_their_own_order(tmp_path):
    rng = np.random.default_rng(11)
    a = random_data(rng, (3, 2, 5, 6), "u2")
    b = random_data(rng, (4, 6, 5), "f4")
    with retile.Stream(tmp_path / "acq.zarr", arrays={
            "a": dict(shape=(0, 2, 5, 6), tile=(2, 1, 4, 4), dtype="uint16", input_order=["t", "z", "x", "y"],
                      codec="zstd:1"),
            "b": dict(shape=(4, 6, 5), tile=(2, 3, 2), dtype="float32", input_order=[2, 0, 1])}) as s:
        for t in range(3):
            s.append(np.ascontiguousarray(np.transpose(a[t], (0, 2, 1))), key="a")
        bt = np.ascontiguousarray(np.transpose(b, (2, 0, 1)))
        with pytest.raises(ValueError, match="whole planes of 96 bytes"):
            s.append(np.zeros((4, 5), np.float32), key="b")
        for x in range(5):
            s.append(bt[x], key="b")
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "acq.zarr" / "a"), mode="r")[:], a)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "acq.zarr" / "b"), mode="r")[:], b)


@pytest.mark.parametrize("shard", [None, (2, 1, 2, 1), (3, 1, 1, 2)])
def test_channel_slabs_stream_in_epochs_and_read_back(tmp_path, shard):
    # c,t,y,x stored t,c,y,x, channels in tiles of 1: each channel's slab streams in
    # epochs of its own tiles (two epoch buffers of one channel's tiles)
    rng = np.random.default_rng(3)
    data = rng.integers(0, 60000, size=(7, 3, 10, 9), dtype=np.uint16)
    path = tmp_path / "c.zarr"
    tile = (2, 1, 4, 4)
    with retile.Stream(path, shape=data.shape, tile=tile, dtype="uint16", shard=shard, codec="zstd:1",
                       dim_names=["t", "c", "y", "x"], input_order=["c", "t", "y", "x"]) as s:
        for channel in np.transpose(data, (1, 0, 2, 3)):
            for frame in channel:
                s.append(np.ascontiguousarray(frame))
    # two epoch buffers of one channel's tiles of an epoch: 3 x 3 tiles of 2x1x4x4 u16
    assert s.summary["buffer_bytes"] == 2 * (3 * 3) * (2 * 4 * 4 * 2)
    np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[...], data)
