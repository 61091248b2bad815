"""Every dtype the data layer accepts has kernels (issue 12): the integers NumPy has, float16 and
bfloat16, bool reductions; against NumPy (ml_dtypes for bfloat16), gradients checked.

The 16-bit floats compute in float32 and round each result once: references compute in float32
from the same (rounded) inputs, then round, and must match bit for bit where float32 IEEE
arithmetic is exact to the rounding (add ... minimum, comparisons, casts); library functions
(exp, pow, ...) within paddle_core.testing.TOLERANCES.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest
from op_helpers import (
    ALL_INTS,
    ALL_NUMBERS,
    FLOATS,
    HALVES,
    assert_matches,
    pc,
    rand,
    run1,
    run_op,
)

from paddle_core._src.base.dtypes import DTYPES
from paddle_core._src.plugins.registry import get_registry
from paddle_core.testing import TOLERANCES, check_op

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

F32 = np.float32


def edge_ints(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Random values over the dtype's whole range, with its minimum, maximum, 0, 1 (and -1)."""
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    flat = x.reshape(-1)
    special = [info.min, info.max, 0, 1] + ([-1] if info.min < 0 else [])
    flat[: len(special)] = special
    return x


def numpy_ref(fn, *arrays):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*arrays)


# -- integers ------------------------------------------------------------------------------------

INT_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "div": np.floor_divide,  # NumPy's integer semantics: floor division, 0 for y == 0
    "mod": np.mod,
}


@pytest.mark.parametrize("dtype", ALL_INTS)
@pytest.mark.parametrize("op", INT_BINARY)
def test_integer_arithmetic_wraps_like_numpy(op, dtype):
    rng = np.random.default_rng(0)
    x, y = edge_ints(rng, dtype, (6, 40)), edge_ints(rng, dtype, (40,))
    y[:6] = [0, 1, 3, *([np.iinfo(dtype).max] * 3)]
    if np.iinfo(dtype).min < 0:
        y[6:9] = [-1, -3, np.iinfo(dtype).min]
    assert_matches(run1(op, {"x": x, "y": y}), numpy_ref(INT_BINARY[op], x, y))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint16", "uint64"])
def test_integer_division_is_floor_division_not_truncation(dtype):
    """div of integers is NumPy's x // y (rounded toward -inf), where ONNX's Div truncates;
    y == 0 gives 0 and the minimum // -1 wraps to the minimum, as NumPy gives."""
    signed = np.iinfo(dtype).min < 0
    if signed:
        lo = np.iinfo(dtype).min
        x = np.array([7, -7, 7, -7, 6, -6, 5, lo, lo], dtype)
        y = np.array([2, 2, -2, -2, 4, 4, 0, -1, 1], dtype)
        want = np.array([3, -4, -4, 3, 1, -2, 0, lo, lo], dtype)
    else:
        x = np.array([7, 6, 5, np.iinfo(dtype).max], dtype)
        y = np.array([2, 4, 0, np.iinfo(dtype).max], dtype)
        want = np.array([3, 1, 0, 1], dtype)
    got = run1("div", {"x": x, "y": y})
    assert_matches(got, want)
    assert_matches(got, numpy_ref(np.floor_divide, x, y))
    if signed:  # where the signs differ, truncation (ONNX, C) would give one more
        assert (got[1], np.trunc(-7 / 2)) == (-4, -3)


@pytest.mark.parametrize("dtype", ALL_INTS)
def test_integer_pow_is_numpys_with_wraparound(dtype):
    rng = np.random.default_rng(1)
    x = edge_ints(rng, dtype, (50,))
    y = rng.integers(0, 70, size=50).astype(dtype)
    y[:5] = [0, 0, 1, 2, 63]
    assert_matches(run1("pow", {"x": x, "y": y}), numpy_ref(np.power, x, y))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_pow_of_a_negative_exponent_truncates_toward_zero(dtype):
    """NumPy refuses negative integer exponents; ours give the power truncated toward 0."""
    x = np.array([1, -1, -1, 2, -2, 0, 5], dtype)
    y = np.array([-3, -3, -2, -1, -1, -1, -2], dtype)
    assert_matches(run1("pow", {"x": x, "y": y}), np.array([1, -1, 1, 0, 0, 0, 0], dtype))


