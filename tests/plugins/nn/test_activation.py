"""paddle-ops-nn activations against NumPy, and their gradients by finite differences.

Each op is tested with its default attrs and with others (CASES): against a float64 NumPy
reference cast to the input's dtype, by finite differences in float64, at large magnitudes
(finite, correct values and gradients), and applied in place where its grad op allows it.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from op_helpers import (
    FLOATS,
    assert_matches,
    check_grad,
    cpu_has_avx2_fma,
    on_both_paths,
    pc,
    rand,
    run1,
    run_op,
)

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

try:
    from scipy.special import erf
except ImportError:  # NumPy has no erf
    erf = np.vectorize(math.erf, otypes=[np.float64])


# -- float64 references, taking the op's attrs (with the manifest's defaults) as keywords ----


def sigmoid(x):
    """1 / (1 + e^-x) without overflow."""
    e = np.exp(-np.abs(x))
    return np.where(x < 0, e, 1.0) / (1.0 + e)


def relu(x):
    return np.maximum(x, 0)


def relu6(x, threshold=6.0):
    return np.minimum(np.maximum(x, 0), threshold)


def hardswish(x):
    return x * np.minimum(np.maximum(x + 3, 0), 6) / 6


def hardsigmoid(x, slope=1 / 6, offset=0.5):
    return np.minimum(np.maximum(slope * x + offset, 0), 1)


def leaky_relu(x, alpha=0.02):
    return np.where(x > 0, x, alpha * x)


def gelu(x, approximate=False):
    if approximate:
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def softplus(x, beta=1.0, threshold=20.0):  # PyTorch's: x above the threshold
    return np.where(beta * x > threshold, x, np.logaddexp(0, beta * x) / beta)


def silu(x):
    return x * sigmoid(x)


# op: (reference, attrs to test besides the defaults)
ACTIVATIONS = {
    "relu": (relu, []),
    "relu6": (relu6, [{"threshold": 2.5}]),
    "hardswish": (hardswish, []),
    "hardsigmoid": (hardsigmoid, [{"slope": 0.2, "offset": 0.4}]),
    "leaky_relu": (leaky_relu, [{"alpha": 0.3}, {"alpha": 0.0}]),
    "gelu": (gelu, [{"approximate": True}]),
    "elu": (elu, [{"alpha": 0.5}, {"alpha": 0.0}]),
    "softplus": (softplus, [{"beta": 2.0, "threshold": 4.0}, {"beta": 0.5, "threshold": np.inf}]),
    "silu": (silu, []),
}
CASES = [
    pytest.param(op, attrs, id="-".join([op, *(f"{k}={v}" for k, v in attrs.items())]))
    for op, (_, others) in ACTIVATIONS.items()
    for attrs in [{}, *others]
]
# The ops whose grad op reads out rather than x: only these may be applied in place.
GRAD_READS_OUT = {"relu", "relu6", "hardsigmoid", "leaky_relu", "elu"}
# Shapes: a matrix, a scalar, an empty tensor, an odd length, a size split across threads.
SHAPES = [(3, 4), (), (0,), (37,), (1025, 65)]


def reference(op, x, attrs):
    """The op's result for ``x`` in float64, cast to x's dtype."""
    return ACTIVATIONS[op][0](x.astype(np.float64), **attrs).astype(x.dtype)


def gradient_at(op: str, x: np.ndarray, attrs: dict) -> np.ndarray:
    """d(sum(op(x)))/dx through the op's grad kernel."""
    prog = pc.Program()
    with pc.program_guard(prog):
        v = pc.data("x", list(x.shape), x.dtype.name)
        v.stop_gradient = False
        out = getattr(pc.ops, op)(v, **attrs)
        (grad,) = pc.gradients([out], [v])
    (got,) = pc.Executor().run(prog, feed={"x": x}, fetch_list=[grad])
    return got


@pytest.mark.parametrize(("op", "attrs"), CASES)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_numpy(op, attrs, dtype, shape):
    x = rand(np.random.default_rng(0), shape, dtype)
    assert_matches(run1(op, {"x": x}, attrs), reference(op, x, attrs))


