#!/usr/bin/env python3
"""retile beside the streaming Zarr writers a user would pick instead, on the
same camera-like frames, chunks, shards and codec, into the directory the user
names, in one run, interleaved, best of REPS:

  retile        the CLI, reading a raw file of the frames (`retile stream --input`)
  retile-py     the Python package, numpy frames appended one by one
  acquire-zarr  numpy frames appended one by one (its normal use)
  tensorstore   zarr3 driver, frames written a whole shard row at a time
                (its best case: no shard is read back and rewritten)
  retile-flat   with PYRAMID=1 only: the CLI without the pyramid, for the
                pyramid's cost measured in the same run

Ceilings, measured in the same run, on the same cores:
  codec         the codec alone on every core: numcodecs (c-blosc, zstd, zlib)
                compressing the same chunks, one process per core
  storage       the storage alone: one thread per core writing 64 MiB buffers
                from memory into files in the output directory, as many bytes
                as the stream holds (works on every file system, /dev/shm too)
  direct        parallel direct-I/O writes (dd oflag=direct) into the output
                directory; skipped where the file system has no O_DIRECT (tmpfs)
Each writer's figure is also given as a fraction of the lowest ceiling: no
writer stores these bytes faster than its codec or its storage allow.

Every store is read back with zarr-python (all cores, untimed) and compared
with the frames, element by element; a store that reads back wrong is
reported, never timed. With a pyramid, the number of levels is reported and
retile's must be the number asked for.

Cases (--case or CASE=; PLANES, FRAME, DTYPE, CHUNK, SHARD override a case):
  default  384 frames 2048x2048 u16, chunk 64x256x256, shard 1x4x4
  ragged   2000x1999 frames (edge chunks and shards cut by the extents)
  4d       (t,c,y,x): 192 frames of 2x2048x2048, chunk 64x1x256x256, shard 1x1x4x4
  u8, f32  the default's frames as u8 (768 of them) or f32 (192): the same bytes
  thin     chunks of 1 plane, 16 to a shard along t (shard 16x4x4)
  deep     chunks of 128 planes

Run (peers from PyPI: numpy zarr numcodecs acquire-zarr tensorstore, and
`pip install ./crates/python` for retile-py; a missing one is reported, not run):
    python3 bench/writers.py target/release/retile OUTDIR [CODEC ...]
    CODEC: none, blosc-lz4:1, blosc-zstd:1, blosc-zlib:1, zstd:1, gzip:1, ...
           (default: none blosc-lz4:1 blosc-zstd:1)
Environment (or the flags of the same names, see --help):
    PLANES, REPS=2, CORES=N (this process and every writer pinned to N cores),
    PYRAMID=1 (a mean pyramid of 4 levels for retile and acquire-zarr),
    SKIP=retile-py,tensorstore (writers left out), CASE, FRAME, DTYPE, CHUNK, SHARD
OUTDIR on /dev/shm measures each writer's own pipeline (storage faster than
any writer); OUTDIR on a disk measures what a recording gets. The frames are
kept in OUTDIR (frames-*.raw) between runs.
"""
import argparse
import datetime
import importlib.metadata
import json
import multiprocessing as mp
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frames import frames_raw  # noqa: E402

LEVELS = 4  # levels of the pyramid with PYRAMID=1, the stream included
STORAGE_BLOCK = 64 << 20  # bytes of one write of the storage ceiling
DEFAULT_CODECS = ["none", "blosc-lz4:1", "blosc-zstd:1"]
SHORT = {"uint8": "u8", "uint16": "u16", "float32": "f32"}

