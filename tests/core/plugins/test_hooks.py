"""In-process plugins and the behavioural hooks: ops declared from Python, shadowing and the
conflict rule, kernel selection, program passes, device types and device strings."""

from __future__ import annotations

import sys
import types
import warnings
from typing import ClassVar

import numpy as np
import pytest

import paddle_core as pc
from paddle_core._src.plugins import registry as registry_module
from paddle_core._src.plugins.hooks import plugin_manager
from paddle_core._src.run import planning as planning_module


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """Conflict and CPU-fallback warnings are given once per process; each test starts anew."""
    monkeypatch.setattr(registry_module, "_warned", set())
    monkeypatch.setattr(planning_module, "_warned_fallbacks", set())


@pytest.fixture(autouse=True)
def no_leftover_hooks():
    """Unregister every plugin a test registered, hooks-only ones too (declaring no ops, they
    are not among the records that conftest's fresh_registry removes)."""
    manager = plugin_manager()
    before = {name for name, _ in manager.list_name_plugin()}
    yield
    for name, _ in manager.list_name_plugin():
        if name not in before:
            pc.unregister_plugin(name)


def unary_op(op_type, kernel, *, device="cpu", dtypes="FLOAT32, FLOAT64", attrs=""):
    """Manifest text declaring a one-input, one-output op."""
    return f"""
        ops {{
          proto {{
            type: "{op_type}" comment: "A test op."
            inputs {{ name: "x" comment: "Input." }}
            outputs {{ name: "out" comment: "Output." }}
            {attrs}
          }}
          kernels {{ device: "{device}" dtypes: [{dtypes}] python: "{kernel}" }}
          shape_rule: "paddle_core.rules:unary"
        }}
    """


def scale_program(dtype="float32", scale=2.0):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 3], dtype=dtype)
        y = pc.ops.toy_scale(x, scale=scale, bias=1.0)
    return prog, y


# -- in-process plugins --------------------------------------------------------------------------


class CubePlugin:
    def paddle_core_manifest(self):
        return unary_op("cube", "cube_cpu")

    def cube_cpu(self, x):
        return x**3


def test_an_in_process_op_runs_its_python_kernel():
    assert "cube" not in pc.get_registry()
    assert pc.register_plugin(CubePlugin()) == "cubeplugin"
    info = pc.get_registry().op("cube")
    assert info.plugin.name == "cubeplugin"
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[4], dtype="float64")
        y = pc.ops.cube(x)
    value = np.array([-2.0, -0.5, 1.0, 3.0])
    (got,) = pc.Executor("cpu").run(prog, feed={"x": value}, fetch_list=[y])
    np.testing.assert_array_equal(got, value**3)


def test_a_module_can_be_a_plugin_and_names_it():
    module = types.ModuleType("my_square_ops")
    module.paddle_core_manifest = lambda: unary_op("my_square", "square_cpu")
    module.square_cpu = lambda x: x * x
    assert pc.register_plugin(module) == "my_square_ops"
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[3], dtype="float32")
        y = pc.ops.my_square(x)
    (got,) = pc.Executor("cpu").run(
        prog, feed={"x": np.array([1, 2, 3], np.float32)}, fetch_list=[y]
    )
    np.testing.assert_array_equal(got, np.array([1, 4, 9], np.float32))


def test_registering_a_taken_name_is_refused():
    pc.register_plugin(CubePlugin(), name="mine")
    with pytest.raises(pc.PluginError, match="'mine' is already registered") as info:
        pc.register_plugin(CubePlugin(), name="mine")
    assert info.value.plugin == "mine"
    with pytest.raises(pc.PluginError, match="'toy' is already registered"):
        pc.register_plugin(CubePlugin(), name="toy")  # an installed plugin's name