@pytest.mark.parametrize(("op", "attrs"), CASES)
def test_gradient(op, attrs):
    # Off the kinks at 0, relu6's at its threshold (x = 2.5 in CASES; 6 beyond the range),
    # hardswish's at +-3, hardsigmoid's (+-3 by default; -2 and 3 with slope 0.2 and offset 0.4,
    # both between grid points) and softplus's switch to x at beta * x = threshold (x = 2 in
    # CASES).
    x = np.linspace(-2.9, 3.1, 15).reshape(3, 5)
    check_grad(op, {"x": x}, attrs)


@pytest.mark.parametrize(("op", "attrs"), CASES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_large_magnitudes(op, attrs, dtype):
    """No overflow to inf or NaN, in the values nor in the gradients, and both still right."""
    x = np.array([-1000, -100, -30, 30, 100, 1000], dtype)
    got = run1(op, {"x": x}, attrs)
    assert np.all(np.isfinite(got))
    assert_matches(got, reference(op, x, attrs))
    grad = gradient_at(op, x, attrs)
    assert np.all(np.isfinite(grad))
    f, x64 = ACTIVATIONS[op][0], x.astype(np.float64)
    h = 1e-5 * np.abs(x64)
    numeric = (f(x64 + h, **attrs) - f(x64 - h, **attrs)) / (2 * h)
    assert_matches(grad, numeric.astype(dtype), rtol=1e-6 if dtype == "float64" else None)


def test_gradients_at_zero_follow_pytorch():
    """relu'(0) = 0; leaky_relu'(0) = elu'(0) = alpha (the x <= 0 side); relu6' is 0 at both
    kinks, as PyTorch's hardtanh; hardswish' and hardsigmoid' at +-3 as PyTorch's."""
    x = np.array([-0.0, 0.0])
    assert_matches(gradient_at("relu", x, {}), [0.0, 0.0])
    kinks = np.array([0.0, 1e-3, 5.999, 6.0, 7.0])
    assert_matches(gradient_at("relu6", kinks, {}), [0.0, 1.0, 1.0, 0.0, 0.0])
    hard = np.array([-4.0, -3.0, -1.5, 0.0, 3.0, 4.0])  # PyTorch's values on and off the kinks
    assert_matches(gradient_at("hardswish", hard, {}), [0.0, -0.5, 0.0, 0.5, 1.5, 1.0])
    assert_matches(gradient_at("hardsigmoid", hard, {}), [0.0, 0.0, 1 / 6, 1 / 6, 0.0, 0.0])
    assert_matches(gradient_at("leaky_relu", x, {"alpha": 0.3}), [0.3, 0.3])
    assert_matches(gradient_at("elu", x, {"alpha": 0.5}), [0.5, 0.5])


@pytest.mark.parametrize(("op", "attrs"), [c for c in CASES if c.values[0] in GRAD_READS_OUT])
def test_in_place(op, attrs):
    """An activation may write its input: out aliases x, and the gradient still flows."""
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        x = pc.data("x", [4], "float64")
        w = block.create_parameter("w", [4], "float64")
        h = pc.ops.mul(x, w)
        block.append_op(op, {"x": h}, {"out": h}, attrs)
        loss = pc.ops.sum(h)
        (gw,) = pc.gradients([loss], [w])
    xv = np.array([1.0, -2.0, 3.0, -4.0])
    wv = np.array([0.5, 0.5, -0.5, -0.5])
    scope = pc.Scope()
    scope.set_var("w", wv)
    got_loss, got_gw = pc.Executor().run(prog, feed={"x": xv}, fetch_list=[loss, gw], scope=scope)
    f = ACTIVATIONS[op][0]
    np.testing.assert_allclose(got_loss, f(xv * wv, **attrs).sum())
    eps = 1e-6
    numeric = [
        (f(xv * (wv + eps * e), **attrs).sum() - f(xv * (wv - eps * e), **attrs).sum()) / (2 * eps)
        for e in np.eye(4)
    ]
    np.testing.assert_allclose(got_gw, numeric, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("op", sorted(set(ACTIVATIONS) - GRAD_READS_OUT))
def test_in_place_is_refused_where_the_grad_reads_x(op):
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        w = block.create_parameter("w", [4], "float64")
        h = pc.ops.mul(pc.data("x", [4], "float64"), w)
        block.append_op(op, {"x": h}, {"out": h})
        with pytest.raises(pc.ProgramError, match=rf"op '{op}_grad' .* needs '{h.name}' as op"):
            pc.gradients([pc.ops.sum(h)], [w])


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_manifest_agrees_with_the_references(op):
    """Defaults as in the reference's signature; the grad op reads out or x (GRAD_READS_OUT)
    and declares the forward op's attrs with the same types, defaults and ranges."""
    registry = pc.get_registry()
    info, grad = registry.op(op), registry.op(f"{op}_grad")
    signature = inspect.signature(ACTIVATIONS[op][0]).parameters.values()
    assert info.attr_defaults == {p.name: p.default for p in signature if p.name != "x"}
    read = "out" if op in GRAD_READS_OUT else "x"
    assert [i.name for i in grad.proto.inputs] == [read, "out_grad"]

    def bare(attrs):
        kept = []
        for a in attrs:
            a = type(a).FromString(a.SerializeToString())
            a.ClearField("comment")
            kept.append(a)
        return kept

    assert bare(grad.proto.attrs) == bare(info.proto.attrs)


BAD_ATTRS = [  # op, attrs, message
    ("relu6", {"threshold": 0.0}, r"attr 'threshold': expected a float in \(0, inf\), got float"),
    ("relu6", {"threshold": np.inf}, r"attr 'threshold': expected a float in \(0, inf\)"),
    ("hardsigmoid", {"slope": 0.0}, r"attr 'slope': expected a float in \(0, inf\), got float"),
    ("hardsigmoid", {"offset": "0.5"}, r"attr 'offset': expected a float, got str"),
    ("hardswish", {"threshold": 6.0}, r"op 'hardswish' has no attr 'threshold'"),
    ("leaky_relu", {"alpha": -1.0}, r"attr 'alpha': expected a float in \[0, inf\), got float -1"),
    ("leaky_relu", {"alpha": np.inf}, r"attr 'alpha': expected a float in \[0, inf\)"),
    ("elu", {"alpha": -0.5}, r"attr 'alpha': expected a float in \[0, inf\)"),
    ("elu", {"alpha": np.nan}, r"attr 'alpha': expected a float in \[0, inf\)"),
    ("softplus", {"beta": 0.0}, r"attr 'beta': expected a float in \(0, inf\), got float 0.0"),
    ("softplus", {"beta": -2.0}, r"attr 'beta': expected a float in \(0, inf\)"),
    ("softplus", {"threshold": "20"}, r"attr 'threshold': expected a float, got str"),
    ("gelu", {"approximate": "tanh"}, r"attr 'approximate': expected a bool, got str 'tanh'"),
    ("silu", {"beta": 1.0}, r"op 'silu' has no attr 'beta'"),
]


@pytest.mark.parametrize(("op", "attrs", "message"), BAD_ATTRS)
def test_bad_attrs_are_refused_when_appended(op, attrs, message):
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [3])
        with pytest.raises(pc.AttrError, match=message) as info:
            getattr(pc.ops, op)(x, **attrs)
    assert info.value.op == op


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_other_dtypes_are_refused(op):
    with pytest.raises(pc.KernelNotFoundError, match="no kernel for dtype int32 on any device"):
        run1(op, {"x": np.ones(3, np.int32)})


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_nan_stays_nan(op):
    (out,) = run_op(op, {"x": np.array([np.nan, 1.0])})["out"]
    assert np.isnan(out[0]) and not np.isnan(out[1])


@pytest.mark.parametrize("act", ["relu", "relu6", "hardswish", "hardsigmoid", "leaky_relu", "elu"])
def test_layers_take_each_activation_as_act(act):
    """``act=`` names the activation layer of that name, with the op's default attrs."""
    rng = np.random.default_rng(3)
    x = rand(rng, (4, 6), "float64")
    prog = pc.Program()
    with pc.program_guard(prog, pc.Program()):
        x_var = pc.data("x", [None, 6], "float64")
        via_act = pc.layers.fc(x_var, 3, act=act, param_attr="w", bias_attr=False)
        via_layer = getattr(pc.layers, act)(pc.ops.matmul(x_var, prog.global_block().var("w")))
    scope = pc.Scope()
    w = rand(rng, (6, 3), "float64")
    scope.set_var("w", w)
    got, want = pc.Executor().run(prog, feed={"x": x}, fetch_list=[via_act, via_layer], scope=scope)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, reference(act, x @ w, {}), rtol=1e-12)


