"""Device types: the registry and device strings, a plugin's device with buffers of its own,
and one whose memory is the host's, run by the compiled loop with kernels declared for it."""

from __future__ import annotations

import sys
import warnings
from typing import ClassVar

import numpy as np
import pytest

import paddle_core as pc
from paddle_core.proto import framework_pb2 as pb

pytestmark = pytest.mark.usefixtures("fresh_warnings")


# -- a device type with buffers of its own -----------------------------------------------------------------


class SimBuffer:
    """A "sim" device buffer: a host array that kernels must unwrap."""

    def __init__(self, array):
        self.array = array

    @property
    def shape(self):
        return self.array.shape

    @property
    def dtype(self):
        return self.array.dtype


class Sim(pc.Device):
    """A fake device whose buffers are SimBuffers; it logs every move."""

    type = "sim"
    moves: ClassVar[list[str]] = []

    @classmethod
    def unavailable_reason(cls, index):
        return None if index < 4 else "the simulator has 4 devices"

    def to_device(self, array):
        if not isinstance(array, np.ndarray):
            raise TypeError(f"sim.to_device expects a NumPy array, got {type(array).__name__}")
        Sim.moves.append("to_device")
        return SimBuffer(array.copy())

    def to_host(self, buffer):
        if not isinstance(buffer, SimBuffer):
            raise TypeError(f"sim.to_host expects a SimBuffer, got {type(buffer).__name__}")
        Sim.moves.append("to_host")
        return buffer.array.copy()


class SimDevices:
    @pc.hookimpl
    def paddle_core_device_types(self):
        return [Sim]


class SimScale:
    """A sim kernel for toy's `toy_scale`, as a kernel pack."""

    def __init__(self):
        self.args = []

    def paddle_core_manifest(self):
        return """
            kernel_packs {
              op: "toy_scale"
              kernels { device: "sim" dtypes: [FLOAT32] python: "scale_sim" }
            }
        """

    def scale_sim(self, x, *, scale, bias, bias_after_scale):
        self.args.append(x)
        assert bias_after_scale
        return SimBuffer((x.array * scale + bias).astype(x.array.dtype))


@pytest.fixture
def sim(monkeypatch):
    monkeypatch.setattr(Sim, "moves", [])
    pc.register_plugin(SimDevices(), name="sim_devices")
    return Sim


def scale_relu_program():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 3], dtype="float32")
        y = pc.ops.toy_scale(x, scale=2.0, bias=-3.0)
        z = pc.ops.toy_relu(y)
    return prog, y, z


def test_get_device_finds_plugin_device_types(sim):
    device = pc.get_device("sim:2")
    assert isinstance(device, Sim)
    assert (device.type, device.index, str(device)) == ("sim", 2, "sim:2")
    assert pc.get_device("SIM") == Sim(0)
    assert pc.get_device(device) is device
    with pytest.raises(pc.DeviceError, match="device sim:7 is not available: the simulator has 4"):
        pc.get_device("sim:7")
    with pytest.raises(pc.DeviceError, match=r"unknown device 'simm' \(did you mean 'sim'\?\)"):
        pc.get_device("simm")


def test_ops_without_device_kernels_fall_back_to_cpu_warning_once(sim):
    prog, y, z = scale_relu_program()
    exe = pc.Executor("sim:1")
    assert str(exe.device) == "sim:1"
    value = np.array([[0, 1, 2], [3, 4, 5]], np.float32)
    with pytest.warns(RuntimeWarning) as record:
        got_y, got_z = exe.run(prog, feed={"x": value}, fetch_list=[y, z])
    messages = sorted(str(w.message) for w in record)
    assert messages == [
        "op 'toy_relu' has no sim kernel for float32; running it on CPU with copies",
        "op 'toy_scale' has no sim kernel for float32; running it on CPU with copies",
    ]
    assert all(w.filename == __file__ for w in record)  # pointing at the caller's line
    for got, want in ((got_y, value * 2 - 3), (got_z, np.maximum(value * 2 - 3, 0))):
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, want)
    # feed in; per op: input out, output in; two fetches out
    assert sim.moves == ["to_device"] + ["to_host", "to_device"] * 2 + ["to_host"] * 2

    with warnings.catch_warnings():  # warned once per (op, device, dtype), even on a new plan
        warnings.simplefilter("error")
        pc.Executor("sim").run(prog, feed={"x": value[:1]}, fetch_list=[z])
        (buffer,) = exe.run(prog, feed={"x": value}, fetch_list=[z], return_numpy=False)
    assert isinstance(buffer, SimBuffer)
    np.testing.assert_array_equal(buffer.array, np.maximum(value * 2 - 3, 0))


