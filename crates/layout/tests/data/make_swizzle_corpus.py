"""Writes swizzle_pycute.json: random swizzled layouts and every offset
pycute gives them, for tests/swizzle.rs (run with pycute installed, from
the `nvidia-cutlass` package: `python3 make_swizzle_corpus.py`).

Shifts of 0 are left out: pycute's `shiftr(x, 0)` recurses without end
(it calls `shiftl(x, 0)`, which calls `shiftr(x, 0)`); the Rust tests check
`Swizzle<0,M,0>` as the identity on their own."""

import json
import random
from pathlib import Path

import pycute

CASES = 1200


def shape(rng):
    """A shape of rank 1..3 whose modes may nest one level."""
    def mode():
        if rng.random() < 0.25:
            return tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 2)))
        return rng.randint(1, 6)
    if rng.random() < 0.2:
        return rng.randint(1, 16)
    return tuple(mode() for _ in range(rng.randint(1, 3)))


def strides(rng, s):
    if isinstance(s, tuple):
        return tuple(strides(rng, x) for x in s)
    return rng.choice([rng.randint(-8, 40), rng.choice([1, 2, 4, 8, 16, 32, 64, 128])])


def main():
    rng = random.Random(20250432)
    cases = []
    for _ in range(CASES):
        bits = rng.randint(0, 4)
        base = rng.randint(0, 5)
        shift = rng.choice([-1, 1]) * rng.randint(max(bits, 1), 7)
        sh = shape(rng)
        st = strides(rng, sh)
        offset = rng.choice([0, 0, rng.randint(-40, 200)])
        sw = pycute.Swizzle(bits, base, shift)
        inner = pycute.Layout(sh, st)
        composed = pycute.ComposedLayout(sw, offset, inner)
        n = pycute.size(inner)
        cases.append({
            "swizzle": [bits, base, shift],
            "offset": offset,
            "shape": sh,
            "stride": st,
            "offsets": [composed(i) for i in range(n)],
            "swizzle_size": sw.size(),
            "swizzle_cosize": sw.cosize(),
            "size": composed.size(),
            "pycute_cosize": composed.cosize(),
            "swizzled": [sw(o) for o in (-3, -1, 0, 1, 5, 77, 1000, 4097)],
        })
    out = {"source": "pycute (nvidia-cutlass 4.2.0.0), make_swizzle_corpus.py", "cases": cases}
    Path(__file__).with_name("swizzle_pycute.json").write_text(json.dumps(out, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