def test_an_unknown_act_is_refused_naming_the_choices():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [None, 6])
        with pytest.raises(
            pc.ProgramError, match=r"unknown activation 'relu7'; choose one of .*relu6"
        ):
            pc.layers.fc(x, 3, act="relu7")


# -- the AVX2 loops --------------------------------------------------------------------------
# Float32 silu, gelu (exact and tanh), elu and softplus, and the gradients of silu, gelu and
# softplus, run activation_avx2.cpp on CPUs with AVX2 and FMA, and activation.hpp's portable loops with
# PADDLE_OPS_NN_DISABLE_AVX2=1.

VALUES_AND_GRADIENTS = """
import sys
import numpy as np
import paddle_core as pc

x = np.load(sys.argv[1])["x"]
results = {}
CASES = [("silu", {}), ("gelu", {}), ("gelu", {"approximate": True}), ("elu", {}),
         ("elu", {"alpha": 0.5}), ("softplus", {}),
         ("softplus", {"beta": 2.0, "threshold": 4.0})]
for op, attrs in CASES:
    prog = pc.Program()
    with pc.program_guard(prog):
        v = pc.data("x", list(x.shape), "float32")
        v.stop_gradient = False
        out = getattr(pc.ops, op)(v, **attrs)
        (grad,) = pc.gradients([out], [v])
    key = op + repr(sorted(attrs.items()))
    got = pc.Executor().run(prog, feed={"x": x}, fetch_list=[out, grad])
    results["out " + key], results["grad " + key] = got
np.savez(sys.argv[2], **results)
"""


