"""paddle-ops-math's CUDA kernels called straight through the C ABI (kernel_abi.h, mirrored with
ctypes) where no CUDA driver is: prepare takes CUDA tensors, run fails with CUDA's own message
instead of crashing, and an empty tensor launches nothing. Skipped where a driver is (the GPU
tests run the kernels there) or when the plugin was built without CUDA."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")
from paddle_ops_math import kernels as math_kernels

PC_DTYPES = {"bool": 1, "int64": 5, "float32": 9}
PC_DEVICE_CUDA, PC_ERROR = 2, 1
PC_ATTR_INT, PC_ATTR_BOOL, PC_ATTR_INTS = 1, 4, 6


def has_cuda_driver() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


pytestmark = [
    pytest.mark.skipif(not math_kernels.built_with_cuda(), reason="built without CUDA"),
    pytest.mark.skipif(has_cuda_driver(), reason="a CUDA driver is here: the GPU tests run them"),
]

# -- kernel_abi.h in ctypes ------------------------------------------------------------------------


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("ndim", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("device_type", ctypes.c_int32),
        ("device_index", ctypes.c_int32),
    ]


class Tensors(ctypes.Structure):
    _fields_ = [
        ("items", ctypes.POINTER(Tensor)),
        ("slot_begin", ctypes.POINTER(ctypes.c_int32)),
        ("num_slots", ctypes.c_int32),
        ("num_items", ctypes.c_int32),
    ]


class Attr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("type", ctypes.c_int32),
        ("count", ctypes.c_int32),
        ("i", ctypes.c_int64),
        ("f", ctypes.c_double),
        ("s", ctypes.c_char_p),
        ("ints", ctypes.POINTER(ctypes.c_int64)),
        ("floats", ctypes.POINTER(ctypes.c_double)),
        ("strings", ctypes.c_void_p),
    ]


class Attrs(ctypes.Structure):
    _fields_ = [("items", ctypes.POINTER(Attr)), ("count", ctypes.c_int32)]


def make_attrs(values: dict[str, bool | int | list[int]]) -> Attrs:
    """pc_attrs of bools, ints and int lists (kept alive by the returned structure)."""
    items = (Attr * max(len(values), 1))()
    keep = []
    for item, (name, value) in zip(items, values.items()):
        item.name = name.encode()
        if isinstance(value, bool):
            item.type, item.i = PC_ATTR_BOOL, int(value)
        elif isinstance(value, int):
            item.type, item.i = PC_ATTR_INT, value
        else:
            array = (ctypes.c_int64 * max(len(value), 1))(*value)
            keep.append(array)
            item.type, item.count, item.ints = PC_ATTR_INTS, len(value), array
    attrs = Attrs(items, len(values))
    attrs._keep = (items, keep)
    return attrs


class Context(ctypes.Structure):
    _fields_ = [
        ("stream", ctypes.c_void_p),
        ("num_threads", ctypes.c_int32),
        ("struct_size", ctypes.c_int32),
        ("message", ctypes.c_char_p),
        ("message_capacity", ctypes.c_size_t),
        ("random_key", ctypes.c_uint64),
        ("random_counter", ctypes.c_uint64),
    ]


Prepare = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.POINTER(Attrs),
    ctypes.POINTER(Tensors),
    ctypes.POINTER(Tensors),
    ctypes.POINTER(Context),
    ctypes.POINTER(ctypes.c_void_p),
)
Run = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.c_void_p,
    ctypes.POINTER(Tensors),
    ctypes.POINTER(Tensors),
    ctypes.POINTER(Context),
)
Release = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class Kernel(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_uint32),
        ("struct_size", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("prepare", Prepare),
        ("run", Run),
        ("release", Release),
    ]


def kernel(name: str) -> Kernel:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return Kernel.from_address(get(math_kernels.kernels()[name], b"paddle_core.kernel"))


class Slots:
    """pc_tensors over CUDA-tagged views of arrays, one per slot (kept alive with it)."""

    def __init__(self, *arrays: np.ndarray):
        self.arrays = arrays
        self.shapes = [(ctypes.c_int64 * max(a.ndim, 1))(*a.shape) for a in arrays]
        self.items = (Tensor * len(arrays))()
        for item, a, shape in zip(self.items, arrays, self.shapes):
            item.shape, item.strides = shape, None
            item.ndim, item.dtype = a.ndim, PC_DTYPES[a.dtype.name]
            item.device_type = PC_DEVICE_CUDA
        self.begin = (ctypes.c_int32 * (len(arrays) + 1))(*range(len(arrays) + 1))
        self.raw = Tensors(self.items, self.begin, len(arrays), len(arrays))

    def bind(self) -> None:  # host addresses: never dereferenced, the launch fails first
        for item, a in zip(self.items, self.arrays):
            item.data = a.ctypes.data


def prepare(name: str, ins: Slots, outs: Slots, attrs: dict | None = None):
    """Prepare kernel ``name``: (status, message, kernel, state, context, message buffer)."""
    k = kernel(name)
    message = ctypes.create_string_buffer(1024)
    ctx = Context(None, 1, ctypes.sizeof(Context), ctypes.cast(message, ctypes.c_char_p), 1024)
    state = ctypes.c_void_p()
    raw_attrs = make_attrs(attrs or {})
    status = k.prepare(ctypes.byref(raw_attrs), ins.raw, outs.raw, ctypes.byref(ctx), state)
    return status, message.value.decode() if status else "", k, state, ctx, message


def prepare_and_run(
    name: str, ins: Slots, outs: Slots, attrs: dict | None = None
) -> tuple[int, str]:
    """Run kernel ``name`` once; (status of run, its message). Prepare must succeed."""
    status, error, k, state, ctx, message = prepare(name, ins, outs, attrs)
    assert status == 0, error
    ins.bind()
    outs.bind()
    try:
        status = k.run(state, ins.raw, outs.raw, ctypes.byref(ctx))
    finally:
        k.release(state)
    return status, message.value.decode() if status else ""


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


REDUCE = {"axes": [0], "keepdim": False}
LAUNCHING = [  # kernel, inputs, outputs, attrs: each prepares, then launches (and fails here)
    ("add_grad_cuda", [float32(2, 3), float32(3), float32(2, 3)], [float32(2, 3), float32(3)], {}),
    ("exp_grad_cuda", [float32(2, 3), float32(2, 3)], [float32(2, 3)], {}),
    ("sum_cuda", [float32(2, 3)], [float32(3)], REDUCE),
    ("max_grad_cuda", [float32(2, 3), float32(3), float32(3)], [float32(2, 3)], REDUCE),
    ("argmax_cuda", [float32(2, 3)], [int64(2)], {"axis": 1, "keepdim": False}),
    ("where_cuda", [np.zeros((2, 1), bool), float32(1, 3), float32(3)], [float32(2, 3)], {}),
]


@pytest.mark.parametrize(("name", "ins", "outs", "attrs"), LAUNCHING, ids=[c[0] for c in LAUNCHING])
def test_without_a_driver_the_new_kernels_fail_with_cudas_message(name, ins, outs, attrs):
    status, message = prepare_and_run(name, Slots(*ins), Slots(*outs), attrs)
    assert status == PC_ERROR
    assert message.startswith("CUDA kernel launch failed: "), message


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
