"""paddle-ops-nn's normalisation: batch_norm and layer_norm against NumPy (training and
inference, running statistics updated in place), gradients by finite differences, PyTorch
where it is installed, bad inputs, and the layers (training, the evaluation clone)."""

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
    run_op,
)

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

RNG = np.random.default_rng(7)
# float32 results are computed from statistics in double but normalised in float32.
LOOSE = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": {}}


# -- references ------------------------------------------------------------------------------


def batch_norm_reference(
    x, scale, bias, mean, variance, *, momentum=0.9, epsilon=1e-5, is_test=False
):
    """batch_norm's outputs in float64 (cast to x's dtype): y, mean_out, variance_out,
    saved_mean, saved_inv_std."""
    x64 = x.astype(np.float64)
    axes = (0, *range(2, x.ndim))
    if is_test:
        m, v = mean.astype(np.float64), variance.astype(np.float64)
        mean_out, variance_out = mean, variance
    else:
        m, v = x64.mean(axes), x64.var(axes)  # biased
        mean_out = momentum * mean + (1 - momentum) * m
        variance_out = momentum * variance + (1 - momentum) * v
    inv_std = 1 / np.sqrt(v + epsilon)
    per_channel = (1, -1) + (1,) * (x.ndim - 2)

    def c(a):
        return np.asarray(a, np.float64).reshape(per_channel)

    y = (x64 - c(m)) * c(inv_std) * c(scale) + c(bias)
    outs = {
        "y": y,
        "mean_out": mean_out,
        "variance_out": variance_out,
        "saved_mean": m,
        "saved_inv_std": inv_std,
    }
    return {k: np.asarray(a).astype(x.dtype) for k, a in outs.items()}


def layer_norm_reference(x, scale=None, bias=None, *, begin_norm_axis=1, epsilon=1e-5):
    """layer_norm's outputs in float64 (cast to x's dtype): y, mean, variance."""
    rows = math.prod(x.shape[:begin_norm_axis])
    x2 = x.astype(np.float64).reshape(rows, -1)
    m, v = x2.mean(1), x2.var(1)
    y = (x2 - m[:, None]) / np.sqrt(v[:, None] + epsilon)
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    outs = {"y": y.reshape(x.shape), "mean": m, "variance": v}
    return {k: a.astype(x.dtype) for k, a in outs.items()}


def batch_norm_inputs(shape, dtype="float64", offset=0.0):
    c = shape[1]
    return {
        "x": (RNG.standard_normal(shape) * 2 + offset).astype(dtype),
        "scale": RNG.uniform(0.5, 2, c).astype(dtype),
        "bias": RNG.standard_normal(c).astype(dtype),
        "mean": RNG.standard_normal(c).astype(dtype),
        "variance": RNG.uniform(0.5, 2, c).astype(dtype),
    }


def layer_norm_inputs(shape, axis, dtype="float64", scale=True, bias=True):
    cols = math.prod(shape[axis:])
    inputs = {"x": (RNG.standard_normal(shape) * 2 + 1).astype(dtype)}
    if scale:
        inputs["scale"] = RNG.uniform(0.5, 2, cols).astype(dtype)
    if bias:
        inputs["bias"] = RNG.standard_normal(cols).astype(dtype)
    return inputs


def check_outputs(got: dict, want: dict, dtype: str) -> None:
    for slot, value in want.items():
        (array,) = got[slot]
        try:
            assert_matches(array, value, **LOOSE[dtype])
        except AssertionError as e:
            raise AssertionError(f"output {slot}: {e}") from None


# -- batch_norm forward ----------------------------------------------------------------------

