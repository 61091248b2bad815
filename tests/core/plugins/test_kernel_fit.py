"""What a kernel declares it fits (pc_kernel.inputs, outputs, dtypes), held at load to every op
the manifest binds it to: a kernel that does not fit its op is refused for it, naming plugin,
op and kernel, and the plugin's other ops run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import TEST_PACKAGES, made_once, pip_install, run_cli

import paddle_core as pc
from paddle_core._src.base.runtime import compiled_runtime
from paddle_core._src.plugins import abi
from paddle_core.proto import framework_pb2 as pb

F32, F64, I32 = pb.VarType.FLOAT32, pb.VarType.FLOAT64, pb.VarType.INT32


def proto(inputs: str, outputs: str = "1") -> pb.OpProto:
    """An OpProto whose slots are written as a slot text ('1', '?', '+', '*' per slot)."""
    op = pb.OpProto(type="op")
    for side, text in ((op.inputs, inputs), (op.outputs, outputs)):
        for k, c in enumerate(text):
            side.add(name=f"s{k}", duplicable=c in "+*", dispensable=c in "?*")
    return op


@pytest.fixture
def declaring(monkeypatch: pytest.MonkeyPatch):
    """Make every capsule declare (inputs, outputs, dtypes), as runtime.kernel_signature
    reports them."""
    runtime = compiled_runtime()

    def declare(inputs, outputs, dtypes):
        class Runtime:
            KERNEL_LAYOUT = runtime.KERNEL_LAYOUT

            @staticmethod
            def kernel_signature(capsule):
                return inputs, outputs, dtypes

        monkeypatch.setattr(abi, "compiled_runtime", lambda: Runtime)

    return declare


@pytest.mark.parametrize(
    ("kernel", "op"),
    [
        ("1", "1"),
        ("?", "1"),  # an optional slot takes one tensor too
        ("?", "?"),
        ("+", "1"),
        ("*", "?"),
        ("*", "+"),
        ("11?", "11"),  # the op lacks a trailing optional slot: it reads as empty
        ("1*", "1"),
        ("?", ""),  # fill: fill_constant has no input, full_like one
    ],
)
def test_an_op_fits_a_kernel_that_handles_every_count_its_slots_allow(declaring, kernel, op):
    declaring(kernel, "1", [F32, F64])
    assert abi.signature_problem("k", object(), proto(op), [F32]) == ""


@pytest.mark.parametrize(
    ("kernel", "op"),
    [
        ("1", "11"),  # the op has a slot the kernel does not declare
        ("11", "1"),  # the kernel needs a second input the op does not have
        ("1", "?"),  # the kernel needs the tensor the op may leave out
        ("1", "+"),  # the kernel reads one tensor where the op binds several
        ("?", "+"),
        ("+", "*"),
        ("+", "?"),
    ],
)
def test_an_op_that_does_not_fit_names_both_slot_texts(declaring, kernel, op):
    declaring(kernel, "1", None)
    names = ", ".join(f"s{k}" for k in range(len(op))) or "none"
    assert abi.signature_problem("k", object(), proto(op), [F32]) == (
        f"kernel 'k' does not fit op 'op': its inputs are declared as {kernel!r}, the op's are "
        f"{op!r} ({names}) (slots: '1' one tensor, '?' none or one, '+' one or more, '*' any "
        "number); bind the op to a kernel that fits in the manifest, or correct the kernel's "
        "declaration (kernel.hpp's signature and DTypes), then rebuild the plugin"
    )


def test_outputs_and_dtypes_are_held_to_the_declaration_too(declaring):
    declaring("1", "1", [F32, F64])
    problem = abi.signature_problem("k", object(), proto("1", "11"), [F64, I32])
    assert problem.startswith(
        "kernel 'k' does not fit op 'op': its outputs are declared as '1', the op's are '11' "
        "(s0, s1); it handles dtypes float32, float64, the manifest lists int32 for it ("
    )


def test_what_a_kernel_does_not_declare_is_not_checked(declaring):
    declaring(None, None, None)
    assert abi.signature_problem("k", object(), proto("1*?", "++"), [I32]) == ""


def test_a_declaration_that_is_not_a_slot_text_is_refused(declaring):
    declaring("1x", "1", None)
    assert "its inputs are declared as '1x', which is not a slot text" in (
        abi.signature_problem("k", object(), proto("1"), [F32])
    )


def test_a_declaration_that_does_not_end_is_refused(monkeypatch: pytest.MonkeyPatch):
    class Runtime:
        @staticmethod
        def kernel_signature(capsule):
            raise ValueError("its dtypes list does not end")

    monkeypatch.setattr(abi, "compiled_runtime", lambda: Runtime)
    assert abi.signature_problem("k", object(), proto("1"), [F32]) == (
        "kernel 'k' has a malformed declaration of what it fits: its dtypes list does not end"
    )


def test_the_cores_own_kernels_declare_what_they_fit():
    table = compiled_runtime().kernels()
    # float32, float64, float16, bfloat16, int32, int64: the dtypes of gradients, and int32, int64
    grads = [9, 10, 7, 8, 4, 5]
    assert compiled_runtime().kernel_signature(table["add_n"]) == ("+", "1", grads)
    assert compiled_runtime().kernel_signature(table["fill_like"]) == ("1", "1", grads)


# -- a compiled module whose kernels declare other slots and dtypes than their ops --------------


@pytest.fixture(scope="session")
def forged_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/packages/forged_signature, built with the installed SDK header and pip-installed."""

    def make(target: Path) -> None:
        project = tmp_path_factory.mktemp("forged") / "forged_signature"
        shutil.copytree(TEST_PACKAGES / "forged_signature", project)
        header = Path(pc.get_include()) / "paddle_core" / "kernel_abi.h"
        shutil.copy(header, project / "forged_signature" / "kernel_abi.h")
        pip_install(target, project)

    return made_once(tmp_path_factory, "forged-signature-site", make)


