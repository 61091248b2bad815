"""paddle-ops-nn's CUDA kernels against its CPU kernels on `cuda:0`: every op of ops/cuda.pbtxt,
both dtypes, empty shapes, other axes, labels ignored or soft, the random ops drawing the CPU's
numbers, and an MLP's training curve. Any fallback of an nn op to a CPU kernel is an error here
(the math ops of the MLP may fall back: only that test allows it). Skipped without a GPU, or
when the plugin was built without CUDA."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import FLOATS, assert_matches
from op_helpers import rand as rand_from
from test_nn_cuda_build import INSTALLED_OPS, parse

import paddle_core as pc
from paddle_core.testing import run_op

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")
from paddle_ops_nn import _kernels as nn_kernels

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.usefixtures("cuda", "fresh_warnings"),
    pytest.mark.filterwarnings("error::RuntimeWarning"),  # "running it on CPU": not the kernel
]

# CUDA's float math is within a few ulp of the CPU's, not bitwise equal; sums over a lane run
# in another order.
GPU_TOLERANCE = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-13)}
RNG = np.random.default_rng(0)


def rand(shape, dtype: str) -> np.ndarray:
    return rand_from(RNG, shape, dtype)


@pytest.fixture
def cuda():
    reason = pc.CUDA.unavailable_reason(0)
    if reason is not None:
        pytest.skip(f"no usable CUDA device: {reason}")
    if not nn_kernels.built_with_cuda():
        pytest.skip("paddle-ops-nn was built without CUDA")


def on_both(op: str, inputs: dict, attrs: dict | None = None) -> None:
    """Run ``op`` on the CPU and on cuda:0; every output must agree."""
    cpu = run_op(op, inputs, attrs)
    gpu = run_op(op, inputs, attrs, device="cuda:0")
    assert cpu.keys() == gpu.keys()
    for slot, arrays in cpu.items():
        for want, got in zip(arrays, gpu[slot]):
            assert got.dtype == want.dtype and got.shape == want.shape, slot
            assert_matches(got, want, **GPU_TOLERANCE.get(want.dtype.name, {}))


ACTIVATIONS = {
    "relu": [{}],
    "leaky_relu": [{"alpha": 0.3}],
    "gelu": [{}, {"approximate": True}],
    "elu": [{"alpha": 0.5}],
    "softplus": [{}, {"beta": 2.0, "threshold": 4.0}],
    "silu": [{}],
}
GRAD_READS_OUT = {"relu", "leaky_relu", "elu"}
SOFTMAX = ["softmax", "log_softmax"]
LOSSES = ["cross_entropy", "softmax_with_cross_entropy"]
OPTIMIZERS = ["sgd", "momentum", "adam", "adamw"]
RANDOM = ["uniform_random", "gaussian_random", "truncated_gaussian_random", "dropout"]
SHAPES = [(), (7,), (0, 5), (1025, 33)]


def test_every_declared_cuda_op_is_tested_here():
    declared = {pack.op for pack in parse(INSTALLED_OPS / "cuda.pbtxt").kernel_packs}
    forward = set(ACTIVATIONS) | set(SOFTMAX) | set(LOSSES) | set(OPTIMIZERS) | set(RANDOM)
    forward.add("accuracy")
    grads = {f"{op}_grad" for op in set(ACTIVATIONS) | set(SOFTMAX) | set(LOSSES) | {"dropout"}}
    assert declared == forward | grads


# -- activations -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_activation_and_its_gradient(op, dtype, shape):
    x = (rand(shape, dtype) * 8).astype(dtype)
    g = rand(shape, dtype)
    for attrs in ACTIVATIONS[op]:
        on_both(op, {"x": x}, attrs)
        (out,) = run_op(op, {"x": x}, attrs)["out"]
        first = {"out": out} if op in GRAD_READS_OUT else {"x": x}
        on_both(f"{op}_grad", {**first, "out_grad": g}, attrs)


# -- softmax and losses --------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", SOFTMAX)
def test_softmax_and_its_gradient(op, dtype, axis):
    x = (rand((4, 5, 6), dtype) * 50).astype(dtype)
    x[0, 0, 0] = 1000  # extreme logits stay finite
    (out,) = run_op(op, {"x": x}, {"axis": axis})["out"]
    on_both(op, {"x": x}, {"axis": axis})
    on_both(f"{op}_grad", {"out": out, "out_grad": rand(x.shape, dtype)}, {"axis": axis})


@pytest.mark.parametrize("op", SOFTMAX)
def test_softmax_of_empty_tensors(op):
    on_both(op, {"x": np.zeros((0, 5), np.float32)})
    on_both(op, {"x": np.zeros((3, 0), np.float32)})


def hard_labels(rows: int, classes: int, ignore: int | None = None) -> np.ndarray:
    label = RNG.integers(0, classes, (rows, 1))
    if ignore is not None:
        label[::3] = ignore
    return label.astype(np.int64)


def soft_labels(rows: int, classes: int, dtype: str) -> np.ndarray:
    p = RNG.random((rows, classes))
    p[0, 1] = 0  # a zero term counts 0
    return (p / p.sum(1, keepdims=True)).astype(dtype)


@pytest.mark.parametrize("soft", [False, True])
@pytest.mark.parametrize("dtype", FLOATS)
def test_cross_entropy_and_its_gradient(dtype, soft):
    probs = soft_labels(9, 4, dtype) + dtype_eps(dtype)
    label = soft_labels(9, 4, dtype) if soft else hard_labels(9, 4, ignore=-100)
    attrs = {"soft_label": soft, "ignore_index": -100}
    on_both("cross_entropy", {"x": probs, "label": label}, attrs)
    g = rand((9, 1), dtype)
    on_both("cross_entropy_grad", {"x": probs, "label": label, "out_grad": g}, attrs)


def dtype_eps(dtype: str) -> float:
    return float(np.finfo(dtype).eps)


@pytest.mark.parametrize(
    ("soft", "axis", "drop"),
    [(False, -1, False), (False, -1, True), (False, 0, False), (True, -1, False)],
)
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_with_cross_entropy_and_its_gradient(dtype, soft, axis, drop):
    logits = (rand((6, 5), dtype) * 10).astype(dtype)
    if axis == 0:
        label = hard_labels(5, 6, ignore=2).reshape(1, 5)
    elif soft:
        label = soft_labels(6, 5, dtype)
    else:
        label = hard_labels(6, 5, ignore=2)
        label = label[:, 0] if drop else label
    attrs = {"soft_label": soft, "ignore_index": 2, "axis": axis}
    inputs = {"logits": logits, "label": label}
    on_both("softmax_with_cross_entropy", inputs, attrs)
    out = run_op("softmax_with_cross_entropy", inputs, attrs)
    (sm,), (loss,) = out["softmax"], out["loss"]
    loss_grad, sm_grad = rand(loss.shape, dtype), rand(sm.shape, dtype)
    for grads in (
        {"loss_grad": loss_grad},
        {"softmax_grad": sm_grad},
        {"loss_grad": loss_grad, "softmax_grad": sm_grad},
    ):
        on_both("softmax_with_cross_entropy_grad", {"softmax": sm, "label": label, **grads}, attrs)


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("dtype", FLOATS)
def test_accuracy(dtype, k):
    x = rand((301, 4), dtype)
    x[0, :] = x[0, 0]  # ties go to the lower class index
    x[1, 2] = np.nan  # NaN ranks above every number
    on_both("accuracy", {"x": x, "label": hard_labels(301, 4)}, {"k": k})
    on_both("accuracy", {"x": x[:0], "label": hard_labels(0, 4)}, {"k": k})  # no rows: NaN


def test_a_label_out_of_range_gives_nan_on_the_gpu_instead_of_reading_out_of_bounds():
    logits = rand((2, 3), "float32")
    label = np.array([[1], [7]], np.int64)
    out = run_op("softmax_with_cross_entropy", {"logits": logits, "label": label}, device="cuda:0")
    (loss,) = out["loss"]
    assert np.isfinite(loss[0, 0]) and np.isnan(loss[1, 0])


# -- optimizers ----------------------------------------------------------------------------------


def optimizer_inputs(op: str, dtype: str, shape=(33, 17)) -> tuple[dict, dict]:
    p, g = rand(shape, dtype), rand(shape, dtype)
    lr = np.array([0.05], dtype)
    if op == "sgd":
        return {"param": p, "grad": g, "learning_rate": lr}, {}
    if op == "momentum":
        ins = {"param": p, "grad": g, "velocity": rand(shape, dtype), "learning_rate": lr}
        return ins, {"mu": 0.9, "use_nesterov": True}
    m2 = np.abs(rand(shape, dtype))
    ins = {"param": p, "grad": g, "moment1": rand(shape, dtype), "moment2": m2}
    ins |= {"beta1_pow": np.array([0.81], dtype), "beta2_pow": np.array([0.998], dtype)}
    attrs = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}
    return ins | {"learning_rate": lr}, attrs | ({"coeff": 0.01} if op == "adamw" else {})


@pytest.mark.parametrize("shape", [(33, 17), (0, 4)])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", OPTIMIZERS)
def test_optimizer(op, dtype, shape):
    inputs, attrs = optimizer_inputs(op, dtype, shape)
    on_both(op, inputs, attrs)


# -- random ops: the CPU's numbers ---------------------------------------------------------------


def draw(op: str, attrs: dict, device: str) -> np.ndarray:
    prog = pc.Program()
    with pc.program_guard(prog):
        out = getattr(pc.ops, op)(**attrs)
    (value,) = pc.Executor(device).run(prog, fetch_list=[out], scope=pc.Scope())
    return value


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["uniform_random", "gaussian_random", "truncated_gaussian_random"])
def test_initializers_draw_the_cpus_numbers(op, dtype, seed):
    attrs = {"shape": [1001, 3], "dtype": dtype, "seed": seed}
    attrs |= {"min": -2.0, "max": 3.0} if op == "uniform_random" else {"mean": 1.0, "std": 2.0}
    cpu, gpu = draw(op, attrs, "cpu"), draw(op, attrs, "cuda:0")
    if op == "uniform_random":
        np.testing.assert_array_equal(gpu, cpu)  # the same bits, exact arithmetic
    else:
        assert_matches(gpu, cpu, **GPU_TOLERANCE[dtype])  # device log and cos: a few ulp


@pytest.mark.parametrize(
    "attrs",
    [
        {"dropout_prob": 0.3, "seed": 5, "dropout_implementation": "upscale_in_train"},
        {"dropout_prob": 0.5, "seed": 5},
        {"dropout_prob": 0.3, "is_test": True},
    ],
)
@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_draws_the_cpus_mask(dtype, attrs):
    x = rand((257, 9), dtype)
    on_both("dropout", {"x": x}, attrs)  # mask exactly, out to within rounding
    (mask,) = run_op("dropout", {"x": x}, attrs)["mask"]
    grad_attrs = {k: v for k, v in attrs.items() if k != "seed"}
    on_both("dropout_grad", {"mask": mask, "out_grad": rand(x.shape, dtype)}, grad_attrs)


# -- a training step -----------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # math ops without CUDA kernels fall back
def test_an_mlp_trains_on_the_gpu_as_on_the_cpu():
    rng = np.random.default_rng(1)
    x_all = rng.standard_normal((128, 8)).astype(np.float32)
    y_all = (x_all @ rng.standard_normal((8, 3))).argmax(1)[:, None].astype(np.int64)
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [8])
        y = pc.layers.data("y", [1], dtype="int64")
        h = pc.layers.fc(x, 16, act="relu")
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(pc.layers.fc(h, 3), y))
        pc.optimizer.Adam(0.01).minimize(loss)
    cpu_scope, gpu_scope = pc.Scope(), pc.Scope()
    pc.Executor().run(startup, scope=cpu_scope)
    for op in startup.global_block().ops:  # the same initial state on both devices
        for name in (n for names in op.outputs.values() for n in names):
            gpu_scope.set_var(name, np.array(cpu_scope.get(name)))
    curves = {}
    for device, scope in (("cpu", cpu_scope), ("cuda:0", gpu_scope)):
        exe, curve = pc.Executor(device), []
        for i in range(0, len(x_all), 16):
            feed = {"x": x_all[i : i + 16], "y": y_all[i : i + 16]}
            (value,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
            curve.append(float(value))
        curves[device] = curve
    np.testing.assert_allclose(curves["cuda:0"], curves["cpu"], rtol=1e-4)
    assert curves["cpu"][-1] < curves["cpu"][0]
