"""`paddle-ops new`: the package it writes, the names it derives, what it refuses; and the
example package, which is its output, built and passing its own generated tests.

The plain-pip flow (build isolation on, a fresh environment) is tests/test_install.py's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT, pythonpath_with, run_cli

EXAMPLE = ROOT / "examples" / "paddle_ops_example"


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not {"build", "__pycache__"} & set(p.relative_to(root).parts)
    }


def test_new_writes_a_package_named_after_its_distribution(tmp_path: Path) -> None:
    out = run_cli("new", "my-ops", "--dir", str(tmp_path / "my-ops")).stdout
    assert "my-ops (import my_ops, op my_ops_cos)" in out and "pip install ." in out
    files = tree(tmp_path / "my-ops")
    assert set(files) == {
        ".gitignore",
        "CMakeLists.txt",
        "README.md",
        "csrc/cos.hpp",
        "csrc/cos_cpu.cpp",
        "csrc/module.cpp",
        "pyproject.toml",
        "src/my_ops/__init__.py",
        "src/my_ops/manifest/cos.pbtxt",
        "tests/test_cos.py",
    }
    text = b"".join(files.values()).decode()
    assert "{{" not in text and "}}" not in text.replace("}}}", "")  # every placeholder filled
    assert 'my_ops = "my_ops:manifest"' in files["pyproject.toml"].decode()
    assert 'type: "my_ops_cos"' in files["src/my_ops/manifest/cos.pbtxt"].decode()
    project = tomllib.loads(files["pyproject.toml"].decode())
    assert not [r for r in project["build-system"]["requires"] if "paddle" in r]  # not on an index


def test_cuda_adds_only_the_cuda_kernels_and_their_declaration(tmp_path: Path) -> None:
    run_cli("new", "my-ops", "--dir", str(tmp_path / "cpu"))
    run_cli("new", "my-ops", "--cuda", "--dir", str(tmp_path / "cuda"))
    cpu, cuda = tree(tmp_path / "cpu"), tree(tmp_path / "cuda")
    assert set(cuda) - set(cpu) == {"csrc/cos_cuda.cu"}
    differ = {"README.md", "src/my_ops/manifest/cos.pbtxt"}
    assert all(cuda[name] == content for name, content in cpu.items() if name not in differ)
    # The manifest declares each CUDA kernel beside its CPU twin: the only lines it adds.
    manifest = "src/my_ops/manifest/cos.pbtxt"
    added = set(cuda[manifest].decode().splitlines()) - set(cpu[manifest].decode().splitlines())
    assert {line.split("#")[0].strip() for line in added} == {
        'kernels { device: "cuda" native: "my_ops_cos_cuda" }',
        'kernels { device: "cuda" native: "my_ops_cos_grad_cuda" }',
    }
    assert set(cpu[manifest].decode().splitlines()) <= set(cuda[manifest].decode().splitlines())
    readme_cpu, readme_cuda = cpu["README.md"].decode(), cuda["README.md"].decode()
    assert "with CPU kernels." in readme_cpu and "cos_cuda.cu" not in readme_cpu
    assert (
        "MY_OPS_CUDA" not in readme_cpu and "as `paddle-ops new NAME --cuda` writes" in readme_cpu
    )
    assert "| `csrc/cos_cuda.cu` | the CUDA kernels" in readme_cuda
    assert "cmake.define.MY_OPS_CUDA=OFF" in readme_cuda


def test_the_example_package_is_what_new_writes(tmp_path: Path) -> None:
    """examples/paddle_ops_example is `paddle-ops new paddle-ops-example --cuda`, byte for
    byte: a change to the templates shows in the example (regenerate it with that command)."""
    run_cli("new", "paddle-ops-example", "--cuda", "--dir", str(tmp_path / "example"))
    assert tree(tmp_path / "example") == tree(EXAMPLE)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("my ops", "not a valid distribution name"),
        ("ops-", "not a valid distribution name"),
        ("9ops", "not a Python identifier"),
        ("class", "not a Python identifier"),
        ("numpy", "is taken by an installed package"),
        ("paddle-core", "is taken by an installed package"),
    ],
)
def test_new_refuses_names_that_would_not_work(tmp_path: Path, name: str, reason: str) -> None:
    result = run_cli("new", name, "--dir", str(tmp_path / "pkg"), check=1)
    assert reason in result.stderr
    assert not (tmp_path / "pkg").exists()


def test_new_never_writes_into_a_directory_that_has_files(tmp_path: Path) -> None:
    (tmp_path / "my-ops").mkdir()
    (tmp_path / "my-ops" / "notes.txt").write_text("mine")
    result = run_cli("new", "my-ops", "--dir", str(tmp_path / "my-ops"), check=1)
    assert "already exists and is not empty" in result.stderr
    assert [p.name for p in (tmp_path / "my-ops").iterdir()] == ["notes.txt"]


def test_the_example_package_passes_its_generated_tests(example_site: Path, tmp_path: Path) -> None:
    """The tests `paddle-ops new` writes, run as its user would (pytest in the package
    directory, here a copy of it), against the package built and installed by pip."""
    project = tmp_path / "paddle_ops_example"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("build"))
    env = {**os.environ, "PYTHONPATH": pythonpath_with(example_site)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q"],
        cwd=project, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout and "failed" not in result.stdout
