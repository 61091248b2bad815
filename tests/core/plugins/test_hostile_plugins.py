"""Plugins that misbehave in the ways the plugin fuzzer (tests/fuzz/fuzz_plugins.py) found, each
pinned: their code calls sys.exit(), their metadata has no name, their manifest is a FIFO or
/dev/zero, their hooks raise or return garbage, their grad rule raises. Each is a problem
recorded against the plugin or one of the core's errors; the host and the other plugins go on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

import paddle_core as pc

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

MANIFEST = """
kernel_abi: 1
kernel_module: "{package}._kernels"
rules_module: "{package}.rules"
{extra}
ops {{
  proto {{ type: "{package}_a" comment: "a" inputs {{ name: "x" }} outputs {{ name: "out" }} }}
  kernels {{ device: "cpu" dtypes: [FLOAT32] native: "a" }}
  shape_rule: "shape"
  grad_rule: "grad"
}}
"""


def install(site: Path, package: str, *, metadata: str | None = None, **files: str) -> None:
    """A plugin as pip leaves it: a package with a manifest and modules, and a dist-info naming
    its entry point. ``files`` are module sources by name (rules, _kernels, hooks) or the
    manifest's extra fields (extra)."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text("")
    text = MANIFEST.format(package=package, extra=files.pop("extra", ""))
    (site / package / "ops.pbtxt").write_text(text)
    files.setdefault("rules", "def shape(ctx):\n    raise SystemExit(4)\n")
    files.setdefault("_kernels", "raise SystemExit(3)\n")
    for module, source in files.items():
        (site / package / f"{module}.py").write_text(source)
    dist = site / f"{package}-1.0.dist-info"
    dist.mkdir()
    name = f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n"
    (dist / "METADATA").write_text(name if metadata is None else metadata)
    (dist / "entry_points.txt").write_text(
        f"[paddle_core.plugins]\n{package} = {package}:ops.pbtxt\n"
    )


def add_runs() -> None:
    """math's add, another plugin's op, still runs right."""
    prog = pc.Program()
    with pc.program_guard(prog):
        out = pc.ops.add(pc.data("x", [2]), pc.data("y", [2]))
    x = np.array([1.0, 2.0], np.float32)
    (got,) = pc.Executor().run(prog, feed={"x": x, "y": x}, fetch_list=[out])
    assert got.tolist() == [2.0, 4.0]


def test_plugin_code_calling_sys_exit_is_a_problem_of_the_plugin(tmp_path, on_path):
    """A rules module and a kernel module calling sys.exit() used to end the host."""
    from paddle_core._src.plugins.doctor import check_plugin_code

    install(tmp_path, "exits")
    on_path(tmp_path)
    with (
        pc.program_guard(pc.Program()),
        pytest.raises(pc.ShapeError, match=r"its shape rule raised SystemExit: 4"),
    ):
        pc.ops.exits_a(pc.data("x", [2]))
    record = pc.get_registry().plugins["exits"]
    check_plugin_code(record, pc.get_registry())  # what `paddle-ops plugins` does
    assert record.status == "broken"
    assert "its compiled module 'exits._kernels' failed to import: SystemExit: 3" in (
        record.problems
    )
    add_runs()


def test_a_distribution_without_a_name_is_listed_not_a_crash(tmp_path):
    install(tmp_path, "nameless", metadata="", _kernels="")
    result = run_cli("plugins", "--json", pythonpath=tmp_path, check=1)
    (row,) = [p for p in json.loads(result.stdout)["plugins"] if p["name"] == "nameless"]
    assert row["distribution"] == ""


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_manifest_that_is_not_a_regular_file_is_refused_not_read(tmp_path, kind):
    install(tmp_path, "special")
    manifest = tmp_path / "special" / "ops.pbtxt"
    manifest.unlink()
    os.mkfifo(manifest) if kind == "fifo" else manifest.symlink_to("/dev/zero")
    result = run_cli("plugins", "--json", pythonpath=tmp_path, check=1)  # (it used to hang)
    (row,) = [p for p in json.loads(result.stdout)["plugins"] if p["name"] == "special"]
    assert row["status"] == "broken"
    assert row["problems"] == [f"manifest {str(manifest)!r} is not a regular file"]


@pytest.mark.parametrize(
    ("hook", "problem"),
    [
        ("raise RuntimeError('devices')", "hook raised RuntimeError: devices"),
        ("return 5", "hook raised TypeError: 'int' object is not iterable"),
        ("return [object, 5]", "hook returned [<class 'object'>, 5], not a list of Device"),
    ],
)
def test_a_device_hook_that_fails_is_left_out_and_recorded(tmp_path, on_path, hook, problem):
    package = f"devs{abs(hash(hook))}"  # a hooks module of its own: modules stay imported
    hooks = f"from paddle_core import hookimpl\n\n@hookimpl\ndef paddle_core_device_types():\n    {hook}\n"
    install(tmp_path, package, extra=f'hooks_module: "{package}.hooks"', hooks=hooks)
    on_path(tmp_path)
    add_runs()  # the CPU (the core's device) is still there
    record = pc.get_registry().plugins[package]
    assert f"its paddle_core_device_types {problem}" in " ".join(record.runtime_errors)


def test_a_transform_hook_that_raises_is_a_plugin_error(tmp_path, on_path):
    hooks = (
        "from paddle_core import hookimpl\n\n@hookimpl\n"
        "def paddle_core_transform_program(program, device):\n    raise KeyError('pass')\n"
    )
    install(tmp_path, "passes", extra='hooks_module: "passes.hooks"', hooks=hooks)
    on_path(tmp_path)
    with pytest.raises(
        pc.PluginError, match=r"plugin 'passes''s paddle_core_transform_program hook failed"
    ):
        add_runs()


def test_a_grad_rule_that_raises_is_a_program_error(tmp_path, on_path):
    rules = (
        "def shape(ctx):\n    x = ctx.input('x')\n    ctx.set_output('out', x.shape, x.dtype)\n"
        "def grad(ctx):\n    raise ValueError('no gradient today')\n"
    )
    install(tmp_path, "gradless", rules=rules, _kernels="")
    on_path(tmp_path)
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [2])
        loss = pc.ops.sum(pc.ops.gradless_a(x))
        with pytest.raises(
            pc.ProgramError, match=r"op 'gradless_a' \(.*\): its grad rule raised ValueError"
        ):
            pc.gradients(loss, x)
