#!/usr/bin/env python3
"""nvCOMP's own speed on the chunks the CUDA stream compresses: the GPU
codec's ceiling for issue #31, printed beside the GPU time the stream's
summary reports (which also counts the fill check and the shuffle).

One epoch of camera-like frames (PLANES, default 64, of a raw u16 file made
by bench/frames.py) is cut into 64x256x256 tiles on the GPU with torch, as
the stream does, then compressed by nvCOMP's Python API (the nvidia-nvcomp
wheel) in one batched call per codec, as retile's codecs cut them:
  blosc-zstd:1 / blosc-lz4:1  each tile's 64 KiB blosc blocks, byte-shuffled
                              first (blosc's shuffle, element size 2);
  zstd:1                      each 8 MiB tile, unshuffled, one frame.
GB/s of tile bytes, median of REPS (default 7) after a warm-up, timed from
the call to its end on the GPU (torch.cuda.synchronize).

    python3 bench/nvcomp_alone.py /dev/shm/frames/frames-384-2048x2048.raw
"""
import os
import statistics
import sys
import time

import numpy as np
import torch
from nvidia import nvcomp

TILE = (64, 256, 256)
BLOCK = 64 << 10


def tiles_of(raw, planes):
    """`planes` frames of `raw` cut into tiles, each tile's bytes contiguous, on the GPU."""
    frames = np.fromfile(raw, dtype=np.uint16, count=planes * 2048 * 2048).reshape(planes, 2048, 2048)
    t = torch.from_numpy(frames.view(np.int16)).cuda()
    z, y, x = TILE
    t = t.reshape(planes // z, z, 2048 // y, y, 2048 // x, x).permute(0, 2, 4, 1, 3, 5).contiguous()
    return t.view(torch.uint8).reshape(-1, z * y * x * 2)


def shuffled(tiles):
    """Each 64 KiB block of each tile byte-shuffled with element size 2, as blosc does."""
    blocks = tiles.reshape(-1, BLOCK // 2, 2)
    return blocks.transpose(1, 2).contiguous().reshape(tiles.shape)


def rate(codec, data, reps):
    """GB/s of `data` bytes that `codec` compresses in one call, and the compressed bytes."""
    array = nvcomp.as_array(data.reshape(-1))
    out = codec.encode(array)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        out = codec.encode(array)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return data.numel() / statistics.median(times) / 1e9, out.buffer_size


def main(raw):
    planes = int(os.environ.get("PLANES", "64"))
    reps = int(os.environ.get("REPS", "7"))
    tiles = tiles_of(raw, planes)
    print(f"nvCOMP {nvcomp.__version__} on {torch.cuda.get_device_name()}: {planes} frames of 2048x2048 u16 "
          f"in {tiles.shape[0]} tiles of 64x256x256 ({tiles.numel() / 1e9:.3f} GB), median of {reps}")
    native = nvcomp.BitstreamKind.NVCOMP_NATIVE
    for name, algorithm, data, chunk in (
        ("blosc-zstd:1", "Zstd", shuffled(tiles), BLOCK),
        ("blosc-lz4:1", "LZ4", shuffled(tiles), BLOCK),
        ("zstd:1", "Zstd", tiles, tiles.shape[1]),
    ):
        codec = nvcomp.Codec(algorithm=algorithm, bitstream_kind=native, uncomp_chunk_size=chunk)
        gbs, size = rate(codec, data, reps)
        print(f"  {name:13s} nvCOMP {algorithm} in {chunk >> 10} KiB chunks: {gbs:6.2f} GB/s, "
              f"ratio {data.numel() / max(size, 1):.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
