#!/usr/bin/env bash
# The peers' own benchmark, ../shared/bench/writers_peer.py (copied into the
# bundle by bench/device_bundle.sh, as the device sees no ../shared), on the
# 16-core host with .bundle carried: retile's CLI and Python package beside
# tensorstore and acquire-zarr into /dev/shm, with the codec and disk
# ceilings of the same run; STEP=flat (the codecs given, default the
# script's three, best of 2) or STEP=pyramid (blosc-zstd:1 with a 4-level
# mean pyramid); each inside one call's 10 minutes; the log to $OUT.
#
#     STEP=flat bench/device_peer.sh none blosc-lz4:1    # device call: carry .bundle, timeout_s 600
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/retile-peer}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NEED="numpy tensorstore zarr numcodecs acquire_zarr retile"
peer=.bundle/peer/writers_peer.py
nproc | tee "$OUT/host.txt"
case "${STEP:-flat}" in
flat) timeout 560 bench/device_run.sh python3 $peer .bundle/retile /dev/shm/peer "$@" ;;
pyramid) PYRAMID=1 REPS=1 timeout 560 bench/device_run.sh python3 $peer .bundle/retile /dev/shm/peer blosc-zstd:1 ;;
esac 2>&1 | tee "$OUT/${STEP:-flat}.log"
rm -rf /dev/shm/peer
