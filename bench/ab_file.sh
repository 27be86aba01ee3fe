#!/usr/bin/env bash
# Two retile binaries on the same frames read from a file, interleaved, with
# each run's own report (where its time went): the CLI's file input, the
# writer threads and, with PYRAMID=1, a 4-level mean pyramid.
#
#     bench/ab_file.sh OLD NEW OUTDIR       # e.g. OUTDIR=/dev/shm/ab on the device host
#
# 384 frames of 2048x2048 u16 (the peers' scene: writers_peer.py's), chunk
# 64x256x256, shard 1x4x4; CODECS="none blosc-lz4:1 blosc-zstd:1", REPS=2.
set -euo pipefail
old=$1 new=$2 out=$3
codecs=${CODECS:-none blosc-lz4:1 blosc-zstd:1}
mkdir -p "$out"
# the peers' scene, made once by bench/frames.py (as every benchmark's frames are)
frames=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from frames import frames_file; print(frames_file(sys.argv[2], 384, 2048, 2048))' "$(dirname "$0")" "$out")
pyramid=()
[ "${PYRAMID:-0}" = 1 ] && pyramid=(--pyramid mean --levels 4)
for rep in $(seq "${REPS:-2}"); do
    for codec in $codecs; do
        for bin in "$old" "$new"; do
            echo "== rep $rep $codec $bin ${pyramid[*]}"
            rm -rf "$out/ab.zarr"
            "$bin" stream --shape 0,2048,2048 --tile 64,256,256 --dtype u16 --shard 1,4,4 \
                --codec "$codec" --input "$frames" --output "$out/ab.zarr" "${pyramid[@]}" 2>&1 |
                sed -n 's/^/    /; 1,3p'  # reads all of it: \`head\` would SIGPIPE retile under pipefail
        done
    done
done
rm -rf "$out/ab.zarr" "$frames"
