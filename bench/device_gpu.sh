#!/usr/bin/env bash
# On the device, with the GPU's bundle carried (CUDA=1 bench/device_bundle.sh):
# the GPU tests that CI cannot run (the copy crate's kernels, the CUDA stream
# against the CPU's, nvCOMP's chunks decoded on the CPU), then the CUDA
# backend beside the CPU one and tensorstore on camera-like frames into
# /dev/shm, every store read back by zarr-python, with the codec ceiling and
# the GPU's stored bytes against the CPU's. Everything goes to $OUT.
#
#     bench/device_gpu.sh          # device call: carry .bundle, timeout_s 600
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/retile-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
RETILE_NVCOMP=$(ls "$PWD"/.bundle/nvcomp/libnvcomp.so.* | head -1)
export RETILE_NVCOMP
python3 bench/unpack_bundle.py .bundle
nvidia-smi -L 2>&1 | tee "$OUT/gpu.txt"
status=0
for t in .bundle/tests/*; do
    echo "== $t --ignored" | tee -a "$OUT/tests.log"
    timeout 150 "$t" --ignored --test-threads=1 --nocapture >>"$OUT/tests.log" 2>&1 || status=1
    grep -E "^test |test result" "$OUT/tests.log" | tail -n 12
done
export PYTHONUNBUFFERED=1 NEED="numpy tensorstore zarr numcodecs" CUDA=1 SKIP=retile-py,acquire-zarr
timeout "${BENCH_SECONDS:-330}" bench/device_run.sh python3 bench/writers.py .bundle/retile /dev/shm/bench \
    none zstd:1 blosc-lz4:1 blosc-zstd:1 --planes "${PLANES:-256}" --json "$OUT/gpu_writers.json" 2>&1 |
    tee "$OUT/gpu_writers.log" || status=1
# the CUDA backend beside the CPU backend on the same frames: measure-only
# (no output), and into /dev/shm with a 4-level mean pyramid (blosc-zstd:1)
raw=$(ls /dev/shm/bench/frames-*.raw 2>/dev/null | head -1)
if [ -n "$raw" ]; then
    planes=$(( $(stat -c %s "$raw") / (2048 * 2048 * 2) ))
    for rep in 1 2; do
        for backend in cpu cuda; do
            printf 'measure-only rep %s %-4s ' "$rep" "$backend"
            timeout 60 .bundle/retile stream --shape 0,2048,2048 --tile 64,256,256 --dtype u16 \
                --input "$raw" --backend "$backend" 2>&1 | grep -oE '[0-9.]+ GB/s' | head -1
        done
    done 2>&1 | tee "$OUT/measure_only.log"
    PYRAMID=1 REPS=1 timeout "${PYRAMID_SECONDS:-150}" bench/device_run.sh python3 bench/writers.py \
        .bundle/retile /dev/shm/bench blosc-zstd:1 --planes "$planes" --json "$OUT/gpu_pyramid.json" 2>&1 |
        tee "$OUT/gpu_pyramid.log" || status=1
fi
exit $status
