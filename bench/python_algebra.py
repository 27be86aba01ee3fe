"""The layout algebra from Python: retile's package beside pycute (the CuTe
reference algebra, `pip install nvidia-cutlass`), the same calls on the same
operands (those of crates/layout/benches/algebra.rs), in one run; prints ns
per call for both and the ratio.

    python3 -m pip install ./crates/python nvidia-cutlass
    python3 bench/python_algebra.py
"""
import timeit

import pycute
import retile

from algebra_cases import cases


def ns_per_call(fn, args, number=20000):
    return min(timeit.repeat(lambda: fn(*args), number=number, repeat=5)) / number * 1e9


ours, theirs = cases(retile), cases(pycute)
print(f"{'operation':16s} {'retile ns':>10s} {'pycute ns':>10s} {'speed-up':>9s}")
for name in ours:
    a = ns_per_call(*ours[name])
    b = ns_per_call(*theirs[name], number=2000)
    print(f"{name:16s} {a:10.1f} {b:10.1f} {b / a:8.1f}x")
