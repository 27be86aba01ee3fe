"""Swizzles, bank conflicts and drawings from Python.

- ``retile.Swizzle`` and ``retile.ComposedLayout`` agree with pycute's on
  every offset of 1,500 random ``(B, M, S)`` and layouts (and on their
  sizes; on the cosize they follow CuTe's C++, which pycute does not).
- ``retile.bank_conflicts`` agrees with a brute-force count: the distinct
  4-byte words of each bank requested in one phase.
- Every drawing parses as XML and its cells carry exactly what they show.
"""

import random
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings, strategies as st

import retile

pycute = pytest.importorskip("pycute")


def random_shape(rng):
    def mode():
        if rng.random() < 0.25:
            return tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 2)))
        return rng.randint(1, 6)
    if rng.random() < 0.2:
        return rng.randint(1, 16)
    return tuple(mode() for _ in range(rng.randint(1, 3)))


def random_strides(rng, s):
    if isinstance(s, tuple):
        return tuple(random_strides(rng, x) for x in s)
    return rng.choice([rng.randint(-8, 40), 1 << rng.randint(0, 9)])


def test_every_offset_of_1500_random_swizzled_layouts_agrees_with_pycute():
    rng = random.Random(32)
    offsets = 0
    for _ in range(1500):
        bits = rng.randint(0, 5)
        base = rng.randint(0, 6)
        # pycute's shiftr(x, 0) never returns: shift 0 is checked apart
        shift = rng.choice([-1, 1]) * rng.randint(max(bits, 1), 8)
        shape = random_shape(rng)
        stride = random_strides(rng, shape)
        offset = rng.choice([0, 0, rng.randint(-40, 300)])
        ours = retile.ComposedLayout(retile.Swizzle(bits, base, shift), offset, retile.Layout(shape, stride))
        theirs = pycute.ComposedLayout(pycute.Swizzle(bits, base, shift), offset, pycute.Layout(shape, stride))
        n = pycute.size(theirs.layoutA)
        assert retile.size(ours) == ours.size() == theirs.size() == n
        assert [ours(i) for i in range(n)] == [theirs(i) for i in range(n)], str(ours)
        assert ours.table() == [theirs(i) for i in range(n)]
        # pycute's cosize of a ComposedLayout is its swizzle's; CuTe's C++ (retile) the inner layout's
        assert theirs.cosize() == pycute.Swizzle(bits, base, shift).cosize()
        assert ours.cosize() == retile.cosize(ours) == retile.cosize(ours.layout)
        sw, psw = retile.Swizzle(bits, base, shift), pycute.Swizzle(bits, base, shift)
        assert (sw.size(), sw.cosize()) == (psw.size(), psw.cosize())
        for o in (rng.randint(-5000, 5000) for _ in range(8)):
            assert sw(o) == psw(o)
        # coordinates, modes, rank
        if isinstance(shape, tuple):
            assert len(ours) == len(theirs)
            for i in range(len(shape)):
                k = pycute.size(theirs.layoutA[i])
                assert [ours[i](j) for j in range(k)] == [theirs[i](j) for j in range(k)]
        offsets += n
    assert offsets > 20000


def test_a_swizzle_of_no_shift_is_the_identity_and_bad_ones_raise_value_error():
    assert [retile.Swizzle(0, 3, 0)(o) for o in range(-4, 40)] == list(range(-4, 40))
    for bits, base, shift in [(3, 4, 2), (-1, 0, 1), (1, -2, 1), (30, 30, 30), (1, 0, 10**20)]:
        with pytest.raises((ValueError, OverflowError)):
            retile.Swizzle(bits, base, shift)
    with pytest.raises(TypeError):
        retile.ComposedLayout(retile.Swizzle(1, 0, 1), 0, "4:1")


