#!/usr/bin/env python3
"""Unpacks the executables a bundle carries xz-compressed (bench/device_bundle.sh
with CUDA=1 packs them, to fit a device call's 64 MiB): every BUNDLE/**/*.xz
becomes the executable beside it. Run on the device before anything else:

    python3 bench/unpack_bundle.py .bundle
"""
import lzma
import os
import sys


def main(bundle):
    for root, _, files in os.walk(bundle):
        for name in files:
            if name.endswith(".xz"):
                path = os.path.join(root, name)
                with lzma.open(path) as f, open(path[:-3], "wb") as g:
                    g.write(f.read())
                os.chmod(path[:-3], 0o755)
                os.remove(path)
                print(f"unpacked {path[:-3]}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".bundle")
