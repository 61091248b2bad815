"""Every `paddle-ops` subcommand and flag with hostile values (and hostile settings in the
environment), each run as a subprocess: exit status 0, 1 (a problem, said on one line) or 2
(a usage error), never a traceback or a hang."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import paddle_ops_command

LONG = "x" * 5000
NAMES = ["", "-", "--", "\x01", "ü", "../..", "/", "/dev/zero", "nan", LONG, "-h"]


def hostile_invocations(tmp: Path) -> list[tuple[list[str], dict[str, str]]]:
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    (tmp / "file").write_text("not a program")
    paths = [str(fifo), str(tmp), str(tmp / "file"), "/dev/zero", "/nonexistent/x.pb", ""]
    runs: list[list[str]] = [[], ["--version"], ["--nope"], ["nope"], ["help", "nope"]]
    for command in ("list", "show", "inspect", "plugins", "doctor", "validate", "stubs", "new"):
        runs += [[command, "--nope"], [command, "--json=1"], ["help", command]]
    runs += [["list", "--plugin", v] for v in NAMES] + [["list", "--device", v] for v in NAMES]
    runs += [["list", "--json", "--plugin", LONG]]
    runs += [["show", v] for v in NAMES] + [["show", "--json", LONG]]
    runs += [["inspect", p] for p in paths] + [["inspect", "--json", str(fifo)]]
    runs += [["validate", v] for v in [*NAMES, *paths]]
    runs += [["stubs", "-o", p] for p in ["/dev/full", "/", str(tmp), "", str(fifo) + "/x"]]
    runs += [["new", v, "--dir", str(tmp / f"new{k}")] for k, v in enumerate(NAMES)]
    runs += [["new", "my-ops", "--dir", d] for d in ["/dev/null/x", str(tmp / "file"), ""]]
    invocations = [(run, {}) for run in runs]
    for variable, value in [
        ("PADDLE_CORE_CONFIG", "/dev/zero"),
        ("PADDLE_CORE_CONFIG", str(fifo)),
        ("PADDLE_CORE_CONFIG", str(tmp)),
        ("PADDLE_CORE_CONFIG", str(tmp / "file")),
        ("PADDLE_CORE_CACHE_DIR", "/dev/null"),
        ("PADDLE_CORE_CACHE_DIR", str(tmp / "file")),
        ("PADDLE_CORE_CACHE_DIR", ""),
        ("PADDLE_CORE_PLUGINS", ",,,"),
        ("PADDLE_CORE_PREFER", "=,=x,a=b=c"),
        ("PADDLE_CORE_DISABLE", LONG),
        ("PADDLE_CORE_NUM_THREADS", "-1"),
        ("PADDLE_CORE_WHATEVER", "\x01"),
    ]:
        invocations += [(["list"], {variable: value}), (["doctor"], {variable: value})]
    return invocations


def run(args: list[str], env: dict[str, str], cwd: Path) -> tuple[list[str], dict, object]:
    full = {**os.environ, **env}
    try:
        done = subprocess.run(
            [paddle_ops_command(), *args],
            env=full,
            cwd=cwd,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        return args, env, "hung"
    return args, env, done


def problem(result: object) -> str | None:
    """What is wrong with one run's outcome, or None."""
    if result == "hung":
        return "it hung"
    assert isinstance(result, subprocess.CompletedProcess)
    if result.returncode not in (0, 1, 2):
        return f"exit status {result.returncode}: {result.stderr[-500:]}"
    if "Traceback" in result.stderr or "Traceback" in result.stdout:
        return f"a traceback: {result.stderr[-800:]}"
    if result.returncode == 1:  # each message one line: "paddle-ops: error: ..." and the like
        said = result.stderr.splitlines()
        if not said or not all(line.startswith("paddle-ops") for line in said):
            return f"exit 1 without one-line messages: {result.stderr[-500:]!r}"
    return None


@pytest.mark.filterwarnings("ignore")
def test_every_subcommand_and_flag_with_hostile_values(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    invocations = hostile_invocations(tmp_path)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda i: run(i[0], i[1], work), invocations))
    found = []
    for args, env, result in results:
        why = problem(result)
        if why:
            shown = [a if len(a) < 40 else a[:20] + "..." for a in args]
            found.append(f"paddle-ops {' '.join(map(repr, shown))} {env or ''}: {why}")
    assert found == [], "\n".join(found)
