"""retile: tensor layouts, and moving data between them, fast.

- ``retile.Stream``: stream a row-major tensor, in pieces, into tiles of a
  Zarr v3 array (``retile stream`` from Python).
- ``retile.rechunk``: re-tile an existing Zarr array (v2 or v3) into a new
  store (``retile rechunk`` from Python).
- ``retile.Layout`` and the CuTe layout algebra under pycute's names
  (``coalesce``, ``composition``, ``logical_divide``, ...).
- ``retile.eval`` / ``retile.show``: the layout calculator; typed register
  layouts (``retile.register``), device layouts and transpose plans.
- ``retile.Swizzle`` and ``retile.ComposedLayout`` (CuTe's swizzled layouts),
  ``retile.bank_conflicts`` (shared-memory bank conflicts and the swizzle
  that removes them); layouts, plans and reports draw themselves as SVG in
  Jupyter (``_repr_svg_``), and ``retile.show(expr, format="svg")`` draws any
  calculator value.

Example::

    >>> import retile
    >>> str(retile.logical_divide(retile.Layout.parse("(4,2,3):(2,1,8)"), retile.Layout(4, 2)))
    '((2,2),(2,3)):((4,1),(2,8))'
    >>> retile.eval("complement((2,2):(1,4), 24)")
    '(2,3):(2,8)'
"""

from __future__ import annotations

from . import _retile
from ._retile import (
    BankConflicts,
    ComposedLayout,
    Layout,
    Stream,
    Swizzle,
    bank_conflicts,
    blocked_product,
    coalesce,
    complement,
    composition,
    cosize,
    crd2idx,
    depth,
    eval,
    evaluate,
    filter,
    flat_divide,
    flat_product,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    max_common_layout,
    max_common_vector,
    raked_product,
    rechunk,
    rank,
    right_inverse,
    show,
    size,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)
from ._retile import idx2crd as _idx2crd
from . import register
from ._calc import DeviceLayout, RegisterLayout, TransposePlan, device_layout, transpose_plan

__version__ = _retile.__version__

__all__ = [
    "Stream", "Layout", "size", "cosize", "rank", "depth", "make_layout", "coalesce", "filter",
    "composition", "complement", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
    "logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product",
    "raked_product", "right_inverse", "left_inverse", "max_common_vector", "max_common_layout",
    "crd2idx", "idx2crd", "eval", "show", "evaluate", "register", "device_layout", "transpose_plan",
    "RegisterLayout", "DeviceLayout", "TransposePlan", "Swizzle", "ComposedLayout", "BankConflicts",
    "bank_conflicts", "rechunk",
]


def idx2crd(idx, shape, stride=None):
    """The coordinate of index ``idx`` in ``shape`` (pycute's ``idx2crd``):
    column-major without a stride; with one, ``(idx // stride) % shape`` per
    mode as pycute computes it.

    Example::

        >>> retile.idx2crd(9, (2, 4))
        (1, 4)
    """
    if stride is None:
        return _idx2crd(idx, shape)
    if isinstance(idx, tuple):
        if not isinstance(shape, tuple) or len(idx) != len(shape) or len(idx) != len(stride):
            raise ValueError(f"coordinate {idx} does not fit shape {shape} and stride {stride}")
        return tuple(idx2crd(i, s, d) for i, s, d in zip(idx, shape, stride))
    if isinstance(shape, tuple):
        if not isinstance(stride, tuple) or len(shape) != len(stride):
            raise ValueError(f"shape {shape} and stride {stride} are not congruent")
        return tuple(idx2crd(idx, s, d) for s, d in zip(shape, stride))
    return (idx // stride) % shape
