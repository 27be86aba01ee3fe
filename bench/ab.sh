#!/usr/bin/env bash
# Two retile binaries on the same streams, interleaved, best of REPS: the
# pipeline alone (synthetic input, no file read), into OUTDIR.
#
#     bench/ab.sh OLD NEW OUTDIR [EXTRA ARGS for NEW ...]
#
# PLANES=384 (2048x2048 u16, chunk 64x256x256, shard 1x4x4), REPS=2,
# CODECS="none blosc-lz4:1 blosc-zstd:1"; each line: codec, binary, GB/s.
set -euo pipefail
old=$1 new=$2 out=$3
shift 3
planes=${PLANES:-384}
reps=${REPS:-2}
codecs=${CODECS:-none blosc-lz4:1 blosc-zstd:1}
mkdir -p "$out"
run() { # binary codec extra...
    local bin=$1 codec=$2
    shift 2
    rm -rf "$out/ab.zarr"
    "$bin" stream --shape 0,2048,2048 --planes "$planes" --tile 64,256,256 --dtype u16 \
        --shard 1,4,4 --codec "$codec" --output "$out/ab.zarr" "$@" 2>&1 |
        grep -Eo '[0-9.]+ GB/s' | head -1
}
for codec in $codecs; do
    best_old=0 best_new=0
    for _ in $(seq "$reps"); do
        o=$(run "$old" "$codec" | cut -d' ' -f1)
        n=$(run "$new" "$codec" "$@" | cut -d' ' -f1)
        best_old=$(python3 -c "print(max($best_old, ${o:-0}))")
        best_new=$(python3 -c "print(max($best_new, ${n:-0}))")
    done
    echo "ab $codec old $best_old new $best_new ratio $(python3 -c "print(round($best_new / max($best_old, 1e-9), 2))") args: $*"
done
rm -rf "$out/ab.zarr"
