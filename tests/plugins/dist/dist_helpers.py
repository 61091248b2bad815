"""Running a worker script of this directory on N processes, as users do: `paddle-ops launch`."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import paddle_ops_command

HERE = Path(__file__).resolve().parent

# MPI's processes, and the wheels that bring them; without them these tests skip.
mpi4py = pytest.importorskip("mpi4py", reason='needs MPI: pip install "paddle-ops-dist[mpi]"')


def launch(
    n: int,
    script: str | Path,
    *args: str,
    timeout: float = 240,
    env: dict | None = None,
    cwd: Path | None = None,
) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``script`` (a worker of this directory, or a path) on ``n`` processes, in ``cwd``;
    return the finished process and the seconds it took."""
    path = script if isinstance(script, Path) else HERE / script
    started = time.monotonic()
    result = subprocess.run(
        [paddle_ops_command(), "launch", "-n", str(n), str(path), *args],
        env={**os.environ, "PADDLE_DIST_TIMEOUT": "120", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
    return result, time.monotonic() - started


def succeeded(result: subprocess.CompletedProcess) -> str:
    """The job's stdout, once it is known to have exited 0."""
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result.stdout


def json_lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]