@pytest.mark.parametrize("dtype", ALL_INTS)
@pytest.mark.parametrize(
    "op,fn", [("abs", np.abs), ("neg", np.negative), ("square", np.square), ("sign", np.sign)]
)
def test_integer_unary_like_numpy(op, fn, dtype):
    x = edge_ints(np.random.default_rng(2), dtype, (3, 17))
    assert_matches(run1(op, {"x": x}), numpy_ref(fn, x))


def saturated(v: float, dtype: str, lower: bool) -> int:
    """A clip bound in ``dtype``: ceil (lower) or floor, saturated; in Python ints, unrounded."""
    info = np.iinfo(dtype)
    if np.isinf(v):
        return info.min if v < 0 else info.max
    return min(max(int(np.ceil(v) if lower else np.floor(v)), info.min), info.max)


@pytest.mark.parametrize("dtype", ALL_INTS)
def test_integer_clip_saturates_its_bounds(dtype):
    x = edge_ints(np.random.default_rng(3), dtype, (64,))
    for lo, hi in [(-3.5, 100.2), (-1e30, 1e30), (2.0, 2.0), (-np.inf, 5.0)]:
        low, high = saturated(lo, dtype, True), saturated(hi, dtype, False)
        want = np.clip(x, np.array(low, dtype), np.array(high, dtype))
        assert_matches(run1("clip", {"x": x}, {"min": lo, "max": hi}), want)


@pytest.mark.parametrize("dtype", [d for d in ALL_NUMBERS if d != "bool"])
@pytest.mark.parametrize(
    "op", ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
)
def test_comparisons_of_every_number_like_numpy(op, dtype):
    rng = np.random.default_rng(4)
    if dtype in ALL_INTS:
        x, y = edge_ints(rng, dtype, (5, 9)), edge_ints(rng, dtype, (9,))
        x[:, ::2] = y[::2]  # some equal pairs
    else:
        x, y = rand(rng, (5, 9), dtype, -2, 2), rand(rng, (9,), dtype, -2, 2)
        x[0, :3], y[:3] = [np.nan, 1.0, -0.0], [np.nan, 1.0, 0.0]
    fn = getattr(np, op)
    assert_matches(run1(op, {"x": x, "y": y}), fn(x.astype(np.float64), y.astype(np.float64)))


# -- the 16-bit floats: computed in float32, rounded once -----------------------------------------

EXACT_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "mod": np.mod,
}


def bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).view(np.uint16)


@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("op", EXACT_BINARY)
@pytest.mark.parametrize(("xs", "ys"), [((7, 300), (7, 300)), ((7, 300), (300,)), ((), (7, 3))])
def test_half_binary_is_float32_arithmetic_rounded_once(op, dtype, xs, ys):
    rng = np.random.default_rng(5)
    x, y = rand(rng, xs, dtype, -50, 50), rand(rng, ys, dtype, -4, 4)
    if x.size > 10:
        x.reshape(-1)[:6] = [np.inf, -np.inf, np.nan, 0.0, 65504 if dtype == "float16" else 3e38, 1]
    want = numpy_ref(
        lambda a, b: EXACT_BINARY[op](a, b).astype(x.dtype), x.astype(F32), y.astype(F32)
    )
    got = run1(op, {"x": x, "y": y})
    assert got.dtype == x.dtype and got.shape == want.shape
    same = (bits(got) == bits(want)) | (np.isnan(got.astype(F32)) & np.isnan(want.astype(F32)))
    assert same.all(), (
        f"{(~same).sum()} elements differ, e.g. {got[~same][:3]} vs {want[~same][:3]}"
    )


@pytest.mark.parametrize("dtype", HALVES)
def test_half_pow_within_its_tolerance(dtype):
    rng = np.random.default_rng(6)
    x, y = rand(rng, (40,), dtype, 0.1, 4), rand(rng, (40,), dtype, -3, 3)
    assert_matches(
        run1("pow", {"x": x, "y": y}), np.power(x.astype(F32), y.astype(F32)).astype(dtype)
    )