def test_a_device_kernel_is_used_when_a_plugin_declares_one(sim):
    kernels = SimScale()
    pc.register_plugin(kernels, name="sim_scale")
    assert pc.get_registry().op("toy_scale").dtypes_for("sim") == ["float32"]
    prog, y, z = scale_relu_program()
    value = np.array([[0, 1, 2]], np.float32)
    with pytest.warns(RuntimeWarning) as record:
        got_y, got_z = pc.Executor("sim").run(prog, feed={"x": value}, fetch_list=[y, z])
    assert [str(w.message) for w in record] == [
        "op 'toy_relu' has no sim kernel for float32; running it on CPU with copies"
    ]
    (arg,) = kernels.args
    assert isinstance(arg, SimBuffer)  # the sim kernel got a device buffer, not a host array
    np.testing.assert_array_equal(got_y, value * 2 - 3)
    np.testing.assert_array_equal(got_z, np.maximum(value * 2 - 3, 0))
    # float64 has no sim kernel: it falls back
    prog64 = pc.Program()
    with pc.program_guard(prog64):
        x = pc.data("x", shape=[3], dtype="float64")
        y64 = pc.ops.toy_scale(x, scale=2.0)
    with pytest.warns(RuntimeWarning, match="'toy_scale' has no sim kernel for float64"):
        (got,) = pc.Executor("sim").run(prog64, feed={"x": np.ones(3)}, fetch_list=[y64])
    np.testing.assert_array_equal(got, np.full(3, 2.0))
    assert len(kernels.args) == 1


def test_a_native_cpu_kernel_runs_as_the_fallback_of_a_device_with_its_own_buffers(sim):
    prog = pc.Program()
    with pc.program_guard(prog):
        x, y = pc.data("x", [None, 3]), pc.data("y", [3])
        out = pc.ops.matmul(pc.ops.add(x, y), pc.data("w", [3, 2]))  # paddle-ops-math: native
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    yv, wv = np.ones(3, np.float32), np.ones((3, 2), np.float32)
    with pytest.warns(RuntimeWarning, match="no sim kernel for float32; running it on CPU with"):
        (got,) = pc.Executor("sim").run(prog, feed={"x": xv, "y": yv, "w": wv}, fetch_list=[out])
    np.testing.assert_array_equal(got, (xv + yv) @ wv)
    # three feeds in; per op: inputs out, output in; the fetch out
    assert sim.moves == ["to_device"] * 3 + ["to_host"] * 2 + ["to_device"] + ["to_host"] * 2 + [
        "to_device",
        "to_host",
    ]


def with_dtype(prog: pc.Program, dtype: str) -> pc.Program:
    """``prog`` as loaded from a file whose variables are all ``dtype``: appending refuses an
    op no kernel of which takes the dtype, loading does not."""
    desc = prog.to_desc()
    for var in desc.blocks[0].vars:
        var.dtype = pb.VarType.DataType.Value(dtype.upper())
    return pc.Program.from_desc(desc)


