"""paddle-ops-math's predicates (isnan, isinf, isfinite) and logic ops (logical_not / and / or /
xor) and where against NumPy: bool results, broadcasting, non-bool inputs refused at append,
where's gradients by finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import NUMBERS, assert_matches, check_grad, pc, run1

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

SPECIAL = [0.0, -1.5, np.nan, np.inf, -np.inf, 3.0, np.nan]


@pytest.mark.parametrize("op", ["isnan", "isinf", "isfinite"])
@pytest.mark.parametrize("dtype", NUMBERS)
def test_predicates_match_numpy(op, dtype):
    if dtype.startswith("float"):
        x = np.array(SPECIAL * 3, dtype).reshape(3, 7)
    else:
        x = np.arange(-10, 11, dtype=dtype).reshape(3, 7)
    assert_matches(run1(op, {"x": x}), getattr(np, op)(x))
    big = np.random.default_rng(0).standard_normal(40_000)  # split across threads
    big[::7] = np.nan
    assert_matches(run1(op, {"x": big}), getattr(np, op)(big))


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize(
    ("xs", "ys"), [((4, 5), (4, 5)), ((4, 1), (1, 5)), ((3, 4), ()), ((0, 2), (2,))]
)
def test_logic_matches_numpy_with_broadcasting(op, xs, ys):
    rng = np.random.default_rng(1)
    x, y = rng.random(xs) < 0.5, rng.random(ys) < 0.5
    assert_matches(run1(op, {"x": x, "y": y}), getattr(np, op)(x, y))


def test_logical_not_matches_numpy():
    x = np.random.default_rng(2).random((5, 3)) < 0.5
    assert_matches(run1("logical_not", {"x": x}), np.logical_not(x))


@pytest.mark.parametrize("op", ["logical_and", "logical_not"])
def test_logic_refuses_non_bool_inputs_when_appended(op):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [3], "float32")
        args = (x,) if op == "logical_not" else (x, x)
        with pytest.raises(pc.ShapeError, match=r"x must be bool, got float32"):
            getattr(pc.ops, op)(*args)


WHERE_SHAPES = [
    ((3, 4), (3, 4), (3, 4)),
    ((3, 1), (1, 4), ()),
    ((4,), (2, 3, 4), (3, 1)),
    ((), (5,), (5,)),
    ((0, 3), (3,), (1, 3)),
    ((64, 700), (700,), (64, 1)),  # split across threads mid-row
    ((2, 1, 3001), (2, 50, 1), (50, 3001)),  # chunks ending mid-row, rows broadcast
]


@pytest.mark.parametrize(("cs", "xs", "ys"), WHERE_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8", "float16", "bool"])
def test_where_matches_numpy(cs, xs, ys, dtype):
    rng = np.random.default_rng(3)
    cond = rng.random(cs) < 0.5
    x = (rng.standard_normal(xs) * 10).astype(dtype)
    y = (rng.standard_normal(ys) * 10).astype(dtype)
    assert_matches(run1("where", {"cond": cond, "x": x, "y": y}), np.where(cond, x, y))


@pytest.mark.parametrize(("cs", "xs", "ys"), WHERE_SHAPES[:3])
def test_where_gradients_match_finite_differences(cs, xs, ys):
    rng = np.random.default_rng(4)
    inputs = {
        "cond": rng.random(cs) < 0.5,
        "x": rng.standard_normal(xs),
        "y": rng.standard_normal(ys),
    }
    check_grad("where", inputs, rtol=1e-6, atol=1e-9, wrt=["x", "y"])


def test_where_refuses_what_does_not_fit():
    prog = pc.Program()
    with pc.program_guard(prog):
        c, x = pc.data("c", [3], "bool"), pc.data("x", [3])
        with pytest.raises(pc.ShapeError, match=r"cond must be bool, got float32"):
            pc.ops.where(x, x, x)
        with pytest.raises(pc.ShapeError, match=r"x and y must share one dtype"):
            pc.ops.where(c, x, pc.data("y", [3], "float64"))
        with pytest.raises(pc.ShapeError, match=r"'where'"):
            pc.ops.where(c, x, pc.data("z", [4]))