def test_an_invalid_in_process_manifest_lists_its_problems():
    class Invalid:
        def paddle_core_manifest(self):
            return """
                ops {
                  proto {
                    type: "BadType" comment: "Invalid in several ways."
                    inputs { name: "x" }
                    attrs { name: "rate" type: FLOAT default { f: 2.0 } max { value: 1 } }
                  }
                  kernels { device: "cpu" python: "k" }
                }
            """

    with pytest.raises(pc.PluginError) as info:
        pc.register_plugin(Invalid(), name="invalid")
    message = str(info.value)
    assert message.startswith("plugin 'invalid' declares an invalid manifest")
    for problem in (
        "type must be a lowercase Python identifier starting with a letter",
        "declares no outputs",
        "attr 'rate': default 2.0 is outside",
        "cpu kernel: lists no dtypes",
        "has no shape_rule",
    ):
        assert problem in message
    assert "BadType" not in pc.get_registry()
    pc.register_plugin(CubePlugin(), name="invalid")  # nothing was left registered


def test_an_unparsable_in_process_manifest():
    class Garbled:
        def paddle_core_manifest(self):
            return "ops { proto { type: 'x' "

    with pytest.raises(pc.PluginError, match="'garbled' declares an invalid manifest"):
        pc.register_plugin(Garbled())


def test_unregistering_an_unknown_plugin():
    with pytest.raises(pc.PluginError, match="no in-process plugin named 'nobody'"):
        pc.unregister_plugin("nobody")


# -- shadowing an installed op -------------------------------------------------------------------

SCALE_ATTRS = """
    attrs { name: "scale" type: FLOAT default { f: 1.0 } }
    attrs { name: "bias" type: FLOAT default { f: 0.0 } }
    attrs { name: "bias_after_scale" type: BOOL default { b: true } }
"""


class ShadowScale:
    """Declares `toy_scale` like toy does, with a kernel giving a recognisably different result."""

    def paddle_core_manifest(self):
        return unary_op("toy_scale", "scale_cpu", dtypes="FLOAT32", attrs=SCALE_ATTRS)

    def scale_cpu(self, x, *, scale, bias, bias_after_scale):
        return -(x * scale + bias)


def test_an_in_process_op_shadows_an_installed_one_until_unregistered():
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.warns(pc.PluginConflictWarning) as record:
        name = pc.register_plugin(ShadowScale(), name="shadow")
    message = str(record[0].message)
    assert "op 'toy_scale' is provided by plugin 'shadow' and plugin 'toy'" in message
    assert "using 'shadow' by the default conflict rule" in message
    assert pc.get_registry().op("toy_scale").plugin.name == "shadow"
    prog, y = scale_program()
    (got,) = pc.Executor("cpu").run(prog, feed={"x": value}, fetch_list=[y])
    np.testing.assert_array_equal(got, -(value * 2 + 1))

    pc.unregister_plugin(name)
    assert pc.get_registry().op("toy_scale").plugin.name == "toy"
    prog, y = scale_program()
    (got,) = pc.Executor("cpu").run(prog, feed={"x": value}, fetch_list=[y])
    np.testing.assert_array_equal(got, value * 2 + 1)


def test_a_kept_executor_sees_plugins_registered_after_its_first_run():
    value = np.ones((1, 3), np.float32)
    prog, y = scale_program()
    exe = pc.Executor("cpu")
    (got,) = exe.run(prog, feed={"x": value}, fetch_list=[y])
    np.testing.assert_array_equal(got, value * 2 + 1)
    with pytest.warns(pc.PluginConflictWarning):
        name = pc.register_plugin(ShadowScale(), name="shadow")
    (got,) = exe.run(prog, feed={"x": value}, fetch_list=[y])
    np.testing.assert_array_equal(got, -(value * 2 + 1))
    pc.unregister_plugin(name)
    (got,) = exe.run(prog, feed={"x": value}, fetch_list=[y])
    np.testing.assert_array_equal(got, value * 2 + 1)


# -- kernel selection ----------------------------------------------------------------------------


class PickA:
    def paddle_core_manifest(self):
        return unary_op("pick", "pick_cpu", dtypes="FLOAT32")

    def pick_cpu(self, x):
        return x + 1


class PickB:
    """A second kernel for `pick`, as a kernel pack for an op another plugin declares."""

    def paddle_core_manifest(self):
        return """
            kernel_packs {
              op: "pick"
              kernels { device: "cpu" dtypes: [FLOAT32] python: "pick_cpu" }
            }
        """

    def pick_cpu(self, x):
        return x + 2