CASES = {
    "default": dict(frame=(2048, 2048), dtype="uint16", chunk=(64, 256, 256), shard=(1, 4, 4), planes=384),
    "ragged": dict(frame=(2000, 1999), dtype="uint16", chunk=(64, 256, 256), shard=(1, 4, 4), planes=384),
    "4d": dict(frame=(2, 2048, 2048), dtype="uint16", chunk=(64, 1, 256, 256), shard=(1, 1, 4, 4), planes=192),
    "u8": dict(frame=(2048, 2048), dtype="uint8", chunk=(64, 256, 256), shard=(1, 4, 4), planes=768),
    "f32": dict(frame=(2048, 2048), dtype="float32", chunk=(64, 256, 256), shard=(1, 4, 4), planes=192),
    "thin": dict(frame=(2048, 2048), dtype="uint16", chunk=(1, 256, 256), shard=(16, 4, 4), planes=384),
    "deep": dict(frame=(2048, 2048), dtype="uint16", chunk=(128, 256, 256), shard=(1, 4, 4), planes=384),
}


class Unsupported(Exception):
    """A writer that cannot write this case (a codec or type it lacks): reported, not counted as a failure."""


@dataclass(frozen=True)
class Case:
    """What every writer writes: `planes` frames of `frame` in `dtype`, in
    chunks of `chunk` held `shard` chunks to a shard, and the pyramid."""

    name: str
    frame: tuple
    dtype: str
    chunk: tuple
    shard: tuple
    planes: int
    pyramid: bool

    @property
    def shape(self):
        return (self.planes, *self.frame)

    @property
    def dims(self):
        return ["t", "c", "y", "x"] if len(self.shape) == 4 else ["t", "y", "x"][-len(self.shape):]

    @property
    def label(self):
        dims = "x".join(map(str, self.frame))
        return (f"{self.planes} frames {dims} {SHORT.get(self.dtype, self.dtype)}, "
                f"chunk {'x'.join(map(str, self.chunk))}, shard {'x'.join(map(str, self.shard))}"
                + (f", mean pyramid of {LEVELS} levels" if self.pyramid else ""))


def parse_codec(codec):
    """('none', None) or (family, level) of a retile codec name such as blosc-zstd:1 or zstd:3."""
    if codec == "none":
        return "none", None
    name, _, level = codec.partition(":")
    if not level.isdigit() or not (name.startswith("blosc-") or name in ("zstd", "gzip")):
        raise SystemExit(f"codec {codec!r}: use none, blosc-lz4:L, blosc-zstd:L, blosc-zlib:L, zstd:L or gzip:L")
    return name, int(level)


def dims_arg(text):
    return tuple(int(n) for n in str(text).split(","))


def make_case(args):
    """The case named, with the overrides given."""
    if args.case not in CASES:
        raise SystemExit(f"--case {args.case!r}: one of {', '.join(CASES)}")
    c = dict(CASES[args.case])
    for key in ("frame", "chunk", "shard"):
        if getattr(args, key):
            c[key] = dims_arg(getattr(args, key))
    if args.dtype:
        c["dtype"] = {v: k for k, v in SHORT.items()}.get(args.dtype, args.dtype)
    if args.planes:
        c["planes"] = int(args.planes)
    case = Case(name=args.case, pyramid=args.pyramid, **c)
    rank = len(case.frame) + 1
    if len(case.chunk) != rank or len(case.shard) != rank:
        raise SystemExit(f"chunk {case.chunk} and shard {case.shard} need {rank} extents for frames {case.frame}")
    return case


# -- the writers: each writes the case into `out` and returns the seconds it took, end to end


def run_cli(b, out, codec, pyramid):
    case = b.case
    cmd = [b.retile, "stream", "--shape", ",".join(map(str, (0, *case.frame))),
           "--tile", ",".join(map(str, case.chunk)), "--dtype", SHORT[case.dtype],
           "--shard", ",".join(map(str, case.shard)), "--codec", codec, "--input", b.raw, "--output", out,
           "--dim-names", ",".join(case.dims)]
    if pyramid:
        cmd += ["--pyramid", "mean", "--levels", str(LEVELS)]
        if len(case.shape) == 4:
            cmd += ["--dim-types", "time,channel,space,space"]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip()[-300:])
    return time.perf_counter() - t


