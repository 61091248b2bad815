"""paddle-ops-math's CUDA kernels against NumPy on `cuda:0`: every op with a CUDA kernel, every
dtype it declares, broadcasting and empty shapes. Any fallback to a CPU kernel is an error here.
Skipped without a GPU, or when the plugin was built without CUDA."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_helpers import natives, source_manifest
from op_helpers import ALL_NUMBERS, FLOATS, HALVES, NUMBERS, assert_matches, rand
from test_cuda_build import PLUGIN
from test_elementwise import BINARY, COMPARE
from test_elementwise import SHAPES as BINARY_SHAPES
from test_fill import ALL
from test_matmul import MATMUL, np_matmul
from test_reduce import CASES as REDUCE_CASES
from test_reduce import REDUCE, reference, tolerance
from test_reduce import inputs as reduce_inputs
from test_shape import torch_flatten

import paddle_core as pc
from paddle_core.testing import run_op

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")
from paddle_ops_math import kernels as math_kernels

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.usefixtures("cuda", "fresh_warnings"),
    pytest.mark.filterwarnings("error::RuntimeWarning"),  # "running it on CPU": not the kernel
]

# NumPy reference and dtypes of each unary op (unary.pbtxt's CPU kernels).
UNARY = {
    "abs": (np.abs, NUMBERS),
    "neg": (np.negative, NUMBERS),
    "square": (np.square, NUMBERS),
    "sign": (np.sign, NUMBERS),
    "exp": (np.exp, FLOATS),
    "log": (np.log, FLOATS),
    "sqrt": (np.sqrt, FLOATS),
    "rsqrt": (lambda x: 1 / np.sqrt(x), FLOATS),
    "sin": (np.sin, FLOATS),
    "cos": (np.cos, FLOATS),
    "tanh": (np.tanh, FLOATS),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), FLOATS),
    "floor": (np.floor, FLOATS),
    "ceil": (np.ceil, FLOATS),
    "round": (np.round, FLOATS),
    "erf": (np.vectorize(__import__("math").erf, otypes=[float]), FLOATS),
}
# tested one by one below
FILL = ["scale", "cast", "fill_constant", "fill_constant_batch_size_like", "full_like", "assign"]
CORE = ["add_n", "fill_like"]  # the core's ops that every backward uses
LOGIC = ["isnan", "isinf", "isfinite", "logical_not", "logical_and", "logical_or", "logical_xor"]
SHAPE_OPS = ["reshape", "squeeze", "unsqueeze", "transpose", "concat", "split", "slice"]
SHAPE_OPS += ["slice_grad", "broadcast_to", "expand", "broadcast_to_grad"]
SHAPE_OPS += ["tile", "tile_grad", "tril", "triu", "flatten", "flatten_grad"]
SHAPE_OPS += ["stack", "stack_grad"]
MATMUL_OPS = ["matmul", "matmul_grad", "matmul_2d", "matmul_2d_grad", "rowwise_add"]
# The unary ops whose gradient kernels run on CUDA (clip's forward does not yet).
UNARY_GRAD = (set(UNARY) - {"floor", "ceil", "round", "sign"}) | {"clip"}
POSITIVE = {"log", "sqrt", "rsqrt"}  # inputs drawn from (0.1, 3)
UNARY_SHAPES = [(), (7,), (3, 4), (0, 5), (4097, 33)]
# CUDA's float math is within a few ulp of the CPU's (CUDA C Programming Guide, "Mathematical
# Functions"), not bitwise equal.
GPU_TOLERANCE = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-13, atol=1e-13)}


@pytest.fixture
def cuda():
    reason = pc.CUDA.unavailable_reason(0)
    if reason is not None:
        pytest.skip(f"no usable CUDA device: {reason}")
    if not math_kernels.built_with_cuda():
        pytest.skip("paddle-ops-math was built without CUDA")


def run_cuda(op: str, inputs: dict, attrs: dict | None = None) -> np.ndarray:
    (out,) = run_op(op, inputs, attrs, device="cuda:0")["out"]
    return out


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    tol = GPU_TOLERANCE.get(np.asarray(want).dtype.name, {})
    assert_matches(got, want, **tol)


def test_every_declared_cuda_op_is_tested_here():
    declared = set(natives(source_manifest(PLUGIN), "cuda"))
    tested = set(BINARY) | set(COMPARE) | set(UNARY) | set(FILL) | set(CORE) | set(MATMUL_OPS)
    grads = {f"{op}_grad" for op in set(BINARY) | UNARY_GRAD | set(REDUCE) | {"rowwise_add"}}
    others = {"argmax", "argmin", "clip", "where", "cumsum", "gather", "gather_grad", "one_hot"}
    others |= set(NEW_OPS)
    assert declared == tested | set(REDUCE) | grads | others | set(LOGIC) | set(SHAPE_OPS)


@pytest.mark.parametrize(("xs", "ys"), BINARY_SHAPES)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary(op, xs, ys):
    ref, dtypes = BINARY[op]
    rng = np.random.default_rng(0)
    for dtype in dtypes:
        low = 0.5 if op == "pow" else -3  # a real x ** y
        x, y = rand(rng, xs, dtype, low=low), rand(rng, ys, dtype, low=low)
        if op == "div":
            y[np.abs(y) < 0.1] = 1
        with np.errstate(all="ignore"):
            assert_close(run_cuda(op, {"x": x, "y": y}), ref(x, y))


@pytest.mark.parametrize(("xs", "ys"), BINARY_SHAPES)
@pytest.mark.parametrize("op", sorted(COMPARE))
def test_compare(op, xs, ys):
    rng = np.random.default_rng(1)
    for dtype in NUMBERS:
        x, y = rand(rng, xs, dtype, -2, 2), rand(rng, ys, dtype, -2, 2)  # ties likely
        assert_matches(run_cuda(op, {"x": x, "y": y}), COMPARE[op](x, y))


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op, shape):
    ref, dtypes = UNARY[op]
    rng = np.random.default_rng(2)
    for dtype in dtypes:
        x = rand(rng, shape, dtype, *((0.1, 3) if op in POSITIVE else (-3, 3)))
        want = np.asarray(ref(x)).astype(dtype)
        assert_close(run_cuda(op, {"x": x}), want)


def test_integer_wrap_around_and_nan_as_on_cpu():
    imin = np.iinfo(np.int32).min
    x = np.array([imin, -1, 0, np.iinfo(np.int32).max], np.int32)
    for op in ("abs", "neg", "square"):
        assert_matches(run_cuda(op, {"x": x}), run_op(op, {"x": x})["out"][0])
    assert_matches(run_cuda("add", {"x": x, "y": x}), x + x)
    nan = np.array([np.nan, 1.0, np.nan], np.float32)
    one = np.array([1.0, np.nan, 2.0], np.float32)
    assert_matches(run_cuda("maximum", {"x": nan, "y": one}), np.maximum(nan, one))
    assert_matches(run_cuda("minimum", {"x": nan, "y": one}), np.minimum(nan, one))
    half = np.array([0.5, 1.5, 2.5, -0.5, -2.5], np.float64)
    assert_matches(run_cuda("round", {"x": half}), np.round(half))  # halves to even
    assert_matches(run_cuda("sign", {"x": nan}), np.sign(nan))


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
@pytest.mark.parametrize("after", [True, False])
def test_scale(shape, after):
    for dtype in NUMBERS:
        x = rand(np.random.default_rng(3), shape, dtype)
        want = (x * 2.5 + 1.0) if after else (x + 1.0) * 2.5
        got = run_cuda("scale", {"x": x}, {"scale": 2.5, "bias": 1.0, "bias_after_scale": after})
        assert_close(got, want.astype(dtype))


@pytest.mark.parametrize("src", ALL)
def test_cast(src):
    rng = np.random.default_rng(4)
    unsigned = np.dtype(src).kind == "u"
    x = rng.integers(0, 21, (7, 3)) if unsigned else rng.uniform(-5, 5, (7, 3))
    x = x.astype(src)
    for dst in ALL:
        xs = abs(x) if np.dtype(dst).kind == "u" else x  # a negative float has no unsigned value
        assert_matches(run_cuda("cast", {"x": xs}, {"dtype": dst}), xs.astype(dst))
        assert_matches(run_cuda("cast", {"x": x[:0]}, {"dtype": dst}), x[:0].astype(dst))


def test_cast_of_floats_no_integer_holds_matches_the_cpu():
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, -3e9, 300.7, -1.5])
    for src in FLOATS:
        for dst in ALL:
            attrs = {"dtype": dst}
            (cpu,) = run_op("cast", {"x": x.astype(src)}, attrs)["out"]
            assert_matches(run_cuda("cast", {"x": x.astype(src)}, attrs), cpu)


@pytest.mark.parametrize("dtype", ALL)
def test_fill_constant_full_like_and_assign(dtype):
    for shape in ([2, 3], [2, 0, 3], [4097, 33]):
        attrs = {"shape": shape, "value": 3.0, "dtype": dtype}
        assert_matches(run_cuda("fill_constant", {}, attrs), np.full(shape, 3, dtype))
        like = np.zeros((shape[0], 1), np.float32)
        got = run_cuda("fill_constant_batch_size_like", {"input": like}, attrs)
        assert_matches(got, np.full(shape, 3, dtype))
        like = np.zeros(shape, dtype)
        assert_matches(run_cuda("full_like", {"x": like}, {"value": 1.0}), np.ones(shape, dtype))
        x = (np.arange(np.prod(shape)) % 3).astype(dtype).reshape(shape)
        assert_matches(run_cuda("assign", {"x": x}), x)


# -- gradients -----------------------------------------------------------------------------------


def grad_op_inputs(op: str, shapes: dict[str, tuple], dtype: str, rng) -> dict[str, np.ndarray]:
    """Random inputs for each input slot of grad op ``op`` (x, y, out, out_grad)."""
    proto = pc.get_registry().op(op).proto
    positive = op.split("_grad")[0] in POSITIVE or op == "pow_grad"
    low, high = (0.1, 3) if positive else (-3, 3)
    return {i.name: rand(rng, shapes[i.name], dtype, low, high) for i in proto.inputs}


def assert_same_as_cpu(op: str, inputs: dict, attrs: dict | None = None) -> None:
    """Every output of ``op`` on cuda:0 matches the CPU kernel's (checked by finite differences
    in the CPU tests)."""
    cpu = run_op(op, inputs, attrs)
    gpu = run_op(op, inputs, attrs, device="cuda:0")
    assert gpu.keys() == cpu.keys()
    for slot in cpu:
        for got, want in zip(gpu[slot], cpu[slot]):
            assert_close(got, want)


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(UNARY_GRAD))
def test_unary_grad(op, shape):
    rng = np.random.default_rng(5)
    attrs = {"min": -1.0, "max": 1.5} if op == "clip" else None
    for dtype in FLOATS:
        shapes = dict.fromkeys(("x", "out", "out_grad"), shape)
        assert_same_as_cpu(f"{op}_grad", grad_op_inputs(f"{op}_grad", shapes, dtype, rng), attrs)


@pytest.mark.parametrize(("xs", "ys"), BINARY_SHAPES)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_grad_sums_over_broadcast_dims(op, xs, ys):
    rng = np.random.default_rng(6)
    out = np.broadcast_shapes(xs, ys)
    for dtype in FLOATS:
        inputs = grad_op_inputs(f"{op}_grad", {"x": xs, "y": ys, "out_grad": out}, dtype, rng)
        if dtype == "float64":
            assert_same_as_cpu(f"{op}_grad", inputs)
            continue
        # float32 gradients summed over broadcast dims add in double on the GPU, in float32 on
        # the CPU: hold them to the float64 kernel's result, rounded once.
        want = run_op(f"{op}_grad", {k: v.astype(np.float64) for k, v in inputs.items()})
        got = run_op(f"{op}_grad", inputs, device="cuda:0")
        assert got.keys() == want.keys()
        for slot in want:
            for g, w in zip(got[slot], want[slot], strict=True):
                assert_close(g, w.astype(np.float32))


def test_binary_grad_sums_a_large_reduction_in_order():
    rng = np.random.default_rng(7)
    x, y = rand(rng, (4097, 33), "float64"), rand(rng, (1, 33), "float64")
    g = rand(rng, (4097, 33), "float64")
    (dy,) = run_op("mul_grad", {"x": x, "y": y, "out_grad": g}, device="cuda:0")["y_grad"]
    np.testing.assert_allclose(dy, (g * x).sum(axis=0, keepdims=True), rtol=1e-12)


@pytest.mark.parametrize("dtype", NUMBERS)
def test_add_n_and_fill_like(dtype):
    rng = np.random.default_rng(8)
    for shape in ((), (0, 3), (4097, 33)):
        xs = [rand(rng, shape, dtype) for _ in range(3)]
        for n in (1, 2, 3):
            assert_matches(run_cuda("add_n", {"xs": xs[:n]}), sum(xs[:n]).astype(dtype))
        got = run_cuda("fill_like", {"x": xs[0]}, {"value": 2.0})
        assert_matches(got, np.full(shape, 2, dtype))


@pytest.mark.parametrize("dtype", HALVES)
def test_add_n_of_16_bit_floats_gives_the_cpus_bits(dtype):
    """Summed in float32 in order and rounded once, as the core's CPU kernel: with more inputs
    than one launch takes (64) too, the sums carried in float32 between launches."""
    rng = np.random.default_rng(9)
    xs = [rand(rng, (4097,), dtype) for _ in range(130)]
    for n in (1, 2, 3, 64, 65, 130):
        (want,) = run_op("add_n", {"xs": xs[:n]})["out"]
        got = run_cuda("add_n", {"xs": xs[:n]})
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_a_backward_runs_compiled_on_the_gpu():
    """exp(x * y) + x: backward seeds with fill_like, sums x's two gradients with add_n."""
    prog = pc.Program()
    with pc.program_guard(prog):
        x, y = pc.data("x", [4, 3], "float64"), pc.data("y", [3], "float64")
        out = pc.ops.add(pc.ops.exp(pc.ops.mul(x, y)), x)
        grads = pc.gradients([out], [x, y])
    rng = np.random.default_rng(9)
    feed = {"x": rand(rng, (4, 3), "float64"), "y": rand(rng, (3,), "float64")}
    exe = pc.Executor("cuda:0")
    assert exe.prepare(prog, feed=feed, fetch_list=grads).compiled
    dx, dy = exe.run(prog, feed=feed, fetch_list=grads)
    e = np.exp(feed["x"] * feed["y"])
    np.testing.assert_allclose(dx, e * feed["y"] + 1, rtol=1e-13)
    np.testing.assert_allclose(dy, (e * feed["x"]).sum(axis=0), rtol=1e-13)