# (op, reference, inputs' range) of the floating unary ops; check_op compares each dtype with the
# float64 reference within TOLERANCES and the 16-bit floats' gradients with float64's.
UNARY = {
    "abs": (np.abs, (-3, 3)),
    "neg": (np.negative, (-3, 3)),
    "exp": (np.exp, (-3, 3)),
    "log": (np.log, (0.5, 4)),
    "sqrt": (np.sqrt, (0.5, 4)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.5, 4)),
    "square": (np.square, (-3, 3)),
    "sin": (np.sin, (-3, 3)),
    "cos": (np.cos, (-3, 3)),
    "tanh": (np.tanh, (-3, 3)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-3, 3)),
    "erf": (None, (-2, 2)),  # math.erf, vectorised below
    "floor": (np.floor, (-3, 3)),
    "ceil": (np.ceil, (-3, 3)),
    "round": (np.round, (-3, 3)),
    "sign": (np.sign, (-3, 3)),
}


def _erf(x):
    import math

    return np.vectorize(math.erf)(x)


@pytest.mark.parametrize("op", UNARY)
def test_half_unary_and_its_gradient(op):
    fn, (lo, hi) = UNARY[op]
    x = rand(np.random.default_rng(7), (2, 3), "float64", lo, hi)
    if op in ("floor", "ceil", "round", "sign"):  # keep away from the steps for the gradients
        x = np.floor(x) + 0.3
    dtypes = ["float64", *HALVES]
    grad = op not in ("floor", "ceil", "round", "sign")
    check_op(op, {"x": x}, reference=fn or _erf, dtypes=dtypes, grad=grad)


@pytest.mark.parametrize(
    "op,fn",
    [
        ("add", np.add),
        ("sub", np.subtract),
        ("mul", np.multiply),
        ("div", np.divide),
        ("pow", np.power),
        ("maximum", np.maximum),
        ("minimum", np.minimum),
    ],
)
def test_half_binary_gradients_with_broadcasting(op, fn):
    rng = np.random.default_rng(8)
    x, y = rng.uniform(0.5, 2, (2, 3)), rng.uniform(0.5, 2, (3,))
    y[0] = x[0, 0] + 0.25  # no ties in maximum, minimum
    check_op(op, {"x": x, "y": y}, reference=fn, dtypes=["float64", *HALVES])


def test_half_clip_and_its_gradient():
    x = np.random.default_rng(9).uniform(-2, 2, (2, 4))
    check_op(
        "clip",
        {"x": x},
        {"min": -0.7, "max": 0.9},
        reference=lambda x, min, max: np.clip(x, min, max),
        dtypes=["float64", *HALVES],
    )


@pytest.mark.parametrize("dtype", HALVES)
def test_half_clip_rounds_its_bounds_like_numpy(dtype):
    x = rand(np.random.default_rng(10), (100,), dtype, -1, 1)
    want = np.clip(x.astype(F32), F32(0.1), F32(0.3)).astype(dtype)
    assert (bits(run1("clip", {"x": x}, {"min": 0.1, "max": 0.3})) == bits(want)).all()


@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("op", ["isnan", "isinf", "isfinite"])
def test_half_predicates(op, dtype):
    x = np.array([0, 1.5, np.nan, np.inf, -np.inf, -2, 65504], dtype)
    assert_matches(run1(op, {"x": x}), getattr(np, op)(x.astype(F32)))


@pytest.mark.parametrize("dtype", [*HALVES, "uint16", "int8"])
@pytest.mark.parametrize("after", [True, False])
def test_scale_of_the_new_dtypes(dtype, after):
    x = rand(np.random.default_rng(11), (5, 7), dtype, -3, 3)
    attrs = {"scale": 2.5, "bias": 1.0, "bias_after_scale": after}
    wide = x.astype(np.float64)
    want = wide * 2.5 + 1.0 if after else (wide + 1.0) * 2.5
    want = (
        want.astype(x.dtype) if dtype in HALVES else np.trunc(want).astype(np.int64).astype(x.dtype)
    )
    assert_matches(run1("scale", {"x": x}, attrs), want)


# -- reductions ----------------------------------------------------------------------------------

