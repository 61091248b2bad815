"""The kernel ABI's layout fingerprint: the rules, the core's own, old and forged modules.

A plugin's compiled module exports KERNEL_LAYOUT, the layout of the kernel_abi.h it was built
with; the core compares it with its own struct by struct (rules at the top of kernel_abi.h).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import TEST_PACKAGES, made_once, pip_install, run_cli

import paddle_core as pc
from paddle_core._src.base.runtime import compiled_runtime
from paddle_core._src.plugins import abi

CORE = compiled_runtime().KERNEL_LAYOUT
# ABI 1 as released, frozen: kernels built against it must go on loading as the header grows.
FROZEN = TEST_PACKAGES / "abi_v1" / "abi_v1"


def with_struct(layout: str, name: str, entry: str) -> str:
    """``layout`` with struct ``name``'s entry replaced by ``entry`` ("rule:size=fields")."""
    return ";".join(
        f"{name}:{entry}" if part.startswith(name + ":") else part for part in layout.split(";")
    )


def test_equal_layouts_and_older_compatible_ones_are_accepted() -> None:
    assert abi.layout_difference(CORE, CORE) == ""
    # An older plugin's smaller pc_context (a sized struct): it reads fewer fields.
    older_context = with_struct(CORE, "pc_context", "sized:32=0+8,8+4,12+4,16+8,24+8")
    assert abi.layout_difference(older_context, CORE) == ""
    # A struct the plugin does not know yet (built before it existed) is not its concern.
    older = ";".join(p for p in CORE.split(";") if not p.startswith("pc_attrs:"))
    assert abi.layout_difference(older, CORE) == ""
    # A newer plugin's larger pc_context: it reads the new field only when struct_size says so.
    grown = with_struct(CORE, "pc_context", "sized:56=0+8,8+4,12+4,16+8,24+8,32+8,40+8,48+8")
    assert abi.layout_difference(grown, CORE) == ""


def test_incompatible_layouts_name_the_struct_and_both_layouts() -> None:
    # pc_tensor is an array element: its size is the stride, so it must be equal.
    forged = with_struct(CORE, "pc_tensor", "array:48=0+8,8+8,16+8,24+8,32+4,36+4,40+4,44+4")
    assert abi.layout_difference(forged, CORE) == (
        "pc_tensor is 48 bytes with fields at 0+8 8+8 16+8 24+8 32+4 36+4 40+4 44+4 in the "
        "module, 40 bytes with fields at 0+8 8+8 16+8 24+4 28+4 32+4 36+4 in paddle-core "
        "(expected the same size and fields)"
    )
    # pc_tensors is written by the core: a plugin expecting a field the core does not write
    # would read past it.
    newer = with_struct(CORE, "pc_tensors", "core:32=0+8,8+8,16+4,20+4,24+8")
    assert "pc_tensors is 32 bytes" in abi.layout_difference(newer, CORE)
    assert "(expected the plugin's fields first among the core's)" in abi.layout_difference(
        newer, CORE
    )
    moved = with_struct(CORE, "pc_kernel", "sized:40=0+4,4+4,8+8,24+8,16+8,32+8")
    assert "pc_kernel is 40 bytes" in abi.layout_difference(moved, CORE)
    assert "not a layout fingerprint" in abi.layout_difference("garbage", CORE)


def test_a_kernel_struct_smaller_than_abi_1s_names_the_size_and_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = compiled_runtime()

    class Runtime:
        KERNEL_BASE_SIZE = runtime.KERNEL_BASE_SIZE
        KERNEL_LAYOUT = runtime.KERNEL_LAYOUT

        @staticmethod
        def kernel_info(capsule):
            return (1, 24, "tiny", True)

    monkeypatch.setattr(abi, "compiled_runtime", lambda: Runtime)
    problem = abi.capsule_problem("tiny", object(), "tiny-ops")
    assert problem.startswith(
        "kernel 'tiny' has a pc_kernel of struct_size 24, but paddle-core 0.1.0 needs at least "
        "64 (ABI 1's; its own pc_kernel is 64 bytes)"
    )
    assert problem.endswith(
        "rebuild tiny-ops against the installed paddle-core: pip install --force-reinstall "
        "--no-deps --no-binary tiny-ops tiny-ops"
    )


def test_a_module_that_exports_no_layout_is_refused() -> None:
    """Every module built with the SDK exports its layout: one that does not was built
    without it, and is not guessed at."""

    class NoLayout:
        KERNEL_ABI_VERSION = 1

    assert abi.module_problem(NoLayout(), "old._C", "old-ops") == (
        "its compiled module 'old._C' exports no KERNEL_LAYOUT (it was not built with the SDK's "
        "paddle_core/pybind.hpp); rebuild old-ops against the installed paddle-core: pip install "
        "--force-reinstall --no-deps --no-binary old-ops old-ops"
    )


