#!/bin/bash
# The GPU pyramid on the device machine, in one call: every GPU test, stores
# of both backends with pyramids compared byte for byte, and the pyramid's
# cost (GB/s of input with and without a mean pyramid of 4 levels, runs
# interleaved), beside the CPU backend and the disk's direct-I/O speed.
#
# Build here, then run there:
#   cargo build --release --features cuda -p retile
#   cargo test --release -p retile-stream --features cuda --test cuda --no-run
#   mkdir -p .device && cp target/release/retile .device/ && cp <the cuda test binary> .device/cuda_tests
#   cp bench/gpu_pyramid.sh .device/ && bash .device/gpu_pyramid.sh   (on the device, RUNS=4 by default)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
cd "$(dirname "$0")"
RUNS=${RUNS:-4}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "== GPU tests"
./cuda_tests --ignored --test-threads 1 2>&1 | grep -E "^test |test result|panicked|case" | head -40
R=./retile
W=${WORK:-/tmp/rt}; rm -rf "$W"; mkdir -p "$W"
echo "== stores of both backends, with a pyramid"
for args in "--dtype u16 --pyramid mean" "--dtype f32 --pyramid median --downsample 1,1,1 --levels 3" \
            "--dtype i8 --pyramid min --codec blosc-zstd:1 --shard 1,2,2" "--dtype bf16 --pyramid mean --downsample 1,1,1 --levels 4"; do
  for b in cpu cuda; do
    $R stream --backend $b --shape 0,700,900 --planes 37 --tile 5,128,128 $args --output "$W/$b.zarr" --overwrite >/dev/null 2>&1 || echo "FAILED: $b $args"
  done
  diff -r "$W/cpu.zarr" "$W/cuda.zarr" >/dev/null && echo "IDENTICAL: $args" || echo "DIFFERENT: $args"
done
echo "== disk"
dd if=/dev/zero of="$W/dd" bs=16M count=256 oflag=direct 2>&1 | tail -1; rm -f "$W/dd"
gbs() { "$@" 2>&1 | head -1 | sed -E 's/.*: ([0-9.]+) GB\/s of input.*/\1/'; }
S="--shape 0,2048,2048 --tile 64,256,256 --dtype u16"
P="--pyramid mean --levels 4"
echo "== GB/s of input, 1024 frames 2048x2048 u16, tiles 64x256x256, measured without output: no pyramid / mean pyramid of 4 levels"
for run in $(seq $RUNS); do
  for b in cuda cpu; do
    echo "$b run $run: $(gbs $R stream --backend $b $S --planes 1024) / $(gbs $R stream --backend $b $S --planes 1024 $P)"
  done
done
echo "== GB/s of input, 512 frames into the disk, shards 1x4x4: no pyramid / mean pyramid of 4 levels"
for run in $(seq 2); do
  a=$(gbs $R stream --backend cuda $S --planes 512 --output "$W/o.zarr" --shard 1,4,4 --overwrite); rm -rf "$W/o.zarr"
  b=$(gbs $R stream --backend cuda $S --planes 512 $P --output "$W/o.zarr" --shard 1,4,4 --overwrite); rm -rf "$W/o.zarr"
  echo "cuda run $run: $a / $b"
done
