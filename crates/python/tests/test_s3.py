"""retile.Stream("s3://...") into a local S3 server (moto, started here on
127.0.0.1), read back with zarr-python over s3fs. Without moto or s3fs the
tests are skipped, unless RETILE_REQUIRE_S3=1 (CI), where that fails."""

import os
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

import retile

REQUIRED = os.environ.get("RETILE_REQUIRE_S3") == "1"


def need(module):
    try:
        return __import__(module)
    except ImportError as e:
        if REQUIRED:
            raise
        pytest.skip(f"S3 tests did not run: {e}")


zarr = need("zarr")
need("s3fs")
need("moto")


@pytest.fixture(scope="module")
def endpoint():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        started = False
        for _ in range(300):
            if server.poll() is not None:
                break
            try:
                urllib.request.urlopen(urllib.request.Request(f"{url}/retile-py", method="PUT")).read()
                started = True
                break
            except OSError:
                time.sleep(0.2)
        if not started:
            assert not REQUIRED, "RETILE_REQUIRE_S3=1 but moto_server did not start"
            pytest.skip("S3 tests did not run: moto_server did not start")
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
    array = zarr.open_array(url, mode="r", storage_options={"endpoint_url": endpoint})
    assert array.shape == data.shape
    assert np.array_equal(array[...], data)


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
    array = zarr.open_array("s3://retile-py/settings.zarr", mode="r",
                            storage_options={"endpoint_url": endpoint, "key": "testing", "secret": "testing"})
    assert np.array_equal(array[...], data)
    with pytest.raises(ValueError, match="retry_seconds"):
        retile.Stream("s3://retile-py/bad.zarr", shape=(4, 8, 8), tile=(2, 8, 8), dtype="uint8",
                      allow_http=True, retry_seconds=-1, s3_config=settings)
