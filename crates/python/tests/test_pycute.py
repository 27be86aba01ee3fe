"""pycute compatibility: for the valid CuTe corpus cases of the operations
pycute has, where pycute agrees with CuTe's C++ (which retile follows), the
same call on pycute.Layout and retile.Layout gives the same layout (the same
function over its domain) or the same number."""

import pytest

import retile
from conftest import layout_of, load, tiler_of, tup

pycute = pytest.importorskip("pycute")

PYCUTE_OPS = {
    "props", "coalesce", "coalesce_profile", "filter", "composition", "composition_tiler", "complement",
    "logical_divide", "zipped_divide", "tiled_divide", "logical_product", "zipped_product", "tiled_product",
    "crd2idx", "idx2crd",
}


def comparable(case):
    return (case["op"] in PYCUTE_OPS and case.get("valid", True) and case["expect"]["kind"] != "error"
            and case.get("cpp_static_agrees", False) and case.get("source") == "pycute")


CASES = [c for c in load("cute_public.json")["cases"] if comparable(c)]


def call(m, case):
    """The same call, spelled the same way, on module m (pycute or retile)."""
    op, i = case["op"], case["inputs"]
    A = lambda: layout_of(m, i["A"])
    if op == "props":
        a = A()
        return (m.size(a), m.cosize(a), len(a))
    if op == "coalesce":
        return m.coalesce(A())
    if op == "coalesce_profile":
        return m.coalesce(A(), tup(i["profile"]))
    if op == "filter":
        return m.filter(A())
    if op == "composition":
        return m.composition(A(), layout_of(m, i["B"]))
    if op == "complement":
        return m.complement(A(), tup(i["M"]))
    if op == "crd2idx":
        a = A()
        return m.crd2idx(tup(i["crd"]), a.shape, a.stride)
    if op == "idx2crd":
        return m.idx2crd(m.size(tup(i["idx"])), tup(i["shape"]))
    tiler = tiler_of(m, i["T"])
    if op == "composition_tiler":
        return m.composition(A(), tiler)
    return getattr(m, op)(A(), tiler)


def as_function(m, layout):
    n = m.size(layout)
    return n, [layout(k) for k in range(min(n, 4096))]


def test_enough_cases_are_compared():
    assert len(CASES) >= 150, len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_same_call_same_layout(case):
    theirs = call(pycute, case)
    ours = call(retile, case)
    if isinstance(ours, retile.Layout):
        assert as_function(retile, ours) == as_function(pycute, theirs), f"{ours} vs pycute {theirs}"
        # coalesced, both print the same in CuTe notation (pycute writes Python tuples)
        c = pycute.coalesce(theirs)
        text = f"{c.shape}:{c.stride}".replace(" ", "").replace(",)", ")")
        assert str(retile.coalesce(ours)) == text
    else:
        assert ours == theirs
