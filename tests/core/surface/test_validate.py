"""`paddle-ops validate PATH|DIST`, run as a subprocess against really installed packages."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import made_once, pip_install, run_cli

import paddle_core as pc

FIRST_PARTY = ("paddle-core", "paddle-ops-math", "paddle-ops-nn")
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "paddle_ops_example"


@pytest.mark.parametrize("dist", FIRST_PARTY)
def test_the_first_party_plugins_validate_clean(dist: str) -> None:
    if dist != "paddle-core":
        pytest.importorskip(dist.replace("-", "_"), reason=f"{dist} is not installed")
    result = run_cli("validate", dist)
    (line,) = result.stdout.splitlines()  # no warning: first-party ops own unprefixed names
    assert line.startswith(f"{dist}: ok: plugin ") and line.endswith("(paddle-core 0.1.0)")
    assert "native kernels, layout " in line
    report = json.loads(run_cli("validate", dist, "--json").stdout)
    assert report["ok"] is True and report["problems"] == [] and report["warnings"] == []
    assert all(p["layout"] for p in report["plugins"])


def test_an_installed_plugin_with_python_kernels_validates_clean() -> None:
    result = run_cli("validate", "paddle-ops-toy")
    assert result.stdout.startswith("paddle-ops-toy: ok: plugin 'toy': ")


def test_each_kind_of_broken_plugin_is_one_line(broken_site: Path) -> None:
    result = run_cli("validate", "paddle-ops-broken", pythonpath=broken_site, check=1)
    lines = result.stdout.splitlines()
    problems = [line for line in lines if not line.startswith("warning: ")]
    assert all(line.startswith("paddle-ops-broken: plugin '") for line in problems), problems
    expected = [
        "plugin 'abi_mismatch': its compiled module 'broken_plugins.abi_99_kernels' was built "
        "for kernel ABI 99, but paddle-core 0.1.0 speaks kernel ABI 1; rebuild "
        "paddle-ops-broken against the installed paddle-core: pip install --force-reinstall "
        "--no-deps ",
        "plugin 'bad_decl': op 'bad_default_op': attr 'p': default 1.5 is outside [0, 1]",
        "plugin 'missing_symbol': 'broken_plugins.good_rules' has no 'no_such_kernel' "
        "(the cpu kernel of op 'symbolless_op')",
        "plugin 'partial': its compiled module 'broken_plugins.partial_C' does not export "
        "kernel 'partial_gone', which the manifest declares",
        "plugin 'raising_rules': importing 'broken_plugins.raising_rules' raised RuntimeError",
        "plugin 'wrong_core': requires paddle-core >=99",
    ]
    for text in expected:
        assert any(line.startswith(f"paddle-ops-broken: {text}") for line in problems), text
    # Naming is advice: a warning line, the exit status is the problems'.
    assert (
        "warning: paddle-ops-broken: plugin 'missing_symbol': op 'symbolless_op' does not start "
        "with 'missing_symbol_'"
    ) in result.stdout
    assert result.stderr.startswith("paddle-ops: validate found ")
    report = json.loads(
        run_cli("validate", "paddle-ops-broken", "--json", pythonpath=broken_site, check=1).stdout
    )
    assert report["ok"] is False and len(report["problems"]) == len(problems)


def test_a_name_that_is_neither_installed_nor_a_project(tmp_path: Path) -> None:
    result = run_cli("validate", "paddle-ops-nothing", check=1)
    assert result.stdout.startswith(
        "paddle-ops-nothing: no distribution of this name is installed (nor is it a project "
        "directory)"
    )
    result = run_cli("validate", "./nowhere", check=1)
    assert result.stdout.startswith("./nowhere: no such directory")
    result = run_cli("validate", str(tmp_path), check=1)  # a directory, but no project
    assert result.stdout.startswith(f"{tmp_path}: no pyproject.toml here")


def test_a_plugin_name_validates_its_distribution() -> None:
    """`paddle-ops list` shows plugin names (toy); validate takes them as well as the
    distribution's (paddle-ops-toy)."""
    out = run_cli("validate", "toy").stdout
    assert out == f"toy: ok: plugin 'toy': 11 ops (paddle-core {pc.__version__})\n"


PYPROJECT = """\
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "valid-ops"
version = "0.1.0"

[project.entry-points."paddle_core.plugins"]
valid = "valid_ops:ops.pbtxt"

[tool.setuptools.package-data]
valid_ops = ["*.pbtxt"]
"""

