"""paddle-ops-math reductions (sum, mean, max, min, prod, argmax, argmin) against NumPy; their
gradients; their accuracy on long float32 sums; their errors."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import (
    ALL_NUMBERS,
    FLOATS,
    HALVES,
    NUMBERS,
    assert_matches,
    check_grad,
    cpu_has_avx2_fma,
    pc,
    rand,
    run1,
    run_op,
)

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

REDUCE = {
    "sum": (np.sum, NUMBERS),
    "mean": (np.mean, FLOATS),
    "max": (np.max, NUMBERS),
    "min": (np.min, NUMBERS),
    "prod": (np.prod, NUMBERS),
}
# (x shape, axes): all, single, negative, non-adjacent, size-1 axes, 0-d, and shapes large
# enough for threads and for the segmented long reductions (over 32768 elements each).
CASES = [
    ((3, 4, 5), []),
    ((3, 4, 5), [0]),
    ((3, 4, 5), [1]),
    ((3, 4, 5), [2]),
    ((3, 4, 5), [-1]),
    ((3, 4, 5), [0, 2]),
    ((3, 4, 5), [-1, -3]),
    ((3, 4, 5), [1, 2]),
    ((3, 4, 5), [0, 1]),
    ((3, 4, 5), [0, 1, 2]),
    ((2, 3, 4, 5), [1, 3]),
    ((2, 3, 4, 5), [0, 2]),
    ((3, 1, 4), [1]),
    ((1, 5, 1), [0, 2]),
    ((), []),
    ((7,), []),
    ((7,), [0]),
    ((4097, 33), [0]),
    ((4097, 33), [1]),
    ((4097, 33), []),
    ((3, 70001), [1]),
    ((20011, 3), [0]),
    ((2, 9001, 3), [1]),
    ((5, 3000, 7), [0, 2]),
]


def inputs(rng, op, shape, dtype):
    if op == "prod":  # products that neither overflow nor vanish
        if dtype in ("int32", "int64"):
            return rand(rng, shape, dtype, -1, 1)
        return rng.uniform(0.9, 1.1, shape).astype(dtype)
    return rand(rng, shape, dtype)


def reference(op, x, axes, keepdim):
    """The NumPy result, computed in float64 for floats and cast back."""
    axis = tuple(axes) if axes else None
    fn = REDUCE[op][0]
    if x.dtype.kind == "f":
        return fn(x.astype(np.float64), axis=axis, keepdims=keepdim).astype(x.dtype)
    return fn(x, axis=axis, keepdims=keepdim)


def tolerance(op, x, axes):
    """Absolute error allowed per output: a few units of the dtype's precision times the sum of
    the magnitudes folded into it (sums of mixed signs can cancel to near zero)."""
    if x.dtype.kind != "f" or op in ("max", "min"):
        return {}
    eps = np.finfo(x.dtype).eps
    axis = tuple(axes) if axes else None
    if op == "prod":  # rounding errors of n factors: about sqrt(n) eps in each of the two
        count = x.size // max(1, np.size(np.sum(x, axis=axis)))  # products (float32's in double)
        return {"rtol": eps * (2 + 2 * np.sqrt(count)), "atol": 0}
    magnitude = np.sum(np.abs(x.astype(np.float64)), axis=axis)
    if op == "mean":
        magnitude = magnitude / max(1, x.size // max(1, np.size(magnitude)))
    return {"rtol": 2 * eps, "atol": 4 * eps * float(np.max(magnitude, initial=0))}


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize(("shape", "axes"), CASES)
def test_reduce_matches_numpy(op, shape, axes):
    rng = np.random.default_rng(0)
    for dtype in REDUCE[op][1]:
        x = inputs(rng, op, shape, dtype)
        for keepdim in (False, True):
            got = run1(op, {"x": x}, {"axes": axes, "keepdim": keepdim})
            want = reference(op, x, axes, keepdim)
            assert_matches(got, want, **tolerance(op, x, axes))


@pytest.mark.parametrize("op", ["sum", "prod"])
def test_int32_sum_and_prod_produce_int64(op):
    x = np.array([[2**30, 2**30, 3], [1, -2, 5]], np.int32)
    got = run1(op, {"x": x}, {"axes": [1]})
    assert got.dtype == np.int64  # no int32 overflow: 2**31 + 3 fits
    assert_matches(got, REDUCE[op][0](x.astype(np.int64), axis=1))


def test_int64_sums_wrap_like_numpy():
    x = np.array([2**62, 2**62, 2**62], np.int64)
    with np.errstate(over="ignore"):
        assert_matches(run1("sum", {"x": x}), np.sum(x))


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_and_min_keep_the_dtype_and_propagate_nan(op):
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -1.0]], np.float32)
    assert_matches(run1(op, {"x": x}, {"axes": [1]}), REDUCE[op][0](x, axis=1))
    big = np.arange(10000, dtype=np.float64)
    big[7777] = np.nan
    assert np.isnan(run1(op, {"x": big}))
    ints = np.array([[3, -7], [2, 9]], np.int32)
    assert_matches(run1(op, {"x": ints}, {"axes": [0]}), REDUCE[op][0](ints, axis=0))


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("where", [0, 300, 4095, 5000])
def test_a_nan_anywhere_in_a_long_float32_run_comes_out_with_its_payload(op, where, avx2_path):
    """The AVX2 blocks (256 floats) find the NaN and leave the result to the generic loop, so
    the payload is the same on every CPU; 5000 lies in the partial last block."""
    x = np.random.default_rng(where).standard_normal(5001).astype(np.float32)
    x[where] = np.array(0x7FC0_1234, np.uint32).view(np.float32)
    got = run1(op, {"x": x})
    assert np.asarray(got, np.float32).view(np.uint32) == 0x7FC0_1234
    rows = np.tile(x, (3, 1))
    rows[1, where] = 1.0
    expected = REDUCE[op][0](rows, axis=1)
    assert_matches(run1(op, {"x": rows}, {"axes": [1]}), expected)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_the_avx2_loops_give_the_portable_loops_bits(op, monkeypatch):
    """Over long rows (blocks of 256 and a partial one) and down columns, with -0 among +0."""
    if not cpu_has_avx2_fma():
        pytest.skip("this CPU has no AVX2+FMA: only the portable path runs")
    x = (np.random.default_rng(3).standard_normal((300, 777)) * 1e3).astype(np.float32)
    x[7, ::5] = -0.0
    x[8] = 0.0
    for axes in ([], [1], [0]):
        got = []
        for off in ("0", "1"):
            monkeypatch.setenv("PADDLE_OPS_MATH_DISABLE_AVX2", off)
            got.append(np.asarray(run1(op, {"x": x}, {"axes": axes}), np.float32))
        np.testing.assert_array_equal(got[0].view(np.uint32), got[1].view(np.uint32))


def test_empty_reductions_give_the_identity():
    empty = np.zeros((0, 3), np.float32)
    assert_matches(run1("sum", {"x": empty}, {"axes": [0]}), np.zeros(3, np.float32))
    assert_matches(run1("prod", {"x": empty}, {"axes": [0]}), np.ones(3, np.float32))
    assert_matches(run1("mean", {"x": empty}, {"axes": [0]}), np.full(3, np.nan, np.float32))
    assert_matches(run1("sum", {"x": empty}), np.float32(0))
    assert_matches(run1("sum", {"x": np.zeros((0, 3), np.int32)}), np.int64(0))
    # Reducing a non-empty axis of an empty tensor gives an empty result, for max too.
    assert_matches(run1("sum", {"x": empty}, {"axes": [1]}), np.zeros(0, np.float32))
    assert_matches(run1("max", {"x": empty}, {"axes": [1]}), np.zeros(0, np.float32))
    assert_matches(run1("argmax", {"x": empty}, {"axis": 1}), np.zeros(0, np.int64))


@pytest.mark.parametrize("dtype", [*ALL_NUMBERS, "bool"])
def test_max_and_min_of_no_elements_give_their_identity_like_onnx(dtype):
    """A documented choice: ONNX's ReduceMax / ReduceMin (and TensorFlow) give -inf / inf,
    an integer dtype's lowest / highest value; NumPy raises instead. bool's max is any and its
    min all: False and True over no elements."""
    empty = np.zeros((2, 0, 4), dtype)
    if dtype == "bool":
        low, high = False, True
    elif dtype in FLOATS + HALVES:
        low, high = -np.inf, np.inf
    else:
        low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
    assert_matches(run1("max", {"x": empty}, {"axes": [1]}), np.full((2, 4), low, dtype))
    assert_matches(run1("min", {"x": empty}, {"axes": [1], "keepdim": True}),
                   np.full((2, 1, 4), high, dtype))  # fmt: skip
    assert_matches(run1("max", {"x": empty}), np.array(low, dtype))
    prog = pc.Program()  # unknown until fed: the same
    with pc.program_guard(prog):
        out = pc.ops.min(pc.data("x", [None, 3], dtype), axes=[0])
    (got,) = pc.Executor().run(prog, feed={"x": np.zeros((0, 3), dtype)}, fetch_list=[out])
    assert_matches(got, np.full(3, high, dtype))


def test_max_grad_of_no_elements_is_empty():
    x = np.zeros((0, 3))
    out = run1("max", {"x": x}, {"axes": [0]})
    got = run_op("max_grad", {"x": x, "out": out, "out_grad": np.ones(3)}, {"axes": [0]})
    assert got["x_grad"][0].shape == (0, 3)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_refuse_empty_axes(op):
    with pc.program_guard(pc.Program()):  # known shape: refused when appended
        with pytest.raises(pc.ShapeError, match=rf"op '{op}' .*of no elements"):
            getattr(pc.ops, op)(pc.data("x", [0, 3]), axis=0)
    prog = pc.Program()  # unknown shape: refused when the executor prepares the fed shape
    with pc.program_guard(prog):
        out = getattr(pc.ops, op)(pc.data("x", [None, 3]), axis=0)
    with pytest.raises(pc.PaddleCoreError, match=rf"op '{op}'.*of no elements"):
        pc.Executor().run(prog, feed={"x": np.zeros((0, 3), np.float32)}, fetch_list=[out])


@pytest.mark.parametrize("op", list(REDUCE))
def test_noop_with_empty_axes_reduces_nothing(op):
    """ONNX's noop_with_empty_axes (and NumPy's axis=()): out is x, in out's dtype; without
    it, empty axes reduce every axis (NumPy's axis=None)."""
    x = rand(np.random.default_rng(11), (2, 3), "float64")
    assert_matches(run1(op, {"x": x}, {"noop_with_empty_axes": True}), REDUCE[op][0](x, axis=()))
    assert_matches(run1(op, {"x": x}, {"axes": [1], "noop_with_empty_axes": True}),
                   REDUCE[op][0](x, axis=1))  # fmt: skip
    check_grad(op, {"x": x}, {"noop_with_empty_axes": True})
    if op != "mean":
        for dtype in ("int32", "int8", "uint16"):  # sum and prod widen, as NumPy's
            ints = np.array([[1, 2], [3, 4]], dtype)
            got = run1(op, {"x": ints}, {"noop_with_empty_axes": True})
            assert_matches(got, REDUCE[op][0](ints, axis=()))
    if op in ("max", "min"):  # bool's any and all: each element by itself
        flags = np.array([[True, False], [False, True]])
        assert_matches(run1(op, {"x": flags}, {"noop_with_empty_axes": True}), flags)


@pytest.mark.parametrize("op", list(REDUCE))
@pytest.mark.parametrize("axis", [0, -1])
def test_a_0d_x_reduces_along_axis_0_or_minus_1_like_numpy(op, axis):
    """NumPy's sum, prod, max and min (and PyTorch's reductions) take axis 0 or -1 of a 0-d x:
    its one element (numpy.mean alone refuses it; ours is the mean of that element)."""
    x = np.array(2.5)
    for keepdim in (False, True):
        got = run1(op, {"x": x}, {"axes": [axis], "keepdim": keepdim})
        assert_matches(got, x)
        if op != "mean":
            assert_matches(got, REDUCE[op][0](x, axis=axis, keepdims=keepdim))
    check_grad(op, {"x": x}, {"axes": [axis]})


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize(
    ("shape", "axis"), [((6,), 0), ((4, 5), 0), ((4, 5), 1), ((4, 5), -1), ((3, 4, 5), 1)]
)
def test_arg_reductions_match_numpy(op, shape, axis):
    rng = np.random.default_rng(4)
    reference = getattr(np, op)
    for dtype in NUMBERS:
        x = rand(rng, shape, dtype, -2, 2)  # plenty of ties: the first index wins
        for keepdim in (False, True):
            got = run1(op, {"x": x}, {"axis": axis, "keepdim": keepdim})
            assert_matches(got, reference(x, axis=axis, keepdims=keepdim))


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_large_nan_and_0d(op):
    rng = np.random.default_rng(5)
    reference = getattr(np, op)
    x = rand(rng, (4097, 33), "float32")
    for axis in (0, 1):
        assert_matches(run1(op, {"x": x}, {"axis": axis}), reference(x, axis=axis))
    x = np.array([[1.0, np.nan, 9.0, np.nan], [2.0, 1.0, 0.0, 5.0]], np.float64)
    assert_matches(run1(op, {"x": x}, {"axis": 1}), reference(x, axis=1))  # the first NaN
    assert_matches(run1(op, {"x": x.T.copy()}, {"axis": 0}), reference(x.T, axis=0))
    assert_matches(run1(op, {"x": np.float32(4.0)}, {"axis": 0}), np.int64(0))


def test_non_contiguous_inputs_are_read_correctly():
    rng = np.random.default_rng(6)
    x = rand(rng, (5, 4, 3), "float64").transpose(2, 0, 1)  # a transposed view
    y = rand(rng, (8, 6), "float32")[::2, 1::2]  # a strided view
    assert not x.flags.c_contiguous and not y.flags.c_contiguous
    assert_matches(run1("sum", {"x": x}, {"axes": [0, 2]}), x.sum(axis=(0, 2)))
    assert_matches(run1("max", {"x": y}, {"axes": [0]}), y.max(axis=0))
    assert_matches(run1("argmin", {"x": y}, {"axis": 1}), y.argmin(axis=1))


def float32_ulp(value: float) -> float:
    return float(np.spacing(np.float32(abs(value))))


@pytest.mark.parametrize("values", ["uniform", "tenths", "mixed"])
def test_long_float32_sums_do_not_drift(values):
    """Summing 4M float32 values stays within 1 ulp of the exact sum (a running float32 sum
    of 4M tenths is off by 4%; NumPy's pairwise sum by a few ulps)."""
    rng = np.random.default_rng(7)
    n = 1 << 22
    x = {
        "uniform": rng.random(n, dtype=np.float32),
        "tenths": np.full(n, 0.1, np.float32),
        "mixed": rng.standard_normal(n).astype(np.float32) + np.float32(0.25),
    }[values]
    exact = float(np.sum(x.astype(np.float64)))  # float64 pairwise: error ~1e-16 relative
    got = float(run1("sum", {"x": x}))
    assert abs(got - exact) <= float32_ulp(exact), (got, exact)
    assert abs(got - exact) <= abs(float(np.sum(x)) - exact)  # at least as close as NumPy
    mean = float(run1("mean", {"x": x}))
    assert abs(mean - exact / n) <= float32_ulp(exact / n)


def test_results_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((300, 7000)).astype(np.float32)
    results = []
    for threads in (1, 2, 3):
        prog = pc.Program()
        with pc.program_guard(prog):
            v = pc.data("x", list(x.shape))
            outs = [pc.ops.sum(v), pc.ops.sum(v, axes=[0]), pc.ops.mean(v, axes=[1])]
        exe = pc.Executor(num_threads=threads)
        results.append(exe.run(prog, feed={"x": x}, fetch_list=outs))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


# -- gradients --------------------------------------------------------------------------------

GRAD_CASES = [((2, 3, 4), []), ((2, 3, 4), [1]), ((2, 3, 4), [0, 2]), ((2, 3, 4), [-1]), ((5,), [])]


def distinct(rng, shape):
    """float64 values without ties (max / min gradients are undefined at ties)."""
    n = int(np.prod(shape))
    return (rng.permutation(n).astype(np.float64) * 0.37 - n * 0.1).reshape(shape)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize(("shape", "axes"), GRAD_CASES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_gradients(op, shape, axes, keepdim):
    rng = np.random.default_rng(9)
    x = distinct(rng, shape) if op in ("max", "min") else rand(rng, shape, "float64")
    # Each reduction is linear in each element (max and min away from ties), so central
    # differences are exact at any step: a larger one than the default 1e-6 only shrinks their
    # rounding error (prod's, over products of many elements, is otherwise near 1e-6).
    attrs = {"axes": axes, "keepdim": keepdim}
    check_grad(op, {"x": x}, attrs, eps=1e-4, rtol=1e-6, atol=1e-9)


def test_gradients_of_large_reductions():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((40, 30))
    for op in ("sum", "mean", "max", "min"):
        check_grad(op, {"x": x}, {"axes": [0]}, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("axes", [[1], [0]])
def test_prod_gradient_with_zeros(axes):
    x = np.array([[0.0, 2.0, 3.0, 1.5], [0.0, 0.0, 4.0, 2.0], [1.5, -2.0, 0.5, 3.0]])
    x = x if axes == [1] else x.T.copy()  # no zero, one zero, two zeros per slice
    check_grad("prod", {"x": x}, {"axes": axes}, rtol=1e-6, atol=1e-9)


def grad_of(op, x, attrs):
    """d(sum(op(x)))/dx, through the op's grad rule and kernel."""
    prog = pc.Program()
    with pc.program_guard(prog):
        v = pc.data("x", list(x.shape), x.dtype.name)
        v.stop_gradient = False
        out = getattr(pc.ops, op)(v, **attrs)
        (g,) = pc.gradients(out, v)
    return pc.Executor().run(prog, feed={"x": x}, fetch_list=[g])[0]


def test_max_gradient_splits_ties_evenly():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0]])
    want = np.array([[0.0, 0.5, 0.5, 0.0], [0.25, 0.25, 0.25, 0.25]])
    np.testing.assert_allclose(grad_of("max", x, {"axes": [1]}), want)
    np.testing.assert_allclose(grad_of("min", -x.T, {"axes": [0]}), want.T)


