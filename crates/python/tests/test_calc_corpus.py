"""The tilus, device-layout and in-thread-transpose reference corpora through
the calculator from Python: retile.eval / retile.show text and the typed
objects of retile.register, retile.device_layout and retile.transpose_plan."""

import re

import pytest

import retile
from conftest import load

TILUS = load("tilus_public.json")["cases"]
DEVICE = load("device_public.json")
WAVE = load("wave_itt_cases.json")["cases"]


def tilus_error_ok(message, want):
    message = re.sub(r"^at column \d+: ", "", message)
    if want["type"] == "KeyError":
        return "neither spatial nor local" in message
    if want["type"] == "TypeError":
        return "not defined for a register layout and an integer" in message
    return message == want["message"] or message.startswith(want["message"] + ", got ")


@pytest.mark.parametrize("case", TILUS, ids=[c["id"] for c in TILUS])
def test_tilus(case):
    expr, expected = case["expr"], case["expected"]
    if "layout" in expected:
        want = expected["layout"]
        layout = retile.register.layout(expr)
        assert (layout.shape, layout.mode_shape, layout.spatial_modes, layout.local_modes) == (
            want["shape"], want["mode_shape"], want["spatial_modes"], want["local_modes"])
        assert str(layout) == want["str"] == retile.eval(expr)
        assert retile.show(expr) == want["visualize"] + "\n"
    elif "value" in expected:
        assert retile.evaluate(expr) is expected["value"]
        assert retile.eval(expr) == str(expected["value"]).lower()  # as `retile eval` prints it
    else:
        with pytest.raises(ValueError) as e:
            retile.eval(expr)
        assert tilus_error_ok(str(e.value), expected["error"]), str(e.value)


def test_register_functions_and_chaining():
    a = retile.register.local(3, 4).spatial(2, 3)
    b = retile.register.layout("local(3,4).spatial(2,3)")
    assert a == b and a.mode_shape == [3, 2, 4, 3] and a.spatial_modes == [1, 3] and a.local_modes == [0, 2]
    assert retile.register.column_spatial(2, 3).spatial_modes == [1, 0]
    assert retile.register.call("reduce", retile.register.spatial(3, 4), dims=[0]).shape == [4]
    with pytest.raises(ValueError):
        retile.register.layout("(4,2):(1,4)")  # a CuTe layout, not a register layout


DEVICE_CASES = [c for c in DEVICE["cases"] if c["constructor"] != "view"]
VIEWS = [c for c in DEVICE["cases"] if c["constructor"] == "view"]


def device_expr(c):
    order = "" if c["constructor"] == "default" else f", dim_order={c['dim_order']}"
    return f"device_layout({c['host_size']}, {c['dtype']}{order})"


@pytest.mark.parametrize("case", DEVICE_CASES, ids=[c["id"] for c in DEVICE_CASES])
def test_device(case):
    kwargs = {} if case["constructor"] == "default" else {"dim_order": case["dim_order"]}
    d = retile.device_layout(case["host_size"], case["dtype"], **kwargs)
    assert d == retile.device_layout(device_expr(case))
    e = case["expected"]
    assert (d.host_size, d.device_size, d.dim_map, d.dtype) == (case["host_size"], e["device_size"], e["dim_map"], case["dtype"])
    assert str(d) == retile.eval(device_expr(case))
    assert retile.evaluate(f"device_bytes({d.expr})") == e["device_bytes"]
    stick = retile.evaluate(f"host_stick_dim({d.expr})")
    assert (None if stick == "None" else stick) == e["host_stick_dim"]
    for m in case["coord_mappings"]:
        assert retile.evaluate(f"device_offset({d.expr}, {m['device']})") == m["device_elem_offset"]
        host = retile.evaluate(f"host_coord({d.expr}, {m['device']})")
        assert (None if host == "padding" else list(host)) == m["host"]


@pytest.mark.parametrize("case", VIEWS, ids=[c["id"] for c in VIEWS])
def test_device_view(case):
    """Views where the reference obeys its own fold rule give its answer;
    where it expects an error, a ValueError; the others (retile answers with
    a layout that keeps every element in place, or rejects; see the device
    crate's oracle test) agree with retile.eval."""
    old = retile.device_layout(host_size=case["old_host_size"], device_size=case["old"]["device_size"],
                               dim_map=case["old"]["dim_map"], dtype=case["dtype"])
    expr = f"view({old.expr}, {case['new_host_size']})"
    e = case["expected"]
    if e.get("error"):
        with pytest.raises(ValueError, match=re.escape(e["error"])):
            retile.device_layout(expr)
    elif case.get("fold_rule_consistent", e.get("fold_rule_consistent")):
        v = retile.device_layout(expr)
        assert (v.device_size, v.dim_map) == (e["device_size"], e["dim_map"])
    else:
        try:
            v = retile.device_layout(expr)
        except ValueError as err:
            assert str(err) == "at column 1: " + str(err).split(": ", 1)[1]
        else:
            assert str(v) == retile.eval(expr)


@pytest.mark.parametrize("case", DEVICE["error_cases"], ids=[str(i) for i in range(len(DEVICE["error_cases"]))])
def test_device_errors(case):
    kwargs = {} if case["dim_order"] is None else {"dim_order": case["dim_order"]}
    with pytest.raises(ValueError):
        retile.device_layout(case["host_size"], "float16", **kwargs)


@pytest.mark.parametrize("case", WAVE, ids=[c["id"] for c in WAVE])
def test_wave_transpose(case):
    i = case["inputs"]
    n, k = i["tile_N"], i["tile_K"]
    plan = retile.transpose_plan(threads=i["threads"], element_bits=i["element_bits"], max_bits=i["max_bits_per_load"],
                                 src=retile.Layout((n, k), (1, n)), dst=retile.Layout((n, k), (k, 1)), target=i["target"])
    assert plan.applies is case["applies"]
    assert str(plan) == retile.eval(plan.expr)
    if not case["applies"]:
        assert case["reason"] in plan.reason
        return
    c = case["config"]
    assert (plan.store_width, plan.stores, plan.load_width, plan.loads) == (
        c["store_elems_per_thread"], c["expected_number_of_stores"], c["load_elems_per_thread"], c["expected_number_of_loads"])
    assert plan.extracts == case["ops_per_thread"]["extracts"]
