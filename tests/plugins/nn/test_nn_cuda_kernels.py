"""paddle-ops-nn's CUDA kernels against its CPU kernels on `cuda:0`: every op with a CUDA kernel,
both dtypes, empty shapes, other axes, labels ignored or soft, the random ops drawing the CPU's
numbers, convolutions on cuDNN and on the plugin's own kernels, pooling's NaNs and ties,
batch_norm's running statistics updated in place, repeated ids, lstm and gru in every variant
(layers, directions, initial states, padded batches) with their reserve and gradients, oneDNN's
blocked layout refused (it is the CPU's), and training curves (an MLP, a small convolutional
network). Any fallback of an nn op to a CPU kernel is an error here (the math ops of the
training tests may fall back: only they allow it). Skipped without a GPU, or when the plugin was
built without CUDA."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_helpers import natives, source_manifest
from op_helpers import FLOATS, assert_matches
from op_helpers import rand as rand_from
from test_activation import ACTIVATIONS as CPU_ACTIVATIONS
from test_activation import GRAD_READS_OUT
from test_nn_cuda_build import PLUGIN
from test_norm import SLOTS, running_stats_program
from test_rnn import network as rnn_network
from test_rnn import with_states

import paddle_core as pc
from paddle_core.testing import run_op

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")
from paddle_ops_nn import _kernels as nn_kernels
from paddle_ops_nn import cudnn as nn_cudnn
from paddle_ops_nn import onednn as nn_onednn

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


def on_both(op: str, inputs: dict, attrs: dict | None = None, tolerance=None) -> None:
    """Run ``op`` on the CPU and on cuda:0; every output must agree (within ``tolerance``, by
    dtype; GPU_TOLERANCE by default)."""
    cpu = run_op(op, inputs, attrs)
    gpu = run_op(op, inputs, attrs, device="cuda:0")
    assert cpu.keys() == gpu.keys()
    for slot, arrays in cpu.items():
        for want, got in zip(arrays, gpu[slot]):
            assert got.dtype == want.dtype and got.shape == want.shape, slot
            assert_matches(got, want, **(tolerance or GPU_TOLERANCE).get(want.dtype.name, {}))


# The activation family's own cases (test_activation.py), so a new activation is tested here
# once it is there.
ACTIVATIONS = {op: [{}, *others] for op, (_, others) in CPU_ACTIVATIONS.items()}
SOFTMAX = ["softmax", "log_softmax"]
LOSSES = ["cross_entropy", "softmax_with_cross_entropy"]
OPTIMIZERS = ["sgd", "momentum", "adam", "adamw"]
RANDOM = ["uniform_random", "gaussian_random", "truncated_gaussian_random", "dropout"]
WINDOWED = ["conv2d", "conv2d_transpose", "pool2d"]
ADAPTIVE = ["adaptive_avg_pool2d", "adaptive_max_pool2d"]
NORMS = ["batch_norm", "layer_norm"]
ATTENTION = ["scaled_dot_product_attention"]
RNN = ["lstm", "gru"]
SHAPES = [(), (7,), (0, 5), (1025, 33)]
# Sums over many products or elements, in another order than the CPU's (cuDNN's algorithms, a
# block's tree): a few ulp of the sum, relative to its terms.
SUM_TOLERANCE = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-10, atol=1e-11)}


def test_every_declared_cuda_op_is_tested_here():
    declared = set(natives(source_manifest(PLUGIN), "cuda"))
    forward = set(ACTIVATIONS) | set(SOFTMAX) | set(LOSSES) | set(OPTIMIZERS) | set(RANDOM)
    forward |= {"accuracy", "embedding", *WINDOWED, *ADAPTIVE, *NORMS, *ATTENTION, *RNN}
    with_grads = set(ACTIVATIONS) | set(SOFTMAX) | set(LOSSES) | {"dropout", "embedding"}
    with_grads |= set(ATTENTION) | set(RNN)
    grads = {f"{op}_grad" for op in with_grads | set(WINDOWED) | set(ADAPTIVE) | set(NORMS)}
    assert declared == forward | grads


# -- attention ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("variant", ["plain", "causal", "bool mask", "float mask", "empty keys"])
def test_attention_and_its_gradient(cuda, dtype, variant):
    S = 0 if variant == "empty keys" else 70
    q, k, v = rand((2, 3, 33, 8), dtype), rand((2, 3, S, 8), dtype), rand((2, 3, S, 5), dtype)
    inputs, attrs = {"q": q, "k": k, "v": v}, {"is_causal": variant == "causal"}
    if variant == "bool mask":
        inputs["attn_mask"] = RNG.random((3, 33, S)) < 0.7
    if variant == "float mask":
        inputs["attn_mask"] = rand((33, S), dtype)
    on_both("scaled_dot_product_attention", inputs, attrs, SUM_TOLERANCE)
    out = run_op("scaled_dot_product_attention", inputs, attrs)
    grad_inputs = {
        **inputs,
        "out": out["out"][0],
        "logsumexp": out["logsumexp"][0],
        "out_grad": rand(out["out"][0].shape, dtype),
    }
    on_both("scaled_dot_product_attention_grad", grad_inputs, attrs, SUM_TOLERANCE)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "attrs", [{"dropout_p": 0.3, "seed": 5}, {"dropout_p": 0.5, "is_causal": True}], ids=str
)
def test_attention_dropout_draws_the_cpus_mask(cuda, dtype, attrs):
    """Each pair's draw is the same counter-based number on both devices: the same rng_state,
    the same dropped pairs (read through identity values: out = P Z), and the gradient drawn
    again from the state."""
    op = "scaled_dot_product_attention"
    q, k, v = rand((2, 3, 33, 8), dtype), rand((2, 3, 70, 8), dtype), rand((2, 3, 70, 5), dtype)
    on_both(op, {"q": q, "k": k, "v": v}, attrs, SUM_TOLERANCE)
    out = run_op(op, {"q": q, "k": k, "v": v}, attrs)
    grad_inputs = {
        "q": q,
        "k": k,
        "v": v,
        "out": out["out"][0],
        "logsumexp": out["logsumexp"][0],
        "out_grad": rand(out["out"][0].shape, dtype),
        "rng_state": out["rng_state"][0],
    }
    grad_attrs = {a: value for a, value in attrs.items() if a != "seed"}
    on_both(op + "_grad", grad_inputs, grad_attrs, SUM_TOLERANCE)
    eye = np.broadcast_to(np.eye(70, dtype=dtype), (2, 3, 70, 70)).copy()
    cpu = run_op(op, {"q": q, "k": k, "v": eye}, attrs)["out"][0]
    gpu = run_op(op, {"q": q, "k": k, "v": eye}, attrs, device="cuda:0")["out"][0]
    np.testing.assert_array_equal(cpu == 0, gpu == 0)


# -- recurrent networks --------------------------------------------------------------------------

# name: (T, B, I, H, layers, bidirectional, initial states, sequence_length)
RNN_CASES = {
    "one step": (1, 1, 1, 1, 1, False, False, None),
    "plain": (5, 3, 4, 6, 1, False, False, None),
    "two layers": (4, 2, 7, 3, 2, False, False, None),
    "bidirectional, three layers": (5, 3, 4, 3, 3, True, False, None),
    "initial states": (4, 3, 2, 5, 2, True, True, None),
    "padded": (6, 4, 3, 5, 2, True, True, np.array([6, 1, 3, 5], np.int64)),
    "padded, int32, no states": (5, 3, 2, 4, 1, True, False, np.array([2, 5, 1], np.int32)),
    "wide": (7, 37, 40, 70, 1, False, False, None),  # many blocks a step
}


@pytest.fixture
def cublas(cuda):
    reason = nn_kernels.cublas_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no cuBLAS for the recurrent kernels: {reason}")


def rnn_case(kind: str, case: str, dtype: str) -> tuple[dict, dict]:
    steps, batch, inputs, hidden, layers, bidirectional, states, lengths = RNN_CASES[case]
    values, attrs = rnn_network(kind, steps, batch, inputs, hidden, layers, bidirectional, dtype)
    if states:
        values = with_states(kind, values, attrs, dtype=dtype)
    if lengths is not None:
        values["sequence_length"] = lengths
    return values, attrs


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", sorted(RNN_CASES))
@pytest.mark.parametrize("kind", RNN)
def test_rnn(cublas, kind, case, dtype):
    """Every output, the reserve included (its layout is the CPU's)."""
    values, attrs = rnn_case(kind, case, dtype)
    on_both(kind, values, attrs, SUM_TOLERANCE)


@pytest.mark.parametrize("flowing", ["every output", "out", "final states"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", sorted(RNN_CASES))
@pytest.mark.parametrize("kind", RNN)
def test_rnn_gradient(cublas, kind, case, dtype, flowing):
    """From the CPU's reserve, the gradients of whichever outputs have one (absent: zeros)."""
    values, attrs = rnn_case(kind, case, dtype)
    forward = run_op(kind, values, attrs)
    inputs = {**values, "reserve": forward["reserve"][0]}
    finals = ["h_n", "c_n"] if kind == "lstm" else ["h_n"]
    for slot in (["out"] if flowing != "final states" else []) + (
        finals if flowing != "out" else []
    ):
        inputs[f"{slot}_grad"] = rand(forward[slot][0].shape, dtype)
    on_both(f"{kind}_grad", inputs, attrs, SUM_TOLERANCE)


@pytest.mark.parametrize("kind", RNN)
def test_a_sequence_length_outside_1_to_t_is_refused_on_the_gpu_too(cublas, kind):
    values, attrs = rnn_case(kind, "padded", "float32")
    values["sequence_length"] = np.array([6, 0, 3, 5], np.int64)
    with pytest.raises(pc.KernelError, match=r"sequence_length\[1\] is 0, outside \[1, 6\]"):
        run_op(kind, values, attrs, device="cuda:0")


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


# -- convolutions --------------------------------------------------------------------------------


@pytest.fixture(params=["cudnn", "own kernels"])
def conv_engine(request):
    """Each convolution test runs on cuDNN (where it loads) and on the plugin's own kernels."""
    use_cudnn = request.param == "cudnn"
    if use_cudnn and nn_cudnn.unavailable_reason() is not None:
        pytest.skip(f"no cuDNN here: {nn_cudnn.unavailable_reason()}")
    previous = nn_cudnn.set_enabled(use_cudnn)
    yield request.param
    nn_cudnn.set_enabled(previous)


# (x shape, filter shape, attrs): strides, symmetric and asymmetric padding (cuDNN pads
# symmetrically: the latter runs on the plugin's kernels), dilations, groups, depthwise, 1x1.
CONV_CASES = [
    ((2, 3, 9, 8), (4, 3, 3, 3), {}),
    (
        (2, 4, 9, 10),
        (6, 2, 3, 2),
        {"strides": [2, 1], "paddings": [1, 2], "dilations": [1, 2], "groups": 2},
    ),
    ((1, 4, 7, 7), (4, 2, 2, 3), {"paddings": [1, 0, 2, 1], "groups": 2}),
    ((3, 3, 8, 8), (3, 1, 3, 3), {"groups": 3, "strides": [2, 2], "paddings": [1, 1]}),
    ((2, 5, 6, 6), (7, 5, 1, 1), {}),
]


def check_engine(engine: str, before: dict[str, int], attrs: dict, dtype: str) -> None:
    """The convolutions since ``before`` ran on the engine asked for: cuDNN where it serves
    (padding the same on both sides; float64 only where cuDNN has a deterministic algorithm for
    it, which this does not require), else the plugin's own kernels."""
    after = nn_cudnn.engines_prepared()
    used = {name for name, count in after.items() if count > before[name]}
    symmetric = len(attrs.get("paddings", [0, 0])) == 2
    if engine == "cudnn" and symmetric and dtype == "float64":
        assert used and used <= {"cudnn", "own kernels"}, after
        return
    assert used == {"cudnn" if engine == "cudnn" and symmetric else "own kernels"}, after


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv2d_and_its_gradient(case, dtype, conv_engine):
    x_shape, w_shape, attrs = CONV_CASES[case]
    x, w, b = rand(x_shape, dtype), rand(w_shape, dtype), rand(w_shape[:1], dtype)
    before = nn_cudnn.engines_prepared()
    for inputs in ({"x": x, "filter": w}, {"x": x, "filter": w, "bias": b}):
        on_both("conv2d", inputs, attrs, SUM_TOLERANCE)
        (out,) = run_op("conv2d", inputs, attrs)["out"]
        on_both("conv2d_grad", {**inputs, "out_grad": rand(out.shape, dtype)}, attrs, SUM_TOLERANCE)
    check_engine(conv_engine, before, attrs, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv2d_transpose_and_its_gradient(case, dtype, conv_engine):
    _, w_shape, attrs = CONV_CASES[case]
    groups = attrs.get("groups", 1)
    x, w = rand((2, w_shape[0], 5, 4), dtype), rand(w_shape, dtype)
    inputs = {"x": x, "filter": w, "bias": rand((w_shape[1] * groups,), dtype)}
    before = nn_cudnn.engines_prepared()
    on_both("conv2d_transpose", inputs, attrs, SUM_TOLERANCE)
    (out,) = run_op("conv2d_transpose", inputs, attrs)["out"]
    grad_inputs = {**inputs, "out_grad": rand(out.shape, dtype)}
    on_both("conv2d_transpose_grad", grad_inputs, attrs, SUM_TOLERANCE)
    check_engine(conv_engine, before, attrs, dtype)


@pytest.mark.usefixtures("conv_engine")
def test_conv2d_of_an_empty_batch_and_of_no_channels():
    w = rand((4, 3, 3, 3), "float32")
    on_both("conv2d", {"x": rand((0, 3, 5, 5), "float32"), "filter": w})
    on_both(
        "conv2d_grad",
        {
            "x": rand((0, 3, 5, 5), "float32"),
            "filter": w,
            "out_grad": rand((0, 4, 3, 3), "float32"),
        },
    )
    on_both("conv2d", {"x": rand((2, 0, 5, 5), "float32"), "filter": rand((4, 0, 3, 3), "float32")})


@pytest.mark.usefixtures("conv_engine")
@pytest.mark.parametrize("dtype", FLOATS)
def test_a_convolution_over_no_input_channels_gives_its_bias_as_on_the_cpu(dtype):
    x, bias = rand((2, 0, 5, 5), dtype), rand((4,), dtype)
    for op, w_shape in (("conv2d", (4, 0, 3, 3)), ("conv2d_transpose", (0, 4, 3, 3))):
        inputs = {"x": x, "filter": rand(w_shape, dtype), "bias": bias}
        (out,) = run_op(op, inputs, device="cuda:0")["out"]
        np.testing.assert_array_equal(out, np.broadcast_to(bias[:, None, None], out.shape))
        on_both(f"{op}_grad", {**inputs, "out_grad": rand(out.shape, dtype)}, None, SUM_TOLERANCE)


@pytest.mark.parametrize("op", ["conv2d", "pool2d", "batch_norm"])
def test_onednns_blocked_layout_is_refused_on_the_gpu(op):
    # (the layout pass sets channel_block for CPU plans only: a CUDA plan never holds one)
    x = rand((2, 8, 6, 6), "float32")
    inputs = {
        "conv2d": {"x": x, "filter": rand((8, 8, 3, 3), "float32")},
        "pool2d": {"x": x},
        "batch_norm": {"x": x.reshape(2, 1, 6, 6, 8), **{k: rand((8,), "float32") for k in SLOTS}},
    }[op]
    with pytest.raises(pc.KernelError, match="channel_block 8 is oneDNN's blocked layout, which"):
        run_op(op, inputs, {"channel_block": 8}, device="cuda:0")


def test_conv2d_results_are_the_same_on_every_run():
    x, w = rand((2, 8, 12, 12), "float32"), rand((8, 8, 3, 3), "float32")
    inputs = {"x": x, "filter": w, "out_grad": rand((2, 8, 10, 10), "float32")}
    first = run_op("conv2d_grad", inputs, device="cuda:0")
    again = run_op("conv2d_grad", inputs, device="cuda:0")
    for slot, arrays in first.items():
        np.testing.assert_array_equal(again[slot][0], arrays[0])  # deterministic algorithms


def test_cudnn_switch_says_what_it_was():
    previous = nn_cudnn.set_enabled(False)
    try:
        assert nn_cudnn.is_enabled() is False
        assert nn_cudnn.set_enabled(True) is False
    finally:
        nn_cudnn.set_enabled(previous)


# -- pooling -----------------------------------------------------------------------------------

POOL_CASES = [
    {"ksize": [2, 2], "strides": [2, 2]},  # windows that share no input
    {"ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]},  # overlapping windows
    {"ksize": [3, 2], "strides": [1, 1], "paddings": [1, 0, 1, 1]},
    {"ksize": [3, 3], "strides": [2, 1], "paddings": [1, 1], "ceil_mode": True},
    {"ksize": [3, 3], "strides": [2, 2], "ceil_mode": True},
    {"global_pooling": True},
]


@pytest.fixture
def cpu_loops():
    """The CPU's pooling on its loops, not oneDNN: the arithmetic the CUDA kernels share
    (pool.hpp), so that the two devices give the same bits."""
    previous = nn_onednn.set_enabled(False)
    yield
    nn_onednn.set_enabled(previous)


@pytest.mark.usefixtures("cpu_loops")
@pytest.mark.parametrize("exclusive", [True, False])
@pytest.mark.parametrize("pooling_type", ["max", "avg"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(POOL_CASES)))
def test_pool2d_and_its_gradient_are_the_cpu_loops_numbers(case, dtype, pooling_type, exclusive):
    attrs = {**POOL_CASES[case], "pooling_type": pooling_type, "exclusive": exclusive}
    x = rand((2, 3, 9, 7), dtype)
    x[0, 0, 2, 2] = x[0, 0, 2, 3]  # a tie: the first maximum takes the gradient
    x[1, 1, 4, 4] = np.nan  # NaN is the maximum, as on the CPU
    x[1, 2, 0, :] = -np.inf
    (out,) = run_op("pool2d", {"x": x}, attrs)["out"]
    for op, inputs in (
        ("pool2d", {"x": x}),
        ("pool2d_grad", {"x": x, "out_grad": rand(out.shape, dtype)}),
    ):
        cpu, gpu = run_op(op, inputs, attrs), run_op(op, inputs, attrs, device="cuda:0")
        for slot, (want,) in cpu.items():
            np.testing.assert_array_equal(gpu[slot][0], want)  # the same additions, in order


def test_pool2d_of_empty_tensors():
    on_both("pool2d", {"x": np.zeros((0, 3, 4, 4), np.float32)})
    on_both(
        "pool2d_grad",
        {"x": np.zeros((2, 0, 4, 4), np.float32), "out_grad": np.zeros((2, 0, 3, 3), np.float32)},
    )


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ADAPTIVE)
@pytest.mark.parametrize(
    ("shape", "size"),
    [
        ((2, 3, 9, 7), [1, 1]),
        ((2, 3, 67, 65), [1, 1]),  # global pooling: a block's threads share each plane
        ((2, 3, 9, 7), [3, 7]),  # disjoint bins along the width only
        ((2, 3, 9, 7), [4, 2]),
        ((2, 3, 9, 6), [3, 3]),  # disjoint bins
        ((2, 3, 4, 3), [9, 7]),  # more bins than rows: each element in several
        ((0, 3, 4, 4), [2, 2]),
    ],
)
def test_adaptive_pools_and_their_gradients_as_on_cpu(op, size, shape, dtype):
    x = rand(shape, dtype)
    if x.size:
        x[0, 0, 1, 1] = x[0, 0, 1, 2]  # a tie: the first maximum takes the gradient
        x[1, 1, 2, 2] = np.nan  # NaN is the maximum, as on the CPU
        x[1, 2, 0, :] = -np.inf
    attrs = {"output_size": size}
    (out,) = run_op(op, {"x": x}, attrs)["out"]
    on_both(op, {"x": x}, attrs, SUM_TOLERANCE)
    on_both(f"{op}_grad", {"x": x, "out_grad": rand(out.shape, dtype)}, attrs, SUM_TOLERANCE)


# -- normalisation -----------------------------------------------------------------------------


def batch_norm_inputs(shape, dtype: str) -> dict:
    c = shape[1]
    x = (rand(shape, dtype) * 3 + 50).astype(dtype)  # a mean far from zero
    return {
        "x": x,
        "scale": rand((c,), dtype),
        "bias": rand((c,), dtype),
        "mean": rand((c,), dtype),
        "variance": np.abs(rand((c,), dtype)) + 1,
    }


@pytest.mark.parametrize("is_test", [False, True])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (300, 2), (2, 3), (2, 70, 1, 1), (0, 3, 2)])
def test_batch_norm_and_its_gradient(shape, dtype, is_test):
    inputs = batch_norm_inputs(shape, dtype)
    attrs = {"is_test": is_test, "momentum": 0.8, "epsilon": 1e-5}
    if shape[0] == 0 and not is_test:
        return  # refused on both devices: no elements to take statistics from
    on_both("batch_norm", inputs, attrs, SUM_TOLERANCE)
    out = run_op("batch_norm", inputs, attrs)
    grad_inputs = {
        "x": inputs["x"],
        "scale": inputs["scale"],
        "saved_mean": out["saved_mean"][0],
        "saved_inv_std": out["saved_inv_std"][0],
        "y_grad": rand(shape, dtype),
    }
    on_both("batch_norm_grad", grad_inputs, {"is_test": is_test}, SUM_TOLERANCE)


def host(value) -> np.ndarray:
    """A scope's value as a NumPy array (a CuPy array's .get())."""
    return value.get() if hasattr(value, "get") else np.asarray(value)


@pytest.mark.parametrize("dtype", FLOATS)
def test_batch_norm_updates_its_running_statistics_in_place_on_the_gpu(dtype):
    inputs = batch_norm_inputs((4, 3, 5), dtype)
    scopes = {"cpu": pc.Scope(), "cuda:0": pc.Scope()}
    for scope in scopes.values():
        for slot in SLOTS:
            scope.set_var(slot, inputs[slot].copy())
    train, _ = running_stats_program(dtype, is_test=False)
    for step in range(3):
        x = (RNG.standard_normal((4, 3, 5)) + step).astype(dtype)
        for device, scope in scopes.items():
            pc.Executor(device).run(train, feed={"x": x}, fetch_list=["bn.y"], scope=scope)
    gpu_plan = pc.Executor("cuda:0").prepare(train, {"x": x}, [])
    assert gpu_plan.compiled and gpu_plan._runner.scratch_copies == 0  # in place: no copy
    for slot in ("mean", "variance"):
        got = host(scopes["cuda:0"].get(slot))
        assert_matches(got, host(scopes["cpu"].get(slot)), **SUM_TOLERANCE[dtype])


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("shape", "axis"), [((4, 5, 6), 1), ((4, 5, 6), 2), ((3, 700), 1)])
def test_layer_norm_and_its_gradient(shape, axis, dtype, affine):
    cols = int(np.prod(shape[axis:]))
    inputs = {"x": (rand(shape, dtype) * 2 + 40).astype(dtype)}
    if affine:
        inputs |= {"scale": rand((cols,), dtype), "bias": rand((cols,), dtype)}
    attrs = {"begin_norm_axis": axis, "epsilon": 1e-5}
    on_both("layer_norm", inputs, attrs, SUM_TOLERANCE)
    out = run_op("layer_norm", inputs, attrs)
    grad_inputs = {
        "x": inputs["x"],
        "mean": out["mean"][0],
        "variance": out["variance"][0],
        "y_grad": rand(shape, dtype),
    }
    if affine:
        grad_inputs["scale"] = inputs["scale"]
    on_both("layer_norm_grad", grad_inputs, attrs, SUM_TOLERANCE)


def test_normalisation_results_are_the_same_on_every_run():
    inputs = batch_norm_inputs((8, 4, 33, 17), "float32")
    first = run_op("batch_norm", inputs, device="cuda:0")
    again = run_op("batch_norm", inputs, device="cuda:0")
    for slot, arrays in first.items():
        np.testing.assert_array_equal(again[slot][0], arrays[0])  # no atomics: the same bits


# -- embedding ---------------------------------------------------------------------------------


@pytest.mark.parametrize("padding_idx", [-1, 3])
@pytest.mark.parametrize("ids_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_embedding_and_its_gradient(dtype, ids_dtype, padding_idx):
    ids = RNG.integers(0, 9, (6, 5)).astype(ids_dtype)
    ids[0, :3] = 4  # repeated ids add up in order
    ids[1, 0] = 3
    w = rand((9, 7), dtype)
    attrs = {"padding_idx": padding_idx}
    on_both("embedding", {"ids": ids, "w": w}, attrs)
    grad_inputs = {"ids": ids, "w": w, "out_grad": rand((6, 5, 7), dtype)}
    on_both("embedding_grad", grad_inputs, attrs)
    cpu = run_op("embedding_grad", grad_inputs, attrs)["w_grad"][0]
    gpu = run_op("embedding_grad", grad_inputs, attrs, device="cuda:0")["w_grad"][0]
    np.testing.assert_array_equal(gpu, cpu)  # the CPU's additions, in the CPU's order


def test_embedding_of_no_ids():
    ids, w = np.zeros((0, 2), np.int64), rand((4, 3), "float32")
    on_both("embedding", {"ids": ids, "w": w})
    on_both("embedding_grad", {"ids": ids, "w": w, "out_grad": np.zeros((0, 2, 3), np.float32)})


def test_an_id_out_of_range_is_the_cpus_error_on_the_gpu():
    ids, w = np.array([[1, 9]], np.int64), rand((4, 3), "float32")
    with pytest.raises(pc.KernelError, match=r"id 9 \(at flat position 1\) is outside \[0, 4\)"):
        run_op("embedding", {"ids": ids, "w": w}, device="cuda:0")


# -- training ----------------------------------------------------------------------------------


def training_curves(main, startup, loss, x_all, y_all, batch: int) -> dict[str, list[float]]:
    """The loss of each step of training on the CPU and on cuda:0 from one initial state."""
    cpu_scope, gpu_scope = pc.Scope(), pc.Scope()
    pc.Executor().run(startup, scope=cpu_scope)
    for op in startup.global_block().ops:  # the same initial state on both devices
        for name in (n for names in op.outputs.values() for n in names):
            gpu_scope.set_var(name, np.array(cpu_scope.get(name)))
    curves = {}
    for device, scope in (("cpu", cpu_scope), ("cuda:0", gpu_scope)):
        exe, curve = pc.Executor(device), []
        for i in range(0, len(x_all), batch):
            feed = {"x": x_all[i : i + batch], "y": y_all[i : i + batch]}
            (value,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
            curve.append(float(value))
        curves[device] = curve
    return curves


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
    curves = training_curves(main, startup, loss, x_all, y_all, batch=16)
    np.testing.assert_allclose(curves["cuda:0"], curves["cpu"], rtol=1e-4)
    assert curves["cpu"][-1] < curves["cpu"][0]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # math ops without CUDA kernels fall back
def test_a_convolutional_network_trains_on_the_gpu_as_on_the_cpu():
    rng = np.random.default_rng(2)
    x_all = rng.standard_normal((64, 1, 8, 8)).astype(np.float32)
    y_all = (x_all[:, 0, :4].sum((1, 2)) > x_all[:, 0, 4:].sum((1, 2)))[:, None].astype(np.int64)
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [1, 8, 8])
        y = pc.layers.data("y", [1], dtype="int64")
        h = pc.layers.conv2d(x, 4, 3, padding=1)
        h = pc.layers.batch_norm(h, act="relu")
        h = pc.layers.pool2d(h, 2, pool_stride=2)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(pc.layers.fc(h, 2), y))
        pc.optimizer.Adam(0.01).minimize(loss)
    curves = training_curves(main, startup, loss, x_all, y_all, batch=8)
    np.testing.assert_allclose(curves["cuda:0"], curves["cpu"], rtol=1e-3)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # math ops without CUDA kernels fall back
def test_an_lstm_trains_on_the_gpu_as_on_the_cpu(cublas):
    """test_rnn's task (carry the first step's sign to the end), through the layer's program:
    lstm and lstm_grad in the executor, with transposes and reshapes around them."""
    rng = np.random.default_rng(3)
    x_all = rng.standard_normal((64, 6, 1)).astype(np.float32)
    y_all = (x_all[:, 0, 0] > 0).astype(np.int64)[:, None]
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [6, 1])
        y = pc.layers.data("y", [1], dtype="int64")
        _, (h_n, _) = pc.layers.lstm(x, 8)
        logits = pc.layers.fc(pc.ops.reshape(h_n, shape=[-1, 8]), 2)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, y))
        pc.optimizer.Adam(0.05).minimize(loss)
    curves = training_curves(main, startup, loss, x_all, y_all, batch=16)
    np.testing.assert_allclose(curves["cuda:0"], curves["cpu"], rtol=1e-3)