def run_py(b, out, codec, pyramid):
    import retile as rt
    case = b.case
    kw = dict(pyramid="mean", levels=LEVELS) if pyramid else {}
    if pyramid and len(case.shape) == 4:
        kw["dim_types"] = ["time", "channel", "space", "space"]
    t = time.perf_counter()
    with rt.Stream(out, shape=(0, *case.frame), tile=case.chunk, dtype=case.dtype, shard=case.shard, codec=codec,
                   dim_names=case.dims, **kw) as s:
        for i in range(case.planes):
            s.append(b.frames[i])
    return time.perf_counter() - t


def run_acquire(b, out, codec, pyramid):
    import acquire_zarr as az
    case = b.case
    kinds = {"t": az.DimensionType.TIME, "c": az.DimensionType.CHANNEL, "y": az.DimensionType.SPACE,
             "x": az.DimensionType.SPACE}
    dims = [az.Dimension(name=n, kind=kinds[n], array_size_px=a, chunk_size_px=c, shard_size_chunks=q)
            for n, a, c, q in zip(case.dims, (0, *case.frame), case.chunk, case.shard)]
    family, level = parse_codec(codec)
    comp = None
    if family.startswith("blosc-"):
        cname = family.split("-", 1)[1]
        codecs = {"lz4": az.CompressionCodec.BLOSC_LZ4, "zstd": az.CompressionCodec.BLOSC_ZSTD}
        if cname not in codecs:
            raise Unsupported(f"no blosc-{cname}")
        comp = az.CompressionSettings(compressor=az.Compressor.BLOSC1, level=level, shuffle=1, codec=codecs[cname])
    elif family == "zstd":
        comp = az.CompressionSettings(compressor=az.Compressor.ZSTD, level=level, codec=az.CompressionCodec.ZSTD)
    elif family != "none":
        raise Unsupported(f"no {family}")
    kw = dict(downsampling_method=az.DownsamplingMethod.MEAN, max_levels=LEVELS - 1) if pyramid else {}
    dtype = {"uint8": az.DataType.UINT8, "uint16": az.DataType.UINT16, "float32": az.DataType.FLOAT32}[case.dtype]
    arr = az.ArraySettings(dimensions=dims, data_type=dtype, compression=comp, **kw)
    t = time.perf_counter()
    s = az.ZarrStream(az.StreamSettings(arrays=[arr], store_path=out, overwrite=True, max_threads=b.cores))
    for i in range(case.planes):
        s.append(b.frames[i])
    s.close()
    return time.perf_counter() - t


def run_ts(b, out, codec, pyramid):
    import tensorstore as ts
    case = b.case
    family, level = parse_codec(codec)
    inner = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if family.startswith("blosc-"):
        inner.append({"name": "blosc", "configuration": {
            "cname": family.split("-", 1)[1], "clevel": level, "shuffle": "shuffle",
            "typesize": np.dtype(case.dtype).itemsize, "blocksize": 0}})
    elif family == "zstd":
        inner.append({"name": "zstd", "configuration": {"level": level, "checksum": False}})
    elif family == "gzip":
        inner.append({"name": "gzip", "configuration": {"level": level}})
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": out},
            "context": {"data_copy_concurrency": {"limit": b.cores},
                        "file_io_concurrency": {"limit": max(b.cores, 8)}},
            "metadata": {"shape": list(case.shape), "data_type": case.dtype,
                         "chunk_grid": {"name": "regular", "configuration": {
                             "chunk_shape": [c * q for c, q in zip(case.chunk, case.shard)]}},
                         "codecs": [{"name": "sharding_indexed",
                                     "configuration": {"chunk_shape": list(case.chunk), "codecs": inner}}]},
            "create": True, "delete_existing": True}
    t = time.perf_counter()
    a = ts.open(spec).result()
    step = case.chunk[0] * case.shard[0]
    for t0 in range(0, case.planes, step):
        t1 = min(t0 + step, case.planes)  # the last row of shards may be cut by the planes
        a[t0:t1].write(b.frames[t0:t1]).result()
    return time.perf_counter() - t