def test_the_calculator_and_the_classes_agree():
    c = retile.evaluate("Sw<3,3,3> o (8,64):(64,1)")
    assert isinstance(c, retile.ComposedLayout)
    assert c == retile.composition(retile.Swizzle(3, 3, 3), retile.Layout((8, 64), (64, 1)))
    assert c == retile.ComposedLayout.parse(str(c))
    assert retile.evaluate("Swizzle(3,4,3)") == retile.Swizzle(3, 4, 3)
    assert retile.eval("cosize(Sw<2,0,-3>)") == "32"
    # a swizzle of no bits gives the layout itself, as C++'s composition does
    assert retile.composition(retile.Swizzle(0, 3, 3), retile.Layout(8)) == retile.Layout(8)
    divided = retile.logical_divide(c, (retile.Layout(4), retile.Layout(8)))
    assert str(divided) == "Sw<3,3,3> o ((4,2),(8,8)):((64,256),(1,8))"
    assert retile.evaluate(f"logical_divide({c}, <4,8>)") == divided


# ---- bank conflicts ---------------------------------------------------------

def brute_force(offsets, instructions, element_bytes, banks=32, bank_bytes=4):
    """Per instruction (lanes of tile-index vectors or None): lanes in phases of
    banks*bank_bytes/vector bytes; in each phase every byte names its word, and
    the phase takes as many wavefronts as the most distinct words of one bank."""
    out = []
    for lanes in instructions:
        widest = max((len(v) for v in lanes if v), default=1)
        per_phase = max(1, banks * bank_bytes // (widest * element_bytes))
        wavefronts = 0
        for p in range(0, len(lanes), per_phase):
            words = {}
            for v in lanes[p:p + per_phase]:
                for e in v or ():
                    address = offsets[e] * element_bytes
                    for byte in range(address, address + element_bytes):
                        word = byte // bank_bytes
                        words.setdefault(word % banks, set()).add(word)
            if words:
                wavefronts += max(len(w) for w in words.values())
        out.append(wavefronts)
    return out


@settings(max_examples=200, deadline=None)
@given(
    rows=st.integers(1, 16),
    cols_pow=st.integers(0, 6),
    pad=st.sampled_from([0, 1, 2, 4, 8]),
    element_bytes=st.sampled_from([1, 2, 4, 8]),
    vector_pow=st.integers(0, 3),
    threads=st.sampled_from([8, 16, 32, 64]),
)
def test_bank_conflicts_agree_with_a_brute_force_count(rows, cols_pow, pad, element_bytes, vector_pow, threads):
    cols = 1 << cols_pow
    vector = min(1 << vector_pow, cols)
    layout = retile.Layout((rows, cols), (cols + pad, 1))
    # thread (p, r) reads piece p of row r: tile index r + rows * (p * vector + j)
    pieces = cols // vector
    tv = retile.Layout(((pieces, rows), vector), ((rows * vector, 1), rows))
    r = retile.bank_conflicts(layout, threads=tv, vector_bytes=vector * element_bytes, element_bytes=element_bytes)
    offsets = [layout(i) for i in range(rows * cols)]
    n_threads, per_thread = pieces * rows, 1
    instructions = []
    for w in range(0, n_threads, 32):
        lanes = []
        for t in range(w, min(w + 32, n_threads)):
            lanes.append([tv((t, j)) for j in range(vector)])
        instructions.append(lanes)
    assert [i["wavefronts"] for i in r.instructions] == brute_force(offsets, instructions, element_bytes)
    assert r.wavefronts == sum(i["wavefronts"] for i in r.instructions)
    assert r.conflicts == r.wavefronts - r.ideal >= 0
    if r.swizzle is not None:
        after = [r.swizzled(i) for i in range(rows * cols)]
        assert sorted(after) == sorted(offsets), "the swizzle keeps the tile's offsets"
        assert r.after["wavefronts"] == sum(brute_force(after, instructions, element_bytes)) < r.wavefronts


def test_bank_conflicts_of_a_transpose_plan_and_of_register_layouts():
    plan = retile.transpose_plan(256, 16, 128, "(256,16):(1,256)", "(256,16):(16,1)")
    loads, stores = plan.bank_conflicts()
    assert (stores.wavefronts, stores.ideal, stores.degree) == (256, 64, 4)
    assert stores.after["conflicts"] == 0 and str(stores.swizzle) == "Sw<2,3,3>"
    reg = retile.register.layout("local(2, 1).spatial(8, 4).local(1, 2)")
    r = retile.bank_conflicts(retile.Layout((16, 8), (8, 1)), threads=reg, vector_bytes=8, element_bytes=4)
    assert r.wavefronts >= r.ideal > 0
    with pytest.raises(ValueError, match="not contiguous"):
        retile.bank_conflicts(retile.Layout((8, 8), (8, 1)), threads=8, vector_bytes=8, element_bytes=4)
    with pytest.raises(ValueError, match="element_bytes"):
        retile.bank_conflicts(retile.Layout(8), threads=8)
    with pytest.raises(TypeError):
        retile.bank_conflicts(retile.Layout(8), threads=object(), element_bytes=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=6, max_size=6))
