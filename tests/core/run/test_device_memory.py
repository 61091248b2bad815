"""Plans on a device whose buffers are not NumPy arrays: the compiled runtime binds arrays that
expose ``__cuda_array_interface__`` (as CuPy's do for CUDA), checks them as strictly as host
arrays, and runs the device's native kernels with no Python between ops.

The "devmem" device here keeps its bytes on the host but shows them to the runtime only through
``__cuda_array_interface__``, and its kernels are paddle-ops-math's CPU kernels declared for
it: every path a CUDA plan takes runs on a machine without a GPU.
"""

from __future__ import annotations

import warnings
from typing import ClassVar

import numpy as np
import pytest

import paddle_core as pc
from paddle_core._src.base.host import aligned_empty, host_array
from paddle_core._src.base.runtime import compiled_runtime

pytestmark = pytest.mark.usefixtures("fresh_warnings")


class DevArray:
    """A devmem buffer: a host array reachable only through ``__cuda_array_interface__``."""

    base = None  # owns its memory, as far as the plan's output pool can tell

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    @property
    def __cuda_array_interface__(self) -> dict:
        a = self._array
        strides = None if a.flags.c_contiguous else a.strides
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                "strides": strides, "version": 3}  # fmt: skip

    shape = property(lambda self: self._array.shape)
    dtype = property(lambda self: self._array.dtype)

    def __getitem__(self, key):
        return DevArray(self._array[key])

    def view(self, dtype):
        return DevArray(self._array.view(dtype))

    def reshape(self, shape):
        return DevArray(self._array.reshape(shape))

    def copy(self):
        return DevArray(self._array.copy())


class Current:
    """DevMem's current(): logs when a plan makes the device current and lets go of it."""

    def __enter__(self):
        DevMem.moves.append("enter")

    def __exit__(self, *exc):
        DevMem.moves.append("exit")


class DevMem(pc.Device):
    """A device with memory of its own (as far as the core can tell); it logs every move."""

    type = "devmem"
    kernel_device_type = 65  # PC_DEVICE_FIRST_PLUGIN + 1
    moves: ClassVar[list[str]] = []

    def current(self):
        return Current()

    def holds(self, value):
        return isinstance(value, DevArray)

    def empty(self, shape, dtype):
        return DevArray(aligned_empty(shape, dtype))

    def to_device(self, array):
        DevMem.moves.append("to_device")
        return DevArray(host_array(np.asarray(array)).copy())

    def to_host(self, buffer):
        DevMem.moves.append("to_host")
        return buffer._array.copy()


class DevMemPlugin:
    """The device, and devmem kernels for `add` and `mul`: paddle-ops-math's compiled ones,
    declared for devmem as a kernel pack of this plugin."""

    @pc.hookimpl
    def paddle_core_device_types(self):
        return [DevMem]

    def paddle_core_manifest(self):
        packs = "".join(
            f'kernel_packs {{ op: "{op}" kernels {{ device: "devmem" dtypes: [FLOAT32] '
            f'native: "{op}" }} }}'
            for op in ("add", "mul")
        )
        return f'kernel_module: "paddle_ops_math.kernels" kernel_abi: 1 {packs}'


@pytest.fixture
def devmem(monkeypatch):
    monkeypatch.setattr(DevMem, "moves", [])
    pc.register_plugin(DevMemPlugin(), name="devmem")
    return pc.get_device("devmem")


def add_mul_program():
    prog = pc.Program()
    with pc.program_guard(prog):
        x, y = pc.data("x", [None, 3]), pc.data("y", [3])
        out = pc.ops.mul(pc.ops.add(x, y), y)
    return prog, out


X = np.arange(6, dtype=np.float32).reshape(2, 3)
Y = np.array([1, 2, 3], np.float32)


def test_device_kernels_run_in_the_compiled_loop_on_device_buffers(devmem):
    prog, out = add_mul_program()
    exe = pc.Executor(devmem)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every op has a devmem kernel: no fallback
        (got,) = exe.run(prog, feed={"x": X, "y": Y}, fetch_list=[out])
        (kept,) = exe.run(prog, feed={"x": X, "y": Y}, fetch_list=[out], return_numpy=False)
    np.testing.assert_array_equal(got, (X + Y) * Y)
    assert isinstance(kept, DevArray)
    np.testing.assert_array_equal(kept._array, (X + Y) * Y)
    plan = exe.prepare(prog, {"x": X, "y": Y}, [out])
    assert plan.compiled and not plan.loop_runner  # loops read their condition on the host
    assert [(s.kernel.device, s.fallback) for s in plan.steps] == [("devmem", False)] * 2
    # the intermediate lives in the plan's device arena, which the loop bound once
    assert plan.memory.buffers == 1 and plan.memory.arena_bytes >= X.nbytes


