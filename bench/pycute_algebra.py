"""Times pycute (the CuTe reference algebra, `pip install nvidia-cutlass`) on
the cases of crates/layout/benches/algebra.rs; prints {case: ns per op} as JSON."""
import json
import timeit

import pycute as p

from algebra_cases import cases

CASES = cases(p)


def ns_per_op(fn, args):
    number = 2000
    best = min(timeit.repeat(lambda: fn(*args), number=number, repeat=5))
    return best / number * 1e9


print(json.dumps({name: ns_per_op(fn, args) for name, (fn, args) in CASES.items()}))