# -- matmul (cuBLAS) -----------------------------------------------------------------------------

MATMUL_2D = [((3, 4), (4, 5), 1, 1), ((2, 3, 4), (4, 5), 2, 1), ((2, 3, 4), (3, 4, 5), 1, 2)]
# Batches cuBLAS cannot stride through (x's batch dims broadcast in the middle): a loop of calls.
IRREGULAR = [((2, 1, 3, 4), (2, 5, 4, 2), False, False), ((3, 1, 2, 3), (1, 4, 2, 5), True, False)]


@pytest.fixture
def cublas(cuda):
    reason = math_kernels.cublas_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)


@pytest.mark.usefixtures("cublas")
@pytest.mark.parametrize(("xs", "ys", "tx", "ty"), MATMUL + IRREGULAR)
def test_matmul(xs, ys, tx, ty):
    rng = np.random.default_rng(10)
    attrs = {"transpose_x": tx, "transpose_y": ty}
    for dtype in FLOATS:
        x, y = rand(rng, xs, dtype), rand(rng, ys, dtype)
        tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else {}
        assert_matches(run_cuda("matmul", {"x": x, "y": y}, attrs), np_matmul(x, y, tx, ty), **tol)


@pytest.mark.usefixtures("cublas")
@pytest.mark.parametrize(("xs", "ys", "tx", "ty"), MATMUL + IRREGULAR)
def test_matmul_grad(xs, ys, tx, ty):
    rng = np.random.default_rng(11)
    out = np_matmul(np.zeros(xs), np.zeros(ys), tx, ty).shape
    inputs = {"x": rand(rng, xs, "float64"), "y": rand(rng, ys, "float64")}
    inputs["out_grad"] = rand(rng, out, "float64")
    assert_same_as_cpu("matmul_grad", inputs, {"transpose_x": tx, "transpose_y": ty})