# name, function, makes the pyramid with PYRAMID=1, module it needs
WRITERS = [
    ("retile", run_cli, True, None),
    ("retile-py", run_py, True, "retile"),
    ("acquire-zarr", run_acquire, True, "acquire_zarr"),
    ("tensorstore", run_ts, False, "tensorstore"),
    ("retile-flat", run_cli, False, None),
]


# -- ceilings


_CHUNKS = []  # the chunks the codec ceiling compresses, shared with its forked workers


def _compress(job):
    family, level, lo, hi = job
    import numcodecs
    from numcodecs import blosc
    blosc.use_threads = False
    blosc.set_nthreads(1)
    if family.startswith("blosc-"):
        codec = numcodecs.Blosc(cname=family.split("-", 1)[1], clevel=level, shuffle=numcodecs.Blosc.SHUFFLE)
    elif family == "zstd":
        codec = numcodecs.Zstd(level=level)
    else:
        codec = numcodecs.GZip(level=level)
    for x in _CHUNKS[lo:hi]:
        codec.encode(x)


def chunks_of(frames, chunk):
    """Every chunk of `frames`, edge chunks padded with zeros to the whole chunk (as the writers store them)."""
    grid = [-(-n // c) for n, c in zip(frames.shape, chunk)]
    out = []
    for idx in np.ndindex(*grid):
        part = frames[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, chunk))]
        if part.shape != tuple(chunk):
            part = np.pad(part, [(0, c - n) for c, n in zip(chunk, part.shape)])
        out.append(np.ascontiguousarray(part))
    return out


