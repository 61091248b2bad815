"""paddle-ops-math unary ops against NumPy, the float32 exp/tanh/sigmoid/log/sin/cos accuracy,
gradients.

The accuracy tests measure the largest error, in float32 ulps, of the float32 exp, tanh,
sigmoid, log, sin and cos kernels against float64 references over a few million points (dense
ranges, random bit patterns, every exponent, the neighbourhoods of the thresholds, special
values), on both code paths: the AVX2+FMA loops (where the CPU has them; elsewhere those tests
skip) and the portable C++ ones (PADDLE_OPS_MATH_DISABLE_AVX2=1). The bounds are those stated
in src/unary_avx2.cpp.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from op_helpers import (
    FLOATS,
    INTS,
    NUMBERS,
    assert_matches,
    check_grad,
    pc,
    rand,
    run1,
    run_op,
)

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")


def sigmoid64(x):
    """1 / (1 + e^-x) in float64, without overflow."""
    e = np.exp(-np.abs(x))
    return np.where(x < 0, e, 1.0) / (1.0 + e)


# op: (NumPy reference, dtypes, input range)
UNARY = {
    "abs": (np.abs, NUMBERS, (-3, 3)),
    "neg": (np.negative, NUMBERS, (-3, 3)),
    "exp": (np.exp, FLOATS, (-10, 10)),
    "log": (np.log, FLOATS, (0.01, 10)),
    "sqrt": (np.sqrt, FLOATS, (0, 10)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), FLOATS, (0.01, 10)),
    "square": (np.square, NUMBERS, (-3, 3)),
    "sin": (np.sin, FLOATS, (-7, 7)),
    "cos": (np.cos, FLOATS, (-7, 7)),
    "tanh": (np.tanh, FLOATS, (-10, 10)),
    "sigmoid": (lambda x: sigmoid64(x).astype(x.dtype), FLOATS, (-20, 20)),
    "floor": (np.floor, FLOATS, (-5, 5)),
    "ceil": (np.ceil, FLOATS, (-5, 5)),
    "round": (np.round, FLOATS, (-5, 5)),
    "sign": (np.sign, NUMBERS, (-3, 3)),
    "erf": (lambda x: np.vectorize(math.erf, otypes=[x.dtype])(x), FLOATS, (-4, 4)),
}
# Shapes: a matrix, a scalar, empty tensors, an odd length (vector tail), a size that is
# split across threads.
SHAPES = [(3, 4), (), (0,), (3, 0), (37,), (4097, 33)]


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("shape", SHAPES)
def test_unary_matches_numpy(op, shape, avx2_path):
    reference, dtypes, (low, high) = UNARY[op]
    rng = np.random.default_rng(0)
    for dtype in dtypes:
        x = rand(rng, shape, dtype, low, high)
        assert_matches(run1(op, {"x": x}), reference(x))


@pytest.mark.parametrize("op", ["abs", "neg", "square"])
@pytest.mark.parametrize("dtype", INTS)
def test_integer_results_wrap_like_numpy(op, dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, -1, 0, 1, info.max, info.max // 2 + 7], dtype)
    with np.errstate(over="ignore"):
        assert_matches(run1(op, {"x": x}), UNARY[op][0](x))


@pytest.mark.parametrize("op", UNARY)
def test_non_contiguous_inputs(op):
    reference, dtypes, (low, high) = UNARY[op]
    rng = np.random.default_rng(1)
    for dtype in dtypes:
        for x in (
            rand(rng, (9, 5), dtype, low, high).T,  # a transposed view
            rand(rng, (18, 5), dtype, low, high)[::2],  # a strided view
        ):
            assert not x.flags.c_contiguous
            assert_matches(run1(op, {"x": x}), reference(x))


VECTORISED = ["exp", "tanh", "sigmoid", "log", "sin", "cos", "erf"]


def position_input(op: str) -> np.ndarray:
    """100,003 floats for ``op``, with the lanes that take another route scattered among the
    rest: log's non-positive, denormal and non-finite x, sin's and cos's |x| >= 2^24 (done in
    scalar code), infinities and NaN."""
    rng = np.random.default_rng(2)
    if op == "log":
        x = np.exp(rng.uniform(-80, 80, 100_003)).astype(np.float32)
        odd = [0.0, -0.0, -1.0, 1e-40, 1e-45, np.inf, -np.inf, np.nan, 3e38]
    else:
        x = rng.uniform(-20, 20, 100_003).astype(np.float32)
        odd = [2.0**24, -3e7, 1e30, np.inf, -np.inf, np.nan, -0.0]
    if op in ("log", "sin", "cos"):
        x[::97] = np.resize(np.array(odd, np.float32), x[::97].size)
    return x


@pytest.mark.parametrize("op", VECTORISED)
def test_results_do_not_depend_on_position(op, avx2_path):
    """Vector body, masked tail, unaligned starts and thread splits all give the same bits;
    lengths 0 to 40 cover every tail."""
    x = position_input(op)
    whole = run1(op, {"x": x})
    for start in range(9):
        for n in (0, 1, 7, 8, 9, 15, 16, 17, 33):
            np.testing.assert_array_equal(
                run1(op, {"x": x[start : start + n]}), whole[start : start + n]
            )
    for n in range(41):
        np.testing.assert_array_equal(run1(op, {"x": x[90 : 90 + n]}), whole[90 : 90 + n])
    prog = pc.Program()
    with pc.program_guard(prog):
        out = getattr(pc.ops, op)(pc.data("x", [x.size]))
    for threads in (1, 2, 3):
        (got,) = pc.Executor(num_threads=threads).run(prog, feed={"x": x}, fetch_list=[out])
        np.testing.assert_array_equal(got, whole)


# -- float32 accuracy ------------------------------------------------------------------------

# Max error in float32 ulps. AVX2: as stated in src/unary_avx2.cpp. Portable: the C library's
# expf/tanhf/logf/sinf/cosf (within 1, 2, 1, 1, 1 ulp in glibc) plus, for sigmoid, an add and
# a division.
BOUNDS = {
    "avx2": {"exp": 1.05, "tanh": 1.5, "sigmoid": 2.5, "log": 0.75, "sin": 0.501, "cos": 0.501}
    | {"erf": 1.4},
    "portable": {"exp": 1.0, "tanh": 2.5, "sigmoid": 3.0, "log": 1.0, "sin": 1.0, "cos": 1.0}
    | {"erf": 1.0},
}
REFERENCES = {
    "exp": np.exp,
    "tanh": np.tanh,
    "sigmoid": sigmoid64,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
}
# The float below 2^24 closest to a multiple of pi/2 (4.2e-9 from 161 pi/2): the hardest
# argument reduction sin and cos meet before they switch to scalar code at 2^24.
CLOSEST_TO_HALF_PI_MULTIPLE = float.fromhex("0x1.f9cbe2p+7")
# Where each function changes regime: overflow, the normal/denormal boundary, underflow to 0,
# tanh's switch between its two formulas and its saturation to 1; log's switch of m - 1 at
# sqrt(1/2) and sqrt(2) (at two exponents), 1 and 2, the smallest normal and the largest
# floats; sin's and cos's multiples of pi/2 and the switch to scalar code at 2^24.
THRESHOLDS = {
    "exp": [88.72283935546875, -87.33654475, -103.972, 0.5, -0.5],
    "tanh": [0.625, 9.01, 0.0004, 44.0],
    "sigmoid": [87.33654475, 88.72283935546875, 103.972, 16.6, 0.5],
    "log": [1.0, 0.70710677, 1.4142135, 2.0, 2.0**-50 * 1.4142135, 1.1754944e-38, 3.4028235e38],
    "sin": [np.pi, np.pi / 2, 3 * np.pi / 2, CLOSEST_TO_HALF_PI_MULTIPLE, 8192 * np.pi, 2.0**24],
    "cos": [np.pi, np.pi / 2, 3 * np.pi / 2, CLOSEST_TO_HALF_PI_MULTIPLE, 8192 * np.pi, 2.0**24],
    "erf": [1.0, 3.92, 10.253, 1e-3, 1e-30],  # its two formulas; where it rounds to 1
}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, -1.1754942e-38]
SPECIAL += [3.4028235e38, -3.4028235e38, 1.0, -1.0]


def accuracy_points(op: str) -> np.ndarray:
    """About 3.5M float32 points covering ``op``'s interesting range (log, sin, cos: 6M to
    7M, with every exponent and sin's and cos's hardest arguments)."""
    rng = np.random.default_rng(3)
    f32 = np.float32
    bits = rng.integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    parts = [
        np.linspace(-110, 110, 1_500_000, dtype=f32),
        np.linspace(-1, 1, 500_000, dtype=f32),
        bits.view(f32),  # every magnitude, denormals, infinities and NaNs included
        np.array(SPECIAL, f32),
    ]
    if op in ("log", "sin", "cos"):
        # 1M positive floats uniform in their bit patterns: log-uniform over the whole
        # range, about 3,900 for each exponent (denormals too), and their negatives.
        every = rng.integers(1, 0x7F800000, 1_000_000, dtype=np.uint32).view(f32)
        parts += [every, -every]
    if op in ("sin", "cos"):
        # A dense sweep of |x| <= 8192 pi, and the floats nearest to each multiple of pi/2
        # there (where r = x - n pi/2 cancels most), two either side of them included.
        parts.append(np.linspace(-8192 * np.pi, 8192 * np.pi, 1_000_001).astype(f32))
        nearest = (np.arange(-16384, 16385) * (np.pi / 2)).astype(f32).view(np.int32)
        parts += [(nearest + d).view(f32) for d in (-2, -1, 0, 1, 2)]
    for t in THRESHOLDS[op]:  # 20,000 consecutive floats either side, both signs
        b = int(np.array(abs(t), f32).view(np.int32))
        near = np.arange(b - 20_000, b + 20_000, dtype=np.int32).view(f32)
        parts += [near, -near]
    return np.concatenate(parts)


def ulp_errors(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in float32 ulps at ``want`` (float64). Infinities and NaNs must match
    exactly (error 0 or inf); denormals count in units of the smallest denormal."""
    with np.errstate(all="ignore"):  # inf - inf and overflowing casts are sorted out below
        want32 = want.astype(np.float32)
        exponent = np.frexp(want)[1]
        exponent = np.where(want == 0, -125, np.maximum(exponent, -125))
        err = np.abs(got.astype(np.float64) - want) / np.ldexp(1.0, exponent - 24)
        special = ~np.isfinite(want32)  # inf, or NaN: only an exact match will do
        same = (got == want32) | (np.isnan(got) & np.isnan(want32))
        err[special] = np.where(same[special], 0.0, np.inf)
        err[np.isnan(got) & ~np.isnan(want)] = np.inf
    return err