@pytest.mark.usefixtures("cublas")
@pytest.mark.parametrize(("xs", "ys", "xk", "yk"), MATMUL_2D)
def test_matmul_2d_and_its_grad(xs, ys, xk, yk):
    rng = np.random.default_rng(12)
    attrs = {"x_num_col_dims": xk, "y_num_col_dims": yk}
    for dtype in FLOATS:
        x, y = rand(rng, xs, dtype), rand(rng, ys, dtype)
        assert_same_as_cpu("matmul_2d", {"x": x, "y": y}, attrs)
        (out,) = run_op("matmul_2d", {"x": x, "y": y}, attrs)["out"]
        g = rand(rng, out.shape, dtype)
        assert_same_as_cpu("matmul_2d_grad", {"x": x, "y": y, "out_grad": g}, attrs)


@pytest.mark.usefixtures("cublas")
def test_matmul_bfloat16_accumulates_in_float32():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(13)
    x, y = rand(rng, (2, 64, 256), "float32"), rand(rng, (256, 48), "float32")
    xb, yb = x.astype(ml_dtypes.bfloat16), y.astype(ml_dtypes.bfloat16)
    got = run_cuda("matmul", {"x": xb, "y": yb}).astype(np.float32)
    want = np.matmul(xb.astype(np.float32), yb.astype(np.float32))  # exact products, f32 sums
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)  # the result rounds to bfloat16


