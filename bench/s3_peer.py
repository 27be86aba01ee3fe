#!/usr/bin/env python3
"""retile's S3 output beside acquire-zarr's, on the same frames, chunks and
shards, into the same local S3 server (moto, started fresh on 127.0.0.1 for
every run, so that no run inherits another's objects), in one run.

Set up once (any directory outside the repository):
    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install acquire-zarr numpy zarr s3fs
    python3 -m pip install "moto[server]"        # the server, run with python3
Run:
    /tmp/peers/bin/python bench/s3_peer.py target/release/retile /tmp/peerwork

Prints GB/s of input end to end (best of PEER_RUNS interleaved runs), retile's
ratio to acquire-zarr, and the requests each made per GB of input, counted
in the server's log (every request it answered, retries included). Both
writers' stores are read back with zarr-python (over s3fs from moto; from
the files s3s-fs keeps) and checked on three planes: a store that does not
read back as the frames is reported as a failure, not timed.

Each case also measures the server's own ceiling in the same run ("plain
upload"): the same bytes, cut into objects of the case's shard size with
no tiling, put by 32 threads as signed requests with unsigned payloads
(the least work a client can do; single PUTs up to 9 MiB, multipart in
8 MiB parts above), so that a writer's GB/s can be read against what the
server takes at all. Both writers sign their payloads over plain http
(SHA-256 of every byte; acquire-zarr through minio-cpp does too).

S3S_FS=/path/to/s3s-fs uses s3s-fs in place of moto. RETILE_BASE=/path
/to/other/retile adds that binary's runs to the same run (a before/after
comparison); PEER_CASES=0,2 picks cases by their index in CASES;
AZ_THREADS sets acquire-zarr's max_threads (default: every core).
"""
import concurrent.futures
import hashlib
import hmac
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import numpy as np
import zarr
import acquire_zarr as az

from frames import frames_file

retile, work = os.path.abspath(sys.argv[1]), sys.argv[2]
BASE = os.environ.get("RETILE_BASE")
planes = int(os.environ.get("PEER_PLANES", "128"))
H = W = int(os.environ.get("PEER_SIZE", "2048"))
SERVER_PYTHON = os.environ.get("MOTO_PYTHON", "python3")
S3S_FS = os.environ.get("S3S_FS")
AZ_THREADS = int(os.environ.get("AZ_THREADS", "0"))  # acquire-zarr's max_threads (0: its default, every core)
BUCKET = "bench"
os.makedirs(work, exist_ok=True)
os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="us-east-1")

# (name, chunk, shard (chunks per shard), codec)
# 4 MiB shards go up as one PUT each from both writers; larger shards as
# multipart uploads. acquire-zarr 0.8-0.10 writes a multipart shard only
# while its chunks arrive in offset order: shards of several chunks in y or
# x crash it (its S3 sink's `write` takes the gap to an out-of-order offset
# as buffered bytes, past its part buffer), so the multipart cases it can
# finish are shards whose chunks follow one another in t (cases 4-6).
CASES = [
    ("4 MiB shards, none", (32, 128, 128), (1, 2, 2), "none"),
    ("4 MiB shards, blosc-lz4:1", (32, 128, 128), (1, 2, 2), "blosc-lz4:1"),
    ("128 MiB shards, none", (64, 256, 256), (1, 4, 4), "none"),
    ("32 MiB shards, none", (64, 256, 256), (1, 2, 2), "none"),
    ("16 MiB shards (2 chunks in t), none", (64, 256, 256), (2, 1, 1), "none"),
    ("64 MiB shards (4 chunks in t), none", (32, 512, 512), (4, 1, 1), "none"),
    ("64 MiB shards (4 chunks in t), blosc-lz4:1", (32, 512, 512), (4, 1, 1), "blosc-lz4:1"),
]
if os.environ.get("PEER_CASES"):
    CASES = [CASES[int(i)] for i in os.environ["PEER_CASES"].split(",")]