@pytest.mark.skipif(not cpu_has_avx2_fma(), reason="this CPU has no AVX2+FMA")
def test_avx2_loops_agree_with_the_portable_ones(tmp_path):
    """Every float32 step of 1/1024 in [-24, 24] (and a tail of 7), large magnitudes, zeros,
    denormals, infinities and NaN. The paths differ only in how e^x is rounded (and in which
    products fuse into an FMA), so they agree to 4 ulps times the formulas' condition number
    in x (e^(2u) amplifies x's rounding by |x d(2u)/dx|, up to ~0.2 |x|^3); a gradient also
    by 4 ulps of 1 where it crosses 0 (silu' and the tanh gelu's cancel there)."""
    dense = np.arange(-24 * 1024, 24 * 1024 + 7, dtype=np.float32) / np.float32(1024)
    special = [0.0, -0.0, 1e-40, -1e-40, 1e30, -1e30, 3e38, -3e38, np.inf, -np.inf, np.nan]
    x = np.concatenate([dense, np.array(special, np.float32)])
    switch = "PADDLE_OPS_NN_DISABLE_AVX2"
    avx2, portable = on_both_paths(tmp_path, VALUES_AND_GRADIENTS, {"x": x}, switch)
    ax = np.abs(x.astype(np.float64))
    condition = np.minimum(1 + 2 * ax + 0.25 * ax**3, 1e4)
    for key, want in portable.items():
        got = avx2[key]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=key)
        bound = 4 * np.spacing(np.abs(want)).astype(np.float64) * condition
        if key.startswith("grad "):
            bound += 4 * 2.0**-24
        with np.errstate(invalid="ignore"):
            near = (got == want) | np.isnan(want) | (np.abs(got - want.astype(np.float64)) <= bound)
        assert near.all(), (
            f"{key}: x={x[~near][:5]}, AVX2 {got[~near][:5]}, portable {want[~near][:5]}"
        )
    assert any(not np.array_equal(avx2[k], portable[k]) for k in portable)  # two paths ran