@pytest.mark.usefixtures("cublas")
def test_a_matmul_backward_runs_compiled_on_the_gpu():
    prog = pc.Program()
    with pc.program_guard(prog):
        x, w = pc.data("x", [8, 5], "float64"), pc.data("w", [5, 3], "float64")
        out = pc.ops.matmul(pc.ops.tanh(x), w)
        grads = pc.gradients([out], [x, w])
    rng = np.random.default_rng(14)
    feed = {"x": rand(rng, (8, 5), "float64"), "w": rand(rng, (5, 3), "float64")}
    exe = pc.Executor("cuda:0")
    assert exe.prepare(prog, feed=feed, fetch_list=grads).compiled
    dx, dw = exe.run(prog, feed=feed, fetch_list=grads)
    t = np.tanh(feed["x"])
    np.testing.assert_allclose(dw, t.T @ np.ones((8, 3)), rtol=1e-12)
    np.testing.assert_allclose(dx, (1 - t * t) * (np.ones((8, 3)) @ feed["w"].T), rtol=1e-12)


# -- reductions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(REDUCE))
@pytest.mark.parametrize(("shape", "axes"), REDUCE_CASES)
def test_reduce(op, shape, axes):
    rng = np.random.default_rng(15)
    for dtype in REDUCE[op][1]:
        x = reduce_inputs(rng, op, shape, dtype)
        for keepdim in (False, True):
            got = run_cuda(op, {"x": x}, {"axes": axes, "keepdim": keepdim})
            assert_matches(got, reference(op, x, axes, keepdim), **tolerance(op, x, axes))


def test_reductions_wrap_propagate_nan_and_give_identities_as_on_cpu():
    cases = [
        ("sum", np.array([2**62, 2**62, 2**62], np.int64), {}),
        ("sum", np.array([[2**30, 2**30, 3], [1, -2, 5]], np.int32), {"axes": [1]}),
        ("max", np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -1.0]], np.float32), {"axes": [1]}),
        ("min", np.where(np.arange(10000) == 7777, np.nan, np.arange(10000.0)), {}),
        ("max", np.full((2, 3), -np.inf), {"axes": [0]}),
        ("sum", np.zeros((0, 3), np.float32), {"axes": [0]}),
        ("prod", np.zeros((0, 3), np.float32), {"axes": [0]}),
        ("mean", np.zeros((0, 3), np.float32), {"axes": [0]}),
        ("sum", np.zeros((0, 3), np.int32), {}),
        ("max", np.zeros((0, 3), np.float32), {"axes": [1]}),
    ]
    for op, x, attrs in cases:
        (cpu,) = run_op(op, {"x": x}, attrs)["out"]
        assert_matches(run_cuda(op, {"x": x}, attrs), cpu)