class PreferB:
    def __init__(self):
        self.calls = []

    @pc.hookimpl
    def paddle_core_select_kernel(self, op, device, dtype, candidates):
        self.calls.append((op, device, dtype, [c.plugin.name for c in candidates]))
        if op != "pick":
            return None  # the next implementation (the core's default) decides
        return next(c for c in candidates if c.plugin.name == "pick_b")


def pick_program():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[2], dtype="float32")
        y = pc.ops.pick(x)
        z = pc.ops.toy_scale(y, scale=3.0)
    return prog, z


def test_select_kernel_hook_overrides_the_default_choice():
    pc.register_plugin(PickA(), name="pick_a")
    with pytest.warns(pc.PluginConflictWarning, match="kernel 'pick:cpu:float32'"):
        pc.register_plugin(PickB(), name="pick_b")
    value = np.array([1.0, 2.0], np.float32)
    prog, z = pick_program()
    (got,) = pc.Executor("cpu").run(prog, feed={"x": value}, fetch_list=[z])
    np.testing.assert_array_equal(got, (value + 1) * 3)  # default: the declaring plugin's

    chooser = PreferB()
    pc.register_plugin(chooser, name="prefer_b")
    (got,) = pc.Executor("cpu").run(prog, feed={"x": value}, fetch_list=[z])
    np.testing.assert_array_equal(got, (value + 2) * 3)
    assert chooser.calls == [
        ("pick", "cpu", "float32", ["pick_a", "pick_b"]),
        ("toy_scale", "cpu", "float32", ["toy"]),
    ]

    pc.unregister_plugin("prefer_b")
    (got,) = pc.Executor("cpu").run(prog, feed={"x": value}, fetch_list=[z])
    np.testing.assert_array_equal(got, (value + 1) * 3)


def test_select_kernel_hook_returning_none_everywhere_leaves_no_kernel():
    class Refuses:
        @pc.hookimpl(tryfirst=True)
        def paddle_core_select_kernel(self, op, device, dtype, candidates):
            return None

    pc.register_plugin(Refuses(), name="refuses")
    prog, y = scale_program()
    (got,) = pc.Executor("cpu").run(prog, feed={"x": np.ones((1, 3), np.float32)}, fetch_list=[y])
    np.testing.assert_array_equal(got, np.full((1, 3), 3, np.float32))  # the default still picks


# -- program passes ------------------------------------------------------------------------------


class TenfoldScales:
    """A pass setting every toy_scale op's factor to 10."""

    def __init__(self):
        self.seen = []

    @pc.hookimpl
    def paddle_core_transform_program(self, program, device):
        self.seen.append((program, device))
        for op in program.global_block().ops:
            if op.type == "toy_scale":
                op.set_attr("scale", 10.0)


def test_transform_program_rewrites_a_private_copy():
    prog, y = scale_program()
    version, text = prog.version, str(prog)
    value = np.array([[1, 2, 3]], np.float32)
    exe = pc.Executor("cpu")
    (got,) = exe.run(prog, feed={"x": value}, fetch_list=[y])
    np.testing.assert_array_equal(got, value * 2 + 1)
    passes = TenfoldScales()
    pc.register_plugin(passes, name="tenfold")  # hooks only: the registry stays as it was
    (got,) = exe.run(prog, feed={"x": value}, fetch_list=[y])  # the kept plan is not reused
    np.testing.assert_array_equal(got, value * 10 + 1)
    ((seen, device),) = passes.seen
    assert seen is not prog
    assert device == pc.get_device("cpu")
    assert [op.type for op in seen.global_block().ops] == ["toy_scale"]
    # the user's program is untouched
    assert (prog.version, str(prog)) == (version, text)
    assert prog.global_block().ops[0].attr("scale") == 2.0
    # the pass runs once per plan, not per run
    exe.run(prog, feed={"x": value}, fetch_list=[y])
    assert len(passes.seen) == 1

    pc.unregister_plugin("tenfold")
    (got,) = exe.run(prog, feed={"x": value}, fetch_list=[y])
    np.testing.assert_array_equal(got, value * 2 + 1)


