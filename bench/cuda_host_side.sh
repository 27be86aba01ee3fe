#!/usr/bin/env bash
# On the device, with a GPU bundle carried (CUDA=1 bench/device_bundle.sh, or
# .bundle/retile built with --features cuda, .bundle/nvcomp/libnvcomp.so.*
# and .bundle/pinned_probe from bench/pinned_probe.rs): where the CUDA
# backend's time goes on the host, against the CPU backend on the same
# frames. Prints what the setup's parts cost (bench/pinned_probe.rs), then
# streams PLANES camera-like 2048x2048 u16 frames (chunk 64x256x256, shard
# 1x4x4) from a file into /dev/shm with each backend and codec, REPS times
# interleaved, with the process's wall time beside the stream's own figure
# and the setup's parts (the CLI's summary). A build to compare with may ride
# along as .bundle/retile-base: its CUDA backend runs too. AUTO=1 adds the
# CUDA backend with --codec-on auto; PYRAMID=1 streams every run with a
# 4-level mean pyramid. Output to $OUT.
#
#     OUT=$OUT bench/cuda_host_side.sh none zstd:1 blosc-zstd:1   # device call: carry .bundle
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/retile-cuda-host}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
RETILE_NVCOMP=$(ls "$PWD"/.bundle/nvcomp/libnvcomp.so.* | head -1)
export RETILE_NVCOMP RETILE_KERNEL_CACHE=${RETILE_KERNEL_CACHE:-/tmp/retile-kernels}
python3 bench/unpack_bundle.py .bundle >/dev/null
PLANES=${PLANES:-384}
REPS=${REPS:-2}
[ $# -gt 0 ] || set -- none zstd:1 blosc-lz4:1 blosc-zstd:1
{
    nvidia-smi -L
    if [ -x .bundle/pinned_probe ]; then
        MIB=512 THREADS=$(nproc) timeout 120 .bundle/pinned_probe
    fi
    mkdir -p /dev/shm/frames
    raw=$(python3 -c "import sys; sys.path.insert(0, 'bench'); from frames import frames_raw; print(frames_raw('/dev/shm/frames', $PLANES, (2048, 2048)))")
    echo "frames: $raw ($(stat -c %s "$raw") bytes)"
    gb=$(python3 -c "print($(stat -c %s "$raw") / 1e9)")
    for rep in $(seq 1 "$REPS"); do
        for codec in "$@"; do
            runs="retile:cpu retile:cuda:gpu"
            [ -x .bundle/retile-base ] && runs="$runs retile-base:cuda:gpu"
            [ "${AUTO:-0}" = 1 ] && [ "$codec" != none ] && runs="$runs retile:cuda:auto"
            for run in $runs; do
                IFS=: read -r binary backend on <<<"$run"
                where=()
                [ -n "$on" ] && [ "$codec" != none ] && where=(--codec-on "$on")
                [ "${PYRAMID:-0}" = 1 ] && where+=(--pyramid mean --levels 4)
                rm -rf /dev/shm/out.zarr
                start=$(date +%s.%N)
                summary=$(timeout 120 ".bundle/$binary" stream --shape 0,2048,2048 --tile 64,256,256 --dtype u16 \
                    --shard 1,4,4 --codec "$codec" --dim-names t,y,x --input "$raw" --output /dev/shm/out.zarr \
                    --backend "$backend" "${where[@]}" 2>&1)
                rc=$?
                wall=$(python3 -c "print(f'{$gb / ($(date +%s.%N) - $start):.2f}')")
                echo "== rep $rep $codec $binary $backend ${where[*]}: rc $rc, process $wall GB/s of input"
                echo "$summary" | sed 's/^/   /'
            done
        done
    done
    rm -rf /dev/shm/out.zarr
} 2>&1 | tee "$OUT/cuda_host_side.log"