def codec_ceiling(b, codec):
    """GB/s of input that the codec alone compresses on b.cores processes (one per core), or None for none."""
    global _CHUNKS
    family, level = parse_codec(codec)
    if family == "none":
        return None
    _CHUNKS = chunks_of(b.frames, b.case.chunk)
    cuts = [len(_CHUNKS) * k // b.cores for k in range(b.cores + 1)]
    try:
        with mp.get_context("fork").Pool(b.cores) as pool:
            t = time.perf_counter()
            pool.map(_compress, [(family, level, cuts[k], cuts[k + 1]) for k in range(b.cores)])
            wall = time.perf_counter() - t
    finally:
        _CHUNKS = []
    return b.frames.nbytes / 1e9 / wall


def _spin(_):
    """Seconds a fixed piece of pure-Python work takes in this process, waiting for a CPU included."""
    t = time.perf_counter()
    x = 0
    for i in range(2_000_000):
        x += i
    return time.perf_counter() - t


def pinning(cores, all_cpus):
    """Whether pinning to `cores` CPUs limits the CPUs used, measured: as many busy
    processes as the machine has CPUs (up to 2 per pinned core) each take about
    that many / `cores` times one's time alone where it does, and about one's
    time where the pinning is only recorded (as in gVisor, where a thread pool
    sized by the affinity still spreads over every host CPU).
    {"enforced": bool, "slowdown": measured, "expected": if enforced}; None when not pinned."""
    if cores >= len(all_cpus):
        return None
    busy = min(2 * cores, len(all_cpus))
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        alone = min(pool.map(_spin, range(3)))
    with ctx.Pool(busy) as pool:
        together = sorted(pool.map(_spin, range(busy)))[busy // 2]
    slowdown, expected = together / alone, busy / cores
    return {"enforced": slowdown > (1 + expected) / 2, "slowdown": round(slowdown, 2), "expected": expected}


def storage_ceiling(b):
    """GB/s of b.cores threads (one per core) writing STORAGE_BLOCK buffers from
    memory into files in the output directory, the stream's bytes in all."""
    total = b.frames.nbytes
    block = memoryview(b.frames.reshape(-1).view(np.uint8))[:min(STORAGE_BLOCK, total)]
    shares = [total * k // b.cores for k in range(b.cores + 1)]
    paths = [os.path.join(b.work, f"storage-{k}.bin") for k in range(b.cores)]

    def write(k):
        fd = os.open(paths[k], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            left = shares[k + 1] - shares[k]
            while left:
                left -= os.write(fd, block[:min(left, len(block))])
        finally:
            os.close(fd)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(b.cores)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    written = sum(os.path.getsize(p) for p in paths)
    for p in paths:
        os.remove(p)
    if written != total:
        raise RuntimeError(f"storage ceiling wrote {written} bytes of {total}")
    return total / 1e9 / wall


def direct_ceiling(b):
    """GB/s of parallel direct-I/O writes (dd oflag=direct, one per 2 cores, up to 8) of 16 MiB blocks,
    as many bytes as the stream (at least a block per writer, at most 2 GiB); None without O_DIRECT."""
    n = max(1, min(8, b.cores // 2))
    block = 16 * 1024 ** 2
    each = max(1, min(2 * 1024 ** 3, b.frames.nbytes) // n // block)
    paths = [os.path.join(b.work, f"dd{k}") for k in range(n)]
    procs = [subprocess.Popen(["dd", "if=/dev/zero", f"of={p}", f"bs={block}", f"count={each}", "oflag=direct"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for p in paths]
    t = time.perf_counter()
    bad = any([p.wait() for p in procs])
    wall = time.perf_counter() - t
    for p in paths:
        if os.path.exists(p):
            os.remove(p)
    return None if bad else n * each * block / 1e9 / wall


# -- reading back


def check_store(out, raw, shape, dtype, levels, cpus=None):
    """(True, level shapes) if the store at `out` holds the frames of `raw`
    (its level 0 when it is a group), with `levels` levels where not None;
    else (False, why). Runs in a process of its own on `cpus` (untimed)."""
    if cpus:
        os.sched_setaffinity(0, cpus)
    import zarr
    frames = np.memmap(raw, dtype=dtype, mode="r", shape=tuple(shape))
    node = zarr.open(out, mode="r")
    arrays = [node]
    if not isinstance(node, zarr.Array):
        arrays = []
        while str(len(arrays)) in node:
            arrays.append(node[str(len(arrays))])
        if not arrays:
            return False, "a group without an array 0"
    a = arrays[0]
    shapes = [list(x.shape) for x in arrays]
    if a.shape != frames.shape or a.dtype != frames.dtype:
        return False, f"level 0 is {a.shape} {a.dtype}, not {frames.shape} {frames.dtype}"
    if levels is not None and len(arrays) != levels:
        return False, f"{len(arrays)} levels, not {levels}: {shapes}"
    step = max(1, (1 << 30) // max(1, frames[0].nbytes))  # 1 GiB at a time
    for t0 in range(0, frames.shape[0], step):
        if not np.array_equal(a[t0:t0 + step], frames[t0:t0 + step]):
            return False, f"planes {t0} to {min(t0 + step, frames.shape[0]) - 1} differ from the frames"
    return True, shapes


def readback(b, out, levels):
    """check_store in a fresh interpreter on every core this run started with (the benchmark may be pinned)."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from writers import check_store; "
            "print(json.dumps(check_store(*json.loads(sys.argv[2]))))")
    job = [out, b.raw, list(b.case.shape), b.case.dtype, levels, sorted(b.all_cpus)]
    r = subprocess.run([sys.executable, "-c", code, here, json.dumps(job)], capture_output=True, text=True)
    if r.returncode:
        return False, "zarr-python could not read it: " + r.stderr.strip()[-300:]
    return tuple(json.loads(r.stdout.strip().splitlines()[-1]))


# -- the run


@dataclass
class Bench:
    """One run's settings and frames."""

    retile: str
    work: str
    case: Case
    cores: int
    all_cpus: set
    raw: str = ""
    frames: np.ndarray = None


def store_bytes(out):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)


def versions(b):
    """The software measured, by name."""
    found = {"python": platform.python_version()}
    r = subprocess.run([b.retile, "--version"], capture_output=True, text=True)
    found["retile CLI"] = r.stdout.strip().removeprefix("retile ") if r.returncode == 0 else "?"
    for dist in ("retile", "tensorstore", "acquire-zarr", "zarr", "numcodecs", "numpy"):
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[dist] = None
    return found


def machine():
    """CPU model, cores, memory and kernel of this host."""
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return f"{platform.node()}: {model}, {os.cpu_count()} CPUs, {mem:.0f} GiB, Linux {platform.release()}"


def file_system(path):
    r = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def ratio(a, b):
    return f"{a / b:5.2f}x" if a and b else "    -"


def main(argv=None):
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Environment variables of the same names (upper case) set the defaults.")
    p.add_argument("retile", help="the retile CLI (e.g. target/release/retile)")
    p.add_argument("outdir", help="where the stores (and the frames) are written")
    p.add_argument("codecs", nargs="*", help="retile codec names (default: none blosc-lz4:1 blosc-zstd:1)")
    p.add_argument("--case", default=env("CASE", "default"), help=f"one of {', '.join(CASES)}")
    p.add_argument("--planes", default=env("PLANES"), help="frames (default: the case's)")
    p.add_argument("--frame", default=env("FRAME"), help="frame extents, e.g. 2000,1999 or 2,2048,2048")
    p.add_argument("--dtype", default=env("DTYPE"), help="u8, u16 or f32")
    p.add_argument("--chunk", default=env("CHUNK"), help="chunk extents, e.g. 64,256,256")
    p.add_argument("--shard", default=env("SHARD"), help="chunks per shard, e.g. 1,4,4")
    p.add_argument("--reps", type=int, default=int(env("REPS", "2")), help="runs of each writer (best taken)")
    p.add_argument("--cores", type=int, default=int(env("CORES", "0")), help="pin the run to this many cores")
    p.add_argument("--pyramid", action="store_true", default=env("PYRAMID") == "1",
                   help=f"a mean pyramid of {LEVELS} levels for retile and acquire-zarr")
    p.add_argument("--skip", default=env("SKIP", ""), help="writers left out, e.g. retile-py,tensorstore")
    p.add_argument("--json", default=env("JSON"), help="also write the figures to this JSON file")
    args = p.parse_args(argv)

    case = make_case(args)
    codecs = args.codecs or DEFAULT_CODECS
    for codec in codecs:
        parse_codec(codec)
    all_cpus = os.sched_getaffinity(0)
    cores = min(args.cores or len(all_cpus), len(all_cpus))
    if cores < len(all_cpus):
        os.sched_setaffinity(0, sorted(all_cpus)[:cores])  # children inherit it
    work = os.path.abspath(args.outdir)
    os.makedirs(work, exist_ok=True)
    b = Bench(retile=os.path.abspath(args.retile), work=work, case=case, cores=cores, all_cpus=all_cpus)
    b.raw = frames_raw(work, case.planes, case.frame, case.dtype)
    b.frames = np.fromfile(b.raw, dtype=case.dtype).reshape(case.shape)
    gb = b.frames.nbytes / 1e9

    skip = set(filter(None, args.skip.split(",")))
    writers = []
    for name, fn, makes_pyramid, module in WRITERS:
        if name in skip or (name == "retile-flat" and not case.pyramid):
            continue
        if module:
            try:
                __import__(module)
            except ImportError as e:
                print(f"{name}: not run ({module} does not import: {e})")
                continue
        writers.append((name, fn, makes_pyramid and case.pyramid))

    pinned = pinning(cores, all_cpus)
    storage, direct = storage_ceiling(b), direct_ceiling(b)
    ceilings = {codec: codec_ceiling(b, codec) for codec in codecs}
    soft = versions(b)
    when = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    print(f"{machine()}; {when}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in soft.items() if v))
    print(f"{case.label} ({gb:.2f} GB), {cores} cores, into {work} ({file_system(work)}), best of {args.reps}")
    if pinned:
        print(f"pinning to {cores} cores " + ("holds" if pinned["enforced"] else
              "is NOT enforced on this host (threads are sized by it, but run on every CPU)")
              + f": busy processes ran {pinned['slowdown']:.2f}x slower than one alone"
              + f" ({pinned['expected']:.2f}x where pinning holds)")
    print(f"storage alone ({cores} writers of {STORAGE_BLOCK >> 20} MiB buffers) {storage:.2f} GB/s"
          + (f"; direct I/O (dd oflag=direct) {direct:.2f} GB/s" if direct else "; no direct I/O here"))

    report = dict(when=when, machine=machine(), versions=soft, case=asdict(case), cores=cores, pinning=pinned, work=work,
                  file_system=file_system(work), gb=gb, reps=args.reps,
                  storage=storage, direct=direct, codecs={})
    for codec in codecs:
        best, stored, levels, problems, wrong = {}, {}, {}, {}, set()
        for rep in range(args.reps):
            for name, fn, pyramid in writers:
                out = os.path.join(work, name + ".zarr")
                shutil.rmtree(out, ignore_errors=True)
                subprocess.run(["sync"])
                try:
                    secs = fn(b, out, codec, pyramid)
                except Unsupported as e:
                    problems[name] = f"unsupported: {e}"
                    shutil.rmtree(out, ignore_errors=True)
                    continue
                except Exception as e:  # noqa: BLE001 - a writer's failure is reported, and the others go on
                    problems[name] = f"failed: {str(e)[:300]}"
                    print(f"  {codec} rep {rep} {name:12s} failed: {str(e)[:300]}")
                    shutil.rmtree(out, ignore_errors=True)
                    continue
                size = store_bytes(out)
                ok, shapes = readback(b, out, LEVELS if pyramid and name.startswith("retile") else None)
                shutil.rmtree(out, ignore_errors=True)
                if not ok:
                    wrong.add(name)
                    problems[name] = f"READ BACK WRONG: {shapes}"
                    print(f"  {codec} rep {rep} {name:12s} READ BACK WRONG ({shapes}); not timed")
                    continue
                best[name] = max(best.get(name, 0.0), gb / secs)
                stored[name], levels[name] = size, len(shapes)
                print(f"  {codec} rep {rep} {name:12s} {gb / secs:6.2f} GB/s of input, stored {size / 1e6:7.0f} MB"
                      + (f", {len(shapes)} levels" if pyramid else ""))
        for name in wrong:  # a writer whose store read back wrong in any run gets no figure
            best.pop(name, None)
        codec_gbps = ceilings[codec]
        limits = {"storage": storage, "direct": direct, "codec": codec_gbps}
        limit_name, limit = min(((k, v) for k, v in limits.items() if v), key=lambda kv: kv[1])
        print(f"{codec}: ceilings: " + ", ".join(f"{k} {v:.2f}" for k, v in limits.items() if v)
              + f" GB/s (lowest: {limit_name})")
        ts_gbps = best.get("tensorstore")
        for name, _, pyramid in writers:
            if name in best:
                print(f"  {codec:14s} {name:13s} {best[name]:6.2f} GB/s  {ratio(best[name], ts_gbps)} tensorstore"
                      f"  {ratio(best[name], limit)} {limit_name} ceiling" + ("  (with pyramid)" if pyramid else ""))
            elif name in problems:
                print(f"  {codec:14s} {name:13s} {problems[name]}")
        if "retile" in best and "retile-flat" in best:
            print(f"  {codec:14s} retile with/without pyramid {best['retile'] / best['retile-flat']:.2f}")
        report["codecs"][codec] = dict(best=best, stored=stored, levels=levels, problems=problems, ceilings=limits,
                                       lowest_ceiling=limit_name)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return report


if __name__ == "__main__":
    main()
