#!/usr/bin/env bash
# Builds .bundle/, everything bench/device_run.sh needs on a host without
# network (Python 3.12, numpy, tensorstore installed): the release CLI
# (stripped), the Python package as an abi3 wheel, and the peers' wheels
# (zarr, numcodecs, acquire-zarr, matplotlib and what they need, but numpy:
# the device image has numpy 2.5, which tensorstore there was built for).
# Checks that the bundle and the repository's tracked files stay under
# 64 MiB, the most a device call carries.
#
#     bench/device_bundle.sh            # then carry .bundle to the device and run bench/device_run.sh there
#     CUDA=1 NVCOMP_WHEEL=nvidia_libnvcomp_cu13-*.whl bench/device_bundle.sh   # the GPU's: see bench/device_gpu.sh
#     DASK=1 PEERS="zarr==3.4.2 numcodecs==0.17.1" bench/device_bundle.sh   # bench/dask_peer.py's
#
# DASK=1 adds Dask, distributed and ome-zarr-py (for bench/dask_peer.py's
# pyramid beside write_image) with the pure-Python packages they need, each
# without its dependencies: the device image has the compiled ones (scipy,
# scikit-image, pillow, numpy), which would not fit.
#
# Needs cargo, strip, maturin (`pip install maturin`) and pip with network.
# PYVER=3.12 is the device's Python (the wheels downloaded are for it);
# PYTHON=python3 runs pip; CARGO_TARGET_DIR is honoured.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
PYVER=${PYVER:-3.12}
PYTHON=${PYTHON:-python3}
MATURIN=${MATURIN:-maturin}
target=${CARGO_TARGET_DIR:-target}
bundle=.bundle
limit=$((64 * 1024 * 1024))
# the peers, pinned to the versions the scripts were tested with
# PEERS overrides the list (e.g. without matplotlib, to leave room for another binary)
read -r -a peers <<<"${PEERS:-zarr==3.4.2 numcodecs==0.17.1 acquire-zarr==0.10.0 matplotlib==3.11.2}"

# .bundle/ is never committed: the git directory's exclude list (shared by worktrees) ignores it
if ! git check-ignore -q "$bundle/"; then
    echo "$bundle/" >>"$(git rev-parse --git-common-dir)/info/exclude"
fi
rm -rf "$bundle"
mkdir -p "$bundle/wheels"

# the CLI, copied out at once (another build in the same target directory may replace it)
if [ "${CUDA:-0}" = 1 ]; then
    # the GPU's bundle: the CLI with the CUDA backend (its CPU backend is the
    # plain CLI's), the GPU tests (optimised, without LTO), nvCOMP's library
    # (from NVCOMP_WHEEL, a downloaded nvidia-libnvcomp-cu13 wheel), beside
    # the Python package and the peers (PEERS; default without matplotlib)
    cargo build --release -p retile --features cuda
    cp "$target/release/retile" "$bundle/retile"
    strip "$bundle/retile"
    mkdir -p "$bundle/tests" "$bundle/nvcomp"
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 cargo test --release --no-run --message-format=json \
        -p retile-copy -p retile-stream --features retile-copy/cuda,retile-stream/cuda \
        --test gpu --test cuda --test gpu_codec |
        "$PYTHON" -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["executable"])' |
        while read -r exe; do cp "$exe" "$bundle/tests/$(basename "$exe" | sed 's/-[0-9a-f]*$//')"; done
    strip "$bundle"/tests/*
    "$PYTHON" -m zipfile -e "${NVCOMP_WHEEL:?NVCOMP_WHEEL: a downloaded nvidia-libnvcomp-cu13 wheel}" "$bundle/nvcomp.tmp"
    find "$bundle/nvcomp.tmp" -name 'libnvcomp.so.*' ! -name '*cpu*' -exec cp {} "$bundle/nvcomp/" \;
    rm -rf "$bundle/nvcomp.tmp"
    # executables xz-compressed (a third of their size) to fit the 64 MiB a
    # call carries beside nvCOMP's 25 MB; bench/unpack_bundle.py unpacks them
    "$PYTHON" - "$bundle/retile" "$bundle"/tests/* <<'PY'
import lzma, os, sys
for path in sys.argv[1:]:
    with open(path, "rb") as f, lzma.open(path + ".xz", "wb", preset=6) as g:
        g.write(f.read())
    os.remove(path)
PY
    read -r -a peers <<<"${PEERS:-zarr==3.4.2 numcodecs==0.17.1 acquire-zarr==0.10.0}"
else
    cargo build --release -p retile
    cp "$target/release/retile" "$bundle/retile"
    strip "$bundle/retile"
fi
"$MATURIN" build --release --strip -m crates/python/Cargo.toml --out "$bundle/wheels"
ls "$bundle"/wheels/retile-*-cp311-abi3-*.whl >/dev/null || {
    echo "the retile wheel is not an abi3 wheel (cp311-abi3): it would not import on Python $PYVER" >&2
    exit 1
}

"$PYTHON" -m pip download --quiet --disable-pip-version-check --python-version "$PYVER" --only-binary=:all: \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    -d "$bundle/wheels" "${peers[@]}"
if [ "${DASK:-0}" = 1 ]; then
    "$PYTHON" -m pip download --quiet --disable-pip-version-check --python-version "$PYVER" --only-binary=:all: \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
        --no-deps -d "$bundle/wheels" dask==2026.8.0 distributed==2026.8.0 cloudpickle partd locket zict tblib \
        msgpack sortedcontainers tornado toolz psutil click importlib_metadata zipp lazy_importer \
        ome-zarr==0.18.0 ome-zarr-models==1.7 pydantic==2.12.5 pydantic-core==2.41.5 pydantic-zarr==0.9.2 \
        annotated-types typing-inspection deprecated==1.3.1 wrapt rangehttpserver
fi
rm -f "$bundle"/wheels/numpy-*.whl # the host's numpy (16 MB of wheel would not fit)
# the peers' own benchmark scripts (bench/device_peer.sh runs them): the
# device sees nothing outside the repository
if [ -d ../shared/bench ]; then
    mkdir -p "$bundle/peer"
    cp ../shared/bench/*.py "$bundle/peer/"
fi

{
    echo "retile bench bundle: $(git rev-parse HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)'), $(date -Is)"
    echo "for Python $PYVER; peers: ${peers[*]}"
    (cd "$bundle" && find . -type f ! -name MANIFEST -printf '%s %p\n' | sort -k2)
} >"$bundle/MANIFEST"

size=$(du -sb "$bundle" | cut -f1)
tree=$(git ls-files -z | xargs -0 stat -c %s | awk '{s += $1} END {print s + 0}')
cat "$bundle/MANIFEST"
echo "$bundle: $((size / 1024 / 1024)) MiB ($size bytes); with the tracked files ($((tree / 1024)) KiB) $(((size + tree) / 1024 / 1024)) MiB of at most 64 MiB"
if [ $((size + tree)) -gt "$limit" ]; then
    echo "$bundle and the working tree are over 64 MiB: a device call cannot carry them" >&2
    exit 1
fi
