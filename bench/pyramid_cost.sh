#!/usr/bin/env bash
# What a 4-level mean pyramid costs the CLI: the same frames read from a
# file, streamed without and with the pyramid, interleaved, by one binary,
# each run's first report line (GB/s of input, and counting the source).
#
#     bench/pyramid_cost.sh RETILE OUTDIR     # e.g. OUTDIR=/dev/shm/pc on the device host
#
# 384 frames of 2048x2048 u16 (the peers' scene: writers_peer.py's), chunk
# 64x256x256, shard 1x4x4; CODECS="none blosc-lz4:1 blosc-zstd:1", REPS=3.
set -euo pipefail
bin=$1 out=$2
mkdir -p "$out"
# the peers' scene, made once by bench/frames.py (as every benchmark's frames are)
frames=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from frames import frames_file; print(frames_file(sys.argv[2], 384, 2048, 2048))' "$(dirname "$0")" "$out")
for rep in $(seq "${REPS:-3}"); do
    for codec in ${CODECS:-none blosc-lz4:1 blosc-zstd:1}; do
        for pyramid in "" "--pyramid mean --levels 4"; do
            rm -rf "$out/pc.zarr"
            # shellcheck disable=SC2086 # the pyramid's flags are words
            line=$("$bin" stream --shape 0,2048,2048 --tile 64,256,256 --dtype u16 --shard 1,4,4 \
                --codec "$codec" --input "$frames" --output "$out/pc.zarr" $pyramid 2>&1 | sed -n 1p)
            echo "== rep $rep $codec ${pyramid:-flat}: $line"
        done
    done
done
rm -rf "$out/pc.zarr" "$frames"