LEGEND = "(slots: '1' one tensor, '?' none or one, '+' one or more, '*' any number)"
REFUSED = {
    "forged_signature_pair": "kernel 'pair' does not fit op 'forged_signature_pair': its inputs "
    f"are declared as '11', the op's are '1' (x) {LEGEND}",
    "forged_signature_ints": "kernel 'ints' does not fit op 'forged_signature_ints': it handles "
    f"dtypes int32, the manifest lists float64 for it {LEGEND}",
    "forged_signature_garbled": "kernel 'garbled' does not fit op 'forged_signature_garbled': "
    f"its inputs are declared as '1x', which is not a slot text {LEGEND}",
}


def test_kernels_that_do_not_fit_their_ops_are_refused_at_load(forged_site: Path) -> None:
    plugins = run_cli("plugins", "--json", pythonpath=forged_site, check=1)
    (record,) = [
        p for p in json.loads(plugins.stdout)["plugins"] if p["name"] == "forged_signature"
    ]
    assert record["status"] == "partial"
    assert len(record["problems"]) == len(REFUSED)
    for problem, (op, why) in zip(sorted(record["problems"]), sorted(REFUSED.items())):
        assert problem.startswith(f"op {op!r}: {why}; bind the op to a kernel that fits"), problem
    # Noted in the index: a later listing marks the refused ops unavailable, not the others.
    listed = json.loads(run_cli("list", "--json", pythonpath=forged_site).stdout)
    available = {row["op"]: row["available"] for row in listed["ops"] if "forged" in row["op"]}
    assert available == {
        "forged_signature_twice": True,
        "forged_signature_undeclared": True,
        **{op: False for op in REFUSED},
    }


def test_a_refused_kernel_is_a_kernel_load_error_and_the_other_ops_run(
    forged_site: Path, on_path
) -> None:
    on_path(forged_site)
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [3], "float64")
        twice = pc.ops.forged_signature_twice(x)
        undeclared = pc.ops.forged_signature_undeclared(x)  # declares nothing: not checked
        refused = {op: getattr(pc.ops, op)(x) for op in REFUSED}
    exe = pc.Executor()
    feed = {"x": np.arange(3.0)}
    for out in (twice, undeclared):
        (got,) = exe.run(prog, feed=feed, fetch_list=[out])
        np.testing.assert_array_equal(got, [0.0, 2.0, 4.0])
    for op, out in refused.items():
        with pytest.raises(pc.KernelLoadError) as err:
            exe.run(prog, feed=feed, fetch_list=[out])
        assert str(err.value).startswith(
            f"op {op!r} cannot run: plugin 'forged_signature' (paddle-core-forged-signature "
            f"1.0): {REFUSED[op]}; "
        ), str(err.value)
    record = pc.get_registry().plugins["forged_signature"]
    assert record.status == "partial" and record.missing_symbols == []
    assert sorted(op for op, _, _ in record.refused_kernels) == sorted(REFUSED)


def test_validate_names_each_kernel_that_does_not_fit(forged_site: Path) -> None:
    result = run_cli("validate", "paddle-core-forged-signature", pythonpath=forged_site, check=1)
    lines = result.stdout.splitlines()
    where = "paddle-core-forged-signature: plugin 'forged_signature'"
    for op, why in REFUSED.items():
        assert any(line.startswith(f"{where}: op {op!r}: {why}; ") for line in lines), lines
    # A kernel that declares nothing is not checked: validate says so.
    assert f"warning: {where}: 1 kernel declares no slots or dtypes" in result.stdout
    assert "are not checked against it: undeclared; declare them" in result.stdout


class Packer:
    """Kernels for an op another plugin declares (math's add: two inputs), from a module whose
    kernel (the core's fill_like: one input) does not fit it."""

    def paddle_core_manifest(self):
        return """
            kernel_abi: 1
            kernel_module: "paddle_core._src.base._runtime"
            kernel_packs {
              op: "add" kernels { device: "cpu" dtypes: [FLOAT32] native: "fill_like" }
            }
        """


def test_a_kernel_pack_is_held_to_the_op_another_plugin_declares() -> None:
    pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")
    with pytest.warns(pc.PluginConflictWarning, match="kernel 'add:cpu:float32' is provided"):
        pc.register_plugin(Packer(), name="packer")
    refs = pc.get_registry().op("add").kernels[("cpu", "float32")]
    (packed,) = [ref for ref in refs if ref.plugin.name == "packer"]
    with pytest.raises(pc.KernelLoadError) as err:
        packed.load()
    assert str(err.value).startswith(
        "op 'add' cannot run: plugin 'packer': kernel 'fill_like' does not fit op 'add': its "
        "inputs are declared as '1', the op's are '11' (x, y)"
    )
    assert packed.missing  # known now: listing marks it
