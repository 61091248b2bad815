"""In-process plugins and the behavioural hooks: ops declared from Python, shadowing and the
conflict rule, kernel selection, program passes. (Device types: test_devices.py.)"""

from __future__ import annotations

import types
import warnings
from pathlib import Path

import numpy as np
import pytest

import paddle_core as pc
from paddle_core._src.plugins import registry

pytestmark = pytest.mark.usefixtures("fresh_warnings")


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


def test_conflict_warnings_point_at_the_users_line(
    broken_site: Path, monkeypatch: pytest.MonkeyPatch, fresh_warnings: None
) -> None:
    """Whichever call finds the conflict (register_plugin, or the first pc.ops.<op> after the
    installed plugins changed), the warning names the user's file and line, not the core's."""
    with pytest.warns(pc.PluginConflictWarning) as record:
        pc.register_plugin(ShadowScale(), name="shadow")  # (the first warned line)
    assert (record[0].filename, record[0].lineno) == (__file__, _line_of("the first warned line"))
    pc.unregister_plugin("shadow")
    registry._warned.clear()  # each conflict is reported once per process
    monkeypatch.syspath_prepend(str(broken_site))  # installs plugin 'dup', which declares toy_scale
    monkeypatch.setattr(registry, "_registry", None)
    with pytest.warns(pc.PluginConflictWarning, match="plugin 'dup'") as record:
        pc.ops.dup_only_op  # noqa: B018 (the second warned line)
    assert (record[0].filename, record[0].lineno) == (__file__, _line_of("the second warned line"))


def _line_of(text: str) -> int:
    """The line of this file that holds ``text`` (the first)."""
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.endswith(text + ")"))


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


class CopiesBeforeScales:
    """A pass inserting an op: each toy_scale reads a copy of its input made just before it
    (toy_scale by 1), and the pass records what the planner told it."""

    def __init__(self):
        self.told = []

    @pc.hookimpl
    def paddle_core_transform_program(self, program, feed_names, fetch_names):
        self.told.append((feed_names, fetch_names))
        block = program.global_block()
        for op in [op for op in block.ops if op.type == "toy_scale"]:
            (x,) = op.input("x")
            copy = block.insert_op(block.ops.index(op), "toy_scale", {"x": x}, {"out": x + "@c"})
            assert block.rewrite_op(op, inputs={"x": copy.output("out")}) is op


def test_a_pass_is_told_the_feeds_and_fetches_and_may_insert_ops():
    prog, y = scale_program()
    value = np.array([[1, 2, 3]], np.float32)
    passes = CopiesBeforeScales()
    pc.register_plugin(passes, name="copies")
    exe = pc.Executor("cpu")
    plan = exe.prepare(prog, {"x": value}, [y])
    assert plan.op_types == ["toy_scale", "toy_scale"]
    (got,) = plan.run({"x": value}, pc.Scope())
    np.testing.assert_array_equal(got, value * 2 + 1)
    assert passes.told == [(["x"], [y.name])]
    assert [op.type for op in prog.global_block().ops] == ["toy_scale"]  # the user's program


class ScalesOnly(TenfoldScales):
    """TenfoldScales, saying it has nothing to do for programs without a toy_scale."""

    def __init__(self):
        super().__init__()
        self.asked = 0

    @pc.hookimpl
    def paddle_core_wants_transform(self, program):
        self.asked += 1
        return any(op.type == "toy_scale" for op in program.global_block().ops)


def test_a_pass_that_has_nothing_to_do_costs_no_copy(monkeypatch):
    passes = ScalesOnly()
    pc.register_plugin(passes, name="scales-only")
    clones = []
    clone = pc.Program.clone
    monkeypatch.setattr(pc.Program, "clone", lambda self, *a: clones.append(1) or clone(self, *a))
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[3], dtype="float32")
        y = pc.ops.toy_relu(x)
    value = np.array([-1, 0, 2], np.float32)
    pc.Executor().run(prog, feed={"x": value}, fetch_list=[y])
    assert (passes.asked, passes.seen, clones) == (1, [], [])
    prog, y = scale_program()
    (got,) = pc.Executor().run(prog, feed={"x": value[None]}, fetch_list=[y])
    np.testing.assert_array_equal(got, value[None] * 10 + 1)
    assert (passes.asked, len(passes.seen), clones) == (2, 1, [1])


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