MANIFEST = """\
comment: "Ops for the validate tests"
rules_module: "valid_ops.rules"
ops {
  proto {
    type: "valid_double" comment: "out = 2 x."
    inputs { name: "x" comment: "Input." } outputs { name: "out" comment: "Result." }
    attrs { name: "factor" type: FLOAT comment: "Unused." default { f: 1 } min { value: 0 } max { value: inf } }
  }
  kernels { device: "cpu" dtypes: [FLOAT32] python: "double_cpu" }
  shape_rule: "paddle_core.rules:unary"
}
"""

RULES = '''\
"""Rules of valid-ops."""


def double_cpu(x, *, factor):
    return [2 * x]
'''


def write_project(root: Path, *, src: bool = False, manifest: str = MANIFEST) -> Path:
    package = (root / "src" if src else root) / "valid_ops"
    package.mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (package / "__init__.py").write_text("")
    (package / "ops.pbtxt").write_text(manifest)
    (package / "rules.py").write_text(RULES)
    return root


@pytest.mark.parametrize("src", [False, True], ids=["flat", "src"])
def test_a_project_validates_after_pip_install(tmp_path: Path, src: bool) -> None:
    project = write_project(tmp_path / "valid_ops", src=src)
    # Not installed yet: the manifest is checked, the rest needs the install.
    result = run_cli("validate", str(project), check=1)
    assert result.stdout == (
        f"{project}: valid-ops is not installed, so its compiled kernels and rules cannot be "
        f"checked; install the project first (pip install {project}), then validate again\n"
    )
    site = tmp_path / "site"
    pip_install(site, project)
    result = run_cli("validate", str(project), pythonpath=site)
    assert result.stdout == f"{project}: ok: plugin 'valid': 1 op (paddle-core 0.1.0)\n"
    # An edit after the install: validate says the installed copy is stale.
    manifest = next(project.rglob("ops.pbtxt"))
    manifest.write_text(MANIFEST.replace("out = 2 x.", "out = 2 * x."))
    result = run_cli("validate", str(project), pythonpath=site, check=1)
    assert "was built from another manifest than" in result.stdout


def test_a_projects_manifest_problems_are_each_one_line(tmp_path: Path) -> None:
    manifest = (
        MANIFEST.replace("default { f: 1 }", "default { f: -1 }")
        .replace("max { value: inf }", "max { value: 1e999 }")
        .replace('type: "valid_double"', 'type: "double"')
        .replace('python: "double_cpu"', 'python: "double_cpux"')
    )
    project = write_project(tmp_path / "p", manifest=manifest)
    site = tmp_path / "site"
    shutil.copytree(project, tmp_path / "installed")
    pip_install(site, tmp_path / "installed")
    lines = run_cli("validate", str(project), pythonpath=site, check=1).stdout.splitlines()
    assert lines == [
        f"{project}: plugin 'valid': op 'double': attr 'factor': default -1.0 is outside [0, inf]",
        f"{project}: plugin 'valid': op 'double': attr 'factor': max 1e999 is not a finite "
        "number (it reads as inf); write a finite bound, or `inf` if no bound is meant",
        f"warning: {project}: plugin 'valid': op 'double' does not start with 'valid_': name "
        "the ops of plugin 'valid' valid_<op> (e.g. valid_double), so that they cannot collide "
        "with another plugin's",
    ]
    # Installed as is, the rules are checked too: the kernel it names does not exist.
    fixed = manifest.replace("default { f: -1 }", "default { f: 1 }").replace("1e999", "inf")
    project = write_project(tmp_path / "q", manifest=fixed)
    site = tmp_path / "site-q"
    pip_install(site, project)
    result = run_cli("validate", str(project), pythonpath=site, check=1)
    assert result.stdout.startswith(
        f"{project}: plugin 'valid': 'valid_ops.rules' has no 'double_cpux' (the cpu kernel of "
        "op 'double')\n"
    )