def compile_and_run(tmp_path: Path, source: str, *include: Path) -> str:
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("cc is not installed")
    path = tmp_path / "layout.c"
    path.write_text(source)
    flags = [f"-I{d}" for d in include]
    cmd = [cc, "-std=c99", "-Wall", "-Werror", "-pedantic", *flags, str(path)]
    subprocess.run([*cmd, "-o", str(tmp_path / "layout")], check=True)
    return subprocess.run(
        [str(tmp_path / "layout")], check=True, capture_output=True, text=True
    ).stdout


def test_the_cores_layout_is_the_sdk_headers(tmp_path: Path) -> None:
    """The runtime's fingerprint is the one a plugin compiled with the installed SDK gets."""
    source = (
        "#include <stdio.h>\n#include <paddle_core/kernel_abi.h>\n"
        "int main(void) { char text[2048]; pc_kernel_layout(text, sizeof text);\n"
        '  printf("%s", text); return 0; }\n'
    )
    assert compile_and_run(tmp_path, source, Path(pc.get_include())) == CORE


def test_abi_1_as_released_stays_compatible_with_the_cores_layout(tmp_path: Path) -> None:
    """The frozen ABI 1 header (tests/packages/abi_v1) compiles to a layout the core accepts:
    the header grows only by the rules at its top. Today the two are equal."""
    source = (
        '#include <stdio.h>\n#include "kernel_abi_v1.h"\n'
        "int main(void) { char text[2048]; pc_kernel_layout(text, sizeof text);\n"
        '  printf("%s", text); return 0; }\n'
    )
    frozen = compile_and_run(tmp_path, source, FROZEN)
    assert abi.parse(frozen).keys() == abi.parse(CORE).keys()
    assert abi.layout_difference(frozen, CORE) == ""


@pytest.fixture(scope="session")
def forged_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/packages/forged_layout, built with the installed SDK header in which pc_tensor
    gained a field after `data` (the ABI version unchanged), and pip-installed."""
    header = (Path(pc.get_include()) / "paddle_core" / "kernel_abi.h").read_text()
    field = "  void* data;              /* first element; NULL during prepare */\n"
    assert header.count(field) == 1
    forged = header.replace(field, field + "  int64_t offset;          /* forged */\n")
    forged = forged.replace(
        "FIELD(pc_tensor, data)", "FIELD(pc_tensor, data) FIELD(pc_tensor, offset)"
    )

    def make(target: Path) -> None:
        project = tmp_path_factory.mktemp("forged") / "forged_layout"
        shutil.copytree(TEST_PACKAGES / "forged_layout", project)
        (project / "forged_layout" / "kernel_abi_forged.h").write_text(forged)
        pip_install(target, project)

    return made_once(tmp_path_factory, "forged-site", make)


FORGED_PROBLEM = (
    "its compiled module 'forged_layout._kernels' was built for kernel ABI 1 with struct layout "
    "{theirs}, but paddle-core 0.1.0 speaks kernel ABI 1 with struct layout {ours}: pc_tensor "
    "is 48 bytes with fields at 0+8 8+8 16+8 24+8 32+4 36+4 40+4 44+4 in the module, 40 bytes "
    "with fields at 0+8 8+8 16+8 24+4 28+4 32+4 36+4 in paddle-core (expected the same size "
    "and fields); rebuild paddle-core-forged-layout against the installed paddle-core: "
    "pip install --force-reinstall --no-deps "
)


def forged_problem(site: Path) -> str:
    import importlib.util
    import sys

    sys.path.insert(0, str(site))
    try:
        spec = importlib.util.find_spec("forged_layout._kernels")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(site))
    return FORGED_PROBLEM.format(
        theirs=abi.fingerprint_id(module.KERNEL_LAYOUT), ours=abi.fingerprint_id(CORE)
    )


def test_a_module_built_with_a_forged_layout_is_refused(forged_site: Path, on_path) -> None:
    expected = forged_problem(forged_site)
    plugins = run_cli("plugins", "--json", pythonpath=forged_site, check=1)
    (forged,) = [p for p in json.loads(plugins.stdout)["plugins"] if p["name"] == "forged_layout"]
    assert forged["status"] == "broken"
    (problem,) = forged["problems"]
    assert problem.startswith(expected), problem
    # The rebuild command names the directory the plugin was installed from.
    assert problem.endswith("forged_layout"), problem
    on_path(forged_site)
    prog = pc.Program()
    with pc.program_guard(prog):
        out = pc.ops.forged_layout_twice(pc.data("x", [2], "float64"))
    with pytest.raises(pc.KernelLoadError) as err:
        pc.Executor().run(prog, feed={"x": np.ones(2)}, fetch_list=[out])
    assert "op 'forged_layout_twice' cannot run: plugin 'forged_layout' " in str(err.value)
    assert expected in str(err.value)
    result = run_cli("validate", "paddle-core-forged-layout", pythonpath=forged_site, check=1)
    assert result.stdout.startswith(
        f"paddle-core-forged-layout: plugin 'forged_layout': {expected}"
    ), result.stdout