# -- a device type from a plugin -----------------------------------------------------------------


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


def test_no_kernel_on_the_device_or_on_cpu(sim):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[3], dtype="int64")
        y = pc.ops.toy_relu(x)
    with pytest.raises(pc.KernelNotFoundError, match="no kernel for device sim and dtype int64"):
        pc.Executor("sim").run(prog, feed={"x": np.arange(3)}, fetch_list=[y])


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
    message = r"device cuda:1 is not available: CuPy is not installed \(pip install cupy"
    with pytest.raises(pc.DeviceError, match=message):
        pc.get_device("cuda:1")
    with pytest.raises(pc.DeviceError, match="device cuda:0 is not available: CuPy"):
        pc.Executor("cuda")


def test_cuda_on_this_machine_is_refused_with_a_reason_when_unusable():
    if pc.CUDA.unavailable_reason(0) is None:
        pytest.skip("CuPy and a GPU are present")
    with pytest.raises(pc.DeviceError, match=r"device cuda:0 is not available: (CuPy|CUDA|this)"):
        pc.Executor("cuda:0")


# -- conflicts between installed plugins, and user preferences ----------------------------------


def conflict_warnings(record):
    return [str(w.message) for w in record if issubclass(w.category, pc.PluginConflictWarning)]


def test_default_conflict_rule_picks_the_first_plugin_by_name_loudly(on_path, broken_site):
    with pytest.warns(pc.PluginConflictWarning) as record:
        on_path(broken_site)
    (message,) = conflict_warnings(record)
    assert "op 'toy_scale' is provided by plugin 'dup'" in message
    assert "and plugin 'toy' (paddle-ops-toy" in message
    assert "PADDLE_CORE_PREFER=toy_scale=<plugin>" in message
    registry = pc.get_registry()
    assert registry.op("toy_scale").plugin.name == "dup"
    assert [p.name for p in registry.op("toy_scale").others] == ["toy"]

    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[3], dtype="float32")
        y = pc.ops.toy_scale(x, factor=5.0)  # dup's interface: its kernel copies x
    value = np.array([1, 2, 3], np.float32)
    (got,) = pc.Executor("cpu").run(prog, feed={"x": value}, fetch_list=[y])
    np.testing.assert_array_equal(got, value)


@pytest.mark.parametrize("preference", ["toy_scale=toy", "toy_scale=paddle-ops-toy"])
def test_a_user_preference_settles_the_conflict_quietly(
    on_path, broken_site, monkeypatch, preference
):
    monkeypatch.setenv("PADDLE_CORE_PREFER", preference)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        on_path(broken_site)
        registry = pc.reload_registry()
    assert conflict_warnings(record) == []
    assert registry.op("toy_scale").plugin.name == "toy"
    (conflict,) = [c for c in registry.conflicts if c.key == "toy_scale"]
    assert conflict.preferred and conflict.chosen.name == "toy"
    prog, y = scale_program()
    value = np.ones((2, 3), np.float32)
    (got,) = pc.Executor("cpu").run(prog, feed={"x": value}, fetch_list=[y])
    np.testing.assert_array_equal(got, value * 2 + 1)


def test_a_kernel_level_preference_chooses_that_plugins_kernel(on_path, broken_site, monkeypatch):
    monkeypatch.setenv("PADDLE_CORE_PREFER", "toy_scale:cpu:float32=toy")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        on_path(broken_site)
        registry = pc.reload_registry()
    assert conflict_warnings(record) == []
    (kernel,) = registry.kernel_candidates("toy_scale", "cpu", "float32")
    assert kernel.plugin.name == "toy"
    prog, y = scale_program()
    value = np.ones((2, 3), np.float32)
    (got,) = pc.Executor("cpu").run(prog, feed={"x": value}, fetch_list=[y])
    np.testing.assert_array_equal(got, value * 2 + 1)


def test_the_cpu_has_one_device() -> None:
    assert pc.get_device("cpu:0") == pc.CPU()
    with pytest.raises(pc.DeviceError, match="there is one CPU device"):
        pc.get_device("cpu:1")
