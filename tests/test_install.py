"""The README's install instructions, followed to the letter in fresh environments.

Each test copies the checkout's files (what `git ls-files` lists, untracked ones included: a
fresh clone of this working tree, without its build directories and environments) and runs
the README's commands there with a new virtual environment: the quick start (`./dev demo`,
then `./dev test`), and the plain-pip install of one plugin. They build the core and the
plugins from scratch, so they take minutes and are marked slow: `./dev test --run-slow`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow


def readme_block(heading: str) -> str:
    """The first bash block of the README section with this heading."""
    text = (ROOT / "README.md").read_text()
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
    """A user's shell: this Python as `python3`, no test settings or paths of this run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PADDLE_CORE_", "PYTHON"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PADDLE_CORE_CACHE_DIR"] = str(tmp_path / "cache")
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
    """`./dev demo` and `./dev test` as the README shows them; `./dev test` leaves no test
    plugin in the environment; a second `./dev demo` compiles nothing."""
    clone, env = fresh_clone(tmp_path), user_env(tmp_path)
    commands = [line.split("#")[0].strip() for line in readme_block("Quick start").splitlines()]
    assert commands == ["./dev demo", "./dev test"]
    demo = bash("./dev demo", clone, env)
    assert "examples/train_digits.py" in demo and "ops from 3 plugins" in demo
    bash("./dev test -q tests/core/surface/test_cli.py", clone, env)  # the suite, in short
    listed = json.loads(bash(".venv/bin/paddle-ops list --json", clone, env))
    assert {row["plugin"] for row in listed["ops"]} == {"core", "math", "nn"}
    built = objects(clone)
    assert built
    start = time.monotonic()
    bash("./dev demo", clone, env)
    assert objects(clone) == built, "a re-run compiled again"
    print(f"second ./dev demo: {time.monotonic() - start:.0f} s")


def test_one_plugin_with_plain_pip_in_a_fresh_environment(tmp_path: Path) -> None:
    """The README's plain-pip section, line by line; then a missing op's hint names the command
    for where the user is (the clone, with the core's wheel in dist/), which works as given."""
    clone, env = fresh_clone(tmp_path), user_env(tmp_path)
    out = bash(readme_block("Installing one plugin with plain pip"), clone, env)
    assert re.search(r"^scale\s+math\s", out, re.MULTILINE), out
    assert out.rstrip().endswith("from 1 plugin")
    hint = bash(
        "env/bin/python -P -c 'import paddle_core as pc\ntry: pc.ops.conv2d\n"
        "except pc.OpNotFoundError as e: print(e)'",
        clone,
        env,
    )
    command = "pip install --find-links dist ./plugins/paddle_ops_nn"
    assert hint.strip() == (
        f"unknown op 'conv2d': it is provided by paddle-ops-nn; install it with `{command}`"
    )
    bash(f"source env/bin/activate && {command}", clone, env)  # the hint works as given
    assert "conv2d" in bash("env/bin/paddle-ops list --plugin nn", clone, env)
    assert (
        "pip install --find-links dist ./plugins/paddle_ops_nn"
        in readme_block("Installing one plugin with plain pip")
        or "./plugins/paddle_ops_nn" in (ROOT / "README.md").read_text()
    )