def test_no_kernel_on_the_device_or_on_cpu(sim):
    prog = pc.Program()
    with pc.program_guard(prog):
        y = pc.ops.toy_relu(pc.data("x", shape=[3]))
    with pytest.raises(pc.KernelNotFoundError, match="no kernel for device sim and dtype int64"):
        pc.Executor("sim").run(
            with_dtype(prog, "int64"), feed={"x": np.arange(3)}, fetch_list=[y.name]
        )


# -- device strings ------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["cpu", "CPU", " cpu ", "cpu:0", pc.CPU(0)])
def test_get_device_cpu(spec):
    device = pc.get_device(spec)
    assert isinstance(device, pc.CPU)
    assert (device.type, str(device)) == ("cpu", "cpu")


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("cuda:x", "the index after ':' must be a number"),
        ("cuda:-1", "the index after ':' must be a number"),
        ("cpu:first", "the index after ':' must be a number"),
        ("cpu:", "device 'cpu:': the index after ':' must be a number"),
        ("cpu:\u0663", "the index after ':' must be a number"),  # an Arabic-Indic 3
        ("cpu:3", "device cpu:3 is not available: there is one CPU device, cpu:0"),
        ("", "unknown device ''"),
        ("cdua", r"unknown device 'cdua' \(did you mean 'cuda'\?\); known types: cpu, cuda"),
        ("tpu:0", "unknown device 'tpu:0'.*known types: cpu, cuda"),
        (3, "a device must be a Device or a string like 'cuda:0', got 3"),
        (None, "a device must be a Device or a string"),
    ],
)
def test_get_device_rejects_bad_specs(spec, problem):
    with pytest.raises(pc.DeviceError, match=problem):
        pc.get_device(spec)


@pytest.mark.parametrize("index", [-1, True, "0"])
def test_device_index_must_be_a_natural_number(index):
    with pytest.raises(pc.DeviceError, match="index must be an int >= 0"):
        pc.CPU(index)


def test_cuda_without_cupy_says_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    message = r"device cuda:1 is not available: CuPy is not installed \(pip install 'paddle-core"
    with pytest.raises(pc.DeviceError, match=message):
        pc.get_device("cuda:1")
    with pytest.raises(pc.DeviceError, match="device cuda:0 is not available: CuPy"):
        pc.Executor("cuda")


def test_is_available_answers_and_never_raises(monkeypatch):
    assert pc.CPU.is_available() and not pc.CPU.is_available(1)
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert pc.CUDA.is_available() is False

    class Broken(pc.Device):
        type = "broken"

        @classmethod
        def unavailable_reason(cls, index):
            raise RuntimeError("the driver crashed")

    assert Broken.is_available() is False


def test_cuda_on_this_machine_is_refused_with_a_reason_when_unusable():
    if pc.CUDA.unavailable_reason(0) is None:
        pytest.skip("CuPy and a GPU are present")
    with pytest.raises(pc.DeviceError, match=r"device cuda:0 is not available: (CuPy|CUDA|this)"):
        pc.Executor("cuda:0")


def test_the_cpu_has_one_device() -> None:
    assert pc.get_device("cpu:0") == pc.CPU()
    with pytest.raises(pc.DeviceError, match="there is one CPU device"):
        pc.get_device("cpu:1")


# -- a device whose memory is the host's ---------------------------------------------------------


class Host2(pc.Device):
    """Host memory under another name: the compiled loop can run its plans."""

    type = "host2"
    kernel_device_type = 64  # PC_DEVICE_FIRST_PLUGIN
    host_memory = True

    def to_device(self, array):
        return array

    def to_host(self, array):
        return array


class Host2Plugin:
    """The device, and host2 kernels for `add` and `mul`: paddle-ops-math's compiled ones,
    declared for host2 as a kernel pack of this plugin."""

    @pc.hookimpl
    def paddle_core_device_types(self):
        return [Host2]

    def paddle_core_manifest(self):
        packs = "".join(
            f'kernel_packs {{ op: "{op}" kernels {{ device: "host2" dtypes: [FLOAT32] '
            f'native: "{op}" }} }}'
            for op in ("add", "mul")
        )
        return f'kernel_module: "paddle_ops_math.kernels" kernel_abi: 1 {packs}'