def test_a_persistable_numpy_value_moves_to_the_device_once(devmem):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 3])
        w = prog.global_block().create_parameter("w", [3])
        out = pc.ops.add(x, w)
    scope = pc.Scope()
    scope.set_var("w", Y)
    exe = pc.Executor(devmem)
    for _ in range(3):
        (got,) = exe.run(prog, feed={"x": X}, fetch_list=[out], scope=scope)
        np.testing.assert_array_equal(got, X + Y)
    assert isinstance(scope.find_var("w"), DevArray)
    assert DevMem.moves.count("to_device") == 1 + 3  # w once; the feed on every run
    # each run makes the device current, moves what it binds, runs, lets go, fetches
    assert DevMem.moves[-4:] == ["enter", "to_device", "exit", "to_host"]
    assert DevMem.moves.count("enter") == DevMem.moves.count("exit") == 3


def test_a_persistable_value_of_another_shape_is_refused_naming_it(devmem):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 3])
        out = pc.ops.add(x, prog.global_block().create_parameter("w", [3]))
    scope = pc.Scope()
    scope.set_var("w", DevArray(np.zeros(4, np.float32)))
    with pytest.raises(pc.FeedError, match=r"'w' holds DevArray float32\[4\].*float32\[3\]"):
        pc.Executor(devmem).run(prog, feed={"x": X}, fetch_list=[out], scope=scope)


def test_ops_falling_back_to_cpu_run_in_the_python_loop_with_copies(devmem):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 3])
        out = pc.ops.scale(pc.ops.add(x, x), scale=0.5, bias=1.0)  # scale: no devmem kernel
    exe = pc.Executor(devmem)
    with pytest.warns(RuntimeWarning, match="'scale' has no devmem kernel.*on CPU with copies"):
        (got,) = exe.run(prog, feed={"x": X}, fetch_list=[out])
    np.testing.assert_allclose(got, X + 1)
    plan = exe.prepare(prog, {"x": X}, [out])
    assert not plan.compiled  # host and device memory in one plan: moves between steps
    assert [(s.kernel.device, s.fallback) for s in plan.steps] == [
        ("devmem", False),
        ("cpu", True),
    ]


def test_an_op_rewriting_its_input_on_device_memory_runs_in_the_python_loop(devmem):
    # The compiled loop copies scratch outputs back with memcpy, which is for host memory.
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        w = block.create_parameter("w", [3])
        block.append_op("add", {"x": w, "y": w}, {"out": w})
    scope = pc.Scope()
    scope.set_var("w", Y)
    exe = pc.Executor(devmem)
    for _ in range(2):
        exe.run(prog, scope=scope)
    np.testing.assert_array_equal(devmem.to_host(scope.find_var("w")), Y * 4)
    assert not exe.prepare(prog, {}, []).compiled


# -- the runtime's checks on what it binds ----------------------------------------------------------


@pytest.fixture
def plan():
    runtime = compiled_runtime()
    p = runtime.Plan(1, 0)
    p.add_buffer([2, 3], 9)  # float32 [2, 3]
    return p


def test_the_runtime_binds_a_device_array_of_the_planned_layout(plan):
    array = DevArray(aligned_empty((2, 3), "float32"))
    plan.bind(0, array)
    assert plan.array(0) is array


@pytest.mark.parametrize(
    "array",
    [
        DevArray(np.zeros((3, 2), np.float32)),  # another shape
        DevArray(np.zeros((2, 3), np.float64)),  # another element size
        DevArray(np.zeros((3, 2), np.float32).T),  # not C-contiguous
        DevArray(np.zeros(25, np.uint8)[1:].view(np.float32).reshape(2, 3)),  # misaligned
    ],
    ids=["shape", "itemsize", "strides", "misaligned"],
)
def test_the_runtime_refuses_a_device_array_that_does_not_fit(plan, array):
    with pytest.raises(ValueError, match=r"planned as \[2, 3\] of 4-byte elements.*device array"):
        plan.bind(0, array)


def test_copy_steps_refuse_device_buffers(plan):
    plan.add_buffer([2, 3], 9)
    plan.add_copy(0, 1)
    arrays = [DevArray(aligned_empty((2, 3), "float32")) for _ in range(2)]
    with pytest.raises(ValueError, match="copy step needs host buffers"):
        plan.run([0, 1], arrays)
    plan.run([0, 1], [aligned_empty((2, 3), "float32") for _ in range(2)])  # host: fine


