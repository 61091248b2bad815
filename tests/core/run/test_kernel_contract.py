"""What the manifest declares about kernels and the planner honours: outputs updated in place,
ops that draw random numbers, and the input whose dtype selects the kernel."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from conftest import TEST_PACKAGES, made_once, pip_install

import paddle_core as pc

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

SCALE_ATTRS = """
    attrs { name: "scale" type: FLOAT comment: "." default { f: 1.0 } }
    attrs { name: "bias" type: FLOAT comment: "." default { f: 0.0 } }
    attrs { name: "bias_after_scale" type: BOOL comment: "." default { b: true } }
"""


class InPlaceScale:
    """paddle-ops-math's compiled scale kernel, declared as an op whose out may be its x."""

    def paddle_core_manifest(self):
        return f"""
            kernel_module: "paddle_ops_math.kernels" kernel_abi: 1
            ops {{
              proto {{
                type: "scale_in_place" comment: "scale, updating x in place."
                inputs {{ name: "x" comment: "." }}
                outputs {{ name: "out" comment: "." inplace: "x" }}
                {SCALE_ATTRS}
              }}
              kernels {{ device: "cpu" dtypes: [FLOAT32] native: "scale" }}
              shape_rule: "paddle_core.rules:unary"
            }}
        """


def doubling(op_type: str):
    """A program doubling parameter w in place, with ``op_type``."""
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        w = block.create_parameter("w", [4])
        block.append_op(op_type, {"x": w}, {"out": w}, {"scale": 2.0})
    return prog


@pytest.mark.parametrize(("op_type", "copies"), [("scale", 1), ("scale_in_place", 0)])
def test_a_declared_in_place_output_gets_its_inputs_buffer(op_type, copies):
    pc.register_plugin(InPlaceScale(), name="in_place")
    prog = doubling(op_type)
    scope = pc.Scope()
    w = np.arange(4, dtype=np.float32)
    scope.set_var("w", w)
    exe = pc.Executor()
    for _ in range(3):
        exe.run(prog, scope=scope)
    np.testing.assert_array_equal(scope.get("w"), np.arange(4) * 8)
    assert scope.get("w") is w  # updated where it lives
    plan = exe.prepare(prog, {}, [])
    # undeclared: a scratch output copied back; declared: the input's own buffer
    assert plan._runner.scratch_copies == copies


class Noise:
    """An op declared random (its Python kernel ignores the key; the planner still keys it)."""

    def paddle_core_manifest(self):
        return """
            ops {
              proto {
                type: "noise" comment: "Random."
                inputs { name: "x" comment: "." } outputs { name: "out" comment: "." }
              }
              kernels { device: "cpu" dtypes: [FLOAT32] python: "noise_cpu" }
              shape_rule: "paddle_core.rules:unary"
              random: true
            }
        """

    def noise_cpu(self, x):
        return x.copy()


def noisy_program():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [3])
        a = pc.ops.noise(x)
        b = pc.ops.noise(pc.ops.scale(x))
    return prog, a, b


def test_random_ops_get_a_key_per_op_and_a_counter_per_run():
    pc.register_plugin(Noise(), name="noise")
    prog, a, b = noisy_program()
    feed = {"x": np.ones(3, np.float32)}
    exe = pc.Executor()
    plan = exe.prepare(prog, feed, [a, b])
    keys = [s.random_key for s in plan.steps]
    assert keys[0] != 0 and keys[2] != 0 and keys[1] == 0 and keys[0] != keys[2]  # scale: 0
    again, _, _ = noisy_program()
    assert [s.random_key for s in pc.Executor().prepare(again, feed, [a.name]).steps] == [keys[0]]
    prog.random_seed = 5  # another seed: other keys, and a new plan
    assert [s.random_key for s in exe.prepare(prog, feed, [a, b]).steps] != keys
    scope = pc.Scope()
    for _ in range(3):
        exe.run(prog, feed=feed, fetch_list=[a], scope=scope)
    assert scope.next_random_run() == 3  # three runs drew random numbers
    child = scope.new_scope()
    exe.run(prog, feed=feed, fetch_list=[a], scope=child)
    assert scope.next_random_run() == 5  # the root keeps the count for its children


def test_plans_without_random_ops_leave_the_counter_alone():
    prog = pc.Program()
    with pc.program_guard(prog):
        out = pc.ops.scale(pc.data("x", [3]))
    scope = pc.Scope()
    pc.Executor().run(prog, feed={"x": np.ones(3, np.float32)}, fetch_list=[out], scope=scope)
    assert scope.next_random_run() == 0


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5])
def test_the_random_seed_is_a_64_bit_natural_number(seed):
    with pytest.raises(pc.ProgramError, match="random_seed must be an int in"):
        pc.Program().random_seed = seed


