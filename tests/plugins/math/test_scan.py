"""paddle-ops-math scans against NumPy: cumsum (inclusive or exclusive, forward or reverse) and
its gradient."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import NUMBERS, assert_matches, check_grad, pc, rand, run1

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")


def numpy_cumsum(x, axis, exclusive=False, reverse=False):
    """NumPy's cumsum (floats summed in float64, as the kernel does), made exclusive or reversed."""
    dtype = np.int64 if x.dtype == np.int32 else x.dtype
    work = x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)
    if x.ndim == 0:
        return np.asarray(0 if exclusive else x, dtype)
    if reverse:
        work = np.flip(work, axis)
    out = np.cumsum(work, axis=axis)
    if exclusive:
        out = out - work
    if reverse:
        out = np.flip(out, axis)
    return out.astype(dtype)


CUMSUM = [  # x shape, axis
    ((7,), 0),
    ((3, 4), 0),
    ((3, 4), 1),
    ((3, 4), -1),
    ((2, 3, 5), 1),
    ((2, 3, 5), -3),
    ((), 0),
    ((), -1),
    ((0, 3), 0),
    ((3, 0), 1),
    ((4097, 17), 0),  # large enough to split across threads
    ((17, 4097), 1),
]


@pytest.mark.parametrize(("xs", "axis"), CUMSUM)
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_matches_numpy(xs, axis, exclusive, reverse):
    rng = np.random.default_rng(0)
    for dtype in NUMBERS:
        x = rand(rng, xs, dtype)
        attrs = {"axis": axis, "exclusive": exclusive, "reverse": reverse}
        assert_matches(run1("cumsum", {"x": x}, attrs), numpy_cumsum(x, axis, exclusive, reverse))


def test_cumsum_is_numpys_by_default():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = run1("cumsum", {"x": x}, {"axis": 1})
    assert_matches(got, np.cumsum(x, axis=1))  # int32 sums to int64, as NumPy's does
    assert got.dtype == np.int64


def test_integer_cumsum_wraps_on_overflow():
    x = np.array([2**62, 2**62, 2**62, -(2**63)], np.int64)
    assert_matches(run1("cumsum", {"x": x}, {"axis": 0}), np.cumsum(x))


def test_float32_cumsum_accumulates_in_double():
    x = np.full(1 << 20, 0.1, np.float32)
    got = run1("cumsum", {"x": x}, {"axis": 0})
    want = np.cumsum(x.astype(np.float64)).astype(np.float32)
    assert_matches(got, want)


@pytest.mark.parametrize(("xs", "axis"), [((5,), 0), ((3, 4), 0), ((2, 3, 4), -1), ((), 0)])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_gradient(xs, axis, exclusive, reverse):
    x = rand(np.random.default_rng(1), xs, "float64")
    check_grad("cumsum", {"x": x}, {"axis": axis, "exclusive": exclusive, "reverse": reverse})


def test_cumsum_axis_is_checked_when_appended():
    with pc.program_guard(pc.Program()):
        out = pc.ops.cumsum(pc.data("x", [None, 3], "int32"), axis=-1)
        assert out.shape == (None, 3) and out.dtype == "int64"
        with pytest.raises(pc.ShapeError, match=r"op 'cumsum'.*axis 2 is out of range"):
            pc.ops.cumsum(pc.data("y", [2, 3]), axis=2)
        with pytest.raises(pc.ShapeError, match=r"op 'cumsum'.*axis 1 is out of range.*0-D"):
            pc.ops.cumsum(pc.data("z", []), axis=1)
