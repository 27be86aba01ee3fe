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


def cases(m):
    L = m.Layout
    return {
        "coalesce": (m.coalesce, (L((2, (1, 6)), (1, (6, 2))),)),
        "composition": (m.composition, (L((6, 2), (8, 2)), L((4, 3), (3, 1)))),
        "complement": (m.complement, (L((2, 2), (1, 4)), 24)),
        "logical_divide": (m.logical_divide, (L((4, 2, 3), (2, 1, 8)), L(4, 2))),
        "zipped_divide": (m.zipped_divide, (L((9, (4, 8)), (59, (13, 1))), (L(3, 3), L((2, 4), (1, 8))))),
        "logical_product": (m.logical_product, (L((2, 2), (1, 2)), L((2, 2), (1, 2)))),
        "right_inverse": (m.right_inverse, (L((4, 2), (2, 1)),)),
        "left_inverse": (m.left_inverse, (L((4, 2), (1, 5)),)),
    }


def ns_per_call(fn, args, number=20000):
    return min(timeit.repeat(lambda: fn(*args), number=number, repeat=5)) / number * 1e9


ours, theirs = cases(retile), cases(pycute)
print(f"{'operation':16s} {'retile ns':>10s} {'pycute ns':>10s} {'speed-up':>9s}")
for name in ours:
    a = ns_per_call(*ours[name])
    b = ns_per_call(*theirs[name], number=2000)
    print(f"{name:16s} {a:10.1f} {b:10.1f} {b / a:8.1f}x")
