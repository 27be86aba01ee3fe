"""The operands of the algebra benchmark (crates/layout/benches/algebra.rs),
as calls of a module with pycute's names: pycute itself or retile."""


def cases(m):
    """{operation: (function, arguments)} for module `m`."""
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
