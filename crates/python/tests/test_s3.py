"""retile.Stream("s3://...") into a local S3 server (moto, started here on
127.0.0.1), read back with zarr-python over s3fs, and through a proxy that
fails requests on command (tests/s3_fault_proxy.py); and store paths and
S3 settings refused before anything is sent. Without moto or s3fs the
server tests are skipped, unless RETILE_REQUIRE_S3=1 (CI), where that fails."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import retile

REQUIRED = os.environ.get("RETILE_REQUIRE_S3") == "1"
PROXY = Path(__file__).resolve().parents[3] / "tests" / "s3_fault_proxy.py"
MOTO = PROXY.with_name("moto_server.py")


def need(module):
    try:
        return __import__(module)
    except ImportError as e:
        if REQUIRED:
            raise
        pytest.skip(f"S3 tests did not run: {e}")


@pytest.fixture(scope="module")
def endpoint():
    need("zarr")
    need("s3fs")
    need("moto")
    server = subprocess.Popen([sys.executable, str(MOTO), "--bucket", "retile-py"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        first = [""]
        reader = threading.Thread(target=lambda: first.__setitem__(0, server.stdout.readline()), daemon=True)
        reader.start()
        reader.join(60)
        if not first[0].startswith("port "):
            assert not REQUIRED, "RETILE_REQUIRE_S3=1 but moto_server did not start"
            pytest.skip("S3 tests did not run: moto_server did not start")
        url = f"http://127.0.0.1:{int(first[0].split()[1])}"
        saved = {k: os.environ.get(k) for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ALLOW_HTTP")}
        os.environ.update(AWS_ENDPOINT_URL=url, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                          AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")
        yield url
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("shard,codec", [(None, "none"), ((2, 2, 1), "zstd:3"), ((1, 2, 2), "blosc-lz4:1")])
def test_a_stream_into_s3_reads_back_with_zarr_python(endpoint, shard, codec):
    data = np.random.default_rng(3).integers(0, 60000, size=(9, 40, 50), dtype=np.uint16)
    url = f"s3://retile-py/{codec.replace(':', '-')}-{shard is not None}.zarr"
    with retile.Stream(url, shape=(0, 40, 50), tile=(2, 16, 16), dtype="uint16", shard=shard, codec=codec) as s:
        for plane in data:
            s.append(plane)
    summary = s.summary
    assert summary["planes"] == 9
    assert summary["requests"] > 0 and summary["uploaded_bytes"] >= summary["stored_bytes"] > 0
    array = need("zarr").open_array(url, mode="r", storage_options={"endpoint_url": endpoint})
    assert array.shape == data.shape
    assert np.array_equal(array[...], data)


def test_an_array_in_s3_written_by_zarr_python_is_retiled_from_and_into_s3(endpoint, tmp_path):
    zarr = need("zarr")
    data = np.random.default_rng(4).integers(0, 60000, size=(11, 30, 20), dtype=np.uint16)
    opts = {"endpoint_url": endpoint}
    src = zarr.create_array("s3://retile-py/rechunk-src.zarr", shape=data.shape, chunks=(4, 16, 8),
                            shards=(8, 16, 16), dtype=data.dtype, storage_options=opts)
    src[...] = data
    retile.rechunk("s3://retile-py/rechunk-src.zarr", tmp_path / "local.zarr", tile=(1, 30, 20), memory=1 << 20)
    assert np.array_equal(zarr.open_array(str(tmp_path / "local.zarr"), mode="r")[...], data)
    retile.rechunk(tmp_path / "local.zarr", "s3://retile-py/rechunk-dst.zarr", tile=(3, 10, 10), shard=(2, 3, 2),
                   codec="zstd:1")
    back = zarr.open_array("s3://retile-py/rechunk-dst.zarr", mode="r", storage_options=opts)
    assert tuple(back.chunks) == (3, 10, 10) and np.array_equal(back[...], data)
    with pytest.raises(ValueError, match="not a Zarr array"):
        retile.rechunk("s3://retile-py/nothing-here.zarr", tmp_path / "none.zarr", tile=(1, 1, 1))


@pytest.mark.parametrize("pyramid", [None, "mean"])
def test_attributes_records_and_skipped_planes_in_s3_read_back(endpoint, pyramid):
    zarr = need("zarr")
    data = np.random.default_rng(4).integers(1, 60000, size=(5, 16, 16), dtype=np.uint16)
    url = f"s3://retile-py/meta-{pyramid}.zarr"
    options = {"endpoint_url": endpoint}
    with retile.Stream(url, shape=(0, 16, 16), tile=(1, 8, 8), dtype="uint16", pyramid=pyramid,
                       attributes={"sample": "m7"}) as s:
        for p, plane in enumerate(data[:3]):
            s.append(plane, metadata={"plane": p})
        s.skip(4)
        s.set_attributes({"gap": 4})
        for plane in data[3:]:
            s.append(plane)
    assert s.summary["skipped_planes"] == 4
    node = zarr.open_group if pyramid else zarr.open_array
    attrs = node(url, mode="r", storage_options=options).attrs.asdict()
    assert attrs.pop("retile")["array"]["shape"] == [0, 16, 16]  # retile's record of the array
    assert {k: v for k, v in attrs.items() if k != "ome"} == {"sample": "m7", "gap": 4}
    level0 = zarr.open_array(url + ("/0" if pyramid else ""), mode="r", storage_options=options)[...]
    np.testing.assert_array_equal(level0, np.concatenate([data[:3], np.zeros((4, 16, 16), np.uint16), data[3:]]))
    texts = zarr.open_array(url + "/frame_metadata", mode="r", storage_options=options)[...].tolist()
    assert [json.loads(t) if t else None for t in texts] == [{"plane": p} for p in range(3)] + [None] * 6


def test_an_existing_store_in_s3_is_refused(endpoint):
    url = "s3://retile-py/twice.zarr"
    with retile.Stream(url, shape=(2, 8, 8), tile=(2, 8, 8), dtype="uint8") as s:
        s.append(np.zeros((2, 8, 8), dtype=np.uint8) + 1)
    with pytest.raises(ValueError, match="already holds objects"):
        retile.Stream(url, shape=(2, 8, 8), tile=(2, 8, 8), dtype="uint8")


def test_plain_http_needs_allow_http_and_settings_can_replace_the_environment(endpoint, monkeypatch):
    data = np.arange(4 * 8 * 8, dtype=np.uint8).reshape(4, 8, 8)
    monkeypatch.delenv("AWS_ALLOW_HTTP")
    with pytest.raises(ValueError, match="plain http"):
        retile.Stream("s3://retile-py/http.zarr", shape=(4, 8, 8), tile=(2, 8, 8), dtype="uint8")
    for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.delenv(k)
    settings = {"aws_endpoint": endpoint, "aws_access_key_id": "testing",
                "aws_secret_access_key": "testing", "aws_region": "us-east-1"}
    with retile.Stream("s3://retile-py/settings.zarr", shape=(4, 8, 8), tile=(2, 8, 8), dtype="uint8",
                       allow_http=True, retry_seconds=5, s3_config=settings) as s:
        s.append(data)
    array = need("zarr").open_array("s3://retile-py/settings.zarr", mode="r",
                            storage_options={"endpoint_url": endpoint, "key": "testing", "secret": "testing"})
    assert np.array_equal(array[...], data)
    with pytest.raises(ValueError, match="retry_seconds"):
        retile.Stream("s3://retile-py/bad.zarr", shape=(4, 8, 8), tile=(2, 8, 8), dtype="uint8",
                      allow_http=True, retry_seconds=-1, s3_config=settings)


# --- S3 settings and store paths refused before anything is sent (no server) ---

KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "aws_region": "us-east-1"}


@pytest.mark.parametrize("value,why", [
    ("localhost:9000", "http://"),
    ("", "empty"),
    ("http://127.0.0.1:9000 ", "U\\+0020"),
    ("http://127.0.0.1:99999", "65535"),
    ("https://", "host"),
    ("http://user:secret@127.0.0.1:9000", "credentials"),
])
def test_a_bad_endpoint_is_a_value_error_naming_the_setting_not_a_panic(value, why, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for key in ("aws_endpoint", "endpoint_url"):
        with pytest.raises(ValueError, match=f"'{key}'.*{why}"):
            retile.Stream("s3://retile-py/x.zarr", shape=(0, 8, 8), tile=(2, 8, 8), dtype="uint8",
                          allow_http=True, s3_config={key: value, **KEYS})
    monkeypatch.setenv("AWS_ENDPOINT_URL", value)
    for k, v in KEYS.items():
        monkeypatch.setenv(k.upper(), v)
    with pytest.raises(ValueError, match=f"AWS_ENDPOINT_URL.*{why}"):
        retile.Stream("s3://retile-py/x.zarr", shape=(0, 8, 8), tile=(2, 8, 8), dtype="uint8", allow_http=True)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("output,named", [
    ("", "empty"), ("S3://b/run.zarr", "scheme S3:"), ("s3a://b/run.zarr", "scheme s3a:"),
    ("gs://b/run.zarr", "scheme gs:"), ("https://example.org/run.zarr", "scheme https:"),
    ("s3:b/run.zarr", "s3://BUCKET/PREFIX"), ("file://otherhost/run.zarr", "absolute local path"), ("s3://retile-py/a//b.zarr", "empty segment"),
    ("s3://retile-py/a/./b.zarr", "'.' segment"), ("s3://retile-py/../b.zarr", "'..' segment"),
    ("s3://retile-py/a\x01b.zarr", "U\\+0001"), ("s3://bad bucket/a.zarr", "U\\+0020"),
])
def test_store_paths_retile_cannot_write_are_value_errors_and_nothing_is_made(output, named, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=named):
        retile.Stream(output, shape=(0, 8, 8), tile=(2, 8, 8), dtype="uint8", allow_http=True,
                      s3_config={"aws_endpoint": "http://127.0.0.1:9", **KEYS})
    assert list(tmp_path.iterdir()) == []


def test_a_file_url_names_the_local_directory_it_spells(tmp_path, monkeypatch):
    zarr = need("zarr")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    data = np.arange(4 * 8 * 8, dtype=np.uint8).reshape(4, 8, 8)
    with retile.Stream(f"file://{tmp_path}/run%203.zarr", shape=(4, 8, 8), tile=(2, 8, 8), dtype="uint8") as s:
        s.append(data)
    assert np.array_equal(zarr.open_array(str(tmp_path / "run 3.zarr"), mode="r")[...], data)
    assert list(work.iterdir()) == []


# --- keys kept as given, and retries through the fault proxy (server) ---

def test_keys_are_stored_as_given_not_percent_encoded(endpoint):
    boto3 = need("boto3")
    prefix = "unicodé/run?1 #%.zarr"
    with retile.Stream(f"s3://retile-py/{prefix}", shape=(4, 8, 8), tile=(2, 8, 8), dtype="uint8") as s:
        s.append(np.ones((4, 8, 8), dtype=np.uint8))
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="retile-py", Prefix="unicod")["Contents"]]
    assert f"{prefix}/zarr.json" in keys, keys
    assert f"{prefix}/c/1/0/0" in keys, keys
    assert not any("%C3" in k or "%3F" in k for k in keys), keys


@pytest.fixture
def proxy(endpoint):
    """The fault proxy in front of the module's moto server; its endpoint and a setter."""
    port = endpoint.rsplit(":", 1)[1]
    process = subprocess.Popen([sys.executable, str(PROXY), "--target", port, "--hold", "60", "--lifetime", "300"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline().split()
        assert first[:1] == ["port"], first

        def set_fault(command):
            """Sends a command; `stats` returns the requests met by each action."""
            process.stdin.write(command + "\n")
            process.stdin.flush()
            answer = process.stdout.readline().strip()
            if command == "stats":
                return dict(kv.split("=") for kv in answer.split()[1:])
            assert answer == "ok", command

        yield f"http://127.0.0.1:{first[1]}", set_fault, endpoint
    finally:
        process.kill()
        process.wait()


def test_a_window_of_throttling_is_ridden_out_within_the_retry_budget(proxy, monkeypatch):
    url, set_fault, server = proxy
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    data = np.random.default_rng(5).integers(0, 250, size=(20, 16, 16), dtype=np.uint8)
    with retile.Stream("s3://retile-py/throttled.zarr", shape=(0, 16, 16), tile=(2, 8, 8), dtype="uint8",
                       retry_seconds=8) as s:
        s.append(data[:4])
        # SlowDown for 2 s from here, while the appends wait on the uploads
        set_fault("503")
        ending = threading.Timer(2.0, set_fault, ["pass"])
        ending.start()
        for i in range(4, 20):
            s.append(data[i])
            time.sleep(0.05)
        ending.join()
    assert int(set_fault("stats").get("503", 0)) > 0
    array = need("zarr").open_array("s3://retile-py/throttled.zarr", mode="r",
                                    storage_options={"endpoint_url": server})
    assert np.array_equal(array[...], data)


@pytest.mark.parametrize("fault", ["503", "hang"])
def test_a_server_that_keeps_failing_is_an_os_error_at_the_end_of_the_budget(proxy, fault, monkeypatch):
    url, set_fault, _ = proxy
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    s = retile.Stream(f"s3://retile-py/failing-{fault}.zarr", shape=(0, 16, 16), tile=(2, 8, 8), dtype="uint8",
                      retry_seconds=2)
    s.append(np.zeros((2, 16, 16), dtype=np.uint8))
    set_fault(fault)
    started = time.monotonic()
    with pytest.raises(OSError, match="failing-" + fault):
        for _ in range(1000):
            s.append(np.zeros((2, 16, 16), dtype=np.uint8))
            time.sleep(0.01)
        s.finish()
    took = time.monotonic() - started
    del s
    assert 1.7 <= took <= 2 + 2.5, took