@pytest.mark.parametrize("op", sorted(REDUCE))
@pytest.mark.parametrize(("shape", "axes"), [c for c in REDUCE_CASES if np.prod(c[0]) < 10**5])
def test_reduce_grad(op, shape, axes):
    rng = np.random.default_rng(16)
    for dtype in FLOATS:
        x = reduce_inputs(rng, op, shape, dtype)
        if op == "prod":  # a zero, and two in another row: the special cases
            x.flat[0] = 0
        attrs = {"axes": axes, "keepdim": False}
        (out,) = run_op(op, {"x": x}, attrs)["out"]
        inputs = {"x": x, "out": out, "out_grad": rand(rng, out.shape, dtype)}
        if op in ("sum", "mean", "prod"):
            del inputs["out"]
        assert_same_as_cpu(f"{op}_grad", inputs, attrs)


def test_max_grad_splits_ties_and_passes_nothing_through_nan():
    x = np.array([[1.0, 3.0, 3.0], [np.nan, 1.0, 2.0]])
    out = np.array([3.0, np.nan])
    g = np.array([1.0, 1.0])
    got = run_op("max_grad", {"x": x, "out": out, "out_grad": g}, {"axes": [1]}, "cuda:0")
    assert_matches(got["x_grad"][0], np.array([[0, 0.5, 0.5], [0, 0, 0]]))


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize(
    ("shape", "axis"), [((3, 4, 5), 0), ((3, 4, 5), -1), ((4097, 33), 0), ((3, 70001), 1), ((), 0)]
)
def test_argmax_and_argmin(op, shape, axis):
    rng = np.random.default_rng(17)
    for dtype in NUMBERS:
        x = rand(rng, shape, dtype, -2, 2)  # ties likely: the first index wins
        for keepdim in (False, True):
            got = run_cuda(op, {"x": x}, {"axis": axis, "keepdim": keepdim})
            want = getattr(np, op)(x, axis=axis if x.ndim else None)
            assert_matches(
                got,
                np.expand_dims(want, axis).astype(np.int64)
                if keepdim and x.ndim
                else np.asarray(want, np.int64),
            )


def test_argmax_takes_the_first_nan():
    x = np.arange(10000.0)
    x[[7777, 8888]] = np.nan
    for op in ("argmax", "argmin"):
        assert run_cuda(op, {"x": x}, {"axis": 0}) == 7777


def test_rowwise_add_and_its_grad_run_adds_kernels():
    rng = np.random.default_rng(18)
    for dtype in NUMBERS:
        x, b = rand(rng, (7, 5), dtype), rand(rng, (5,), dtype)
        assert_matches(run_cuda("rowwise_add", {"x": x, "b": b}), x + b)
    for dtype in FLOATS:
        x, b, g = rand(rng, (7, 5), dtype), rand(rng, (5,), dtype), rand(rng, (7, 5), dtype)
        assert_same_as_cpu("rowwise_add_grad", {"x": x, "b": b, "out_grad": g})


def test_clip_as_on_cpu():
    rng = np.random.default_rng(19)
    bounds = [(-1.0, 1.5), (-0.5, 0.5), (-np.inf, 0.0), (2.5, np.inf), (1e30, np.inf)]
    for dtype in NUMBERS:
        x = rand(rng, (4097, 3), dtype)
        if dtype in FLOATS:
            x[0, 0] = np.nan
        for lo, hi in bounds:
            attrs = {"min": lo, "max": hi}
            (cpu,) = run_op("clip", {"x": x}, attrs)["out"]
            assert_matches(run_cuda("clip", {"x": x}, attrs), cpu)


@pytest.mark.parametrize("op", LOGIC)
def test_predicates_and_logic_as_on_cpu(op):
    rng = np.random.default_rng(20)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5])
    if op.startswith("logical"):
        cases = [{"x": rng.random((4097, 3)) < 0.5}]
        if op != "logical_not":
            cases = [
                {"x": rng.random(xs) < 0.5, "y": rng.random(ys) < 0.5} for xs, ys in BINARY_SHAPES
            ]
    else:
        cases = [{"x": special.astype(d)} for d in FLOATS] + [
            {"x": rand(rng, (7, 3), d)} for d in NUMBERS
        ]
    for inputs in cases:
        (cpu,) = run_op(op, inputs)["out"]
        assert_matches(run_cuda(op, inputs), cpu)


@pytest.mark.parametrize("dtype", ALL)
def test_where_as_on_cpu(dtype):
    rng = np.random.default_rng(21)
    shapes = [((4097, 3), (4097, 3), (4097, 3)), ((3, 1), (1, 4), (4,)), ((2, 1, 3), (5, 1), ())]
    for cs, xs, ys in shapes:
        inputs = {"cond": rng.random(cs) < 0.5}
        inputs["x"] = np.asarray(rng.integers(0, 9, xs)).astype(dtype)
        inputs["y"] = np.asarray(rng.integers(0, 9, ys)).astype(dtype)
        (cpu,) = run_op("where", inputs)["out"]
        assert_matches(run_cuda("where", inputs), cpu)