# Rank 2 to 5, one channel, one sample, and planes of 64 elements or more (their statistics are
# split by planes, not by channels).
BN_SHAPES = [
    (5, 3),
    (1, 4),
    (4, 3, 7),
    (2, 3, 4, 5),
    (3, 1, 2, 2),
    (1, 4, 3, 5),
    (2, 2, 1, 3, 2),
    (2, 3, 8, 9),
    (3, 2, 64),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", BN_SHAPES, ids=str)
@pytest.mark.parametrize("is_test", [False, True], ids=["training", "is_test"])
def test_batch_norm_matches_numpy(shape, dtype, is_test):
    inputs = batch_norm_inputs(shape, dtype)
    attrs = {"momentum": 0.8, "epsilon": 1e-3, "is_test": is_test}
    got = run_op("batch_norm", inputs, attrs)
    check_outputs(got, batch_norm_reference(**inputs, **attrs), dtype)


def test_statistics_stay_accurate_far_from_zero():
    """A mean large against the spread swamps neither the variance (two passes in double)
    nor y (the mean subtracted as two floats) in float32."""
    dtype = "float32"
    inputs = batch_norm_inputs((8, 3, 16, 16), dtype)
    inputs["x"] = (inputs["x"] * 0.01 + 1000).astype(dtype)
    check_outputs(run_op("batch_norm", inputs), batch_norm_reference(**inputs), dtype)
    x = inputs["x"].reshape(8, -1)
    check_outputs(run_op("layer_norm", {"x": x}), layer_norm_reference(x), dtype)


@pytest.mark.parametrize("shape", [(64, 8, 32, 32), (4096, 256)], ids=["planes", "channels"])
def test_batch_norm_results_do_not_depend_on_the_thread_count(shape):
    inputs = batch_norm_inputs(shape, "float32")
    prog = pc.Program()
    with pc.program_guard(prog):
        args = [pc.data(k, list(v.shape)) for k, v in inputs.items()]
        outs = pc.ops.batch_norm(*args)
    one = pc.Executor(num_threads=1).run(prog, feed=inputs, fetch_list=list(outs))
    two = pc.Executor(num_threads=2).run(prog, feed=inputs, fetch_list=list(outs))
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


SLOTS = ("scale", "bias", "mean", "variance")


def running_stats_program(dtype: str, is_test: bool, shape=(4, 3, 5)):
    """batch_norm with mean_out and variance_out bound to its persistable running mean and
    variance (in place, as pc.layers.batch_norm binds them); x is fed."""
    prog = pc.Program()
    block = prog.global_block()
    c = shape[1]
    with pc.program_guard(prog):
        x = pc.data("x", list(shape), dtype)
        made = {s: block.create_var(s, [c], dtype, persistable=True) for s in SLOTS}
        op = block.append_op(
            "batch_norm",
            {"x": x, **made},
            {"mean_out": made["mean"], "variance_out": made["variance"]}
            | {slot: f"bn.{slot}" for slot in ("y", "saved_mean", "saved_inv_std")},
            {"is_test": is_test, "momentum": 0.7},
        )
    return prog, op


@pytest.mark.parametrize("dtype", FLOATS)
def test_running_statistics_update_in_place_while_training_only(dtype):
    inputs = batch_norm_inputs((4, 3, 5), dtype)
    scope = pc.Scope()
    for slot in SLOTS:
        scope.set_var(slot, inputs[slot].copy())
    held = scope.get("mean"), scope.get("variance")
    exe = pc.Executor()
    train, _ = running_stats_program(dtype, is_test=False)
    want = {"mean": inputs["mean"], "variance": inputs["variance"]}
    for step in range(3):
        x = (RNG.standard_normal((4, 3, 5)) + step).astype(dtype)
        (y,) = exe.run(train, feed={"x": x}, fetch_list=["bn.y"], scope=scope)
        ref = batch_norm_reference(x, inputs["scale"], inputs["bias"], **want, momentum=0.7)
        want = {"mean": ref["mean_out"], "variance": ref["variance_out"]}
        assert_matches(y, ref["y"], **LOOSE[dtype])
        for slot, value in want.items():
            assert_matches(scope.get(slot), value, **LOOSE[dtype])
    assert scope.get("mean") is held[0] and scope.get("variance") is held[1]  # where they live
    plan = exe.prepare(train, {"x": x}, [])
    assert plan.compiled and plan._runner.scratch_copies == 0  # in place: no copy per run

    test, _ = running_stats_program(dtype, is_test=True)
    before = {slot: scope.get(slot).copy() for slot in ("mean", "variance")}
    (y,) = exe.run(test, feed={"x": x}, fetch_list=["bn.y"], scope=scope)
    ref = batch_norm_reference(x, inputs["scale"], inputs["bias"], **before, is_test=True)
    assert_matches(y, ref["y"], **LOOSE[dtype])
    for slot, value in before.items():
        np.testing.assert_array_equal(scope.get(slot), value)


def test_the_test_clone_switches_batch_norm_to_inference():
    train, op = running_stats_program("float64", is_test=False)
    test = train.clone(for_test=True)
    (clone_op,) = test.global_block().ops
    assert not op.attr("is_test") and clone_op.attr("is_test")
    assert sorted(clone_op.outputs) == sorted(op.outputs)  # every output is still made


# -- batch_norm gradients --------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 2, 4), (4, 3), (1, 2, 2, 3), (5, 1, 2), (1, 2, 65)], ids=str)
@pytest.mark.parametrize("is_test", [False, True], ids=["training", "is_test"])
def test_batch_norm_gradients(shape, is_test):
    inputs = batch_norm_inputs(shape)
    attrs = {"is_test": is_test, "epsilon": 1e-3}
    check_grad("batch_norm", inputs, attrs, wrt=["x", "scale", "bias"], output="y")


def test_batch_norm_gradients_of_an_x_drawn_from_the_weights_seed():
    """check_grad's weights come from a stream of their own: an x drawn from
    default_rng(seed) is not the weights themselves (a direction the gradient of a
    normalisation is nearly blind to)."""
    inputs = batch_norm_inputs((1, 2, 65))
    inputs["x"] = np.random.default_rng(0).standard_normal((1, 2, 65))
    check_grad("batch_norm", inputs, {"epsilon": 1e-3}, wrt=["x"], output="y", seed=0)


@pytest.mark.parametrize("wanted", [["x"], ["scale"], ["bias"], ["scale", "bias"]])
def test_batch_norm_computes_only_the_gradients_needed(wanted):
    inputs = batch_norm_inputs((3, 2, 4))
    check_grad("batch_norm", inputs, wrt=wanted, output="y")


def test_running_statistics_get_no_gradient():
    """While training y does not depend on them (their gradient is zero: none is made); with
    is_test it does, and a backward that needs one is refused, naming the op and the input."""
    inputs = batch_norm_inputs((3, 2, 4))
    check_grad("batch_norm", inputs, output="y")  # all inputs, mean and variance included
    with pytest.raises(
        pc.ProgramError,
        match=r"op 'batch_norm' \(is_test=True\) computes no gradient for its running mean "
        r"'mean_0'.*mark 'mean_0' stop_gradient",
    ):
        check_grad("batch_norm", inputs, {"is_test": True}, output="y")


def test_a_gradient_through_a_statistic_is_refused():
    prog = pc.Program()
    with pc.program_guard(prog):
        args = [pc.data(k, list(v.shape), "float64") for k, v in batch_norm_inputs((3, 2)).items()]
        args[0].stop_gradient = False
        y, mean_out, *_ = pc.ops.batch_norm(*args)
        with pytest.raises(
            pc.ProgramError,
            match=r"op 'batch_norm' propagates no gradient through its output mean_out",
        ):
            pc.gradients([pc.ops.add(pc.layers.mean(y), pc.layers.mean(mean_out))], [args[0]])
        x = pc.data("lx", [2, 3], "float64")
        x.stop_gradient = False
        _, mean, _ = pc.ops.layer_norm(x)
        with pytest.raises(
            pc.ProgramError, match=r"op 'layer_norm' propagates no gradient through its output mean"
        ):
            pc.gradients([mean], [x])


# -- layer_norm ------------------------------------------------------------------------------

LN_CASES = [
    ((4, 6), 1),
    ((2, 3, 5), 1),
    ((2, 3, 5), 2),
    ((2, 3, 4, 5), 3),
    ((1, 7, 2), 2),
    ((2, 3, 5), -1),  # negative: counted from the end
    ((2, 3, 4, 5), -3),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("shape", "axis"), LN_CASES, ids=str)
@pytest.mark.parametrize(
    ("scale", "bias"), [(True, True), (False, True), (True, False), (False, False)]
)
def test_layer_norm_matches_numpy(shape, axis, dtype, scale, bias):
    inputs = layer_norm_inputs(shape, axis, dtype, scale, bias)
    attrs = {"begin_norm_axis": axis, "epsilon": 1e-4}
    got = run_op("layer_norm", inputs, attrs)
    check_outputs(got, layer_norm_reference(**inputs, **attrs), dtype)


@pytest.mark.parametrize(
    ("shape", "axis"), [((3, 4), 1), ((2, 3, 2), 2), ((2, 2, 3), 1), ((2, 2, 3), -1)], ids=str
)
@pytest.mark.parametrize(
    ("scale", "bias"), [(True, True), (False, True), (True, False), (False, False)]
)
def test_layer_norm_gradients(shape, axis, scale, bias):
    inputs = layer_norm_inputs(shape, axis, scale=scale, bias=bias)
    check_grad("layer_norm", inputs, {"begin_norm_axis": axis}, output="y")


LAYER_NORM = """
import sys
import numpy as np
from paddle_core.testing import run_op

results = {}
for name, x in np.load(sys.argv[1]).items():
    inputs = {"x": x}
    if name.startswith("affine"):
        inputs["scale"], inputs["bias"] = x[0] * 0.5, x[1] - 1
    got = run_op("layer_norm", inputs, {"begin_norm_axis": 1})
    for slot in ("y", "mean", "variance"):
        results[f"{name} {slot}"] = got[slot][0]
    grad_inputs = {"x": x, "mean": got["mean"][0], "variance": got["variance"][0]}
    grad_inputs["y_grad"] = np.roll(x, 1, axis=1) * 3 - 1
    if "scale" in inputs:
        grad_inputs["scale"] = inputs["scale"]
    grads = run_op("layer_norm_grad", grad_inputs, {"begin_norm_axis": 1})
    for slot in ("x_grad", "scale_grad", "bias_grad"):
        results[f"{name} {slot}"] = grads[slot][0]
np.savez(sys.argv[2], **results)
"""


@pytest.mark.skipif(not cpu_has_avx2_fma(), reason="this CPU has no AVX2+FMA")
def test_layer_norm_rows_have_the_same_bits_with_and_without_avx2(tmp_path):
    """Float32 rows, and their gradients, run norm_avx2.cpp on CPUs with AVX2: the portable
    loops' operations in the same order, so the same bits, in the vector loops and in the
    tails (rows of 8 and 8k + r values), for a mean far from the spread, and with -0 and NaN
    among the inputs."""
    rng = np.random.default_rng(5)
    inputs = {f"plain {cols}": rng.standard_normal((6, cols)) for cols in (1, 7, 8, 13, 256)}
    inputs["offset"] = 1e4 + rng.standard_normal((6, 37))
    inputs["affine"] = rng.standard_normal((6, 29))
    signed = np.zeros((2, 16))
    signed[0, 3], signed[1, 4] = -0.0, np.nan
    inputs["zeros and nan"] = signed
    avx2, portable = on_both_paths(
        tmp_path,
        LAYER_NORM,
        {k: v.astype(np.float32) for k, v in inputs.items()},
        "PADDLE_OPS_NN_DISABLE_AVX2",
    )
    assert avx2.keys() == portable.keys()
    for key in avx2:
        assert avx2[key].tobytes() == portable[key].tobytes(), key


def test_layer_norm_results_do_not_depend_on_the_thread_count():
    """Rows, and the columns of the scale and bias gradients, are split across threads."""
    x = RNG.standard_normal((4096, 64)).astype(np.float32)
    prog = pc.Program()
    with pc.program_guard(prog):
        xv, sv, bv = pc.data("x", [4096, 64]), pc.data("s", [64]), pc.data("b", [64])
        for v in (xv, sv, bv):
            v.stop_gradient = False
        y, _, _ = pc.ops.layer_norm(xv, sv, bv)
        grads = pc.gradients([y], [xv, sv, bv], target_gradients=[pc.data("w", [4096, 64])])
    feed = {"x": x, "s": np.ones(64, np.float32), "b": np.zeros(64, np.float32), "w": x * 2}
    one = pc.Executor(num_threads=1).run(prog, feed=feed, fetch_list=[y, *grads])
    two = pc.Executor(num_threads=2).run(prog, feed=feed, fetch_list=[y, *grads])
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


# -- PyTorch ---------------------------------------------------------------------------------


def ours_with_gradients(op: str, inputs: dict, attrs: dict, weights: np.ndarray, wrt):
    """(y, {slot: gradient of sum(y * weights)}) from our op and its backward."""
    prog = pc.Program()
    with pc.program_guard(prog):
        vars_ = {k: pc.data(k, list(v.shape), "float64") for k, v in inputs.items()}
        for slot in wrt:
            vars_[slot].stop_gradient = False
        y = getattr(pc.ops, op)(**vars_, **attrs)[0]
        grads = pc.gradients([y], [vars_[s] for s in wrt], [pc.data("w", list(y.shape), "float64")])
    values = pc.Executor().run(prog, feed={**inputs, "w": weights}, fetch_list=[y, *grads])
    return values[0], dict(zip(wrt, values[1:]))


@pytest.mark.parametrize("is_test", [False, True], ids=["training", "is_test"])
@pytest.mark.parametrize("shape", [(4, 3, 5, 2), (6, 2)], ids=str)
def test_batch_norm_matches_pytorch(shape, is_test):
    torch = pytest.importorskip("torch")
    inputs = batch_norm_inputs(shape)
    weights = RNG.standard_normal(shape)
    wrt = ["x", "scale", "bias"]
    y, grads = ours_with_gradients("batch_norm", inputs, {"is_test": is_test}, weights, wrt)
    t = {k: torch.tensor(v, requires_grad=k in wrt) for k, v in inputs.items()}
    running_mean, running_var = t["mean"].detach().clone(), t["variance"].detach().clone()
    ty = torch.nn.functional.batch_norm(
        t["x"], running_mean, running_var, t["scale"], t["bias"], training=not is_test,
        momentum=0.1, eps=1e-5,
    )  # fmt: skip
    (ty * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    for slot in wrt:
        np.testing.assert_allclose(grads[slot], t[slot].grad.numpy(), rtol=1e-9, atol=1e-10)
    # Running statistics: the same mean; PyTorch's variance uses the unbiased batch variance.
    ours = run_op("batch_norm", inputs, {"is_test": is_test})
    np.testing.assert_allclose(ours["mean_out"][0], running_mean.numpy(), rtol=1e-12)
    if is_test:
        np.testing.assert_allclose(ours["variance_out"][0], running_var.numpy(), rtol=1e-12)
    else:
        count = inputs["x"].size // shape[1]
        biased = inputs["x"].var(axis=(0, *range(2, len(shape))))
        unbiased_update = 0.9 * inputs["variance"] + 0.1 * biased * count / (count - 1)
        np.testing.assert_allclose(running_var.numpy(), unbiased_update, rtol=1e-12)
        np.testing.assert_allclose(
            ours["variance_out"][0], 0.9 * inputs["variance"] + 0.1 * biased, rtol=1e-12
        )


@pytest.mark.parametrize(("shape", "axis"), [((4, 6), 1), ((2, 3, 4, 5), 2)], ids=str)
def test_layer_norm_matches_pytorch(shape, axis):
    torch = pytest.importorskip("torch")
    inputs = layer_norm_inputs(shape, axis)
    weights = RNG.standard_normal(shape)
    wrt = ["x", "scale", "bias"]
    y, grads = ours_with_gradients("layer_norm", inputs, {"begin_norm_axis": axis}, weights, wrt)
    row = shape[axis:]
    t = {k: torch.tensor(v, requires_grad=True) for k, v in inputs.items()}
    ty = torch.nn.functional.layer_norm(
        t["x"], row, t["scale"].reshape(row), t["bias"].reshape(row), eps=1e-5
    )
    (ty * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    for slot in wrt:
        np.testing.assert_allclose(grads[slot], t[slot].grad.numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("op", ["batch_norm", "batch_norm_grad", "layer_norm", "layer_norm_grad"])
def test_the_generated_api_takes_required_inputs_first(op):
    """Optional inputs come after the required ones, so each op has a Python signature."""
    params = list(inspect.signature(getattr(pc.ops, op)).parameters.values())
    optional = [p.default is None for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert optional == sorted(optional)


# -- bad inputs ------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["batch_norm", "layer_norm"])
@pytest.mark.parametrize("epsilon", [0.0, -1e-5])
def test_epsilon_must_be_above_zero(op, epsilon):
    prog = pc.Program()
    with pc.program_guard(prog):
        x, c = pc.data("x", [2, 3]), pc.data("c", [3])
        args = (x, c, c, c, c) if op == "batch_norm" else (x,)
        with pytest.raises(
            pc.AttrError,
            match=rf"op '{op}', attr 'epsilon': expected a float in \(0, inf\), got float {epsilon}",
        ):
            getattr(pc.ops, op)(*args, epsilon=epsilon)


@pytest.mark.parametrize("momentum", [-0.1, 1.5])
def test_momentum_must_be_in_zero_one(momentum):
    inputs = batch_norm_inputs((2, 3))
    with pytest.raises(pc.AttrError, match=r"attr 'momentum': expected a float in \[0, 1\]"):
        run_op("batch_norm", inputs, {"momentum": momentum})


@pytest.mark.parametrize("slot", SLOTS)
def test_batch_norm_refuses_a_channel_mismatch(slot):
    inputs = batch_norm_inputs((2, 3, 4))
    inputs[slot] = np.ones(4)
    with pytest.raises(
        pc.ShapeError,
        match=rf"op 'batch_norm'.*: {slot} has 4 elements, but x's channel count \(axis 1\) is 3",
    ):
        run_op("batch_norm", inputs)


def test_batch_norm_refuses_bad_ranks_and_dtypes():
    inputs = batch_norm_inputs((2, 3))
    with pytest.raises(
        pc.ShapeError,
        match=r"op 'batch_norm'.*x must be \[N, C, \.\.\.\] \(rank >= 2\), got shape \[3\]",
    ):
        run_op("batch_norm", {**inputs, "x": np.ones(3)})
    with pytest.raises(pc.ShapeError, match=r"op 'batch_norm'.*scale must be a vector \[3\]"):
        run_op("batch_norm", {**inputs, "scale": np.ones((3, 1))})
    with pytest.raises(pc.ShapeError, match=r"op 'batch_norm'.*mean is float32, but x is float64"):
        run_op("batch_norm", {**inputs, "mean": np.zeros(3, np.float32)})
    with pytest.raises(
        pc.ShapeError, match=r"op 'batch_norm'.*x must be float32 or float64, got int64"
    ):
        run_op("batch_norm", {**inputs, "x": np.ones((2, 3), np.int64)})


def test_batch_norm_needs_elements_per_channel_while_training():
    inputs = batch_norm_inputs((0, 3))
    with pytest.raises(pc.KernelError, match=r"x float64\[0, 3\] has no elements per channel"):
        run_op("batch_norm", inputs)
    (y,) = run_op("batch_norm", inputs, {"is_test": True})["y"]
    assert y.shape == (0, 3)


@pytest.mark.parametrize("axis", [3, 7, 0, -3, -9])
def test_begin_norm_axis_out_of_range(axis):
    with pytest.raises(
        pc.ShapeError,
        match=rf"op 'layer_norm'.*begin_norm_axis {axis} is out of range for x of shape "
        r"\[2, 3, 4\]: it must be in \[1, 3\), or in \[-2, 0\) counting from the end",
    ):
        run_op("layer_norm", {"x": np.ones((2, 3, 4))}, {"begin_norm_axis": axis})


def test_layer_norm_refuses_a_scale_of_another_size():
    with pytest.raises(
        pc.ShapeError,
        match=r"op 'layer_norm'.*bias has 4 elements, but a row's size, "
        r"prod\(x.shape\[begin_norm_axis:\]\), is 12",
    ):
        run_op("layer_norm", {"x": np.ones((2, 3, 4)), "bias": np.ones(4)})


FED = {  # inputs of each op, every one fed
    "batch_norm": batch_norm_inputs((2, 3, 4)),
    "batch_norm_grad": {
        "x": np.ones((2, 3, 4)),
        "scale": np.ones(3),
        "saved_mean": np.zeros(3),
        "saved_inv_std": np.ones(3),
        "y_grad": np.ones((2, 3, 4)),
    },
    "layer_norm": layer_norm_inputs((2, 3, 4), 1),
    "layer_norm_grad": {
        "x": np.ones((2, 3, 4)),
        "scale": np.ones(12),
        "mean": np.zeros(2),
        "variance": np.ones(2),
        "y_grad": np.ones((2, 3, 4)),
    },
}


@pytest.mark.parametrize(
    ("op", "slot", "bad", "message"),
    [
        (
            "batch_norm",
            "scale",
            (5,),
            r"scale must be float64\[3\] \(x's channels\), got float64\[5\]",
        ),
        ("batch_norm", "variance", (3, 1), r"variance must be float64\[3\]"),
        ("batch_norm", "saved_inv_std", (2,), r"saved_inv_std must be float64\[3\]"),
        ("batch_norm_grad", "y_grad", (2, 3, 5), r"x and y_grad: shapes differ"),
        ("batch_norm_grad", "saved_mean", (4,), r"saved_mean must be float64\[3\]"),
        ("batch_norm_grad", "bias_grad", (3, 1), r"bias_grad must be float64\[3\]"),
        ("layer_norm", "bias", (11,), r"bias must be float64\[12\] \(a row's size\)"),
        ("layer_norm", "mean", (3,), r"mean must be float64\[2\] \(the number of rows\)"),
        ("layer_norm_grad", "variance", (6,), r"variance must be float64\[2\]"),
        ("layer_norm_grad", "x_grad", (2, 12), r"x and x_grad: shapes differ"),
        ("layer_norm_grad", "scale_grad", (11,), r"scale_grad must be float64\[12\]"),
    ],
)
def test_kernels_check_every_shape_they_index(op, slot, bad, message):
    """A plan whose shapes disagree with the op (the shape rules never make one) is refused by
    the kernel at prepare, before any element is read."""
    from paddle_core._src.run.planning import plan
    from paddle_core._src.run.prepared import CompiledRunner

    inputs = FED[op]
    prog = pc.Program()
    with pc.program_guard(prog):
        fed = {k: pc.data(k, list(v.shape), "float64") for k, v in inputs.items()}
        target = prog.global_block().append_op(op, fed)
    (var,) = target.inputs[slot] if slot in target.inputs else target.outputs[slot]
    signature = tuple(sorted((k, v.shape, "float64") for k, v in inputs.items()))
    spec = plan(prog, pc.CPU(), signature, target.output_names)
    spec.shapes[var] = (bad, "float64")
    with pytest.raises(pc.KernelError, match=message) as err:
        CompiledRunner(spec, pc.CPU(), num_threads=1)
    assert err.value.op == op


# -- layers ----------------------------------------------------------------------------------


def test_batch_norm_layer_creates_its_parameters_and_statistics():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [3, 4, 4])
        y = pc.layers.batch_norm(x, act="relu", momentum=0.8, epsilon=1e-3)
    assert y.shape == (None, 3, 4, 4)
    params = {p.name: p for p in main.all_parameters()}
    assert list(params) == [
        "batch_norm.scale_0",
        "batch_norm.bias_0",
        "batch_norm.mean_0",
        "batch_norm.variance_0",
    ]
    assert all(p.shape == (3,) for p in params.values())
    for name in ("batch_norm.mean_0", "batch_norm.variance_0"):
        assert not params[name].trainable and params[name].stop_gradient
    (op,) = [o for o in main.global_block().ops if o.type == "batch_norm"]
    assert op.outputs["mean_out"] == ["batch_norm.mean_0"]  # in place
    assert op.outputs["variance_out"] == ["batch_norm.variance_0"]
    assert (op.attr("momentum"), op.attr("epsilon"), op.attr("is_test")) == (0.8, 1e-3, False)
    scope = pc.Scope()
    pc.Executor().run(startup, scope=scope)
    starts = {"scale": 1, "bias": 0, "mean": 0, "variance": 1}
    for what, value in starts.items():
        np.testing.assert_array_equal(
            scope.get(f"batch_norm.{what}_0"), np.full(3, value, np.float32)
        )


def test_batch_norm_layer_trains_and_its_test_clone_infers(tmp_path):
    rng = np.random.default_rng(3)
    # Channels on very different scales: the classes depend on channel 0 only.
    offsets, spreads = np.array([5.0, -3.0, 100.0]), np.array([0.1, 3.0, 50.0])
    images = rng.standard_normal((256, 3, 2, 2)) * spreads[:, None, None] + offsets[:, None, None]
    images = images.astype(np.float32)
    labels = (images[:, 0].mean((1, 2)) > 5.0).astype(np.int64)[:, None]
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [3, 2, 2])
        label = pc.layers.data("label", [1], dtype="int64")
        h = pc.layers.batch_norm(x)
        logits = pc.layers.fc(h, 2)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        _, params_grads = pc.optimizer.SGD(learning_rate=0.5).minimize(loss)
    assert sorted(p.name for p, _ in params_grads) == [
        "batch_norm.bias_0",
        "batch_norm.scale_0",
        "fc.b_0",
        "fc.w_0",
    ]  # no gradient for the running statistics
    test = main.clone(for_test=True)
    exe, scope = pc.Executor(), pc.Scope()
    exe.run(startup, scope=scope)
    losses = []
    for _ in range(5):
        for i in range(0, 256, 32):
            feed = {"x": images[i : i + 32], "label": labels[i : i + 32]}
            (value,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
            losses.append(float(value))
    assert losses[-1] < 0.5 * losses[0], losses
    # 40 steps of momentum 0.9 bring the running statistics near the data's (0.9^40 of their
    # starting values, 0 and 1, is left).
    keep = 0.9 ** len(losses)
    mean, variance = scope.get("batch_norm.mean_0"), scope.get("batch_norm.variance_0")
    np.testing.assert_allclose(mean, (1 - keep) * offsets, rtol=0.1, atol=0.1)
    np.testing.assert_allclose(variance, keep + (1 - keep) * spreads**2, rtol=0.3)

    # The clone normalises with the running statistics and leaves them alone.
    saved = {p.name: scope.get(p.name).copy() for p in main.all_parameters()}
    batch = images[:8]
    (got,) = exe.run(test, feed={"x": batch}, fetch_list=[h.name], scope=scope)
    scale, bias = saved["batch_norm.scale_0"], saved["batch_norm.bias_0"]

    def c(a):
        return a[None, :, None, None]

    want = (batch - c(mean)) / np.sqrt(c(variance) + 1e-5) * c(scale) + c(bias)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    for name, value in saved.items():
        np.testing.assert_array_equal(scope.get(name), value)
    # A saved inference model keeps the running statistics.
    pc.io.save_inference_model(tmp_path, ["x"], [h], main, scope)
    fresh = pc.Scope()
    loaded, feeds, fetches = pc.io.load_inference_model(tmp_path, scope=fresh)
    (again,) = exe.run(loaded, feed={"x": batch}, fetch_list=fetches, scope=fresh)
    assert feeds == ["x"]
    np.testing.assert_array_equal(again, got)
    # Eight images give other batch statistics: the training program's output differs.
    (trained,) = exe.run(main, feed={"x": batch, "label": labels[:8]}, fetch_list=[h], scope=scope)
    assert not np.allclose(trained, want, atol=1e-2)


@pytest.mark.parametrize(
    ("scale", "shift"), [(True, True), (False, True), (True, False), (False, False)]
)
def test_layer_norm_layer(scale, shift):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [3, 4])
        y = pc.layers.layer_norm(x, scale=scale, shift=shift, begin_norm_axis=2, act="relu")
        loss = pc.layers.mean(y)
        params_grads = pc.append_backward(loss) if (scale or shift) else []
    names = [p.name for p in main.all_parameters()]
    assert names == ["layer_norm.scale_0"] * scale + ["layer_norm.bias_0"] * shift
    assert sorted(p.name for p, _ in params_grads) == sorted(names)
    assert all(p.shape == (4,) for p in main.all_parameters())
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    batch = RNG.standard_normal((5, 3, 4)).astype(np.float32)
    (got,) = exe.run(main, feed={"x": batch}, fetch_list=[y], scope=scope)
    want = np.maximum(layer_norm_reference(batch, begin_norm_axis=2)["y"], 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_batch_norm_layer_with_attrs_false_keeps_scale_and_bias_fixed():
    """As PaddlePaddle's BatchNorm: False leaves the scale at ones and the bias at zeros,
    neither trained."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [2, 3, 3])
        h = pc.layers.batch_norm(x, param_attr=False, bias_attr=False)
        loss = pc.layers.mean(pc.layers.fc(h, 2))
        _, params_grads = pc.optimizer.SGD(learning_rate=0.5).minimize(loss)
    assert sorted(p.name for p, _ in params_grads) == ["fc.b_0", "fc.w_0"]
    params = {p.name: p for p in main.all_parameters()}
    for name in ("batch_norm.scale_0", "batch_norm.bias_0"):
        assert not params[name].trainable and params[name].stop_gradient
    exe, scope = pc.Executor(), pc.Scope()
    exe.run(startup, scope=scope)
    for _ in range(3):
        exe.run(main, feed={"x": RNG.standard_normal((4, 2, 3, 3)).astype(np.float32)}, scope=scope)
    np.testing.assert_array_equal(scope.get("batch_norm.scale_0"), np.ones(2, np.float32))
    np.testing.assert_array_equal(scope.get("batch_norm.bias_0"), np.zeros(2, np.float32))


@pytest.mark.parametrize(("param_attr", "bias_attr"), [(False, None), (None, False)])
def test_layer_norm_layer_attr_false_is_no_such_parameter(param_attr, bias_attr):
    with pc.program_guard(pc.Program(), pc.Program()):
        pc.layers.layer_norm(pc.layers.data("x", [4]), param_attr=param_attr, bias_attr=bias_attr)
        names = [p.name for p in pc.default_main_program().all_parameters()]
    assert names == ["layer_norm.scale_0"] * (param_attr is None) + ["layer_norm.bias_0"] * (
        bias_attr is None
    )


def test_the_layer_counts_a_negative_begin_norm_axis_from_the_end():
    """begin_norm_axis=-1 normalises the last axis (PyTorch's LayerNorm(d)), its parameters [d]."""
    main = pc.Program()
    with pc.program_guard(main, pc.Program()):
        x = pc.layers.data("x", [5, 8])
        y = pc.layers.layer_norm(x, begin_norm_axis=-1, param_attr="ln.scale", bias_attr="ln.bias")
    block = main.global_block()
    assert block.var("ln.scale").shape == (8,) and block.var("ln.bias").shape == (8,)
    x = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    scope = pc.Scope()
    scope.set_var("ln.scale", np.ones(8, np.float32))
    scope.set_var("ln.bias", np.zeros(8, np.float32))
    (got,) = pc.Executor().run(main, feed={"x": x}, fetch_list=[y], scope=scope)
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_layers_refuse_unknown_sizes():
    with pc.program_guard(pc.Program(), pc.Program()):
        with pytest.raises(
            pc.ProgramError,
            match=r"batch_norm: the input must be \[N, C, \.\.\.\] with a known channel count",
        ):
            pc.layers.batch_norm(pc.layers.data("x", [None, None, 4]))
        with pytest.raises(
            pc.ProgramError, match=r"layer_norm: begin_norm_axis 2 must be in \[1, 2\)"
        ):
            pc.layers.layer_norm(pc.layers.data("v", [4]), begin_norm_axis=2)
        with pytest.raises(
            pc.ProgramError,
            match="layer_norm: the dimensions of 'w' from begin_norm_axis 1 on must be known",
        ):
            pc.layers.layer_norm(pc.layers.data("w", [3, None]))
