"""tilus register layouts through retile's calculator.

Example::

    >>> import retile
    >>> retile.register.local(3, 4).spatial(2, 3).mode_shape
    [3, 2, 4, 3]
"""

from __future__ import annotations

from typing import Any

from ._calc import RegisterLayout, call_text, layout_of

__all__ = [
    "RegisterLayout", "layout", "spatial", "local", "column_spatial", "column_local",
    "replicated", "register_layout", "call",
]


def layout(expr: str) -> RegisterLayout:
    """The register layout a calculator expression evaluates to.

    Example::

        >>> retile.register.layout("local(3,4).spatial(2,3)").shape
        [6, 12]
    """
    return layout_of(expr)


def call(name: str, *args: Any, **kwargs: Any) -> RegisterLayout:
    """Any register-layout function of the calculator by name (``reduce``,
    ``divide``, ``permute``, ...); layouts may be passed as arguments.

    Example::

        >>> retile.register.call("reduce", retile.register.spatial(3, 4), dims=[0]).shape
        [4]
    """
    return layout_of(call_text(name, args, kwargs))


def spatial(*shape: int, **kwargs: Any) -> RegisterLayout:
    """Threads laid out over ``shape``, row-major, one element each.

    Example::

        >>> retile.register.spatial(2, 3).spatial_modes
        [0, 1]
    """
    return call("spatial", *shape, **kwargs)


def local(*shape: int, **kwargs: Any) -> RegisterLayout:
    """One thread holding ``shape`` in its registers, row-major.

    Example::

        >>> retile.register.local(2, 3).local_modes
        [0, 1]
    """
    return call("local", *shape, **kwargs)


def column_spatial(*shape: int, **kwargs: Any) -> RegisterLayout:
    """Threads over ``shape``, column-major.

    Example::

        >>> retile.register.column_spatial(2, 3).spatial_modes
        [1, 0]
    """
    return call("column_spatial", *shape, **kwargs)


def column_local(*shape: int, **kwargs: Any) -> RegisterLayout:
    """Registers over ``shape``, column-major.

    Example::

        >>> retile.register.column_local(2, 3).local_modes
        [1, 0]
    """
    return call("column_local", *shape, **kwargs)


def replicated(*args: Any, **kwargs: Any) -> RegisterLayout:
    """The calculator's ``replicated(...)``.

    Example::

        >>> retile.register.replicated(shape=[4], num_threads=2).shape  # doctest: +SKIP
        [4]
    """
    return call("replicated", *args, **kwargs)


def register_layout(*args: Any, **kwargs: Any) -> RegisterLayout:
    """A register layout from its fields (``shape, mode_shape, spatial_modes, local_modes``).

    Example::

        >>> retile.register.register_layout(shape=[4], mode_shape=[4], spatial_modes=[0], local_modes=[]).shape
        [4]
    """
    return call("register_layout", *args, **kwargs)
