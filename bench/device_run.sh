#!/usr/bin/env bash
# On the device (no network), from the repository root with .bundle carried
# (made by bench/device_bundle.sh): installs the bundle's wheels onto
# PYTHONPATH without an index, puts the bundle's `retile` CLI first on PATH,
# says what will be measured, then runs the command given, e.g.
#
#     bench/device_run.sh python3 bench/scaling.py .bundle/retile /dev/shm/bench --report "$OUT/scaling"
#
# Issue #28's call (carry .bundle, timeout_s 600; 8 files come back, each step
# bounded so that the call ends inside its 10 minutes with what it measured):
#
#     bench/device_run.sh bash -c 'set -o pipefail; export PYTHONUNBUFFERED=1; W=/dev/shm/bench R=.bundle/retile
#       timeout 320 python3 bench/scaling.py $R $W --report $OUT/scaling 2>&1 | tee $OUT/scaling.log
#       timeout 140 python3 bench/writers.py $R $W none blosc-lz4:1 --json $OUT/w16.json 2>&1 | tee $OUT/w16.log
#       PYRAMID=1 REPS=1 timeout 90 python3 bench/writers.py $R $W blosc-zstd:1 --json $OUT/pyr16.json 2>&1 | tee $OUT/pyr16.log'
#
# What is measured comes from the bundle always (retile, zarr, numcodecs,
# acquire-zarr and the pure-Python packages they need, at the versions the
# bundle pins); a compiled package the host already has (numpy, matplotlib,
# pillow, ...: tensorstore was built for the host's numpy) is the host's, the
# bundle's only where the host has none. PYTHON=python3 is the interpreter;
# SITE (default ${TMPDIR:-/tmp}/retile-bench-site) is where the wheels go.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=$PWD/.bundle
PYTHON=${PYTHON:-python3}
SITE=${SITE:-${TMPDIR:-/tmp}/retile-bench-site}
if [ ! -x "$bundle/retile" ] || [ ! -d "$bundle/wheels" ]; then
    echo "no $bundle/retile or $bundle/wheels: run bench/device_bundle.sh where there is network, and carry .bundle" >&2
    exit 2
fi
[ $# -gt 0 ] || { echo "usage: bench/device_run.sh COMMAND [ARG ...]" >&2; exit 2; }
head -2 "$bundle/MANIFEST" 2>/dev/null || true

# the wheels to install: every one of the bundle's but compiled packages the host has
mapfile -t wheels < <("$PYTHON" - "$bundle/wheels" <<'PY'
import importlib.metadata as md, os, re, sys
always = {"retile", "zarr", "numcodecs", "acquire-zarr", "donfig", "google-crc32c", "msgspec",
          "typing-extensions", "packaging"}
for name in sorted(os.listdir(sys.argv[1])):
    if not name.endswith(".whl"):
        continue
    dist = re.sub(r"[-_.]+", "-", name.split("-")[0]).lower()
    try:
        have = md.version(dist)
    except md.PackageNotFoundError:
        have = None
    if dist in always or have is None:
        print(os.path.join(sys.argv[1], name))
    else:
        print(f"  {dist}: the host's {have}", file=sys.stderr)
PY
)
rm -rf "$SITE"
mkdir -p "$SITE"
if "$PYTHON" -m pip --version >/dev/null 2>&1; then
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-index --find-links "$bundle/wheels" \
        --no-deps --no-compile --target "$SITE" "${wheels[@]}"
else # no pip on the host: a wheel is a zip of what goes into site-packages
    for w in "${wheels[@]}"; do "$PYTHON" -m zipfile -e "$w" "$SITE"; done
fi
echo "installed from the bundle into $SITE: $(for w in "${wheels[@]}"; do basename "$w" | cut -d- -f1-2; done | tr '\n' ' ')"
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$bundle:$PATH"

"$PYTHON" - <<'PY'
import importlib, sys
print("python", sys.version.split()[0], sys.executable)
missing = []
for mod in ("numpy", "tensorstore", "zarr", "numcodecs", "acquire_zarr", "retile", "matplotlib"):
    try:
        m = importlib.import_module(mod)
        print(f"  {mod} {getattr(m, '__version__', '')} from {m.__file__}")
    except Exception as e:  # noqa: BLE001 - every module that fails is named, then the run stops
        missing.append(f"{mod}: {e}")
if missing:
    sys.exit("cannot import " + "; ".join(missing))
PY
retile --version
exec "$@"