@pytest.mark.parametrize("op", VECTORISED)
def test_float32_accuracy(op, avx2_path):
    x = accuracy_points(op)
    got = run1(op, {"x": x})
    with np.errstate(all="ignore"):
        want = REFERENCES[op](x.astype(np.float64))
    err = ulp_errors(got, want)
    worst = int(np.argmax(err))
    assert err[worst] <= BOUNDS[avx2_path][op], (
        f"{op} ({avx2_path}): {err[worst]:.3f} ulp at x={x[worst]!r}: got {got[worst]!r}"
    )
    if op in ("log", "sin", "cos"):
        # Against the float64 result rounded to float32 (the correctly rounded float, but
        # for double rounding): never more than one float away, and nearly always on it.
        with np.errstate(all="ignore"):
            want32 = want.astype(np.float32)
        finite = np.isfinite(want32)
        apart = float_distance(got[finite], want32[finite])
        assert apart.max() <= 1, f"{op} ({avx2_path}): {apart.max()} floats away"
        assert np.mean(apart == 0) >= 0.99, f"{op} ({avx2_path}): {np.mean(apart == 0):.5f}"


def float_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many floats lie between float32 a and b, plus one if they differ (0 and -0: 0)."""

    def ordered(v: np.ndarray) -> np.ndarray:  # float32 order as integer order
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    return np.abs(ordered(a) - ordered(b))


# Special values and regime boundaries: infinities and NaN must come out exactly, the rest
# within the bounds (including the denormal results of exp and sigmoid).
EDGES = {
    "exp": [
        88.72283172607422,
        88.72283935546875,
        100.0,
        -87.33654022216797,
        -87.3365478515625,
        -100.0,
        -103.3,
        -103.97,
        -104.0,
        1e-30,
        -1e-30,
    ],
    "tanh": [1e-40, -1e-40, 0.625, -0.625, 0.62499994, 9.0, 9.1, -20.0, 44.5, 1e30],
    "sigmoid": [-87.5, -100.0, -103.97, -104.0, 16.0, 17.0, 88.8, 1e-30, -1e30],
    "log": [
        *[1e-45, 1e-40, 1.1754942e-38, 1.1754944e-38, 1e-30, 0.70710677, 0.7071068],
        *[0.99999994, 1.0000001, 1.4142135, 1.4142137, 0.5, 2.0, 1e38, -1e-45, -1e30],
    ],
    "sin": [
        *[2.0**24, 16777215.0, -16777215.0, 3e7, 1e10, -1e20, 8192 * np.pi, 1e-40, -1e-30],
        *[CLOSEST_TO_HALF_PI_MULTIPLE, np.pi / 2, np.pi, 3 * np.pi / 2, 2 * np.pi],
    ],
}
EDGES["cos"] = EDGES["sin"]
EDGES["erf"] = [1e-45, -1e-40, 1e-30, 0.99999994, 1.0, -1.0000001, 3.9, 3.92, 10.2, 11.0, -1e30]


@pytest.mark.parametrize("op", VECTORISED)
def test_float32_special_values(op, avx2_path):
    x = np.array(SPECIAL + EDGES[op], np.float32)
    got = run1(op, {"x": x})
    with np.errstate(all="ignore"):
        want = REFERENCES[op](x.astype(np.float64))
    err = ulp_errors(got, want)
    assert np.all(err <= BOUNDS[avx2_path][op]), dict(
        zip(x[err > BOUNDS[avx2_path][op]], got[err > BOUNDS[avx2_path][op]])
    )
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))  # tanh(-0)
    # Zeros, infinities and NaNs in, and log's negative x, give exactly what NumPy's float32
    # ops do: log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf, sin(-0) = -0, sin and cos
    # of +-inf NaN, tanh(-inf) = -1, ...
    with np.errstate(all="ignore"):
        numpy32 = REFERENCES[op](x).astype(np.float32)
    odd = ~np.isfinite(x) | (x == 0) | ((x < 0) & (op == "log"))
    np.testing.assert_array_equal(got[odd], numpy32[odd])
    signed = odd & ~np.isnan(numpy32)  # a NaN's sign means nothing
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(numpy32[signed]))


# -- clip --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("bounds", [(-1.0, 2.0), (-np.inf, 0.5), (0.5, np.inf), (1.0, 1.0)])
def test_clip_matches_numpy(dtype, bounds):
    lo, hi = bounds
    x = rand(np.random.default_rng(4), (4097, 3), dtype, -3, 3)
    got = run1("clip", {"x": x}, {"min": lo, "max": hi})
    if dtype in INTS:  # integer tensors clamp to [ceil(min), floor(max)]
        info = np.iinfo(dtype)
        lo = info.min if lo == -np.inf else np.ceil(lo)
        hi = info.max if hi == np.inf else np.floor(hi)
    assert_matches(got, np.clip(x, lo, hi).astype(dtype))


def test_clip_defaults_leave_values_and_nan_alone():
    x = np.array([-np.inf, -1e30, 0.0, np.nan, 3.0, np.inf], np.float32)
    assert_matches(run1("clip", {"x": x}), x)
    assert_matches(run1("clip", {"x": x}, {"min": -1.0, "max": 1.0}), np.clip(x, -1, 1))
    big = np.array([np.iinfo(np.int64).min, -5, np.iinfo(np.int64).max], np.int64)
    assert_matches(run1("clip", {"x": big}, {"min": -1e30, "max": 1e30}), big)
    ints = np.array([-3, 0, 3], np.int32)  # no integer in [0.2, 0.8]: max wins, as in NumPy
    assert_matches(run1("clip", {"x": ints}, {"min": 0.2, "max": 0.8}), np.zeros(3, np.int32))


@pytest.mark.parametrize("bounds", [(float("nan"), 1.0), (0.0, float("nan"))])
def test_clip_refuses_nan_bounds(bounds):
    with pc.program_guard(pc.Program()):
        with pytest.raises(pc.ShapeError, match=r"op 'clip' .* bounds must not be NaN"):
            pc.ops.clip(pc.data("x", [3]), min=bounds[0], max=bounds[1])


@pytest.mark.parametrize("dtype", NUMBERS)
def test_clip_with_min_above_max_gives_max_like_numpy_and_onnx(dtype):
    """A documented choice of ONNX (Clip) and NumPy (np.clip): max is applied last."""
    x = np.array([-5, 0, 1, 2, 7], dtype)
    assert_matches(run1("clip", {"x": x}, {"min": 3.0, "max": 1.0}), np.clip(x, 3, 1))
    assert_matches(run1("clip", {"x": x}, {"min": 3.0, "max": 1.0}), np.full(5, 1, dtype))
    if dtype in FLOATS:  # out is constant: no gradient flows
        g = run_op("clip_grad", {"x": x, "out_grad": np.ones(5, dtype)}, {"min": 3.0, "max": 1.0})
        assert_matches(g["x_grad"][0], np.zeros(5, dtype))


# -- gradients ---------------------------------------------------------------------------------

# Inputs away from kinks and singular points (abs at 0, clip at its bounds, log/sqrt at 0).
GRAD_INPUTS = {
    "abs": (0.2, 3),
    "neg": (-3, 3),
    "exp": (-3, 3),
    "log": (0.2, 3),
    "sqrt": (0.2, 3),
    "rsqrt": (0.2, 3),
    "square": (-3, 3),
    "sin": (-3, 3),
    "cos": (-3, 3),
    "tanh": (-3, 3),
    "sigmoid": (-6, 6),
    "erf": (-2, 2),
}


@pytest.mark.parametrize("op", GRAD_INPUTS)
def test_unary_gradients(op):
    low, high = GRAD_INPUTS[op]
    x = rand(np.random.default_rng(5), (3, 4), "float64", low, high)
    if op == "abs":
        x[::2] *= -1  # both signs
    check_grad(op, {"x": x}, rtol=1e-6, atol=1e-9)


def test_clip_gradient():
    x = np.array([-2.0, -0.7, 0.1, 0.4, 1.3, 2.5])
    check_grad("clip", {"x": x}, {"min": -1.0, "max": 1.0}, rtol=1e-6, atol=1e-9)


def gradient_at(op: str, x: np.ndarray, attrs: dict | None = None) -> np.ndarray:
    """d(sum(op(x)))/dx through the op's grad kernel."""
    prog = pc.Program()
    with pc.program_guard(prog):
        v = pc.data("x", list(x.shape), x.dtype.name)
        v.stop_gradient = False
        out = getattr(pc.ops, op)(v, **(attrs or {}))
        (grad,) = pc.gradients([out], [v])
    (got,) = pc.Executor().run(prog, feed={"x": x}, fetch_list=[grad])
    return got