def run_both(op: str, inputs: dict, attrs: dict | None, slot: str = "out") -> list[np.ndarray]:
    """``op``'s outputs on cuda:0, checked equal to the CPU kernel's."""
    gpu = run_op(op, inputs, attrs, device="cuda:0")[slot]
    for got, want in zip(gpu, run_op(op, inputs, attrs)[slot]):
        assert_close(got, want)
    return gpu


@pytest.mark.parametrize("dtype", ALL)
def test_reshape_squeeze_unsqueeze_and_transpose(dtype):
    rng = np.random.default_rng(22)
    x = np.asarray(rng.integers(0, 9, (3, 1, 4, 5))).astype(dtype)
    assert_matches(run_cuda("reshape", {"x": x}, {"shape": [6, -1]}), x.reshape(6, -1))
    assert_matches(run_cuda("squeeze", {"x": x}, {"axes": [1]}), x.squeeze(1))
    assert_matches(run_cuda("unsqueeze", {"x": x}, {"axes": [0]}), x[None])
    for perm in ([], [0, 1, 2, 3], [3, 2, 1, 0], [0, 2, 3, 1], [-1, 0, 2, 1]):
        want = np.transpose(x, perm or None)
        assert_matches(run_cuda("transpose", {"x": x}, {"perm": perm}), want)
    big = np.asarray(rng.integers(0, 9, (257, 129))).astype(dtype)
    assert_matches(run_cuda("transpose", {"x": big}, {"perm": [1, 0]}), big.T)
    empty = np.zeros((0, 3), dtype)
    assert run_cuda("transpose", {"x": empty}, {"perm": [1, 0]}).shape == (3, 0)


@pytest.mark.parametrize("dtype", ALL)
def test_flatten_and_its_gradient(dtype):
    x = np.asarray(np.random.default_rng(26).integers(0, 9, (2, 3, 4, 5))).astype(dtype)
    for start, stop in ((1, -1), (0, 1), (-3, -2), (2, 2)):
        (got,) = run_both("flatten", {"x": x}, {"start_axis": start, "stop_axis": stop})
        assert_matches(got, torch_flatten(x, start, stop))
    if dtype in FLOATS + HALVES:
        inputs = {"x": x, "out_grad": x.reshape(2, 60)[:, ::-1].copy()}
        (got,) = run_both("flatten_grad", inputs, {}, "x_grad")
        assert_matches(got, inputs["out_grad"].reshape(x.shape))


@pytest.mark.parametrize("dtype", ALL)
def test_concat_and_split_along_any_axis(dtype):
    rng = np.random.default_rng(23)
    t = np.asarray(rng.integers(0, 9, (4, 6, 5))).astype(dtype)
    for axis in (0, 1, 2, -1):
        parts = np.split(t, [1, 3], axis)  # one of them may be empty: not here, below
        (got,) = run_both("concat", {"xs": parts}, {"axis": axis})
        assert_matches(got, t)
        got = run_both("split", {"x": t}, {"sections": [1, 2, -1], "axis": axis}, "outs")
        for g, w in zip(got, parts):
            assert_matches(g, w)
    (got,) = run_both("concat", {"xs": [t, t[:0]]}, {"axis": 0})
    assert_matches(got, t)


@pytest.mark.parametrize("dtype", ALL)
def test_stack_along_any_axis_and_its_gradient(dtype):
    rng = np.random.default_rng(27)
    parts = [np.asarray(rng.integers(0, 9, (4, 5))).astype(dtype) for _ in range(3)]
    for axis in (0, 1, 2, -1, -3):
        (got,) = run_both("stack", {"xs": parts}, {"axis": axis})
        assert_matches(got, np.stack(parts, axis))
        if dtype in FLOATS + HALVES:
            got = run_both(
                "stack_grad", {"out_grad": np.stack(parts, axis)}, {"axis": axis}, "xs_grad"
            )
            for g, w in zip(got, parts):
                assert_matches(g, w)
    scalars = [np.asarray(k).astype(dtype) for k in range(3)]
    assert_matches(run_both("stack", {"xs": scalars}, {"axis": 0})[0], np.stack(scalars))


@pytest.mark.parametrize("dtype", ALL)
def test_slice_and_broadcast_to(dtype):
    rng = np.random.default_rng(24)
    x = np.asarray(rng.integers(0, 9, (5, 7, 3))).astype(dtype)
    cases = [
        ({"axes": [0], "starts": [1], "ends": [4]}, x[1:4]),
        ({"axes": [1, 2], "starts": [-5, 0], "ends": [100, 2]}, x[:, -5:100, 0:2]),
        ({"axes": [1], "starts": [6], "ends": [-100], "steps": [-2]}, x[:, 6:-100:-2]),
        ({"axes": [0, 2], "starts": [0, 2], "ends": [5, 0], "steps": [3, -1]}, x[0:5:3, :, 2:0:-1]),
        ({"axes": [0], "starts": [3], "ends": [3]}, x[3:3]),
    ]
    for attrs, want in cases:
        assert_matches(run_cuda("slice", {"x": x}, attrs), want)
    for shape, target in [((3,), [4, 3]), ((5, 1), [2, 5, 4]), ((), [3]), ((1, 1), [0, 2])]:
        v = np.asarray(rng.integers(0, 9, shape)).astype(dtype)
        for op in ("broadcast_to", "expand"):
            got = run_cuda(op, {"x": v}, {"shape": target})
            assert_matches(got, np.broadcast_to(v, target))


