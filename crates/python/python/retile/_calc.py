"""Typed results of the calculator: register layouts, device layouts and
transpose plans, made by building a calculator expression from Python
arguments and reading the value retile computes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional

from . import _retile


def arg_text(value: Any) -> str:
    """A Python argument as calculator text.

    Example::

        >>> arg_text([2, (3, 4)])
        '[2, (3,4)]'
    """
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, (RegisterLayout, DeviceLayout)):
        return value.expr
    if isinstance(value, (_retile.Layout, _retile.ComposedLayout, _retile.Swizzle)):
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + ", ".join(arg_text(v) for v in value) + "]"
    if isinstance(value, tuple):
        if len(value) == 1:
            return "(" + arg_text(value[0]) + ")"
        return "(" + ",".join(arg_text(v) for v in value) + ")"
    if hasattr(value, "__index__"):
        return str(value.__index__())
    if hasattr(value, "name"):  # a numpy dtype
        return str(value.name)
    raise TypeError(f"cannot pass {value!r} to the calculator")


def call_text(name: str, args: tuple, kwargs: dict) -> str:
    """``name(arg, ..., key=value, ...)`` as calculator text.

    Example::

        >>> call_text("spatial", (2, 3), {})
        'spatial(2, 3)'
    """
    parts = [arg_text(a) for a in args]
    parts += [f"{k}={arg_text(v)}" for k, v in kwargs.items() if v is not None]
    return f"{name}({', '.join(parts)})"


@dataclass(frozen=True)
class RegisterLayout:
    """A tilus register layout: which thread holds which element in which
    register. Made by ``retile.register`` functions; chain with the methods.

    Example::

        >>> L = retile.register.layout("local(3,4).spatial(2,3)")
        >>> L.shape, L.mode_shape, L.spatial_modes, L.local_modes
        ([6, 12], [3, 2, 4, 3], [1, 3], [0, 2])
    """

    expr: str = field(compare=False)
    shape: List[int]
    mode_shape: List[int]
    spatial_modes: List[int]
    local_modes: List[int]
    text: str = field(repr=False)

    def _chain(self, name: str, args: tuple, kwargs: dict) -> "RegisterLayout":
        return layout_of(f"{self.expr}.{call_text(name, args, kwargs)}")

    def spatial(self, *shape: int, **kwargs: Any) -> "RegisterLayout":
        """This layout composed with ``spatial(*shape)``.

        Example::

            >>> retile.register.local(2).spatial(4).shape
            [8]
        """
        return self._chain("spatial", shape, kwargs)

    def local(self, *shape: int, **kwargs: Any) -> "RegisterLayout":
        """This layout composed with ``local(*shape)``.

        Example::

            >>> retile.register.spatial(4).local(2).shape
            [8]
        """
        return self._chain("local", shape, kwargs)

    def column_spatial(self, *shape: int, **kwargs: Any) -> "RegisterLayout":
        """This layout composed with ``column_spatial(*shape)``.

        Example::

            >>> retile.register.local(1, 2).column_spatial(2, 3).shape
            [2, 6]
        """
        return self._chain("column_spatial", shape, kwargs)

    def column_local(self, *shape: int, **kwargs: Any) -> "RegisterLayout":
        """This layout composed with ``column_local(*shape)``.

        Example::

            >>> retile.register.spatial(1, 2).column_local(2, 3).shape
            [2, 6]
        """
        return self._chain("column_local", shape, kwargs)

    def visualize(self) -> str:
        """The drawing of which thread holds which element (``retile show``).

        Example::

            >>> print(retile.register.spatial(2, 2).visualize())  # doctest: +SKIP
        """
        return _retile.show(self.expr)

    def _repr_svg_(self) -> str:
        """The SVG picture: each element coloured by its thread, labelled
        ``T<t>V<v>`` (Jupyter shows it).

        Example::

            >>> "T3" in retile.register.spatial(2, 2)._repr_svg_()
            True
        """
        return _retile.show(self.expr, format="svg")

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class DeviceLayout:
    """A device (stick) layout: a host tensor laid out in 128-byte sticks.

    Example::

        >>> d = retile.device_layout([512, 256], "float16", dim_order=[0, 1, -1])
        >>> d.device_size, d.dim_map
        ([256, 512, 64], [1, 0, -1])
    """

    expr: str = field(compare=False)
    host_size: List[int]
    device_size: List[int]
    dim_map: List[int]
    dtype: str
    text: str = field(repr=False)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class TransposePlan:
    """An in-thread transpose plan: whether it applies, and its loads, stores
    and register extracts (``reason`` says why not when it does not apply).

    Example::

        >>> p = retile.transpose_plan(256, 16, 128, "(256,16):(1,256)", "(256,16):(16,1)")
        >>> p.applies, p.load_width, p.loads, p.store_width, p.stores, p.extracts
        (True, 2, 8, 8, 2, 16)
    """

    expr: str = field(compare=False)
    applies: bool
    load_width: Optional[int]
    loads: Optional[int]
    store_width: Optional[int]
    stores: Optional[int]
    extracts: Optional[int]
    reason: Optional[str]
    text: str = field(repr=False)

    def __str__(self) -> str:
        return self.text

    def _repr_svg_(self) -> Optional[str]:
        """The SVG picture of which thread loads and stores which vector
        (Jupyter shows it); None when the transpose does not apply.

        Example::

            >>> p = retile.transpose_plan(8, 32, 128, "(8,8):(1,8)", "(8,8):(8,1)")
            >>> 'data-side="store"' in p._repr_svg_()
            True
        """
        return _retile.show(self.expr, format="svg") if self.applies else None

    def bank_conflicts(self, warp: int = 32, banks: int = 32, bank_bytes: int = 4) -> tuple:
        """The bank conflicts of the loads (against ``src``) and the stores
        (against ``dst``), were that side in shared memory: two
        ``BankConflicts``, each with the swizzle that removes its conflicts.

        Example::

            >>> p = retile.transpose_plan(256, 16, 128, "(256,16):(1,256)", "(256,16):(16,1)")
            >>> loads, stores = p.bank_conflicts()
            >>> stores.conflicts > 0, stores.after["conflicts"]
            (True, 0)
        """
        call = self.expr.strip()
        if not (call.startswith("transpose_plan(") and call.endswith(")")):
            raise ValueError(f"{call} is not a transpose_plan(...) call")
        args = call[len("transpose_plan("):-1]
        sep = ", " if args.strip() else ""
        expr = f"transpose_banks({args}{sep}warp={int(warp)}, banks={int(banks)}, bank_bytes={int(bank_bytes)})"
        return _retile.evaluate(expr)


def _typed(expr: str, kind: str) -> dict:
    value = _retile.evaluate(expr)
    if not (isinstance(value, dict) and value.get("kind") == kind):
        raise ValueError(f"{expr} is not a {kind} value")
    return value


def layout_of(expr: str) -> RegisterLayout:
    """The register layout an expression evaluates to.

    Example::

        >>> retile.register.layout("spatial(2,3)").spatial_modes
        [0, 1]
    """
    v = _typed(expr, "register")
    return RegisterLayout(expr, v["shape"], v["mode_shape"], v["spatial_modes"], v["local_modes"], v["text"])


def device_layout(*args: Any, **kwargs: Any) -> DeviceLayout:
    """A device layout: ``device_layout(host_size, dtype, dim_order=None)``,
    or keywords ``host_size, device_size, dim_map, dtype``, or one string
    holding a whole calculator expression.

    Example::

        >>> retile.device_layout([512, 256], "float16").device_size
        [4, 512, 64]
    """
    if len(args) == 1 and not kwargs and isinstance(args[0], str):
        expr = args[0]
    else:
        expr = call_text("device_layout", args, kwargs)
    v = _typed(expr, "device")
    return DeviceLayout(expr, v["host_size"], v["device_size"], v["dim_map"], v["dtype"], v["text"])


def transpose_plan(*args: Any, **kwargs: Any) -> TransposePlan:
    """The in-thread transpose plan of ``threads, element_bits, max_bits,
    src, dst`` (and ``target``), as ``retile eval 'transpose_plan(...)'``;
    ``src`` and ``dst`` are layouts (``retile.Layout`` or CuTe text).

    Example::

        >>> retile.transpose_plan(threads=256, element_bits=16, max_bits=128,
        ...     src=retile.Layout((256, 16), (1, 256)), dst=retile.Layout((256, 16), (16, 1))).loads
        8
    """
    if len(args) == 1 and not kwargs and isinstance(args[0], str) and "(" in args[0] and args[0].startswith("transpose_plan"):
        expr = args[0]
    else:
        expr = call_text("transpose_plan", args, kwargs)
    v = _typed(expr, "transpose")
    return TransposePlan(expr, v["applies"], v["load_width"], v["loads"], v["store_width"],
                         v["stores"], v["extracts"], v["reason"], v["text"])