REDUCE = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min}


@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize(("shape", "axes"), [((3, 700), []), ((3, 700), [1]), ((30, 5, 4), [0, 2])])
def test_half_reductions_accumulate_in_float32(op, dtype, shape, axes):
    low, high = (0.9, 1.1) if op == "prod" else (-2, 2)
    x = rand(np.random.default_rng(12), shape, dtype, low, high)
    if op == "prod":
        x = x[..., :20] if not axes or shape[-1] > 20 else x
    got = run1(op, {"x": x}, {"axes": axes})
    want = REDUCE[op](x.astype(np.float64), axis=tuple(axes) or None)
    assert got.dtype == x.dtype
    rtol, atol = TOLERANCES[dtype]
    # Summing 2100 values rounded to 16 bits each would drift far past this; one rounding
    # of a float32 sum stays within it.
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol)
    if op in ("sum", "mean"):  # the float32 sum, rounded once (order aside)
        wide = REDUCE[op](x.astype(np.float64), axis=tuple(axes) or None).astype(x.dtype)
        np.testing.assert_allclose(got.astype(F32), wide.astype(F32), rtol=2**-7, atol=1e-3)


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "max", "min"])
def test_half_reduction_gradients(op):
    x = np.random.default_rng(13).uniform(0.5, 1.5, (3, 4))
    check_op(
        op,
        {"x": x},
        {"axes": [1]},
        reference=lambda x, axes: REDUCE[op](x, axis=tuple(axes)),
        dtypes=["float64", *HALVES],
    )


@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_half_argmax_argmin(op, dtype):
    x = rand(np.random.default_rng(14), (6, 50), dtype, -3, 3)
    assert_matches(run1(op, {"x": x}, {"axis": 1}), getattr(np, op)(x.astype(F32), axis=1))


@pytest.mark.parametrize("dtype", ALL_INTS)
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min", "argmax"])
def test_integer_reductions_widen_like_numpy(op, dtype):
    x = edge_ints(np.random.default_rng(15), dtype, (4, 33))
    attrs = {"axis": 0} if op == "argmax" else {"axes": [0]}
    want = getattr(np, op)(x, axis=0)
    got = run1(op, {"x": x}, attrs)
    assert_matches(got, want)  # sum, prod: int64 or uint64, wrapping


@pytest.mark.parametrize("keepdim", [False, True])
def test_max_and_min_of_bool_are_any_and_all(keepdim):
    x = np.array([[True, False, True], [True, True, True], [False, False, False]])
    for axes in ([], [0], [1]):
        attrs = {"axes": axes, "keepdim": keepdim}
        axis = tuple(axes) or None
        assert_matches(run1("max", {"x": x}, attrs), np.any(x, axis=axis, keepdims=keepdim))
        assert_matches(run1("min", {"x": x}, attrs), np.all(x, axis=axis, keepdims=keepdim))


# -- matmul --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("tx,ty", [(False, False), (True, False), (False, True)])
def test_half_matmul_accumulates_in_float32(dtype, tx, ty):
    rng = np.random.default_rng(16)
    x, y = rand(rng, (2, 64, 300), dtype, -1, 1), rand(rng, (300, 48), dtype, -1, 1)
    x = np.swapaxes(x, -1, -2).copy() if tx else x
    y = y.T.copy() if ty else y
    got = run1("matmul", {"x": x, "y": y}, {"transpose_x": tx, "transpose_y": ty})
    a = np.swapaxes(x, -1, -2) if tx else x
    b = y.T if ty else y
    want = (a.astype(F32) @ b.astype(F32)).astype(dtype)  # float32 accumulation, one rounding
    np.testing.assert_allclose(got.astype(F32), want.astype(F32), rtol=2**-7, atol=1e-2)
    assert got.dtype == x.dtype


@pytest.mark.parametrize("op", ["matmul", "matmul_2d"])
def test_half_matmul_gradients(op):
    rng = np.random.default_rng(17)
    x, y = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4, 2))
    check_op(op, {"x": x, "y": y}, reference=lambda x, y, **_: x @ y, dtypes=["float64", *HALVES])


# -- casts ---------------------------------------------------------------------------------------


