"""Type stubs of retile's native module."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

IntTuple = Union[int, Tuple["IntTuple", ...]]
TilerLike = Union["Layout", int, None, Tuple["TilerLike", ...], List["TilerLike"]]
LayoutLike = Union["Layout", int]

__version__: str

class Stream:
    """A stream of a row-major tensor into tiles (Zarr v3 chunks).

    Example::

        with retile.Stream("out.zarr", shape=(0, 480, 640), tile=(16, 128, 128), dtype="uint16") as s:
            s.append(frame)

    ``output`` may be ``"s3://BUCKET/PREFIX"``: the store goes to S3-compatible
    object storage reached as the ``AWS_*`` environment variables say
    (``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``; ``AWS_ALLOW_HTTP=true`` for a plain http
    endpoint, or ``allow_http=True``); ``s3_config`` takes the place of the
    environment's settings, keyed as ``object_store`` names them
    (``aws_endpoint``, ``aws_region``, ``aws_access_key_id``, ...), and
    ``retry_seconds`` bounds how long a failing request is retried. The
    summary then counts ``uploaded_bytes`` and ``requests``.

    ``memory=BYTES`` buys as many epoch buffers as fit (at least two);
    ``codec_on`` (``"auto"``, ``"gpu"``, ``"cpu"``) says where a
    ``backend="cuda"`` stream compresses.

    Several arrays in one stream: ``arrays={"cam0": dict(shape=..., tile=...,
    dtype=..., ...), "run/cam1": dict(...)}`` (each dict takes this
    constructor's array options; ``/`` in a key makes nested groups), or an
    HCS plate: ``plate=dict(name=..., rows=[...], columns=[...], fields=N,
    wells=None or ["A/1", ...]), image=dict(shape=..., ...)``. Frames go in
    with ``append(frame, key="cam0")`` (a plate's ``key="A/1/0"``);
    ``memory`` is then the budget every array's buffers share, and
    ``summary`` is a dict by key.

    ``mode="a"`` appends to the array or image retile wrote at ``output``
    (after a restart or a crash): its shape, dtype, tile, shards, codec,
    fill and pyramid come from the store (an argument that contradicts them
    is a ``ValueError``), the row of files its claim ends in is rewritten
    whole, and ``planes_claimed`` says which plane the first append is::

        with retile.Stream("out.zarr", mode="a") as s:
            for frame in frames[s.planes_claimed:]:
                s.append(frame)
    """

    def __init__(
        self,
        output: Union[str, PathLike[str], None],
        shape: Optional[Sequence[int]] = None,
        tile: Optional[Sequence[int]] = None,
        dtype: Any = None,
        shard: Optional[Sequence[int]] = None,
        codec: Optional[str] = None,
        fill: Any = 0,
        dim_names: Optional[Sequence[str]] = None,
        input_order: Optional[Sequence[Union[str, int]]] = None,
        backend: str = "cpu",
        shuffle: Optional[str] = None,
        writers: Optional[int] = None,
        buffered_io: bool = False,
        overwrite: bool = False,
        threads: int = 0,
        pyramid: Optional[str] = None,
        levels: Optional[int] = None,
        downsample: Optional[Sequence[bool]] = None,
        ngff: bool = False,
        dim_types: Optional[Sequence[str]] = None,
        units: Optional[Sequence[Optional[str]]] = None,
        scale: Optional[Sequence[float]] = None,
        allow_http: bool = False,
        retry_seconds: float = 120.0,
        s3_config: Optional[Dict[str, str]] = None,
        codec_on: Optional[str] = None,
        memory: Optional[int] = None,
        sync: str = "end",
        arrays: Optional[Dict[str, Dict[str, Any]]] = None,
        plate: Optional[Dict[str, Any]] = None,
        image: Optional[Dict[str, Any]] = None,
        attributes: Optional[Dict[str, Any]] = None,
        mode: str = "w",
    ) -> None: ...
    @property
    def planes_claimed(self) -> int:
        """Planes the store claimed when the stream opened it: with ``mode="a"``, the plane the first append goes on from (0 for a new store).

        Example::

            start = retile.Stream("out.zarr", mode="a").planes_claimed
        """
    def append(self, data: Any, key: Optional[str] = None, metadata: Optional[Dict[str, Any]] = None) -> int:
        """Appends a C-contiguous buffer (no copy, GIL released); returns the bytes taken.

        Example::

            s.append(np.zeros((480, 640), np.uint16), metadata={"t_ms": 0.0})
            acquisition.append(frame, key="cam0")  # several arrays: whole frames of one
        """
    def skip(self, planes: int, key: Optional[str] = None) -> None:
        """Adds ``planes`` planes of the fill value (dropped frames).

        Example::

            s.skip(3)
        """
    def set_attributes(self, attributes: Dict[str, Any], key: Optional[str] = None) -> None:
        """Updates the user attributes; written with the next claim.

        Example::

            s.set_attributes({"temperature_c": 37.0})
        """
    def finish(self) -> Dict[str, Any]:
        """Writes the rest, closes the store, returns the summary dict.

        Example::

            summary = s.finish(); summary["planes"]
        """
    @property
    def summary(self) -> Optional[Dict[str, Any]]:
        """The summary once finished, else None."""
    @property
    def bytes_taken(self) -> int:
        """Input bytes taken so far."""
    @property
    def dtype(self) -> Optional[str]:
        """retile's name of the element type, e.g. ``"u16"`` (None: several arrays)."""
    @property
    def zarr_dtype(self) -> Optional[str]:
        """numpy's / Zarr's name of the element type, e.g. ``"uint16"`` (None: several arrays)."""
    @property
    def keys(self) -> List[str]:
        """The arrays' keys, in order (empty for one array)."""
    @property
    def memory(self) -> Dict[str, Any]:
        """``{"budget": BYTES or None, "bytes": total, "arrays": {key: bytes}}``."""
    @property
    def finished(self) -> bool:
        """Whether ``finish`` returned."""
    def __enter__(self) -> "Stream": ...
    def __exit__(self, exc_type: Any = None, exc: Any = None, tb: Any = None) -> bool: ...

class Layout:
    """A CuTe layout ``shape:stride``; stride None = compact column-major.

    Example::

        L = retile.Layout((4, 2), (1, 4)); L(5) == 5
    """

    def __init__(self, shape: IntTuple, stride: Optional[IntTuple] = None) -> None: ...
    @staticmethod
    def parse(text: str) -> "Layout":
        """``Layout.parse("(4,2):(1,4)")``."""
    @property
    def shape(self) -> IntTuple:
        """The shape, an int or nested tuple."""
    @property
    def stride(self) -> IntTuple:
        """The stride, congruent with the shape."""
    def size(self) -> int:
        """Size of the domain: ``Layout((4,2)).size() == 8``."""
    def cosize(self) -> int:
        """Size of the codomain: ``Layout((4,2),(2,1)).cosize() == 8``."""
    def rank(self) -> int:
        """Top-level modes: ``Layout(((2,2),3)).rank() == 2``."""
    def depth(self) -> int:
        """Nesting depth: ``Layout(((2,2),3)).depth() == 2``."""
    def mode(self, i: int) -> "Layout":
        """Mode ``i``: ``Layout(((2,2),3)).mode(0)``."""
    def flatten(self) -> "Layout":
        """Without nesting: ``Layout(((2,2),3)).flatten()``."""
    def table(self, count: Optional[int] = None) -> List[int]:
        """``[L(0), L(1), ...]``: ``Layout((2,2),(2,1)).table() == [0,2,1,3]``."""
    def __call__(self, *coord: IntTuple) -> int: ...
    def __getitem__(self, i: int) -> "Layout": ...
    def __len__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    def _repr_svg_(self) -> Optional[str]:
        """The SVG drawing, a grid of offsets."""

def size(x: Union[Layout, "ComposedLayout", "Swizzle", IntTuple]) -> int:
    """``size(Layout((4,2))) == 8``."""
def cosize(x: LayoutLike) -> int:
    """``cosize(Layout((4,2),(2,1))) == 8``."""
def rank(x: Union[Layout, IntTuple]) -> int:
    """``rank(Layout((4,2))) == 2``."""
def depth(x: Union[Layout, IntTuple]) -> int:
    """``depth(Layout(((2,2),3))) == 2``."""
def make_layout(*layouts: Any) -> Layout:
    """``make_layout(Layout(2,1), Layout(3,2))`` is ``(2,3):(1,2)``."""
def coalesce(layout: LayoutLike, profile: Optional[IntTuple] = None) -> Layout:
    """``coalesce(Layout((2,(1,6)),(1,(6,2))))`` is ``12:1``."""
def filter(layout: LayoutLike, profile: None = None) -> Layout:
    """``filter(Layout((4,2),(1,0)))`` is ``4:1``."""
def composition(a: Union[LayoutLike, "Swizzle", "ComposedLayout"], b: TilerLike) -> Any:
    """``composition(Layout((6,2),(8,2)), Layout((4,3),(3,1)))`` is ``((2,2),3):((24,2),8)``."""
def complement(layout: LayoutLike, max_idx: Optional[IntTuple] = None) -> Layout:
    """``complement(Layout((2,2),(1,4)), 24)`` is ``(2,3):(2,8)``."""
def logical_divide(a: LayoutLike, tiler: TilerLike) -> Layout:
    """``logical_divide(Layout((4,2,3),(2,1,8)), Layout(4,2))``."""
def zipped_divide(a: LayoutLike, tiler: TilerLike) -> Layout:
    """``zipped_divide(Layout((4,6)), (Layout(2), Layout(3)))``."""
def tiled_divide(a: LayoutLike, tiler: TilerLike) -> Layout:
    """``tiled_divide(Layout((4,6)), (Layout(2), Layout(3)))``."""
def flat_divide(a: LayoutLike, tiler: TilerLike) -> Layout:
    """``flat_divide(Layout((4,6)), (Layout(2), Layout(3)))``."""
def logical_product(a: LayoutLike, tiler: TilerLike) -> Layout:
    """``logical_product(Layout((2,2)), Layout(3))``."""
def zipped_product(a: LayoutLike, tiler: TilerLike) -> Layout:
    """``zipped_product(Layout((2,2)), (Layout(3), Layout(2)))``."""
def tiled_product(a: LayoutLike, tiler: TilerLike) -> Layout:
    """``tiled_product(Layout((2,2)), (Layout(3), Layout(2)))``."""
def flat_product(a: LayoutLike, tiler: TilerLike) -> Layout:
    """``flat_product(Layout((2,2)), (Layout(3), Layout(2)))``."""
def blocked_product(a: LayoutLike, b: LayoutLike) -> Layout:
    """``blocked_product(Layout(4,1), Layout((2,3),(1,2)))``."""
def raked_product(a: LayoutLike, b: LayoutLike) -> Layout:
    """``raked_product(Layout(4,1), Layout((2,3),(1,2)))``."""
def right_inverse(layout: Optional[LayoutLike]) -> Optional[Layout]:
    """``right_inverse(Layout((4,2),(2,1)))``."""
def left_inverse(layout: Optional[LayoutLike]) -> Optional[Layout]:
    """``left_inverse(Layout((4,2),(1,5)))`` is ``(5,2):(1,4)``."""
def max_common_vector(a: LayoutLike, b: LayoutLike) -> int:
    """``max_common_vector(Layout(8,1), Layout((2,4),(1,2))) == 8``."""
def max_common_layout(a: LayoutLike, b: LayoutLike) -> Layout:
    """``max_common_layout(Layout(8,1), Layout((2,4),(1,2)))``."""
def crd2idx(crd: IntTuple, shape: IntTuple, stride: Optional[IntTuple] = None) -> int:
    """``crd2idx((1,2), (2,4), (4,1)) == 6``."""
def idx2crd(idx: int, shape: IntTuple) -> IntTuple:
    """``idx2crd(9, (2,4)) == (1,4)``."""
def eval(expr: str) -> str:
    """``eval("coalesce((2,(1,6)):(1,(6,2)))") == "12:1"``."""
def show(expr: str, format: str = "text", tile: Optional[Tuple[int, int]] = None) -> str:
    """``print(show("(2,3):(3,1)"))`` draws the grid of offsets; ``format="svg"`` an SVG
    picture; ``tile=(rows, cols)`` draws a thread-value layout over that tile (SVG)."""

class Swizzle:
    """CuTe's ``Swizzle<B,M,S>``: ``Swizzle(3, 4, 3)(128) == 144``."""

    def __init__(self, bits: int, base: int, shift: int) -> None: ...
    @property
    def bits(self) -> int:
        """``B``, the bits xored."""
    @property
    def base(self) -> int:
        """``M``, the low bits kept."""
    @property
    def shift(self) -> int:
        """``S``, the distance of the read bits above the written ones."""
    def size(self) -> int:
        """``2**(B + M + |S|)``."""
    def cosize(self) -> int:
        """The size."""
    def __call__(self, offset: int) -> int: ...

class ComposedLayout:
    """A swizzled layout ``Sw<B,M,S> o offset o L``: ``ComposedLayout(Swizzle(3,4,3), 0, L)``."""

    def __init__(self, swizzle: Swizzle, offset: int, layout: Layout) -> None: ...
    @staticmethod
    def parse(text: str) -> "ComposedLayout":
        """``ComposedLayout.parse("Sw<3,4,3> o (8,64):(64,1)")``."""
    @property
    def swizzle(self) -> Swizzle:
        """The swizzle, applied last."""
    @property
    def layoutB(self) -> Swizzle:
        """pycute's name of the swizzle."""
    @property
    def offset(self) -> int:
        """The offset added before the swizzle."""
    @property
    def layout(self) -> Layout:
        """The inner layout, applied first."""
    @property
    def layoutA(self) -> Layout:
        """pycute's name of the inner layout."""
    @property
    def shape(self) -> IntTuple:
        """The inner layout's shape."""
    def size(self) -> int:
        """The inner layout's size."""
    def cosize(self) -> int:
        """The inner layout's cosize (C++'s answer)."""
    def rank(self) -> int:
        """The inner layout's rank."""
    def depth(self) -> int:
        """The inner layout's depth."""
    def flatten(self) -> "ComposedLayout":
        """The inner layout flattened."""
    def table(self, count: Optional[int] = None) -> List[int]:
        """``[C(0), C(1), ...]``."""
    def _repr_svg_(self) -> Optional[str]:
        """The SVG drawing."""
    def __call__(self, *coord: IntTuple) -> int: ...
    def __getitem__(self, i: int) -> "ComposedLayout": ...
    def __len__(self) -> int: ...

class BankConflicts:
    """Bank conflicts of an access pattern and the swizzle that removes them."""

    @property
    def wavefronts(self) -> int:
        """Wavefronts as the layout is."""
    @property
    def ideal(self) -> int:
        """Wavefronts without conflicts."""
    @property
    def conflicts(self) -> int:
        """Wavefronts beyond the ideal."""
    @property
    def degree(self) -> int:
        """The worst phase's conflict degree."""
    @property
    def instructions(self) -> List[Dict[str, int]]:
        """One dict per instruction."""
    @property
    def swizzle(self) -> Optional[Swizzle]:
        """The suggested swizzle."""
    @property
    def swizzled(self) -> Optional[ComposedLayout]:
        """The layout with the suggested swizzle."""
    @property
    def after(self) -> Optional[Dict[str, Any]]:
        """The conflicts with the suggested swizzle."""
    def report(self) -> Dict[str, Any]:
        """The conflicts as the layout is."""
    def details(self, listed: int = 16) -> str:
        """The report in lines."""
    def _repr_svg_(self) -> Optional[str]:
        """The SVG picture."""

def bank_conflicts(
    layout: Union[Layout, ComposedLayout, str],
    threads: Any,
    vector_bytes: Optional[int] = None,
    element_bytes: Optional[int] = None,
    banks: int = 32,
    bank_bytes: int = 4,
    warp: int = 32,
) -> BankConflicts:
    """``bank_conflicts(Layout((32,32),(32,1)), threads=Layout((32,32),(1,32)), element_bytes=4)``."""
def evaluate(expr: str) -> Any:
    """``evaluate("idx2crd(9, (2,4))") == (1, 4)``."""
