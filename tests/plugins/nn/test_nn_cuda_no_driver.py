"""paddle-ops-nn's CUDA kernels called straight through the C ABI (tests/cuda_helpers.py) where no
CUDA driver is: prepare takes CUDA tensors, run fails with CUDA's own message instead of
crashing, and an empty tensor launches nothing. Skipped where a driver is (the GPU tests run the
kernels there) or when the plugin was built without CUDA."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from cuda_helpers import PC_ERROR, Slots, has_cuda_driver
from cuda_helpers import prepare as prepare_kernel
from cuda_helpers import prepare_and_run as run_kernel

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")
from paddle_ops_nn import _kernels as nn_kernels
from paddle_ops_nn import cudnn as nn_cudnn

prepare_and_run = partial(run_kernel, nn_kernels)

pytestmark = [
    pytest.mark.skipif(not nn_kernels.built_with_cuda(), reason="built without CUDA"),
    pytest.mark.skipif(has_cuda_driver(), reason="a CUDA driver is here: the GPU tests run them"),
]


@pytest.fixture(autouse=True)
def without_cudnn():
    """The convolutions on the plugin's own kernels: without a driver, cuDNN (where installed)
    could not make its handle, and prepare would fail with cuDNN's message instead."""
    previous = nn_cudnn.set_enabled(False)
    yield
    nn_cudnn.set_enabled(previous)


def float32(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float32)


def float64(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float64)


def int64(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.int64)


