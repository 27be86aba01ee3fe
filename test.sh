#!/usr/bin/env bash
# The tests, with everything they need set up first: from the repository root,
# on a machine with a Rust toolchain and Python 3,
#
#     ./test.sh
#
# makes a virtual environment in .venv (ignored by git), installs the test
# tools and the Python package (crates/python, built by maturin) into it,
# installs a C++ compiler if there is none (apt-get), then runs
# `cargo test --workspace` and pytest on crates/python/tests with .venv/bin
# first on PATH (the S3 tests start `python3 -m moto.server`). It says how
# long each stage took and exits non-zero if anything failed. Run again, it
# reuses the environment and rebuilds the package only when its sources changed.
set -euo pipefail
cd "$(dirname "$0")"
root=$PWD
venv=$root/.venv

# The test tools, installed into .venv with pip. To add one, add a line.
test_tools=(
    maturin          # builds the Python package from crates/python
    pytest
    hypothesis       # property tests over random inputs (the swizzle tests)
    numpy
    zarr             # the independent reader every stored byte is checked with
    nvidia-cutlass   # pycute, the reference the algebra's Python tests compare with
    ome-zarr-models  # validates OME-Zarr images
    'dask[array]'    # retile.dask: the arrays its tests write, and the peers of bench/dask_peer.py
    distributed      # retile.dask's tests start a LocalCluster on 127.0.0.1
    ome-zarr
    "moto[server]"   # a local S3 server, started by the Rust and Python S3 tests
    s3fs             # zarr-python's S3 access
)

# --- timing: each stage is announced, timed, and listed at the end ---
stage=""
stage_started=0
timings=()
failed=0
begin() {
    stage=$1
    stage_started=$SECONDS
    echo "==> $stage"
}
# Ends the stage; `end FAILED` marks it failed.
end() {
    timings+=("$(printf '%-44s %4d s  %s' "$stage" $((SECONDS - stage_started)) "${1:-}")")
    stage=""
}
# A stage of tests: run to the end even if an earlier one failed, so that
# one run shows every failure.
test_stage() {
    begin "$1"
    shift
    if "$@"; then
        end
    else
        end FAILED
        failed=1
    fi
}
report() {
    local status=$?
    echo
    echo "test.sh: how long each stage took"
    local t
    for t in "${timings[@]}"; do echo "  $t"; done
    if [ -n "$stage" ]; then
        printf '  %-44s %4d s  FAILED\n' "$stage" $((SECONDS - stage_started))
    fi
    if [ "$status" -eq 0 ]; then
        echo "test.sh: all passed in $SECONDS s"
    else
        echo "test.sh: FAILED (exit status $status) after $SECONDS s"
    fi
}
trap report EXIT

# Installs Debian packages (as root, or through sudo).
apt_install() {
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "test.sh: $* missing and no apt-get to install it: install it and run again" >&2
        return 1
    fi
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

begin "C++ compiler"
# the unit tests compile the GPU's pyramid kernel for the host and check it
# against the CPU: with RETILE_REQUIRE_CXX=1 they fail, not skip, without one
command -v c++ >/dev/null 2>&1 || apt_install g++
export RETILE_REQUIRE_CXX=1
end

begin "virtual environment (.venv)"
if ! "$venv/bin/python3" -c '' 2>/dev/null; then
    # missing, or made by a Python that is gone
    rm -rf "$venv"
    python3 -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv
    python3 -m venv "$venv"
fi
# everything below finds the venv's python3 and tools (maturin, moto) first
export VIRTUAL_ENV=$venv
export PATH=$venv/bin:$PATH
end

begin "test tools (pip)"
# installed again only when the list above changes
tools_stamp=$venv/.retile-test-tools
if [ "$(cat "$tools_stamp" 2>/dev/null)" != "${test_tools[*]}" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --upgrade pip
    python3 -m pip install --quiet --disable-pip-version-check "${test_tools[@]}"
    echo "${test_tools[*]}" >"$tools_stamp"
fi
end

begin "Python package (crates/python, maturin)"
# built again (incrementally: cargo keeps its target directory) when a source
# file of the workspace's library crates (the command, tests, benchmarks,
# examples and hidden files such as pytest's cache aside) or its manifests is
# newer than the last install
package_stamp=$venv/.retile-package
if [ ! -e "$package_stamp" ] ||
    [ -n "$(find crates Cargo.toml Cargo.lock -newer "$package_stamp" -type f \
        -not -path 'crates/cli/*' -not -path '*/tests/*' -not -path '*/benches/*' \
        -not -path '*/examples/*' -not -path '*/.*' -print -quit)" ]; then
    touch "$package_stamp.new"
    echo "(a release build: the first one takes several minutes)"
    python3 -m pip install --disable-pip-version-check --no-build-isolation ./crates/python
    mv "$package_stamp.new" "$package_stamp"
fi
end

# the S3 tests start a local S3 server (moto) on 127.0.0.1: here they must run, not skip
export RETILE_REQUIRE_S3=1

test_stage "cargo test --workspace" cargo test --workspace
test_stage "pytest crates/python/tests" python3 -m pytest crates/python/tests -q
exit "$failed"