def test_a_device_array_is_fed_without_a_copy(devmem):
    prog, out = add_mul_program()
    exe = pc.Executor(devmem)
    x, y = DevArray(X.copy()), DevArray(Y.copy())
    (got,) = exe.run(prog, feed={"x": x, "y": y}, fetch_list=[out])
    np.testing.assert_array_equal(got, (X + Y) * Y)
    assert "to_device" not in DevMem.moves  # bound where they are
    with pytest.raises(
        pc.FeedError, match="feed 'y' has dtype float64, but variable 'y' is float32"
    ):
        exe.run(prog, feed={"x": x, "y": DevArray(Y.astype(np.float64))}, fetch_list=[out])
    with pytest.raises(pc.FeedError, match="feed 'x'"):
        exe.run(prog, feed={"x": DevArray(X.reshape(3, 2)), "y": y}, fetch_list=[out])


def test_a_fed_device_array_an_op_updates_is_copied_first(devmem):
    """x = (x + y) * y on a fed x: the compiled loop binds a copy of the caller's device array
    (Device.kernel_copy), which the update writes; the caller's stays as given."""
    prog = pc.Program()
    with pc.program_guard(prog):
        x, y = pc.data("x", [2, 3]), pc.data("y", [3])
        total = pc.ops.add(x, y)
    prog.global_block().append_op("mul", inputs={"x": total, "y": y}, outputs={"out": x})
    exe = pc.Executor(devmem)
    mine = DevArray(X.copy())
    (got,) = exe.run(prog, feed={"x": mine, "y": DevArray(Y.copy())}, fetch_list=[x])
    np.testing.assert_array_equal(got, (X + Y) * Y)
    np.testing.assert_array_equal(mine._array, X)  # untouched
    plan = exe.prepare(prog, {"x": mine, "y": DevArray(Y)}, [x])
    assert plan.compiled and "to_device" not in DevMem.moves  # a copy on the device
    assert plan._runner.array("x")._array.ctypes.data != mine._array.ctypes.data


def test_the_same_call_again_with_device_arrays_skips_the_full_checks(devmem, monkeypatch):
    """A loop feeding device arrays (CuPy or PyTorch ones on a GPU) takes the repeated call's
    fast path as NumPy feeds do: each run reads its own arrays, and any other dtype or shape
    still meets the full checks."""
    from paddle_core._src.run import executor

    checked = []
    full_check = executor._check_feed
    monkeypatch.setattr(executor, "_check_feed", lambda *a: (checked.append(a[0]), full_check(*a)))
    prog, out = add_mul_program()
    exe = pc.Executor(devmem)
    y = DevArray(Y.copy())
    for k in range(1, 4):
        (got,) = exe.run(prog, feed={"x": DevArray(X * k), "y": y}, fetch_list=[out])
        np.testing.assert_array_equal(got, (X * k + Y) * Y)
    assert sorted(checked) == ["x", "y"] and exe.prepare_count == 1  # checked on the first run
    assert "to_device" not in DevMem.moves
    with pytest.raises(pc.FeedError, match="feed 'y' has dtype float64"):
        exe.run(
            prog, feed={"x": DevArray(X), "y": DevArray(Y.astype(np.float64))}, fetch_list=[out]
        )
    with pytest.raises(pc.FeedError, match=r"feed 'x' has shape \[3, 2\]"):
        exe.run(prog, feed={"x": DevArray(X.reshape(3, 2)), "y": y}, fetch_list=[out])
    batch_of_4 = DevArray(np.ones((4, 3), np.float32))
    (got,) = exe.run(prog, feed={"x": batch_of_4, "y": y}, fetch_list=[out])
    assert got.shape == (4, 3) and exe.prepare_count == 2  # another batch size: a new plan


class Malformed:
    """An array whose ``__cuda_array_interface__`` gets the protocol wrong."""

    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


@pytest.mark.parametrize(
    "interface",
    [
        {"shape": "2x3", "typestr": "<f4", "data": (64, False)},
        {"shape": (2, 3), "typestr": "<f4"},
        {"shape": (2, 3), "typestr": "<f4", "data": None},
        {"shape": (2, 3), "typestr": 4, "data": (64, False)},
        "not a dict",
    ],
)
def test_the_runtime_refuses_a_malformed_array_interface(plan, interface):
    with pytest.raises(ValueError, match=r"buffer 0: the array's __cuda_array_interface__ is malf"):
        plan.bind(0, Malformed(interface))