def test_a_compiled_project_validates_against_its_installed_build(example_site: Path) -> None:
    """examples/paddle_ops_example: the manifest of the checkout, the module pip built from it
    (with its CUDA kernels and their declaration where the build found nvcc); it follows the
    naming convention, so there is nothing to warn about."""
    from paddle_core._src.base.runtime import compiled_runtime
    from paddle_core._src.plugins.abi import fingerprint_id

    project = Path(__file__).resolve().parents[3] / "examples" / "paddle_ops_example"
    result = run_cli("validate", str(project), pythonpath=example_site)
    layout = fingerprint_id(compiled_runtime().KERNEL_LAYOUT)
    record = json.loads((example_site / "paddle_ops_example" / "kernels.json").read_text())
    built_cuda = "example_cos_cuda" in record["kernels"]
    assert result.stdout.splitlines() == [
        f"{project}: ok: plugin 'example': 2 ops, {4 if built_cuda else 2} native kernels, "
        f"layout {layout} (paddle-core 0.1.0)"
    ]


@pytest.fixture(scope="session")
def example_cpu_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/paddle_ops_example built without its CUDA kernels (a build where no CUDA toolkit
    is found), pip-installed into a directory of its own."""

    def install(target: Path) -> None:
        project = tmp_path_factory.mktemp("example-cpu") / "paddle_ops_example"
        shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("build"))
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        cmd += ["--no-deps", "--no-build-isolation", "--target", str(target)]
        cmd += ["-C", "cmake.define.PADDLE_OPS_EXAMPLE_CUDA=OFF", str(project)]
        result = subprocess.run(cmd, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr

    return made_once(tmp_path_factory, "example-cpu-site", install)


def test_a_build_without_cuda_lists_its_cuda_kernels_as_not_built(example_cpu_site: Path) -> None:
    """The manifest declares CUDA kernels beside the CPU ones; a build that compiled none lists
    them as not built, and the plugin is no worse for it: ok, and it validates clean."""
    record = json.loads((example_cpu_site / "paddle_ops_example" / "kernels.json").read_text())
    assert set(record["kernels"]) == {"example_cos", "example_cos_grad"}
    shown = json.loads(run_cli("show", "example_cos", "--json", pythonpath=example_cpu_site).stdout)
    assert {k["device"] for k in shown["kernels"]} == {"cpu"} and shown["available"]
    (unbuilt,) = shown["not_built"]
    assert (unbuilt["device"], unbuilt["ref"], unbuilt["plugin"]) == (
        "cuda",
        "example_cos_cuda",
        "example",
    )
    assert unbuilt["why"].startswith("not built: the plugin's build compiled no cuda kernels")
    text = run_cli("show", "example_cos", pythonpath=example_cpu_site).stdout
    assert "native:example_cos_cuda (not built)" in text
    plugins = json.loads(run_cli("plugins", "--json", pythonpath=example_cpu_site).stdout)
    (example,) = [p for p in plugins["plugins"] if p["name"] == "example"]
    assert example["status"] == "ok" and example["problems"] == []
    result = run_cli("validate", str(EXAMPLE), pythonpath=example_cpu_site)
    assert result.stdout.splitlines()[0].startswith(
        f"{EXAMPLE}: ok: plugin 'example': 2 ops, 2 native kernels"
    )


UNDECLARED_C = '''\
"""Stands in for a compiled module: paddle-core's own kernels, one of them undeclared."""

from paddle_core._src.base.runtime import compiled_runtime

_runtime = compiled_runtime()
KERNEL_ABI_VERSION = _runtime.KERNEL_ABI_VERSION
KERNEL_LAYOUT = _runtime.KERNEL_LAYOUT


def kernels():
    return {name: _runtime.kernels()[name] for name in ("fill_like", "add_n")}
'''


def test_a_kernel_the_manifest_does_not_declare_is_a_problem(tmp_path: Path) -> None:
    manifest = MANIFEST.replace('python: "double_cpu"', 'native: "fill_like"').replace(
        'rules_module: "valid_ops.rules"',
        'rules_module: "valid_ops.rules"\nkernel_module: "valid_ops._C"\nkernel_abi: 1',
    )
    project = write_project(tmp_path / "p", manifest=manifest)
    (project / "valid_ops" / "_C.py").write_text(UNDECLARED_C)
    site = tmp_path / "site"
    pip_install(site, project)
    result = run_cli("validate", str(project), pythonpath=site, check=1)
    assert result.stdout == (
        f"{project}: plugin 'valid': its compiled module 'valid_ops._C' exports kernel "
        "'add_n' that the manifest does not declare; expected a `kernels { ... native: ... }` "
        "entry for it (or stop exporting it)\n"
    )
