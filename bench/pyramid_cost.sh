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
frames=$out/frames.raw
[ -f "$frames" ] || python3 - "$frames" <<'PY'
import sys
import numpy as np
H = W = 2048
rng = np.random.default_rng(7)
yy, xx = np.mgrid[0:H, 0:W]
base = (200 + 800 * (np.sin(yy / 97.0) * np.cos(xx / 61.0)) ** 2).astype(np.uint16)
with open(sys.argv[1], "wb") as f:
    for t in range(384):
        (base + rng.integers(0, 64, size=(H, W), dtype=np.uint16) + (t % 50)).astype(np.uint16).tofile(f)
PY
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