def test_gradients_at_kinks_follow_pytorch():
    """abs'(0) = 0; clip passes the gradient where min <= x <= max, bounds included."""
    x = np.array([-1.0, 0.0, -0.0, 2.0])
    assert_matches(gradient_at("abs", x), [-1.0, 0.0, 0.0, 1.0])
    x = np.array([-1.5, -1.0, 0.0, 1.0, 1.5], np.float32)
    got = gradient_at("clip", x, {"min": -1.0, "max": 1.0})
    assert_matches(got, np.array([0, 1, 1, 1, 0], np.float32))


@pytest.mark.parametrize("op, forward_input", [("exp", "out"), ("tanh", "out"), ("log", "x")])
def test_grad_ops_read_the_cheaper_forward_tensor(op, forward_input):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [3])
        x.stop_gradient = False
        out = getattr(pc.ops, op)(x)
        pc.gradients([out], [x])
    (grad_op,) = [o for o in prog.global_block().ops if o.type == f"{op}_grad"]
    assert set(grad_op.inputs) == {forward_input, "out_grad"}


@pytest.mark.parametrize("dtype", FLOATS)
def test_rounding_ops_at_halves_nan_and_infinities(dtype, avx2_path):
    """round takes halves to even (NumPy, ONNX); all keep NaN, infinities and -0; sign of NaN
    is NaN and of -0.0 is 0. floor, ceil and round are exact: bit for bit NumPy's, over
    halves, the integers around 2^23 and 2^24 (where every float is an integer), denormals
    and huge values, in the first eight elements and in a tail."""
    x = [-2.5, -1.5, -0.5, -0.0, 0.5, 1.5, 2.5, np.nan, np.inf, -np.inf, 1e-45, -1e-40, 3e38]
    big = np.ldexp(1.0, 23)
    x += [v + d for v in (big, -big, 2 * big) for d in (-1.5, -0.5, 0.25, 0.5, 1.5)]
    x += list(np.random.default_rng(5).uniform(-100, 100, 37).round(1))
    x = np.array(x, dtype)
    for op in ("floor", "ceil", "round", "sign"):
        got, want = run1(op, {"x": x}), UNARY[op][0](x)
        np.testing.assert_array_equal(got, want, err_msg=op)
        assert (np.signbit(got) == np.signbit(want)).all(), op  # -0 stays -0


