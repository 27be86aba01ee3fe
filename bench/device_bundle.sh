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
rm -f "$bundle"/wheels/numpy-*.whl # the host's numpy (16 MB of wheel would not fit)

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
