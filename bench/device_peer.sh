#!/usr/bin/env bash
# The peers' own benchmark, ../shared/bench/writers_peer.py (copied into the
# bundle by bench/device_bundle.sh, as the device sees no ../shared), on the
# 16-core host with .bundle carried: retile's CLI and Python package beside
# tensorstore and acquire-zarr into /dev/shm, with the codec and disk
# ceilings of the same run; STEP=flat (the codecs given, default the
# script's three, best of 2) or STEP=pyramid (blosc-zstd:1 with a 4-level
# mean pyramid, best of 2), STEP=acquisition (bench/acquisition.py: two
# arrays in one stream beside one stream of the same size) or STEP=rechunk
# (bench/rechunk_peer.py: retile rechunk beside dask; the bundle needs
# dask: PEERS="... dask[array]==2026.8.0" bench/device_bundle.sh), STEP=order
# (bench/input_order.py: the same data arriving in stored order, with the
# plane's axes kept and swapped) or STEP=dask (bench/dask_peer.py on a
# LocalCluster of 16 workers, then 2, 4, 8, 16; the bundle needs dask and
# distributed); each
# inside one call's 10 minutes; the log to $OUT.
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
pyramid) PYRAMID=1 timeout 560 bench/device_run.sh python3 $peer .bundle/retile /dev/shm/peer blosc-zstd:1 ;;
acquisition) NEED="numpy zarr retile" timeout 560 bench/device_run.sh python3 bench/acquisition.py /dev/shm/acq "$@" ;;
rechunk) NEED="numpy zarr dask retile" PLANES=${PLANES:-512} timeout 560 bench/device_run.sh python3 bench/rechunk_peer.py .bundle/retile /dev/shm/rc ;;
order) NEED="numpy zarr retile" T=${T:-64} timeout 560 bench/device_run.sh python3 bench/input_order.py /dev/shm/order ;;
dask) NEED="numpy zarr dask distributed retile" timeout 560 bench/device_run.sh python3 bench/dask_peer.py /dev/shm/dask ;;
esac 2>&1 | tee "$OUT/${STEP:-flat}.log"
rm -rf /dev/shm/peer /dev/shm/acq /dev/shm/rc /dev/shm/order /dev/shm/dask