@pytest.fixture
def host2():
    pc.register_plugin(Host2Plugin(), name="host2")
    return pc.get_device("host2")


def add_mul_program():
    prog = pc.Program()
    with pc.program_guard(prog):
        x, y = pc.data("x", [None, 3]), pc.data("y", [3])
        out = pc.ops.mul(pc.ops.add(x, y), y)
    return prog, out


def test_a_host_memory_device_runs_in_the_compiled_loop_with_its_kernels(host2):
    assert isinstance(host2, Host2) and str(host2) == "host2:0"
    info = pc.get_registry().op("add")
    assert [k.plugin.name for k in info.kernels[("host2", "float32")]] == ["host2"]
    prog, out = add_mul_program()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([1, 2, 3], np.float32)
    exe = pc.Executor("host2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every op has a host2 kernel: no fallback
        (got,) = exe.run(prog, feed={"x": x, "y": y}, fetch_list=[out])
    np.testing.assert_array_equal(got, (x + y) * y)
    plan = exe.prepare(prog, {"x": x, "y": y}, [out])
    assert plan.compiled and plan.device == host2
    assert [(s.kernel.device, s.fallback) for s in plan.steps] == [("host2", False)] * 2


def test_a_host_memory_device_falls_back_to_cpu_kernels_warning_once(host2):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 3])
        out = pc.ops.scale(pc.ops.add(x, x), scale=0.5, bias=1.0)  # scale: no host2 kernel
    exe = pc.Executor(host2)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.warns(RuntimeWarning) as record:
        (got,) = exe.run(prog, feed={"x": x}, fetch_list=[out])
    assert [str(w.message) for w in record] == [
        "op 'scale' has no host2 kernel for float32; running it on CPU"
    ]
    np.testing.assert_allclose(got, x + 1)
    plan = exe.prepare(prog, {"x": x}, [out])
    assert [(s.op.type, s.kernel.device, s.fallback) for s in plan.steps] == [
        ("add", "host2", False),
        ("scale", "cpu", True),
    ]
    assert plan.compiled  # the CPU kernel reads host memory too: no copies, one compiled loop
    with warnings.catch_warnings():  # once per (op, device, dtype), even for another plan
        warnings.simplefilter("error")
        (again,) = pc.Executor("host2").run(prog, feed={"x": x[:1]}, fetch_list=[out])
    np.testing.assert_allclose(again, x[:1] + 1)


def test_an_op_with_no_kernel_on_the_device_or_its_fallback_is_refused(host2):
    prog = pc.Program()
    with pc.program_guard(prog):
        out = pc.ops.add(pc.data("x", [2], "int32"), pc.data("y", [2], "int32"))
    # add has CPU kernels for int32, so this falls back; a dtype CPU lacks too is refused
    prog2 = pc.Program()
    with pc.program_guard(prog2):
        out2 = pc.ops.add(pc.data("x", [2]), pc.data("y", [2]))
    prog2 = with_dtype(prog2, "bool")
    exe = pc.Executor("host2")
    with pytest.warns(RuntimeWarning, match="no host2 kernel for int32; running it on CPU$"):
        exe.run(prog, feed={"x": np.ones(2, np.int32), "y": np.ones(2, np.int32)}, fetch_list=[out])
    with pytest.raises(pc.KernelNotFoundError, match="no kernel for device host2 and dtype bool"):
        exe.prepare(prog2, {"x": ((2,), "bool"), "y": ((2,), "bool")}, [out2.name])


def test_cpu_has_no_fallback_and_cuda_falls_back_to_cpu():
    assert pc.CPU.fallback is None and pc.CPU.host_memory
    assert pc.CUDA.fallback == "cpu" and not pc.CUDA.host_memory
    assert (pc.CPU.kernel_device_type, pc.CUDA.kernel_device_type) == (1, 2)  # kernel_abi.h