def test_prod_gradient_in_float32():
    x = np.array([[0.5, 2.0, 0.0], [1.5, 2.0, 4.0]], np.float32)
    want = np.array([[0.0, 0.0, 1.0], [8.0, 6.0, 3.0]], np.float32)
    assert_matches(grad_of("prod", x, {"axes": [1]}), want)


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod"])
def test_bad_axes_are_refused_when_appended(op):
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [3, 4])
        with pytest.raises(pc.ShapeError, match=rf"op '{op}' .*axis 2 is out of range"):
            getattr(pc.ops, op)(x, axes=[2])
        with pytest.raises(pc.ShapeError, match=rf"op '{op}' .*axis -3 is out of range"):
            getattr(pc.ops, op)(x, axes=[-3])
        with pytest.raises(pc.ShapeError, match=rf"op '{op}' .*name axis 1 twice"):
            getattr(pc.ops, op)(x, axes=[1, -1])
        with pytest.raises(pc.ShapeError, match=rf"op '{op}' .*of a 0-d x may only be one of"):
            getattr(pc.ops, op)(pc.data("s", []), axes=[1])
        with pytest.raises(pc.ShapeError, match=rf"op '{op}' .*of a 0-d x may only be one of"):
            getattr(pc.ops, op)(pc.data("t", []), axes=[0, -1])


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ALL_NUMBERS)
def test_select_last_index_picks_the_last_of_ties_and_nans(op, dtype):
    """ONNX's select_last_index: the last position of the extreme value (of the last NaN),
    as the reference flips x, takes NumPy's first, and maps it back (the 16-bit floats
    compared as float32, which holds them exactly)."""
    rng = np.random.default_rng(12)
    x = rand(rng, (5, 7, 3), dtype, -2, 2)
    if dtype in FLOATS + HALVES:
        x[1, ::3, 0] = np.nan
    wide = x.astype(np.float32) if dtype in HALVES else x
    for axis in (0, 1, -1):
        n = x.shape[axis]
        want = n - 1 - getattr(np, op)(np.flip(wide, axis), axis=axis)
        got = run1(op, {"x": x}, {"axis": axis, "select_last_index": True})
        assert_matches(got, want)
    big = np.zeros((3, 5000), dtype)  # all tied: the last index, along rows and columns
    assert_matches(run1(op, {"x": big}, {"axis": 1, "select_last_index": True}),
                   np.full(3, 4999, np.int64))  # fmt: skip
    assert_matches(run1(op, {"x": big}, {"axis": 0, "select_last_index": True}),
                   np.full(5000, 2, np.int64))  # fmt: skip


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_need_a_valid_axis(op):
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [3, 4])
        with pytest.raises(pc.ShapeError, match=rf"op '{op}' .*axis 2 is out of range"):
            getattr(pc.ops, op)(x, axis=2)
        with pytest.raises(pc.AttrError, match="axis"):  # no default: the axis is required
            getattr(pc.ops, op)(x)
        out = getattr(pc.ops, op)(x, axis=-1, keepdim=True)
        assert out.shape == (3, 1) and out.dtype == "int64"


