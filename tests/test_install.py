"""The install instructions, followed to the letter in fresh environments.

Each test copies the checkout's files (what `git ls-files` lists, untracked ones included: a
fresh clone of this working tree, without its build directories and environments) and runs
the documented commands there with a new virtual environment: the README's quick start
(`./dev demo`, then `./dev test`), and docs/plugins.md's plain-pip install of one plugin. They build the core and the
plugins from scratch, so they take minutes and are marked slow: `./dev test --run-slow`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow


def bash_block(document: str, heading: str) -> str:
    """The first bash block of the section of ``document`` with this heading."""
    text = (ROOT / document).read_text()
    section = text[text.index(f"## {heading}\n") :]
    return re.search(r"```bash\n(.*?)```", section, re.DOTALL)[1]


def fresh_clone(tmp_path: Path) -> Path:
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split("\0")  # fmt: skip
    clone = tmp_path / "clone"
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name, follow_symlinks=False)
    return clone


def user_env(tmp_path: Path) -> dict[str, str]:
    """A user's shell: this Python as `python3`, no test settings or paths of this run. The
    plugins build their CPU kernels only, at -O1: the CUDA build and the release build's -O3
    are the suite's own (every plugin's test_*cuda_build.py, and every kernel test), and these
    tests are about the install steps, which are the same. -O1 compiles in half -O3's time,
    and these three tests took over half of the suite's time in CI."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PADDLE_CORE_", "PYTHON"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PADDLE_CORE_CACHE_DIR"] = str(tmp_path / "cache")
    env["CMAKE_ARGS"] = (
        "-DPADDLE_OPS_MATH_CUDA=OFF -DPADDLE_OPS_NN_CUDA=OFF '-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG'"
    )
    return env


def bash(script: str, cwd: Path, env: dict[str, str]) -> str:
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert result.returncode == 0, f"{script}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result.stdout


def objects(clone: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in clone.glob("**/build/**/*.o")}


def test_the_quick_start_in_a_fresh_clone(tmp_path: Path) -> None:
    """`./dev demo` and `./dev test` as the README shows them; `./dev test` compiles nothing
    that `./dev demo` built (it installs the core again, with the test extras, from the same
    build directories), and leaves no test plugin in the environment."""
    clone, env = fresh_clone(tmp_path), user_env(tmp_path)
    block = bash_block("README.md", "Quick start")
    commands = [line.split("#")[0].strip() for line in block.splitlines()]
    assert commands == ["./dev demo", "./dev test"]
    demo = bash("./dev demo", clone, env)
    # The core's own ops, and every plugin of the checkout, each named by its entry point.
    plugins = {"core"} | {
        name
        for pyproject in clone.glob("plugins/*/pyproject.toml")
        for name in tomllib.loads(pyproject.read_text())["project"]["entry-points"][
            "paddle_core.plugins"
        ]
    }
    assert "examples/train_digits.py" in demo and f"ops from {len(plugins)} plugins" in demo
    built = objects(clone)
    assert built
    bash("./dev test -q tests/core/surface/test_cli.py", clone, env)  # the suite, in short
    assert objects(clone) == built, "./dev test compiled again what ./dev demo had built"
    listed = json.loads(bash(".venv/bin/paddle-ops list --json", clone, env))
    assert {row["plugin"] for row in listed["ops"]} == plugins == {"core", "dist", "math", "nn"}


def test_one_plugin_with_plain_pip_in_a_fresh_environment(tmp_path: Path) -> None:
    """docs/plugins.md's plain-pip section, line by line (pip's build isolation on); then a missing
    op's hint names the command for where the user is (the clone), which works as given."""
    clone, env = fresh_clone(tmp_path), user_env(tmp_path)
    out = bash(bash_block("docs/plugins.md", "Installing one plugin with plain pip"), clone, env)
    assert re.search(r"^scale\s+math\s", out, re.MULTILINE), out
    assert out.rstrip().endswith("from 1 plugin")
    hint = bash(
        "env/bin/python -P -c 'import paddle_core as pc\ntry: pc.ops.conv2d\n"
        "except pc.OpNotFoundError as e: print(e)'",
        clone,
        env,
    )
    command = "pip install ./plugins/paddle_ops_nn"
    assert hint.strip() == (
        f"unknown op 'conv2d': it is provided by paddle-ops-nn; install it with `{command}`"
    )
    bash(f"source env/bin/activate && {command}", clone, env)  # the hint works as given
    assert "conv2d" in bash("env/bin/paddle-ops list --plugin nn", clone, env)
    assert command in (ROOT / "docs" / "plugins.md").read_text()


SAVE_A_PROGRAM = """
import numpy as np, paddle_core as pc
prog = pc.Program()
with pc.program_guard(prog):
    x = pc.data("x", shape=[3], dtype="float64")
    y = pc.ops.example_cos(x, scale=2.0)
(out,) = pc.Executor().run(prog, feed={"x": np.zeros(3)}, fetch_list=[y])
assert out.tolist() == [2.0, 2.0, 2.0], out
pc.save_program(prog, "prog.pb")
"""

LOAD_IT = """
import paddle_core as pc
try:
    pc.load_program("prog.pb")
except pc.PaddleCoreError as e:
    print(f"{type(e).__name__}: {e}")
"""


def test_an_op_package_from_new_to_uninstall_with_plain_pip(tmp_path: Path) -> None:
    """An author's path with pip's build isolation on and no index serving paddle-core: the
    core's wheel (`pip wheel`) installed into a fresh environment; the guide's "From zero to an
    installed op" block as written (`paddle-ops new`, plain `pip install .`, the generated
    tests, validate, list); the example package's wheel, its op run in a saved program; then
    the example uninstalled, and loading the saved program names the package to install."""
    clone, env = fresh_clone(tmp_path), user_env(tmp_path)
    (clone / "save.py").write_text(SAVE_A_PROGRAM)
    (clone / "load.py").write_text(LOAD_IT)
    guide = (ROOT / "docs" / "writing-op-plugins.md").read_text()
    section = guide[guide.index("## From zero to an installed op\n") :]
    zero_to_op = re.search(r"```bash\n(.*?)```", section, re.DOTALL)[1]
    script = f"""
python3 -m venv env && source env/bin/activate
pip wheel --quiet --no-deps --wheel-dir wheels .
pip install --quiet wheels/paddle_core-*.whl
(
{zero_to_op}
)
pip wheel --quiet --no-deps --wheel-dir wheels ./examples/paddle_ops_example
pip install --quiet wheels/paddle_ops_example-*.whl
paddle-ops list --plugin example
python save.py
pip uninstall --quiet --yes paddle-ops-example
python load.py
"""
    out = bash(script, clone, env)
    assert re.search(r"^my_ops_cos\s+my_ops\s", out, re.MULTILINE), out
    assert re.search(r"\d+ passed", out) and "failed" not in out, out
    assert re.search(r"^example_cos\s+example\s", out, re.MULTILINE), out
    assert "paddle-ops-example" in out.rstrip().splitlines()[-1], out
