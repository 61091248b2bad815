"""The kernel SDK as a third party uses it: headers, and a compiled plugin built with pip.

examples/my_ops is really built (scikit-build-core, CMake, find_package(paddle_core)) and
installed with pip into a directory on PYTHONPATH; a fresh process then runs its op,
checks its gradient, and shows it with the CLI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

import paddle_core as pc


def compiler(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


def test_the_abi_header_is_plain_c(tmp_path: Path) -> None:
    source = tmp_path / "abi.c"
    source.write_text(
        "#include <paddle_core/kernel_abi.h>\n"
        'int main(void) { pc_attrs a = {0, 0}; return pc_find_attr(&a, "x") != 0; }\n'
    )
    cmd = [compiler("cc"), "-std=c99", "-Wall", "-Werror", "-pedantic", f"-I{pc.get_include()}"]
    subprocess.run([*cmd, "-c", str(source), "-o", str(tmp_path / "abi.o")], check=True)


def test_the_cpp_layer_compiles_cleanly_on_its_own(tmp_path: Path) -> None:
    source = tmp_path / "k.cpp"
    source.write_text(
        "#include <paddle_core/kernel.hpp>\n"
        "struct K { K(const paddle_core::Attrs&, const paddle_core::Slots&, const paddle_core::Slots&) {}\n"
        "  void run(const paddle_core::Slots&, const paddle_core::Slots&, const paddle_core::Context&) const {} };\n"
        'const paddle_core::Family& f() { static paddle_core::Family k = {paddle_core::kernel<K>("k")}; return k; }\n'
    )
    cmd = [compiler("c++"), "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{pc.get_include()}"]
    subprocess.run([*cmd, "-c", str(source), "-o", str(tmp_path / "k.o")], check=True)


def test_cmake_finds_the_sdk() -> None:
    config = Path(pc.get_cmake_dir()) / "paddle_coreConfig.cmake"
    assert config.is_file()
    assert "paddle_core::sdk" in config.read_text()
    assert (Path(pc.get_include()) / "paddle_core" / "kernel_abi.h").is_file()


RUN_SWISH = """
import json, numpy as np, paddle_core as pc
from paddle_core.testing import check_grad, run_op
x = np.linspace(-4, 4, 11)
(out,) = run_op("swish", {"x": x.astype(np.float32)}, {"beta": 2.0})["out"]
want = x / (1 + np.exp(-2.0 * x))
check_grad("swish", {"x": x}, {"beta": 2.0})
print(json.dumps({"max_error": float(np.max(np.abs(out - want))), "dtype": str(out.dtype)}))
"""


def test_a_third_party_compiled_plugin_builds_installs_and_runs(tmp_path: Path) -> None:
    site = tmp_path / "site"
    project = tmp_path / "my_ops"
    shutil.copytree(ROOT / "examples" / "my_ops", project, ignore=shutil.ignore_patterns("build"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(site), str(project)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-c", RUN_SWISH], env=env, capture_output=True, text=True, timeout=120,
        cwd=tmp_path,  # outside the checkout, so the installed paddle_core is imported
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["dtype"] == "float32" and report["max_error"] < 1e-5
    shown = json.loads(run_cli("show", "swish", "--json", pythonpath=site).stdout)
    assert shown["plugin"] == "my_ops" and shown["kernels"][0]["impl"] == "native"
    assert shown["attrs"][0]["min"] == {"value": 0.0, "exclusive": False}