class Server:
    """A fresh S3 server with an empty bucket; counts the requests it answered.
    moto by default; with S3S_FS=/path/to/s3s-fs (`cargo install s3s-fs
    --features binary`), s3s-fs (Rust, objects as files under the work
    directory), which answers far faster than moto's Python."""

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = os.path.join(work, "server.log")
        self.endpoint = f"http://127.0.0.1:{self.port}"
        if S3S_FS:
            self.root = root = os.path.join(work, "s3s-root")
            shutil.rmtree(root, ignore_errors=True)
            os.makedirs(os.path.join(root, BUCKET))
            self.proc = subprocess.Popen(["timeout", "1800", S3S_FS, "--host", "127.0.0.1", "--port", str(self.port),
                                          "--access-key", "testing", "--secret-key", "testing", root],
                                         stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                                         env=dict(os.environ, RUST_LOG="s3s=debug"), start_new_session=True)
            self.pattern = r"resolved route, op:"
        else:
            self.proc = subprocess.Popen(["timeout", "1800", SERVER_PYTHON, "-m", "moto.server", "-H", "127.0.0.1",
                                          "-p", str(self.port)], stdout=subprocess.DEVNULL, stderr=open(self.log, "w"),
                                         start_new_session=True)
            self.pattern = r'"(GET|PUT|POST|DELETE|HEAD) '
        for _ in range(300):
            try:
                if S3S_FS:
                    socket.create_connection(("127.0.0.1", self.port)).close()
                else:
                    urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/{BUCKET}", method="PUT")).read()
                break
            except OSError:
                if self.proc.poll() is not None:
                    sys.exit("the S3 server did not start: " + open(self.log).read()[-500:])
                time.sleep(0.2)
        self.before = self.requests()

    def requests(self):
        with open(self.log) as f:
            return sum(1 for line in f if re.search(self.pattern, line))

    def stop(self):
        # the server and `timeout` around it: their own process group
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def run_acquire(server, frames, chunk, shard, codec):
    """acquire-zarr in a child process: a crash of it is reported, not ours."""
    r = subprocess.run([sys.executable, __file__, retile, work, "--acquire", server.endpoint,
                        ",".join(map(str, chunk)), ",".join(map(str, shard)), codec],
                       capture_output=True, text=True, errors="replace",
                       env=dict(os.environ, PEER_PLANES=str(planes), PEER_SIZE=str(H)))
    if r.returncode:
        return None, f"acquire-zarr failed (exit {r.returncode}): {(r.stderr.strip().splitlines() or ['?'])[-1]}"
    return float(r.stdout.split()[-1]), None


def acquire_child(endpoint, chunk, shard, codec):
    kinds = [az.DimensionType.TIME, az.DimensionType.SPACE, az.DimensionType.SPACE]
    dims = [az.Dimension(name=n, kind=k, array_size_px=s, chunk_size_px=c, shard_size_chunks=k_)
            for n, k, s, c, k_ in zip("tyx", kinds, (0, H, W), chunk, shard)]
    comp = None
    if codec != "none":
        name, level = codec.split(":")
        comp = az.CompressionSettings(compressor=az.Compressor.BLOSC1, level=int(level), shuffle=1,
                                      codec=az.CompressionCodec.BLOSC_ZSTD if name == "blosc-zstd" else az.CompressionCodec.BLOSC_LZ4)
    arr = az.ArraySettings(dimensions=dims, data_type=az.DataType.UINT16, compression=comp)
    s3 = az.S3Settings(endpoint=endpoint, bucket_name=BUCKET, region="us-east-1")
    t = time.perf_counter()
    s = az.ZarrStream(az.StreamSettings(arrays=[arr], store_path="acquire.zarr", s3=s3, overwrite=True,
                                        max_threads=AZ_THREADS))
    for i in range(planes):
        s.append(frames[i])
    s.close()
    print(time.perf_counter() - t)


def run_retile(server, raw, chunk, shard, codec, binary=None):
    cmd = [binary or retile, "stream", "--shape", f"0,{H},{W}", "--tile", ",".join(map(str, chunk)), "--dtype", "u16",
           "--input", raw, "--output", f"s3://{BUCKET}/retile.zarr", "--allow-http", "--codec", codec,
           "--shard", ",".join(map(str, shard))]
    env = dict(os.environ, AWS_ENDPOINT_URL=server.endpoint)
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        return None, f"retile failed: {r.stderr.strip()}"
    return time.perf_counter() - t, None


PART = 8 << 20


