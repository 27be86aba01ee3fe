"""Times pycute (the CuTe reference algebra, `pip install nvidia-cutlass`) on
the cases of crates/layout/benches/algebra.rs; prints {case: ns per op} as JSON."""
import json
import timeit

import pycute as p

L = p.Layout
CASES = {
    "coalesce": (p.coalesce, (L((2, (1, 6)), (1, (6, 2))),)),
    "composition": (p.composition, (L((6, 2), (8, 2)), L((4, 3), (3, 1)))),
    "complement": (p.complement, (L((2, 2), (1, 4)), 24)),
    "logical_divide": (p.logical_divide, (L((4, 2, 3), (2, 1, 8)), L(4, 2))),
    "zipped_divide": (p.zipped_divide, (L((9, (4, 8)), (59, (13, 1))), (L(3, 3), L((2, 4), (1, 8))))),
    "logical_product": (p.logical_product, (L((2, 2), (1, 2)), L((2, 2), (1, 2)))),
    "right_inverse": (p.right_inverse, (L((4, 2), (2, 1)),)),
    "left_inverse": (p.left_inverse, (L((4, 2), (1, 5)),)),
}


def ns_per_op(fn, args):
    number = 2000
    best = min(timeit.repeat(lambda: fn(*args), number=number, repeat=5))
    return best / number * 1e9


print(json.dumps({name: ns_per_op(fn, args) for name, (fn, args) in CASES.items()}))
