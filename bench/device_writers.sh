#!/usr/bin/env bash
# Issue #28's device call, on the 16-core host with the bundle carried
# (bench/device_bundle.sh; with CUDA=1 the CLI also has the CUDA backend):
# the writers into /dev/shm (the default case, three codecs, best of 2), the
# 4-level pyramid, the CUDA backend beside the CPU one, other shapes, the
# disk, and the core scaling; each step bounded so that the whole ends
# inside a call's 10 minutes; logs and JSON to $OUT.
#
#     bench/device_writers.sh        # device call: carry .bundle, timeout_s 600
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/retile-writers}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NEED="numpy tensorstore zarr numcodecs acquire_zarr retile"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
python3 bench/unpack_bundle.py .bundle
R=.bundle/retile W=/dev/shm/bench
run() { # run NAME SECONDS ARGS...: writers.py, its log and JSON named NAME
    local name=$1 secs=$2
    shift 2
    timeout "$secs" bench/device_run.sh python3 bench/writers.py $R "$@" --json "$OUT/$name.json" >"$OUT/$name.log" 2>&1
    grep -vE " rep |^  [a-z]+: the host|^installed|^python |^  [a-z_]+ .* from " "$OUT/$name.log" | tail -n 25
}
run w16 170 $W none blosc-lz4:1 blosc-zstd:1
PYRAMID=1 REPS=1 run pyr16 80 $W blosc-zstd:1
# the CUDA backend beside the CPU one, measure-only, on the frames above
raw=$(ls $W/frames-*.raw 2>/dev/null | head -1)
if [ -n "$raw" ] && $R stream --help | grep -q -- "--backend"; then
    for backend in cpu cuda cpu cuda; do
        echo "== measure-only --backend $backend"
        timeout 60 $R stream --shape 0,2048,2048 --tile 64,256,256 --dtype u16 --input "$raw" --backend "$backend" 2>&1 | tail -n 4
    done 2>&1 | tee "$OUT/measure_only.log"
    CUDA=1 CODEC_ON=cpu SKIP=retile-py,acquire-zarr REPS=1 run cuda16 60 $W none blosc-lz4:1
fi
REPS=1 SKIP=acquire-zarr run ragged 50 $W blosc-lz4:1 --case ragged --planes 256
REPS=1 SKIP=acquire-zarr run thin 50 $W blosc-lz4:1 --case thin --planes 256
REPS=1 SKIP=acquire-zarr run fourd 50 $W blosc-lz4:1 --case 4d --planes 128
# the disk (the host's /tmp), uncompressed, against its parallel direct-write ceiling
df -h /tmp | tail -1 | tee "$OUT/disk.txt"
REPS=1 SKIP=acquire-zarr run disk 70 /tmp/bench-disk none --planes 256
rm -rf /tmp/bench-disk
PLANES=128 REPS=1 SKIP=acquire-zarr timeout 110 bench/device_run.sh python3 bench/scaling.py $R $W --report "$OUT/scaling" >"$OUT/scaling.log" 2>&1
tail -n 12 "$OUT/scaling.log"