def test_casts_to_the_16_bit_floats_round_to_nearest_even_from_the_value_itself():
    """float64 -> bfloat16 rounds once: ml_dtypes rounds through float32, twice."""
    x = np.array([1 + 2**-8 + 2**-30, 1 + 2**-8, 1 + 3 * 2**-8, 2**-133, 65520.0, 65519.9])
    got = run1("cast", {"x": x}, {"dtype": "bfloat16"}).astype(np.float64)
    np.testing.assert_array_equal(got[:4], [1 + 2**-7, 1.0, 1 + 4 * 2**-8, 2**-133])
    assert x.astype(F32).astype(ml_dtypes.bfloat16).astype(np.float64)[0] == 1.0  # twice
    half = run1("cast", {"x": x}, {"dtype": "float16"}).astype(np.float64)
    want = numpy_ref(lambda v: v.astype(np.float16), x).astype(np.float64)
    np.testing.assert_array_equal(half, want)  # 65520 rounds to inf, 65519.9 to 65504


# Runs in a fresh process (the vector conversions are chosen once per process): casts the
# inputs saved at argv[1] and saves the results' bits at argv[2].
HALF_CASTS = r"""
import sys
import ml_dtypes, numpy as np
from paddle_core.testing import run_op

inputs = np.load(sys.argv[1])
out = {}
for name, kind in (("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)):
    cast = lambda x, dtype: run_op("cast", {"x": x}, {"dtype": dtype})["out"][0]
    out[name + "_wide"] = cast(inputs["every"].view(kind), "float32").view(np.uint32)
    out[name + "_narrow"] = cast(inputs["floats"], name).view(np.uint16)
np.savez(sys.argv[2], **out)
"""