@pytest.mark.parametrize("op", ["floor", "ceil", "round", "sign"])
def test_step_functions_have_a_zero_gradient(op):
    """No gradient flows through them (pc.gradients gives None alone); beside another path,
    x's gradient is that path's."""
    x = np.linspace(-2.3, 2.7, 7)
    prog = pc.Program()
    with pc.program_guard(prog):
        xv = pc.data("x", [7], "float64")
        step = pc.ops.sum(getattr(pc.ops, op)(xv))
        assert pc.gradients([step], [xv]) == [None]
        (gx,) = pc.gradients([pc.ops.add(step, pc.ops.sum(xv))], [xv])
    (got,) = pc.Executor().run(prog, feed={"x": x}, fetch_list=[gx])
    np.testing.assert_array_equal(got, np.ones(7))


def test_an_op_no_kernel_of_which_takes_the_dtype_is_refused_when_appended():
    """exp of an int32 x fails when appended, not when run: the core holds the dtype that
    selects the kernel to the dtypes the op's kernels declare, on any device. Every one-input
    op of the installed plugins whose kernels take no int32 is refused so."""
    from paddle_core._src.plugins.registry import get_registry

    registry = get_registry()
    refused = []
    for op in registry.op_types():
        info = registry.op(op)
        required = [a.name for a in info.proto.attrs if a.name not in info.attr_defaults]
        if [s.name for s in info.proto.inputs] != ["x"] or required:
            continue
        if "int32" in info.signature().kernel_dtypes:
            continue
        with pc.program_guard(pc.Program()):
            with pytest.raises((pc.KernelNotFoundError, pc.ShapeError)) as caught:
                getattr(pc.ops, op)(pc.data("x", [3], "int32"))
        assert caught.value.op == op
        refused.append(op)
    assert {"exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "erf", "floor"} <= set(refused)
    with pc.program_guard(pc.Program()):
        with pytest.raises(pc.KernelNotFoundError) as caught:
            pc.ops.exp(pc.data("x", [3], "int32"))
    assert str(caught.value).startswith(
        "op 'exp' has no kernel for dtype int32 on any device: input 'x' ('x') is int32"
    )
    assert "its kernels: cpu (float16, bfloat16, float32, float64)" in str(caught.value)