def test_hostile_integers_raise_errors_never_panic(ints):
    b, m, s, e, v, t = ints
    for call in (
        lambda: retile.Swizzle(b, m, s),
        lambda: retile.bank_conflicts(retile.Layout((8, 8)), threads=t, vector_bytes=v, element_bytes=e),
        lambda: retile.bank_conflicts(retile.Layout((8, 8)), threads=8, element_bytes=e, banks=b, bank_bytes=m, warp=s),
        lambda: retile.ComposedLayout(retile.Swizzle(1, 0, 1), b, retile.Layout(4, 2))(s),
    ):
        try:
            call()
        except (ValueError, OverflowError, TypeError):
            pass


# ---- drawings -----------------------------------------------------------------

SVG = "{http://www.w3.org/2000/svg}"


def cells(svg):
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg"
    return [{k[5:]: int(v) for k, v in r.attrib.items() if k.startswith("data-") and v.lstrip("-").isdigit()}
            for r in root.iter(SVG + "rect") if "data-row" in r.attrib]


def text_of(svg):
    return "\n".join("".join(t.itertext()) for t in ET.fromstring(svg).iter(SVG + "text"))


@pytest.mark.parametrize("expr", [
    "(4,8):(8,1)", "((2,2),(2,4)):((1,8),(2,16))", "(2,3,4):(12,4,1)", "12:3",
    "Sw<3,3,3> o (8,64):(64,1)", "Sw<2,0,-3> o 4 o (8,8):(1,8)",
])
def test_a_layout_draws_itself_with_its_offsets_in_its_cells(expr):
    value = retile.evaluate(expr)
    svg = value._repr_svg_()
    assert svg == retile.show(expr, format="svg")
    rows = retile.size(value.layout[0] if isinstance(value, retile.ComposedLayout) and len(value) > 1 else
                       value[0] if len(value) > 1 else value)
    drawn = cells(svg)
    assert len(drawn) == retile.size(value)
    for c in drawn:
        assert c["offset"] == value(c["row"] + rows * c["col"])
    assert str(value) in text_of(svg)


def test_register_layouts_plans_and_bank_reports_draw_themselves():
    reg = retile.register.layout("local(2, 1).spatial(8, 4).local(1, 2)")
    drawn = cells(reg._repr_svg_())
    assert len(drawn) == 128
    assert all("thread" in c and "value" in c for c in drawn)
    labels = text_of(reg._repr_svg_())
    assert "T31" in labels and "V3" in labels
    plan = retile.transpose_plan(8, 32, 128, "(8,8):(1,8)", "(8,8):(8,1)")
    assert len(cells(plan._repr_svg_())) == 128
    r = retile.bank_conflicts(retile.Layout((8, 8), (8, 1)), threads=retile.Layout((8, 8), (1, 8)), element_bytes=4)
    drawn = cells(r._repr_svg_())
    assert len(drawn) == 128
    assert all(c["bank"] == (c["offset"] * 4 // 4) % 32 for c in drawn)
    tv = retile.show("((4,8),(2,2)):((32,1),(16,8))", format="svg", tile=(16, 8))
    assert len(cells(tv)) == 128
    with pytest.raises(ValueError, match="text.*svg"):
        retile.show("4:1", format="png")
    with pytest.raises(ValueError, match="SVG only"):
        retile.show("4:1", tile=(2, 2))


def test_a_128x32x32_layout_draws_in_a_few_megabytes_and_says_what_it_elides():
    svg = retile.Layout((128, 32, 32))._repr_svg_()
    assert len(svg) < 3 << 20
    assert "elided: columns 32..991 (960 of 1024)" in text_of(svg)
    assert len(cells(svg)) == 128 * 64