def signed_headers(server, method, target):
    """AWS Signature V4 headers for a request with an unsigned payload (the
    cheapest signed request a server takes: no hash of the body)."""
    path, _, query = target.partition("?")
    params = sorted((k, v) for k, _, v in (q.partition("=") for q in query.split("&") if q))
    now = time.gmtime()
    stamp, day = time.strftime("%Y%m%dT%H%M%SZ", now), time.strftime("%Y%m%d", now)
    headers = {"host": f"127.0.0.1:{server.port}", "x-amz-content-sha256": "UNSIGNED-PAYLOAD", "x-amz-date": stamp}
    names = ";".join(sorted(headers))
    canonical = "\n".join([method, path, "&".join(f"{k}={v}" for k, v in params),
                           "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)), names, "UNSIGNED-PAYLOAD"])
    scope = f"{day}/us-east-1/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + os.environ["AWS_SECRET_ACCESS_KEY"]).encode()
    for part in (day, "us-east-1", "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={os.environ['AWS_ACCESS_KEY_ID']}/{scope}, "
                                f"SignedHeaders={names}, Signature={signature}")
    return headers


def request(server, method, target, body=b""):
    """One signed request; the answer's body and ETag."""
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    c.request(method, target, body=body, headers=signed_headers(server, method, target))
    r = c.getresponse()
    answer = r.read()
    c.close()
    if r.status >= 300:
        raise RuntimeError(f"{method} {target}: {r.status} {answer[:200]!r}")
    return answer, r.getheader("ETag", "")


def upload_object(server, pool, key, data):
    """`data` as one PUT, or as a multipart upload of 8 MiB parts (all in flight on `pool`)."""
    if len(data) <= PART + (1 << 20):
        return request(server, "PUT", f"/{BUCKET}/{key}", data)
    answer = request(server, "POST", f"/{BUCKET}/{key}?uploads=")[0].decode()
    upload = urllib.parse.quote(re.search(r"<UploadId>(.*?)</UploadId>", answer).group(1), safe="")
    parts = [pool.submit(lambda n, at: request(server, "PUT", f"/{BUCKET}/{key}?partNumber={n}&uploadId={upload}",
                                            data[at:at + PART]), n + 1, at)
             for n, at in enumerate(range(0, len(data), PART))]
    done = "".join(f"<Part><PartNumber>{n + 1}</PartNumber><ETag>{f.result()[1]}</ETag></Part>"
                   for n, f in enumerate(parts))
    request(server, "POST", f"/{BUCKET}/{key}?uploadId={upload}",
         f"<CompleteMultipartUpload>{done}</CompleteMultipartUpload>".encode())


def run_ceiling(server, raw, chunk, shard, codec):
    """The case's bytes (uncompressed) as objects of its shard size, no tiling: the server's ceiling."""
    size = int(np.prod(chunk) * np.prod(shard) * 2)
    data = memoryview(open(raw, "rb").read())
    t = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(32) as parts, concurrent.futures.ThreadPoolExecutor(32) as objects:
        done = [objects.submit(upload_object, server, parts, f"plain/{i}", data[at:at + size])
                for i, at in enumerate(range(0, len(data), size))]
        for f in done:
            f.result()
    return time.perf_counter() - t, None


def check_store(server, who):
    """The writer's store read back by zarr-python over s3fs: shape and three planes; None when right."""
    key = "acquire.zarr" if who == "acquire-zarr" else "retile.zarr"
    if S3S_FS:  # its objects are files: read them where they lie (no s3fs needed)
        a = zarr.open_array(os.path.join(server.root, BUCKET, key), mode="r")
    else:
        a = zarr.open_array(f"s3://{BUCKET}/{key}", mode="r", storage_options={"endpoint_url": server.endpoint})
    if a.shape == (planes, H, W) and all(np.array_equal(a[t], frames[t]) for t in (0, planes // 2, planes - 1)):
        return None
    return f"{who}'s store does not read back as the frames"


if len(sys.argv) > 3 and sys.argv[3] == "--acquire":
    frames = np.memmap(os.path.join(work, f"frames-{planes}-{H}x{W}.raw"), dtype=np.uint16, mode="r", shape=(planes, H, W))
    ints = lambda t: tuple(int(x) for x in t.split(","))
    acquire_child(sys.argv[4], ints(sys.argv[5]), ints(sys.argv[6]), sys.argv[7])
    sys.exit(0)

raw = frames_file(work, planes, H, W)
frames = np.memmap(raw, dtype=np.uint16, mode="r", shape=(planes, H, W))
gb = planes * H * W * 2 / 1e9
server_name = "s3s-fs" if S3S_FS else "moto"
print(f"{planes} frames of {H}x{W} u16 ({gb:.2f} GB), page-cached, into {server_name} on 127.0.0.1 (a fresh server each run)")
for name, chunk, shard, codec in CASES:
    best, per_gb, failed = {}, {}, {}
    for _ in range(int(os.environ.get("PEER_RUNS", "2"))):
        writers = ("retile", "acquire-zarr") + (("retile base",) if BASE else ()) + ("plain upload",)
        for who in writers:
            server = Server()
            try:
                run = {"retile": run_retile, "acquire-zarr": run_acquire, "plain upload": run_ceiling,
                       "retile base": lambda *a: run_retile(*a, binary=BASE)}[who]
                dt, why = run(server, frames if who == "acquire-zarr" else raw, chunk, shard, codec)
                time.sleep(0.5)  # the log's last lines
                if why:
                    failed[who] = why
                    continue
                per_gb[who] = (server.requests() - server.before) / gb
                if who != "plain upload":
                    why = check_store(server, who)
                    if why:
                        failed[who] = why
                        continue
            finally:
                server.stop()
            best[who] = max(best.get(who, 0.0), gb / dt)
    if "retile" not in best:
        sys.exit(failed["retile"])
    r = best["retile"]
    line = f"{name:28s} retile {r:5.2f} GB/s, {per_gb['retile']:.0f} requests per GB"
    if "acquire-zarr" in best:
        a = best["acquire-zarr"]
        line += f"  | acquire-zarr {a:5.2f} GB/s, {per_gb['acquire-zarr']:.0f} requests per GB  | ratio {r / a:5.2f}"
    else:
        line += f"  | {failed['acquire-zarr']}"
    if "retile base" in best:
        line += f"  | retile base {best['retile base']:5.2f} GB/s, {per_gb['retile base']:.0f} requests per GB"
    if "plain upload" in best:
        line += f"  | plain upload {best['plain upload']:5.2f} GB/s, {per_gb['plain upload']:.0f} requests per GB"
    print(line, flush=True)