# Kernels without attrs (the ctypes mirror passes none), by their inputs and outputs.
KERNELS = {
    "relu_cuda": ([float32(2, 3)], [float32(2, 3)]),
    "relu_grad_cuda": ([float32(2, 3)] * 2, [float32(2, 3)]),
    "sgd_cuda": ([float32(2, 3), float32(2, 3), float32(1)], [float32(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_without_a_driver_run_fails_with_cudas_message(name):
    ins, outs = KERNELS[name]
    status, message = prepare_and_run(name, Slots(*ins), Slots(*outs))
    assert status == PC_ERROR
    assert message.startswith("CUDA kernel launch failed: "), message


def test_an_empty_tensor_launches_nothing():
    assert prepare_and_run("relu_cuda", Slots(float32(0, 3)), Slots(float32(0, 3))) == (0, "")
    empty = Slots(float32(0, 3), float32(0, 3), float32(1))
    assert prepare_and_run("sgd_cuda", empty, Slots(float32(0, 3))) == (0, "")


# The kernels with attrs: (inputs, outputs, attrs), every attr the kernel reads.
CONV_TRANSPOSE = {"strides": [1, 1], "paddings": [1, 1], "dilations": [1, 1], "groups": 1}
LAYOUT = {"channel_block": 0}  # conv2d's, pool2d's and batch_norm's (the CPU's blocked layout)
CONV = CONV_TRANSPOSE | LAYOUT
FUSED = {"fuse_activation": "", "fuse_alpha": 0.0, "fuse_beta": 0.0}  # conv2d's epilogue
POOL = {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2], "paddings": [0, 0]}
POOL |= {"global_pooling": False, "ceil_mode": False, "exclusive": True} | LAYOUT
BATCH_NORM = {"momentum": 0.9, "epsilon": 1e-5, "is_test": False} | LAYOUT
LAYER_NORM = {"begin_norm_axis": 1, "epsilon": 1e-5}
WITH_ATTRS = {
    "conv2d_cuda": (
        [float32(2, 3, 5, 5), float32(4, 3, 3, 3), None, None, None],
        [float32(2, 4, 5, 5)],
        CONV | FUSED,
    ),
    "conv2d_grad_cuda": (
        [float32(2, 3, 5, 5), float32(4, 3, 3, 3), float32(2, 4, 5, 5), float32(4)],
        [float32(2, 3, 5, 5), float32(4, 3, 3, 3), float32(4)],
        CONV,
    ),
    "conv2d_transpose_cuda": (
        [float64(2, 4, 5, 5), float64(4, 3, 3, 3), None],
        [float64(2, 3, 5, 5)],
        CONV_TRANSPOSE,
    ),
    "conv2d_transpose_grad_cuda": (
        [float64(2, 4, 5, 5), float64(4, 3, 3, 3), float64(2, 3, 5, 5), None],
        [float64(2, 4, 5, 5), float64(4, 3, 3, 3), None],
        CONV_TRANSPOSE,
    ),
    "pool2d_cuda": ([float32(2, 3, 4, 4)], [float32(2, 3, 2, 2)], POOL),
    "pool2d_grad_cuda": (
        [float32(2, 3, 4, 4), float32(2, 3, 2, 2)],
        [float32(2, 3, 4, 4)],
        POOL | {"pooling_type": "avg"},
    ),
    "batch_norm_cuda": (
        [float32(4, 3, 5), *[float32(3)] * 4],
        [float32(4, 3, 5), *[float32(3)] * 4],
        BATCH_NORM,
    ),
    "batch_norm_grad_cuda": (
        [float32(4, 3, 5), *[float32(3)] * 3, float32(4, 3, 5)],
        [float32(4, 3, 5), float32(3), float32(3)],
        {"is_test": False} | LAYOUT,
    ),
    "layer_norm_cuda": (
        [float32(4, 6), float32(6), None],
        [float32(4, 6), float32(4), float32(4)],
        LAYER_NORM,
    ),
    "layer_norm_grad_cuda": (
        [float32(4, 6), float32(4), float32(4), float32(4, 6), float32(6)],
        [float32(4, 6), float32(6), float32(6)],
        LAYER_NORM,
    ),
    "embedding_cuda": ([int64(2, 3), float32(5, 4)], [float32(2, 3, 4)], {"padding_idx": -1}),
    "embedding_grad_cuda": (
        [int64(2, 3), float32(5, 4), float32(2, 3, 4)],
        [float32(5, 4)],
        {"padding_idx": 1},
    ),
}


@pytest.mark.parametrize("name", sorted(WITH_ATTRS))
def test_without_a_driver_the_nn_kernels_fail_with_cudas_message(name):
    ins, outs, attrs = WITH_ATTRS[name]
    status, message = prepare_and_run(name, Slots(*ins), Slots(*outs), attrs)
    assert status == PC_ERROR
    # The first CUDA call fails: a launch, or the copy of the ids (embedding) or the zero fill
    # that comes before a launch.
    assert message.startswith("CUDA ") and " failed: " in message, message


# The same kernels on empty tensors: nothing to compute, nothing launched, no CUDA call.
EMPTY = {
    "conv2d_cuda": (
        [float32(0, 3, 5, 5), float32(4, 3, 3, 3), None, None, None],
        [float32(0, 4, 5, 5)],
        CONV | FUSED,
    ),
    "conv2d_grad_cuda": (
        [float32(0, 3, 5, 5), float32(4, 3, 3, 3), float32(0, 4, 5, 5), None],
        [float32(0, 3, 5, 5), None, None],
        CONV,
    ),
    "pool2d_cuda": ([float32(0, 3, 4, 4)], [float32(0, 3, 2, 2)], POOL),
    "pool2d_grad_cuda": ([float32(2, 0, 4, 4), float32(2, 0, 2, 2)], [float32(2, 0, 4, 4)], POOL),
    "batch_norm_cuda": (
        [float32(4, 0, 5), *[float32(0)] * 4],
        [float32(4, 0, 5), *[float32(0)] * 4],
        BATCH_NORM,
    ),
    "layer_norm_cuda": (
        [float32(0, 6), None, None],
        [float32(0, 6), float32(0), float32(0)],
        LAYER_NORM,
    ),
    "embedding_cuda": ([int64(0, 3), float32(5, 4)], [float32(0, 3, 4)], {"padding_idx": -1}),
}


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_an_empty_nn_tensor_launches_nothing(name):
    ins, outs, attrs = EMPTY[name]
    assert prepare_and_run(name, Slots(*ins), Slots(*outs), attrs) == (0, "")


def test_the_cuda_kernels_check_shapes_as_the_cpu_kernels_do():
    # The shared prepare-time checks: the CPU kernels' messages.
    ins, _, attrs = WITH_ATTRS["conv2d_cuda"]
    status, message, *_ = prepare_kernel(
        nn_kernels, "conv2d_cuda", Slots(*ins), Slots(float32(2, 4, 4, 4)), attrs
    )
    assert status == PC_ERROR and message == "out must be [2, 4, 5, 5], got float32[2, 4, 4, 4]"
    status, message, *_ = prepare_kernel(
        nn_kernels,
        "pool2d_cuda",
        Slots(float32(2, 3, 4, 4)),
        Slots(float32(2, 3, 2, 2)),
        POOL | {"paddings": [2, 2]},
    )
    assert status == PC_ERROR and "must be smaller than the window" in message
    status, message, *_ = prepare_kernel(
        nn_kernels,
        "batch_norm_cuda",
        Slots(float32(4, 3, 5), *[float32(2)] * 4),
        Slots(float32(4, 3, 5), *[float32(3)] * 4),
        BATCH_NORM,
    )
    assert (
        status == PC_ERROR and message == "scale must be float32[3] (x's channels), got float32[2]"
    )


BLOCKABLE = ("conv2d", "pool2d", "batch_norm")  # the ops with a channel_block


def test_the_cuda_convolution_refuses_the_cpus_fused_epilogue():
    ins, outs, attrs = WITH_ATTRS["conv2d_cuda"]
    for fused in ({"fuse_activation": "relu"}, {}):
        given = [*ins[:4], float32(2, 4, 5, 5)] if not fused else ins
        status, message, *_ = prepare_kernel(
            nn_kernels, "conv2d_cuda", Slots(*given), Slots(*outs), attrs | fused
        )
        assert status == PC_ERROR
        assert message.startswith("a residual and fuse_activation are computed by the CPU's")


@pytest.mark.parametrize("b", [8, 16, -1])
@pytest.mark.parametrize("name", [f"{op}{grad}_cuda" for op in BLOCKABLE for grad in ("", "_grad")])
def test_the_cuda_kernels_refuse_onednns_blocked_layout(name, b):
    # First, whatever the tensors: the layout pass sets channel_block for CPU plans only.
    ins, outs, attrs = WITH_ATTRS[name]
    status, message, *_ = prepare_kernel(
        nn_kernels, name, Slots(*ins), Slots(*outs), attrs | {"channel_block": b}
    )
    assert status == PC_ERROR
    assert message.startswith(
        f"channel_block {b} is oneDNN's {'channels-last' if b < 0 else 'blocked'} layout, which "
        "only the CPU kernels take"
    ), message


def test_without_cudnn_the_convolutions_prepare_on_their_own_kernels():
    reason = nn_cudnn.unavailable_reason()
    if reason is not None:  # says what to install
        assert "pip install nvidia-cudnn-cu13" in reason, reason
    nn_cudnn.set_enabled(True)  # where cuDNN is missing, switched on or not
    if reason is None:
        nn_cudnn.set_enabled(False)  # where it is installed, switched off
    ins, outs, attrs = WITH_ATTRS["conv2d_grad_cuda"]
    before = nn_cudnn.engines_prepared()
    status, message, kernel, state, *_ = prepare_kernel(
        nn_kernels, "conv2d_grad_cuda", Slots(*ins), Slots(*outs), attrs
    )
    assert status == 0, message
    kernel.release(state)
    after = nn_cudnn.engines_prepared()
    assert after == {"cudnn": before["cudnn"], "own kernels": before["own kernels"] + 1}


# lstm and gru: x [T=3, B=2, I=4], one layer of H=5 (20 weight rows for lstm, 15 for gru).
RNN = {"hidden_size": 5, "num_layers": 1, "bidirectional": False}


def recurrent(kind: str, grad: bool) -> tuple[list, list, dict]:
    cell = kind == "lstm"
    rows, width = (20, 30) if cell else (15, 25)
    weights = [float32(rows, 4), float32(rows, 5), float32(rows), float32(rows)]
    states, reserve = [float32(1, 2, 5)] * (1 + cell), float32(1, 4, 2, width)
    unset = [None] * len(states)  # the initial states (or their gradients' inputs)
    if not grad:
        return [float32(3, 2, 4), *weights, *unset, None], [float32(3, 2, 5), *states, reserve], RNN
    ins = [float32(3, 2, 4), *weights, reserve, *unset, None, float32(3, 2, 5), *unset]
    return ins, [float32(3, 2, 4), *weights, *states], RNN


@pytest.mark.parametrize("name", ["lstm_cuda", "lstm_grad_cuda", "gru_cuda", "gru_grad_cuda"])
def test_the_recurrent_kernels_need_cublas_or_fail_with_cudas_message(name):
    ins, outs, attrs = recurrent(name.split("_")[0], "grad" in name)
    reason = nn_kernels.cublas_unavailable_reason()
    if reason is not None:  # refused in prepare, saying what to install
        status, message, *_ = prepare_kernel(nn_kernels, name, Slots(*ins), Slots(*outs), attrs)
        assert status == PC_ERROR and reason.startswith(message), message  # (cut to its buffer)
        assert "pip install nvidia-cublas" in reason and "libcublas.so.13" in reason, reason
        return
    status, message = prepare_and_run(name, Slots(*ins), Slots(*outs), attrs)
    assert status == PC_ERROR
    assert message.startswith("CUDA ") and " failed: " in message, message
