#!/usr/bin/env bash
# Builds .bundle/, everything bench/device_run.sh needs on a host without
# network (Python 3.12, numpy, tensorstore installed): the release CLI
# (stripped), the Python package as an abi3 wheel, and the peers' wheels
# (zarr, numcodecs, acquire-zarr, matplotlib and what they need, numpy too
# for a host whose numpy is older than zarr's). Checks it stays under 64 MiB,
# the most a device call carries.
#
#     bench/device_bundle.sh            # then carry .bundle to the device and run bench/device_run.sh there
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
peers=(zarr==3.4.2 numcodecs==0.17.1 acquire-zarr==0.10.0 matplotlib==3.11.2)

# .bundle/ is never committed: the git directory's exclude list (shared by worktrees) ignores it
if ! git check-ignore -q "$bundle/"; then
    echo "$bundle/" >>"$(git rev-parse --git-common-dir)/info/exclude"
fi
rm -rf "$bundle"
mkdir -p "$bundle/wheels"

# the CLI, copied out at once (another build in the same target directory may replace it)
cargo build --release -p retile
cp "$target/release/retile" "$bundle/retile"
strip "$bundle/retile"

"$MATURIN" build --release --strip -m crates/python/Cargo.toml --out "$bundle/wheels"
ls "$bundle"/wheels/retile-*-cp311-abi3-*.whl >/dev/null || {
    echo "the retile wheel is not an abi3 wheel (cp311-abi3): it would not import on Python $PYVER" >&2
    exit 1
}

"$PYTHON" -m pip download --quiet --disable-pip-version-check --python-version "$PYVER" --only-binary=:all: \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    -d "$bundle/wheels" "${peers[@]}"

{
    echo "retile bench bundle: $(git rev-parse HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)'), $(date -Is)"
    echo "for Python $PYVER; peers: ${peers[*]}"
    (cd "$bundle" && find . -type f ! -name MANIFEST -printf '%s %p\n' | sort -k2)
} >"$bundle/MANIFEST"

size=$(du -sb "$bundle" | cut -f1)
echo "$bundle: $((size / 1024 / 1024)) MiB ($size bytes) of at most 64 MiB"
cat "$bundle/MANIFEST"
if [ "$size" -gt "$limit" ]; then
    echo "$bundle is over 64 MiB: a device call cannot carry it" >&2
    exit 1
fi
