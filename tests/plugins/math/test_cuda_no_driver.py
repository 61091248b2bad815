"""paddle-ops-math's CUDA kernels called straight through the C ABI (kernel_abi.h, mirrored with
ctypes) where no CUDA driver is: prepare takes CUDA tensors, run fails with CUDA's own message
instead of crashing, and an empty tensor launches nothing. Skipped where a driver is (the GPU
tests run the kernels there) or when the plugin was built without CUDA."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from cuda_helpers import PC_ERROR, Slots, has_cuda_driver
from cuda_helpers import prepare as prepare_kernel
from cuda_helpers import prepare_and_run as run_kernel

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")
from paddle_ops_math import kernels as math_kernels

prepare_and_run = partial(run_kernel, math_kernels)
prepare = partial(prepare_kernel, math_kernels)

pytestmark = [
    pytest.mark.skipif(not math_kernels.built_with_cuda(), reason="built without CUDA"),
    pytest.mark.skipif(has_cuda_driver(), reason="a CUDA driver is here: the GPU tests run them"),
]


def float32(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float32)


@pytest.mark.parametrize(
    ("name", "inputs"),
    [("add_cuda", 2), ("equal_cuda", 2), ("exp_cuda", 1), ("assign_cuda", 1)],
)
def test_without_a_driver_run_fails_with_cudas_message(name, inputs):
    out = np.zeros((2, 3), bool if name == "equal_cuda" else np.float32)
    status, message = prepare_and_run(name, Slots(*[float32(2, 3)] * inputs), Slots(out))
    assert status == PC_ERROR
    assert message.startswith(("CUDA kernel launch failed: ", "CUDA copy failed: ")), message


def test_an_empty_tensor_launches_nothing():
    assert prepare_and_run("exp_cuda", Slots(float32(0, 3)), Slots(float32(0, 3))) == (0, "")
    status = prepare_and_run("add_cuda", Slots(float32(0, 3), float32(3)), Slots(float32(0, 3)))
    assert status == (0, "")


def int64(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.int64)


REDUCE = {"axes": [0], "keepdim": False, "noop_with_empty_axes": False}
LAUNCHING = [  # kernel, inputs, outputs, attrs: each prepares, then launches (and fails here)
    ("add_grad_cuda", [float32(2, 3), float32(3), float32(2, 3)], [float32(2, 3), float32(3)], {}),
    ("exp_grad_cuda", [float32(2, 3), float32(2, 3)], [float32(2, 3)], {}),
    ("sum_cuda", [float32(2, 3)], [float32(3)], REDUCE),
    ("max_grad_cuda", [float32(2, 3), float32(3), float32(3)], [float32(2, 3)], REDUCE),
    (
        "argmax_cuda",
        [float32(2, 3)],
        [int64(2)],
        {"axis": 1, "keepdim": False, "select_last_index": True},
    ),
    ("where_cuda", [np.zeros((2, 1), bool), float32(1, 3), float32(3)], [float32(2, 3)], {}),
    ("mod_cuda", [float32(2, 3), float32(3)], [float32(2, 3)], {}),
    ("tile_cuda", [float32(2, 3)], [float32(4, 3)], {"repeat_times": [2, 1]}),
    ("tile_grad_cuda", [float32(2, 3), float32(4, 3)], [float32(2, 3)], {"repeat_times": [2, 1]}),
    ("tril_cuda", [float32(2, 3)], [float32(2, 3)], {"diagonal": 0}),
    ("range_cuda", [], [float32(5)], {"start": 0.0, "delta": 1.0}),
    (
        "pad_cuda",
        [float32(2, 3)],
        [float32(3, 6)],
        {"paddings": [1, 0, 1, 2], "mode": "reflect", "value": 0.0},
    ),
    (
        "cumsum_cuda",
        [float32(2, 3)],
        [float32(2, 3)],
        {"axis": 1, "exclusive": False, "reverse": True},
    ),
]


@pytest.mark.parametrize(("name", "ins", "outs", "attrs"), LAUNCHING, ids=[c[0] for c in LAUNCHING])
def test_without_a_driver_the_new_kernels_fail_with_cudas_message(name, ins, outs, attrs):
    status, message = prepare_and_run(name, Slots(*ins), Slots(*outs), attrs)
    assert status == PC_ERROR
    assert message.startswith("CUDA kernel launch failed: "), message


# The index kernels copy the index to the host to check it before they launch.
INDEXED = [
    ("gather_cuda", [float32(4, 3), int64(2)], [float32(2, 3)], {"axis": 0}),
    ("gather_grad_cuda", [float32(4, 3), int64(2), float32(2, 3)], [float32(4, 3)], {"axis": 0}),
    ("one_hot_cuda", [int64(2)], [float32(2, 5)], {"depth": 5}),
    ("gather_nd_cuda", [float32(4, 3), int64(2, 1)], [float32(2, 3)], {"batch_dims": 0}),
    (
        "gather_nd_grad_cuda",
        [float32(4, 3), int64(2, 1), float32(2, 3)],
        [float32(4, 3)],
        {"batch_dims": 0},
    ),
    (
        "scatter_cuda",
        [float32(4, 3), int64(2, 3), float32(2, 3)],
        [float32(4, 3)],
        {"axis": 0, "reduction": "add"},
    ),
    (
        "scatter_nd_cuda",
        [float32(4, 3), int64(2, 1), float32(2, 3)],
        [float32(4, 3)],
        {"reduction": "max"},
    ),
]


@pytest.mark.parametrize(("name", "ins", "outs", "attrs"), INDEXED, ids=[c[0] for c in INDEXED])
def test_without_a_driver_the_index_kernels_fail_with_cudas_message(name, ins, outs, attrs):
    status, message = prepare_and_run(name, Slots(*ins), Slots(*outs), attrs)
    assert status == PC_ERROR
    assert message.startswith("CUDA copy failed: "), message


def test_an_empty_gradient_or_reduction_launches_nothing():
    ins = Slots(float32(0, 3), float32(3), float32(0, 3))
    assert prepare_and_run("add_grad_cuda", ins, Slots(float32(0, 3))) == (0, "")
    assert prepare_and_run("sum_cuda", Slots(float32(3, 0)), Slots(float32(0)), REDUCE) == (0, "")


def test_without_cublas_the_matmul_kernels_refuse_in_prepare_saying_what_to_install():
    if math_kernels.cublas_unavailable_reason() is None:
        pytest.skip("cuBLAS loads here")
    x, y, out = float32(2, 3), float32(3, 4), float32(2, 4)
    attrs = {"transpose_x": False, "transpose_y": False}
    status, message, *_ = prepare("matmul_cuda", Slots(x, y), Slots(out), attrs)
    assert status == PC_ERROR
    assert "pip install nvidia-cublas" in message, message


def test_the_shape_kernels_fail_with_cudas_message_and_move_nothing_when_empty():
    x = float32(2, 3)
    slice_attrs = {"axes": [1], "starts": [0], "ends": [3], "steps": [2]}
    launching = [  # kernel, inputs, outputs, attrs: a gather kernel or a copy on the stream
        ("reshape_cuda", Slots(x), Slots(float32(3, 2)), {"shape": [3, 2]}),
        ("transpose_cuda", Slots(x), Slots(float32(3, 2)), {"perm": [1, 0]}),
        ("concat_cuda", Slots(x, float32(2, 1), variadic=True), Slots(float32(2, 4)), {"axis": 1}),
        ("split_cuda", Slots(x), Slots(float32(2, 1), float32(2, 2), variadic=True), {"axis": 1}),
        ("slice_cuda", Slots(x), Slots(float32(2, 2)), slice_attrs),
        ("slice_grad_cuda", Slots(x, float32(2, 2)), Slots(float32(2, 3)), slice_attrs),
        ("broadcast_to_cuda", Slots(float32(3)), Slots(x), {"shape": [2, 3]}),
        ("broadcast_to_grad_cuda", Slots(float32(3), x), Slots(float32(3)), {}),
    ]
    for name, ins, outs, attrs in launching:
        status, message = prepare_and_run(name, ins, outs, attrs)
        assert status == PC_ERROR, name
        assert message.startswith(
            ("CUDA kernel launch failed: ", "CUDA copy failed: ", "CUDA memset failed: ")
        ), (name, message)
    empty = float32(0, 3)
    assert prepare_and_run(
        "transpose_cuda", Slots(empty), Slots(float32(3, 0)), {"perm": [1, 0]}
    ) == (0, "")
    assert prepare_and_run(
        "reshape_cuda", Slots(empty), Slots(float32(3, 0)), {"perm": [1, 0]}
    ) == (0, "")
    ins = Slots(float32(0), empty[:, :0])
    assert prepare_and_run("broadcast_to_grad_cuda", ins, Slots(float32(0)), {}) == (0, "")
    assert prepare_and_run(
        "slice_cuda", Slots(x), Slots(float32(2, 0)), slice_attrs | {"ends": [0]}
    ) == (0, "")


def test_the_shape_kernels_refuse_what_the_cpu_kernels_refuse():
    status, message, *_ = prepare(
        "transpose_cuda", Slots(float32(2, 3)), Slots(float32(2, 3)), {"perm": [0, 0]}
    )
    assert status == PC_ERROR
    assert "perm repeats axis 0" in message
    status, message, *_ = prepare(
        "transpose_cuda",
        Slots(float32(*[2] * 9)),
        Slots(float32(*[2] * 9)),
        {"perm": [0, 2, 1, 4, 3, 6, 5, 8, 7]},
    )
    assert status == PC_ERROR
    assert "the CUDA kernel walks at most 8" in message
