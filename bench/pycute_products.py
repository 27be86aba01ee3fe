"""pycute beside the algebra benchmark's product and inverse cases that
bench/pycute_algebra.py does not time. pycute has no blocked_product or
raked_product: they are composed here from pycute's own operations as
CuTe's C++ composes them (pad both to rank R with 1:0, logical_product,
zip the two modes). Prints {case: ns per op} as JSON, best of 5 x 2000
calls, as bench/pycute_algebra.py does.

Run: python bench/pycute_products.py (pip install nvidia-cutlass)."""
import json
import timeit

import pycute as p

L = p.Layout


def padded_product(a, b):
    r = max(len(a), len(b))

    def pad(x):
        if len(x) >= r:
            return x
        return p.make_layout(*([x[i] for i in range(len(x))] + [L(1, 0)] * (r - len(x))))

    return r, p.logical_product(pad(a), pad(b))


def blocked_product(a, b):
    r, res = padded_product(a, b)
    return p.make_layout(*[p.make_layout(res[0][i], res[1][i]) for i in range(r)])


def raked_product(a, b):
    r, res = padded_product(a, b)
    return p.make_layout(*[p.make_layout(res[1][i], res[0][i]) for i in range(r)])


A, B = L((2, 5), (5, 1)), L((3, 4), (1, 3))
CASES = {
    "left_inverse_tiled": (p.left_inverse, (L((2, 4), (1, 8)),)),
    "blocked_product": (blocked_product, (A, B)),
    "raked_product": (raked_product, (A, B)),
}


def ns_per_op(fn, args):
    number = 2000
    best = min(timeit.repeat(lambda: fn(*args), number=number, repeat=5))
    return best / number * 1e9


assert str(blocked_product(A, B)) == "((2, 3), (5, 4)):((5, 10), (1, 30))"
assert str(raked_product(A, B)) == "((3, 2), (4, 5)):((10, 5), (30, 1))"
print(json.dumps({name: ns_per_op(fn, args) for name, (fn, args) in CASES.items()}))