@pytest.mark.parametrize("dtype", FLOATS)
def test_slice_grad_and_broadcast_to_grad_as_on_cpu(dtype):
    rng = np.random.default_rng(25)
    x = rand(rng, (5, 7, 3), dtype)
    attrs = {"axes": [1, 2], "starts": [6, 0], "ends": [-100, 2], "steps": [-2, 1]}
    g = rand(rng, x[:, 6:-100:-2, 0:2].shape, dtype)
    (got,) = run_both("slice_grad", {"x": x, "out_grad": g}, attrs, "x_grad")
    want = np.zeros_like(x)
    want[:, 6:-100:-2, 0:2] = g
    assert_matches(got, want)
    acc = rand(rng, x.shape, dtype)  # x_grad_acc: added to, not zero-filled
    (got,) = run_both("slice_grad", {"x": x, "out_grad": g, "x_grad_acc": acc}, attrs, "x_grad")
    assert_matches(got, (acc.astype(np.float64) + want.astype(np.float64)).astype(dtype))
    for shape, target in [((3,), [4, 3]), ((5, 1), [2, 5, 4]), ((), [3]), ((1, 3), [0, 3])]:
        v, g = rand(rng, shape, dtype), rand(rng, target, dtype)
        (got,) = run_both("broadcast_to_grad", {"x": v, "out_grad": g}, {}, "x_grad")
        assert got.shape == v.shape