def test_mean_of_integers_is_refused_when_appended():
    with pc.program_guard(pc.Program()):
        with pytest.raises(
            pc.ShapeError, match=r"op 'mean' .*float32, float64, float16, bfloat16, got int32"
        ):
            pc.ops.mean(pc.data("x", [3], "int32"))


def test_shapes_and_dtypes_are_inferred_when_appended():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [None, 4, 5], "int32")
        assert pc.ops.sum(x, axes=[1]).shape == (None, 5)
        assert pc.ops.sum(x, axes=[1]).dtype == "int64"
        assert pc.ops.prod(x).dtype == "int64"
        assert pc.ops.max(x, axes=[0, 2], keepdim=True).shape == (1, 4, 1)
        assert pc.ops.max(x).dtype == "int32"
        assert pc.ops.argmin(x, axis=0).shape == (4, 5)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8"])
def test_arg_reductions_of_long_rows_on_both_paths(op, dtype, avx2_path):
    """Rows long enough for the vectorised blocks: the extreme, then its first (last) place;
    NaN in the first block, the middle and the tail, ties of -0 and +0, rows of one value."""
    rng = np.random.default_rng(21)
    x = rand(rng, (12, 1000), dtype, -50, 50)
    if dtype.startswith("float"):
        x[1, 3] = x[2, 600] = x[3, 999] = x[3, 500] = np.nan
        x[4] = 0.0
        x[4, 10::7] = -0.0
        x[5] = -np.inf if op == "argmax" else np.inf
        x[6, [40, 700]] = 1e30 if op == "argmax" else -1e30
    else:
        x[4] = x[4, 0]
    for last in (False, True):
        want = getattr(np, op)(x, axis=1)
        if last:
            want = x.shape[1] - 1 - getattr(np, op)(np.flip(x, 1), axis=1)
        got = run1(op, {"x": x}, {"axis": 1, "select_last_index": last})
        assert_matches(got, want)