def test_half_casts_are_bit_exact_on_every_path(tmp_path):
    """float32 <-> float16 and bfloat16 as NumPy and ml_dtypes convert, through the vector
    conversions (F16C, AVX2) where this CPU has them and through the portable ones
    (PADDLE_OPS_MATH_DISABLE_AVX2=1): every 16-bit value widened, 500k floats narrowed (random
    bits, ties and near-ties of both formats). NaN stays NaN (its payload aside)."""
    every = np.arange(2**16, dtype=np.uint16)
    rng = np.random.default_rng(0)
    high = every.astype(np.uint32) << 16
    with np.errstate(all="ignore"):
        floats = np.concatenate(
            [
                rng.integers(0, 2**32, 300_000, dtype=np.uint64).astype(np.uint32).view(F32),
                high.view(F32),  # bfloat16's values
                (high | 0x8000).view(F32),  # its ties
                (high | 0x7FFF).view(F32),
                every.view(np.float16).astype(F32) * F32(1 + 2**-11),  # float16's near-ties
            ]
        )
    np.savez(tmp_path / "inputs.npz", every=every, floats=floats)
    results = []
    for disable in ("0", "1"):
        env = {**os.environ, "PADDLE_OPS_MATH_DISABLE_AVX2": disable}
        out = tmp_path / f"casts{disable}.npz"
        command = [sys.executable, "-P", "-c", HALF_CASTS, str(tmp_path / "inputs.npz"), str(out)]
        subprocess.run(command, check=True, env=env)
        results.append(dict(np.load(out)))
    for name in results[0]:  # both paths, bit for bit
        np.testing.assert_array_equal(results[0][name], results[1][name], err_msg=name)
    nan = np.isnan(floats)
    for name, kind in (("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)):
        wide = results[0][name + "_wide"].view(F32)
        want = every.view(kind).astype(F32)
        same = (wide.view(np.uint32) == want.view(np.uint32)) | (np.isnan(wide) & np.isnan(want))
        assert same.all(), f"{name} widening differs"
        narrow = results[0][name + "_narrow"]
        with np.errstate(all="ignore"):
            want = floats.astype(kind)
        assert (narrow[~nan] == bits(want)[~nan]).all(), f"{name} narrowing differs"
        assert np.isnan(narrow.view(kind).astype(F32)[nan]).all()


def test_every_dtype_pc_data_accepts_has_kernels():
    """A dtype pc.data accepts has kernels: data movement for every one, arithmetic and
    comparisons for every number, logic and any/all for bool. pc.data refuses the rest with
    the list of what it supports."""
    numbers = [d for d in DTYPES if d != "bool"]
    for op in ["assign", "cast", "reshape", "transpose", "concat", "slice", "where", "gather"]:
        assert set(kernel_dtypes(op)) == set(DTYPES), op
    for op in ["pad", "gather_nd", "scatter", "scatter_nd", "shape", "size"]:
        assert set(kernel_dtypes(op)) == set(DTYPES), op
    for op in ["sort", "argsort", "topk"]:
        assert set(kernel_dtypes(op)) == set(DTYPES), op
    for op in [
        "add",
        "sub",
        "mul",
        "div",
        "pow",
        "mod",
        "maximum",
        "minimum",
        "less",
        "equal",
        "sum",
        "prod",
        "max",
        "min",
        "abs",
        "neg",
        "clip",
        "scale",
        "argmax",
        "argmin",
        "range",
        "einsum",
    ]:
        assert set(numbers) <= set(kernel_dtypes(op)), op
    for op in [
        "exp",
        "log",
        "tanh",
        "mean",
        "matmul",
        "add_grad",
        "exp_grad",
        "sum_grad",
        "matmul_grad",
        "pad_grad",
        "scatter_grad",
        "scatter_nd_grad",
        "add_n",
        "fill_like",
    ]:
        assert {"float16", "bfloat16", "float32", "float64"} <= set(kernel_dtypes(op)), op
    assert {"bool"} <= set(kernel_dtypes("max")) & set(kernel_dtypes("logical_and"))
    with pytest.raises(pc.ProgramError, match=r"supported: bool, int8.*uint64"):
        pc.data("x", [2], "complex64")


def kernel_dtypes(op: str) -> list[str]:
    return get_registry().op(op).dtypes_for("cpu")


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_moves_through_the_data_ops(dtype):
    x = (np.arange(24) % 5).astype("bool" if dtype == "bool" else dtype).reshape(2, 3, 4)
    outs = run_op("transpose", {"x": x}, {"perm": [2, 0, 1]})["out"][0]
    assert_matches(outs, np.transpose(x, (2, 0, 1)))
    assert_matches(run1("assign", {"x": x}), x)
    assert_matches(run1("cast", {"x": x}, {"dtype": dtype}), x)


# -- the ops issue 12 added (range, shape, size, pad, gather_nd, scatter, scatter_nd, sort,
# argsort, topk, einsum), in the new dtypes too --------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_moves_through_the_new_data_ops(dtype):
    """pad, gather_nd, scatter, scatter_nd, sort, argsort, topk, shape and size only move (or
    compare) elements: every dtype. The 16-bit floats compare as float32, which holds them."""
    x = (np.arange(24) % 5).astype("bool" if dtype == "bool" else dtype).reshape(2, 3, 4)
    wide = x.astype(np.float64)
    one = np.asarray(1).astype(x.dtype)
    attrs = {"paddings": [1, 0, 0, 2, 1, 1], "value": 1.0}
    pairs = [(1, 0), (0, 2), (1, 1)]
    assert_matches(run1("pad", {"x": x}, attrs), np.pad(x, pairs, constant_values=one))
    assert_matches(run1("pad", {"x": x}, {**attrs, "mode": "edge"}), np.pad(x, pairs, "edge"))
    index = np.array([[1, 0], [0, 2]])
    assert_matches(run1("gather_nd", {"x": x, "index": index}), np.stack([x[1, 0], x[0, 2]]))
    updates = np.flip(x, 2).copy()
    got = run1("scatter_nd", {"x": x, "index": np.array([[1], [0]]), "updates": updates})
    assert_matches(got, updates[::-1])
    column = np.full((2, 3, 1), 3)
    want = x.copy()
    want[:, :, 3] = updates[:, :, 0]
    got = run1("scatter", {"x": x, "index": column, "updates": updates[:, :, :1]}, {"axis": 2})
    assert_matches(got, want)
    order = np.argsort(wide, axis=-1, kind="stable")
    assert_matches(run1("argsort", {"x": x}), order)
    assert_matches(run1("sort", {"x": x}), np.take_along_axis(x, order, -1))
    top = np.argsort(-wide, axis=-1, kind="stable")[..., :2]  # largest first, the lower index
    got = run_op("topk", {"x": x}, {"k": 2})
    assert_matches(got["values"][0], np.take_along_axis(x, top, -1))
    assert_matches(got["indices"][0], top)
    assert_matches(run1("shape", {"x": x}), np.array([2, 3, 4], np.int64))
    assert_matches(run1("size", {"x": x}), np.array(24, np.int64))


@pytest.mark.parametrize("dtype", ALL_NUMBERS)
def test_range_of_every_number(dtype):
    """Integers exactly, floats counted in double and each value rounded once to the dtype."""
    for start, limit, delta in [(2, 40, 3), (0, 0, 1)] + (
        [(0, 1, 0.1), (1.5, -2, -0.25)] if dtype in FLOATS + HALVES else []
    ):
        attrs = {"start": start, "limit": limit, "delta": delta, "dtype": dtype}
        want = np.arange(start, limit, delta, dtype=np.float64).astype(dtype)
        got = run1("range", {}, attrs)
        assert_matches(got, want)
        if dtype in HALVES:
            assert (bits(got) == bits(want)).all()
    if dtype in ALL_INTS and np.iinfo(dtype).bits < 64:  # 64-bit ones: the attrs' 2^53 first
        info = np.iinfo(dtype)
        with pytest.raises(pc.ShapeError, match=rf"op 'range'.*do not fit {dtype}"):
            with pc.program_guard(pc.Program()):
                pc.ops.range(start=float(info.max) - 1, limit=float(info.max) + 2, dtype=dtype)


@pytest.mark.parametrize("dtype", [*ALL_INTS, *HALVES])
def test_einsum_of_the_new_dtypes(dtype):
    """Integers as NumPy's einsum (wrapping around); the 16-bit floats in float32, rounded once."""
    rng = np.random.default_rng(19)
    x, y = rand(rng, (2, 3, 4), dtype, -3, 3), rand(rng, (2, 4, 5), dtype, -3, 3)
    got = run1("einsum", {"xs": [x, y]}, {"equation": "bij,bjk->bik"})
    if dtype in HALVES:
        want = np.einsum("bij,bjk->bik", x.astype(F32), y.astype(F32)).astype(dtype)
        assert (bits(got) == bits(want)).all()
    else:
        want = np.einsum("bij,bjk->bik", x, y)
    assert_matches(got, want)
    assert_matches(run1("einsum", {"xs": [x]}, {"equation": "bij->j"}),
                   np.einsum("bij->j", x.astype(F32)).astype(dtype) if dtype in HALVES
                   else np.einsum("bij->j", x))  # fmt: skip


def test_half_gradients_of_pad_scatter_and_einsum():
    rng = np.random.default_rng(20)
    x = rng.uniform(0.5, 1.5, (3, 4))
    pairs = [(1, 2), (2, 1)]
    check_op(
        "pad",
        {"x": x},
        {"paddings": [1, 2, 2, 1], "mode": "reflect"},
        reference=lambda x, paddings, mode: np.pad(x, pairs, mode="reflect"),
        dtypes=["float64", *HALVES],
    )
    index = np.array([[2, 0, 1, 0], [1, 2, 2, 0]])
    updates = rng.uniform(0.5, 1.5, (2, 4))

    def scatter_add(x, index, updates, axis, reduction):
        out = x.copy()
        np.add.at(out, (index, np.arange(4)[None, :].repeat(2, 0)), updates)
        return out

    check_op(
        "scatter",
        {"x": x, "index": index, "updates": updates},
        {"axis": 0, "reduction": "add"},
        reference=scatter_add,
        dtypes=["float64", *HALVES],
    )
    check_op(
        "einsum",
        {"xs": [x, rng.uniform(0.5, 1.5, (4, 4))]},
        {"equation": "ij,jj->ij"},  # a diagonal: its gradient is one_hot of the dtype
        reference=lambda xs, equation: np.einsum(equation, *xs),
        dtypes=["float64", *HALVES],
    )