@pytest.mark.parametrize("dtype", ALL)
def test_tile_tril_and_triu(dtype):
    rng = np.random.default_rng(26)
    x = np.asarray(rng.integers(1, 9, (2, 3, 4))).astype(dtype)
    for reps in ([2, 1, 3], [3], [2, 1, 1, 2], [0, 2], []):
        assert_matches(run_cuda("tile", {"x": x}, {"repeat_times": reps}), np.tile(x, reps))
    for diagonal in (-4, -1, 0, 2, 9):
        assert_matches(run_cuda("tril", {"x": x}, {"diagonal": diagonal}), np.tril(x, diagonal))
        assert_matches(run_cuda("triu", {"x": x}, {"diagonal": diagonal}), np.triu(x, diagonal))
    empty = np.zeros((3, 0), dtype)
    assert run_cuda("tril", {"x": empty}, {}).shape == (3, 0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_tile_grad_as_on_cpu(dtype):
    rng = np.random.default_rng(27)
    for shape, reps in [((2, 3), [2, 3]), ((3,), [2, 1, 2]), ((), [4]), ((2, 1), [0, 2])]:
        x = rand(rng, shape, dtype)
        g = rand(rng, np.tile(x, reps).shape, dtype)
        (got,) = run_both("tile_grad", {"x": x, "out_grad": g}, {"repeat_times": reps}, "x_grad")
        assert got.shape == x.shape


@pytest.mark.parametrize("dtype", NUMBERS)
def test_cumsum_as_on_cpu(dtype):
    rng = np.random.default_rng(28)
    for shape, axis in [((7,), 0), ((3, 4, 5), 1), ((3, 4, 5), -1), ((), 0), ((0, 3), 0)]:
        x = rand(rng, shape, dtype)
        for exclusive in (False, True):
            for reverse in (False, True):
                attrs = {"axis": axis, "exclusive": exclusive, "reverse": reverse}
                run_both("cumsum", {"x": x}, attrs)


@pytest.mark.parametrize("dtype", ALL)
def test_gather_and_one_hot_as_on_cpu(dtype):
    rng = np.random.default_rng(29)
    x = np.asarray(rng.integers(0, 9, (5, 4, 3))).astype(dtype)
    for index, axis in [([4, -1, 0, 0], 0), ([[1, 3], [-4, 2]], 1), (2, -1)]:
        index = np.asarray(index)
        assert_matches(
            run_cuda("gather", {"x": x, "index": index}, {"axis": axis}),
            np.take(x, index, axis=axis),
        )
    with pytest.raises(pc.KernelError, match=r"index 5 \(at flat position 1\) is out of range"):
        run_cuda("gather", {"x": x, "index": np.array([0, 5])}, {})
    index = np.array([[0, 3], [2, 1]], np.int32)
    got = run_cuda("one_hot", {"index": index}, {"depth": 4, "dtype": dtype})
    assert_matches(got, (index[..., None] == np.arange(4)).astype(dtype))
    with pytest.raises(pc.KernelError, match=r"index 4 \(at flat position 0\) is out of range"):
        run_cuda("one_hot", {"index": np.array([4])}, {"depth": 4})


@pytest.mark.parametrize("dtype", FLOATS)
def test_gather_grad_as_on_cpu(dtype):
    rng = np.random.default_rng(30)
    x = rand(rng, (5, 4, 3), dtype)
    index = np.array([[3, 0], [3, -1]])  # 3 and -1 are one row: three slices add up there
    g = rand(rng, (5, 2, 2, 3), dtype)
    run_both("gather_grad", {"x": x, "index": index, "out_grad": g}, {"axis": 1}, "x_grad")


# The dtypes issue 12 added (every integer width, float16 and bfloat16), a few ops of each
# family: the CUDA kernels compute as the CPU ones (functors.hpp; the 16-bit floats in float32,
# rounded once), so they agree within the dtype's tolerance (exactly for integers and bool).
NEW_DTYPE_CASES = (
    [
        (op, dtype)
        for dtype in ("int8", "uint16", "uint64", "float16", "bfloat16")
        for op in ("add", "mul", "div", "pow", "mod", "maximum", "less", "sum", "max", "argmax")
    ]
    + [
        (op, dtype)
        for dtype in ("float16", "bfloat16")
        for op in ("exp", "sigmoid", "mean", "prod", "cast", "matmul", "mul_grad", "exp_grad")
    ]
    + [("max", "bool"), ("min", "bool")]
)


@pytest.mark.parametrize(("op", "dtype"), NEW_DTYPE_CASES)
def test_the_new_dtypes_as_on_cpu(op, dtype):
    rng = np.random.default_rng(31)
    x, y = rand(rng, (6, 33), dtype, 1, 4), rand(rng, (33,), dtype, 1, 4)
    if op in ("sum", "max", "min", "mean", "prod"):
        run_both(op, {"x": x}, {"axes": [1]})
    elif op == "argmax":
        run_both(op, {"x": x}, {"axis": 1})
    elif op == "cast":
        run_both(op, {"x": rand(rng, (6, 33), "float32", -70000, 70000)}, {"dtype": dtype})
    elif op == "matmul":
        run_both(op, {"x": x, "y": rand(rng, (33, 5), dtype)}, None)
    elif op == "exp_grad":
        run_both(op, {"out": x, "out_grad": x}, None, "x_grad")
    elif op == "mul_grad":
        run_both(op, {"x": x, "y": y, "out_grad": x}, None, "x_grad")
    elif op in ("exp", "sigmoid"):
        run_both(op, {"x": x}, None)
    else:
        run_both(op, {"x": x, "y": y}, None)


# The CUDA kernels of range, shape, size, pad, gather_nd and the scatters (sort, argsort, topk
# and einsum run on the CPU there).
NEW_OPS = ["range", "shape", "size", "pad", "gather_nd", "gather_nd_grad", "scatter", "scatter_nd"]


@pytest.mark.parametrize("dtype", ALL_NUMBERS)
def test_range_shape_and_size_as_on_cpu(dtype):
    down = (9, 0, -2) if dtype.startswith("u") else (5, -3, -2)
    for start, limit, delta in [(0, 10, 1), down, (1, 1, 1)]:
        attrs = {"start": start, "limit": limit, "delta": delta, "dtype": dtype}
        run_both("range", {}, attrs)
    x = np.zeros((2, 0, 3), dtype)
    run_both("shape", {"x": x}, {"start": 1, "end": 2**63 - 1})
    run_both("size", {"x": x}, {})


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_as_on_cpu(dtype, mode):
    x = np.asarray(np.random.default_rng(31).integers(0, 9, (3, 4, 5))).astype(dtype)
    for paddings in ([1, 2, 0, 0, 3, 1], [-1, 2, 5, 6, 0, -2]):
        run_both("pad", {"x": x}, {"paddings": paddings, "mode": mode, "value": 1.0})


@pytest.mark.parametrize("dtype", ALL)
def test_gather_nd_and_scatters_as_on_cpu(dtype):
    rng = np.random.default_rng(32)
    x = np.asarray(rng.integers(0, 9, (4, 3, 5))).astype(dtype)
    index = np.array([[[0, 1], [3, -1]], [[2, 2], [0, 1]]])
    run_both("gather_nd", {"x": x, "index": index}, {})
    run_both("gather_nd", {"x": x, "index": index[..., :1]}, {"batch_dims": 0})
    for reduction in ("none", "add", "mul", "max", "min"):
        updates = np.asarray(rng.integers(0, 9, (2, 2, 5))).astype(dtype)
        inputs = {"x": x, "index": index, "updates": updates}
        run_both("scatter_nd", inputs, {"reduction": reduction})
        element = rng.integers(-4, 4, size=(6, 3, 5))
        inputs = {"x": x, "index": element, "updates": rand(rng, (6, 3, 5), dtype)}
        run_both("scatter", inputs, {"axis": 0, "reduction": reduction})
    with pytest.raises(pc.KernelError, match=r"index 4 \(at flat position 2\) is out of range"):
        run_cuda("gather_nd", {"x": x, "index": np.array([[0], [1], [4]])}, {})


@pytest.mark.parametrize("dtype", FLOATS)
def test_gather_nd_grad_as_on_cpu(dtype):
    rng = np.random.default_rng(33)
    x = rand(rng, (2, 4, 3), dtype)
    index = np.array([[[1], [1], [3]], [[0], [-1], [2]]])
    g = rand(rng, (2, 3, 3), dtype)
    inputs = {"x": x, "index": index, "out_grad": g}
    run_both("gather_nd_grad", inputs, {"batch_dims": 1}, "x_grad")
