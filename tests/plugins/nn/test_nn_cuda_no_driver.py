"""paddle-ops-nn's CUDA kernels called straight through the C ABI (tests/cuda_helpers.py) where no
CUDA driver is: prepare takes CUDA tensors, run fails with CUDA's own message instead of
crashing, and an empty tensor launches nothing. Skipped where a driver is (the GPU tests run the
kernels there) or when the plugin was built without CUDA."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from cuda_helpers import PC_ERROR, Slots, has_cuda_driver
from cuda_helpers import prepare_and_run as run_kernel

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")
from paddle_ops_nn import _kernels as nn_kernels

prepare_and_run = partial(run_kernel, nn_kernels)

pytestmark = [
    pytest.mark.skipif(not nn_kernels.built_with_cuda(), reason="built without CUDA"),
    pytest.mark.skipif(has_cuda_driver(), reason="a CUDA driver is here: the GPU tests run them"),
]


def float32(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float32)


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
