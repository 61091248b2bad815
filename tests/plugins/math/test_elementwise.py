"""paddle-ops-math elementwise binary ops and comparisons against NumPy; their gradients."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import FLOATS, NUMBERS, assert_matches, check_grad, rand, run1, run_op

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

BINARY = {
    "add": (np.add, NUMBERS),
    "sub": (np.subtract, NUMBERS),
    "mul": (np.multiply, NUMBERS),
    "div": (np.divide, FLOATS),
    "pow": (np.power, FLOATS),
    "mod": (np.mod, NUMBERS),
    "maximum": (np.maximum, NUMBERS),
    "minimum": (np.minimum, NUMBERS),
}
COMPARE = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}
# (x shape, y shape): same, scalar either side, row and column broadcasts, both-sided
# broadcast, batch dims, and empty tensors.
SHAPES = [
    ((3, 4), (3, 4)),
    ((3, 4), ()),
    ((), (3, 4)),
    ((3, 4), (4,)),
    ((3, 1), (1, 4)),
    ((2, 3, 4), (3, 1)),
    ((2, 1, 4, 5), (3, 1, 5)),
    ((0, 4), (4,)),
    ((3, 0), (3, 1)),
    ((4097, 33), (33,)),  # large enough to split across threads
]


def inputs(rng, op, xs, ys, dtype):
    x, y = rand(rng, xs, dtype), rand(rng, ys, dtype)
    if op == "pow":
        x = np.abs(x) + np.asarray(0.5, dtype)  # real results only
    if op in ("div", "mod") or (op == "pow" and dtype in ("int32", "int64")):
        y = np.where(y == 0, np.asarray(1, dtype), y)
    return x, y


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize(("xs", "ys"), SHAPES)
def test_binary_matches_numpy(op, xs, ys):
    reference, dtypes = BINARY[op]
    rng = np.random.default_rng(0)
    for dtype in dtypes:
        x, y = inputs(rng, op, xs, ys, dtype)
        assert_matches(
            run1(op, {"x": x, "y": y}), reference(x, y), rtol=1e-5 if op == "pow" else None
        )


@pytest.mark.parametrize("op", COMPARE)
@pytest.mark.parametrize(("xs", "ys"), SHAPES[:7])
def test_comparisons_give_bool(op, xs, ys):
    rng = np.random.default_rng(1)
    for dtype in NUMBERS:
        x, y = rand(rng, xs, dtype, -2, 2), rand(rng, ys, dtype, -2, 2)  # plenty of ties
        assert_matches(run1(op, {"x": x, "y": y}), COMPARE[op](x, y))


def test_non_contiguous_inputs_are_read_correctly():
    rng = np.random.default_rng(2)
    x = rand(rng, (5, 4), "float32").T  # a transposed view
    y = rand(rng, (8, 5), "float32")[::2]  # a strided view
    assert not x.flags.c_contiguous and not y.flags.c_contiguous
    assert_matches(run1("add", {"x": x, "y": y}), x + y)


def test_nan_propagates_through_maximum_and_minimum():
    x = np.array([np.nan, 1.0, 2.0], np.float32)
    y = np.array([0.0, np.nan, 1.0], np.float32)
    assert_matches(run1("maximum", {"x": x, "y": y}), np.maximum(x, y))
    assert_matches(run1("minimum", {"x": x, "y": y}), np.minimum(x, y))


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize(("xs", "ys"), [((3, 4), (3, 4)), ((2, 3, 4), (3, 1)), ((3, 1), (1, 4))])
def test_binary_gradients(op, xs, ys):
    rng = np.random.default_rng(3)
    x, y = inputs(rng, op, xs, ys, "float64")
    if op in ("maximum", "minimum"):
        y = y + 0.25  # no ties: the gradient is not defined there
    check_grad(op, {"x": x, "y": y}, rtol=1e-6, atol=1e-9)


def test_mismatched_shapes_are_refused_when_appended():
    import paddle_core as pc

    with pc.program_guard(pc.Program()):
        with pytest.raises(pc.ShapeError, match=r"op 'add' .* cannot be broadcast together"):
            pc.ops.add(pc.data("a", [3, 4]), pc.data("b", [3, 5]))
        with pytest.raises(pc.ShapeError, match="inputs must share one dtype"):
            pc.ops.add(pc.data("c", [3]), pc.data("d", [3], "float64"))


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_overflow_wraps_like_numpy(op, dtype):
    info = np.iinfo(dtype)
    x = np.array([info.max, info.min, info.max, -1, info.min], dtype)
    y = np.array([1, -1, info.max, info.min, info.min], dtype)
    with np.errstate(over="ignore"):
        want = BINARY[op][0](x, y)
    assert_matches(run1(op, {"x": x, "y": y}), want)


@pytest.mark.parametrize("dtype", FLOATS)
def test_pow_gradients_at_zero_and_negative_bases_are_pytorchs(dtype):
    """d(x^y)/dy = x^y ln x is NaN at a negative base and -inf at 0 with y < 0; 0 only where
    PyTorch's limit is (x == 0 with y >= 0; for x, y == 0). Summed under broadcasting, a NaN
    stays NaN rather than adding up to a plausible finite number."""
    x = np.array([-2, -0.5, 0, 0, 0, 0.5, 2], dtype)
    y = np.array([1.5, 2, 2, -1, 0, 0, 3], dtype)
    g = np.full(x.shape, 2, dtype)
    with np.errstate(all="ignore"):
        want_x = np.where(y == 0, 0, g * y * x ** (y - 1)).astype(dtype)
        want_y = np.where((x == 0) & (y >= 0), 0, g * x**y * np.log(x)).astype(dtype)
    got = run_op("pow_grad", {"x": x, "y": y, "out_grad": g})
    np.testing.assert_allclose(got["x_grad"][0], want_x, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(got["y_grad"][0], want_y, rtol=1e-6, equal_nan=True)
    assert np.isnan(want_y[:2]).all() and want_y[3] == -np.inf  # the cases the test is about
    broadcast = run_op("pow_grad", {"x": x[:2], "y": y[:1], "out_grad": g[:2]})
    assert np.isnan(broadcast["y_grad"][0]).all()
    try:
        import torch
    except ImportError:
        return
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    torch.pow(tx, ty).backward(torch.tensor(g))
    np.testing.assert_allclose(got["x_grad"][0], tx.grad.numpy(), rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(got["y_grad"][0], ty.grad.numpy(), rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_mod_of_special_values_is_numpys(dtype, avx2_path):
    """The sign of y, a zero with y's sign, NaN for y == 0 and for an infinite x, x itself (or
    y's infinity) for an infinite y: NumPy's npy_divmod, case by case."""
    special = [0.0, -0.0, 1.5, -1.5, 3.0, -3.0, 7.25, -7.25, np.inf, -np.inf, np.nan, 1e30, -1e-30]
    x, y = np.meshgrid(np.array(special, dtype), np.array(special, dtype))
    with np.errstate(all="ignore"):
        want = np.mod(x, y)
    got = run1("mod", {"x": x, "y": y})
    np.testing.assert_array_equal(got, want)  # bit for bit, NaN in the same places
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_float32_mod_is_exact_at_every_magnitude(avx2_path):
    """float32 mod is exact, as NumPy's is, bit for bit: quotients from below 1 to beyond
    2^29 (where the kernel leaves its double-precision path for fmod), denormals, both signs,
    and quotients just below and above whole numbers; and with a broadcast y."""
    rng = np.random.default_rng(11)
    bits = rng.integers(0, 2**32, (2, 400_000), dtype=np.uint64).astype(np.uint32)
    x, y = bits.view(np.float32)
    near = rng.integers(-40, 8, y.size).astype(np.int32)  # y within 2^-8 .. 2^40 of x
    with np.errstate(all="ignore"):  # NaN and inf bit patterns: dropped below
        y = np.ldexp(np.frexp(y)[0], np.frexp(x)[1] + near).astype(np.float32)
    whole = np.float32(3.0) * np.arange(1, 1001, dtype=np.float32)  # x / y at whole numbers
    x = np.concatenate([x, whole, np.nextafter(whole, 0), np.nextafter(whole, 1e9)])
    y = np.concatenate([y, np.full(3000, 3.0, np.float32)])
    keep = np.isfinite(x) & np.isfinite(y) & (y != 0)
    x, y = x[keep], y[keep]
    got = run1("mod", {"x": x, "y": y})
    np.testing.assert_array_equal(got.view(np.uint32), np.mod(x, y).view(np.uint32))
    for scalar in (np.float32(-2.75), np.float32(1e-30)):
        got = run1("mod", {"x": x, "y": np.array([scalar])})
        np.testing.assert_array_equal(got.view(np.uint32), np.mod(x, scalar).view(np.uint32))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_mod_is_numpys_and_by_zero_gives_zero(dtype):
    info = np.iinfo(dtype)
    special = np.array([0, 1, -1, 2, -2, 7, -7, info.max, info.min], dtype)
    x, y = np.meshgrid(special, special)
    with np.errstate(all="ignore"):
        want = np.mod(x, y)  # 0 where y == 0 (NumPy warns), and for the minimum % -1
    assert_matches(run1("mod", {"x": x, "y": y}), want)
    assert (want[special == 0] == 0).all()