class Lookup:
    """Rows of a float32 table picked by int64 ids: the table's dtype selects the kernel."""

    def paddle_core_manifest(self):
        entry = """
            ops {{
              proto {{
                type: "{type}" comment: "table[ids]."
                inputs {{ name: "ids" comment: "." }} inputs {{ name: "table" comment: "." }}
                outputs {{ name: "out" comment: "." }}
              }}
              kernels {{ device: "cpu" dtypes: [FLOAT32] python: "lookup_cpu" }}
              shape_rule: "lookup_shape"
              {extra}
            }}
        """
        return entry.format(type="lookup", extra='kernel_dtype_input: "table"') + entry.format(
            type="lookup_by_ids", extra=""
        )

    def lookup_shape(self, ctx):
        ids, table = ctx.input("ids"), ctx.input("table")
        ctx.set_output("out", (*ids.shape, table.shape[1]), table.dtype)

    def lookup_cpu(self, ids, table):
        return table[ids]


def test_the_kernel_dtype_input_selects_the_kernel():
    pc.register_plugin(Lookup(), name="lookup")
    prog = pc.Program()
    with pc.program_guard(prog):
        ids, table = pc.data("ids", [2], "int64"), pc.data("table", [3, 2])
        out = pc.ops.lookup(ids, table)
        # Without kernel_dtype_input the int64 ids select, and no kernel takes int64.
        with pytest.raises(pc.KernelNotFoundError, match="no kernel for dtype int64 on any dev"):
            pc.ops.lookup_by_ids(ids, table)
    feed = {"ids": np.array([2, 0]), "table": np.arange(6, dtype=np.float32).reshape(3, 2)}
    (got,) = pc.Executor().run(prog, feed=feed, fetch_list=[out])
    np.testing.assert_array_equal(got, [[4, 5], [0, 1]])


# -- kernels built against ABI 1 as released ----------------------------------------------------


@pytest.fixture(scope="session")
def abi_v1_site(tmp_path_factory: pytest.TempPathFactory):
    """tests/packages/abi_v1: C kernels built against ABI 1's header as released (frozen),
    pip-installed."""
    return made_once(
        tmp_path_factory,
        "abi-v1-site",
        lambda target: pip_install(target, TEST_PACKAGES / "abi_v1"),
    )


class AbiV1:
    def paddle_core_manifest(self):
        return """
            kernel_module: "abi_v1._kernels" kernel_abi: 1
            ops {
              proto {
                type: "twice_v1" comment: "out = 2 x, by a kernel of ABI 1 as released."
                inputs { name: "x" comment: "." } outputs { name: "out" comment: "." }
              }
              kernels { device: "cpu" dtypes: [FLOAT64] native: "twice" }
              shape_rule: "paddle_core.rules:unary"
            }
        """


def test_kernels_built_against_abi_1_as_released_still_run(abi_v1_site, on_path):
    """The ABI grows only by struct_size and the layout rules: a kernel built against the
    frozen header loads and runs beside today's, with what it declares checked."""
    on_path(abi_v1_site)
    import abi_v1._kernels

    assert abi_v1._kernels.KERNEL_LAYOUT  # the frozen header's, compared struct by struct
    pc.register_plugin(AbiV1(), name="abi_v1")
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 3], "float64")
        out = pc.ops.scale(pc.ops.twice_v1(x), scale=0.5, bias=1.0)  # beside today's kernels
    exe = pc.Executor()
    value = np.arange(6.0).reshape(2, 3)
    (got,) = exe.run(prog, feed={"x": value}, fetch_list=[out])
    np.testing.assert_array_equal(got, value + 1)
    assert exe.prepare(prog, {"x": value}, [out]).compiled


_FORGED = """
import numpy as np, paddle_core as pc

class Forged:
    def paddle_core_manifest(self):
        return '''
        kernel_abi: 1
        kernel_module: "paddle_ops_math.kernels"
        ops {
          proto { type: "forged" comment: "one input" inputs { name: "x" } outputs { name: "out" } }
          kernels { device: "cpu" dtypes: [FLOAT32] native: "KERNEL" }
          shape_rule: "paddle_core.rules:unary"
        }'''

pc.register_plugin(Forged())
prog = pc.Program()
with pc.program_guard(prog):
    y = pc.ops.forged(pc.data("x", [3]))
try:
    pc.Executor().run(prog, feed={"x": np.ones(3, np.float32)}, fetch_list=[y])
except pc.KernelError as e:
    print(e)
"""


@pytest.mark.parametrize("kernel", ["add", "add_grad", "slice_grad"])
def test_a_kernel_bound_to_an_op_of_another_arity_is_refused_not_a_crash(kernel, tmp_path):
    """A manifest binding paddle-ops-math's two- or three-input kernels to a one-input op used
    to end the process with SIGSEGV, then was a KernelError at run (the SDK checks every slot a
    kernel reads); now each kernel declares its slots and the core refuses it for that op when
    the module loads, naming op, kernel and plugin (run in a child process, so a crash would be
    caught)."""
    pytest.importorskip("paddle_ops_math")
    done = subprocess.run(
        [sys.executable, "-P", "-c", _FORGED.replace("KERNEL", kernel)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.startswith(
        f"op 'forged' cannot run: plugin 'forged': kernel {kernel!r} does not fit op 'forged': "
        "its inputs are declared as "
    ), done.stdout
