"""The fuzzer (fuzz_ops.py) over every installed op, in a child process so a crash or a hang
is caught and reported with the case that caused it. A short, seeded run by default; set
PADDLE_CORE_FUZZ_SECONDS (and PADDLE_CORE_FUZZ_SEED) for a long one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

FUZZER = Path(__file__).with_name("fuzz_ops.py")


def test_every_op_gives_a_result_or_a_typed_error_never_a_crash(tmp_path):
    seconds = float(os.environ.get("PADDLE_CORE_FUZZ_SECONDS", "15"))
    seed = os.environ.get("PADDLE_CORE_FUZZ_SEED", "0")
    log = tmp_path / "fuzz.log"
    command = [sys.executable, str(FUZZER), "--seconds", str(seconds), "--seed", seed]
    try:
        done = subprocess.run(
            [*command, "--log", str(log)],
            cwd=tmp_path,  # not the checkout's root, whose source tree would shadow the core
            capture_output=True,
            text=True,
            timeout=seconds + 120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the fuzzer hung on: {log.read_text().splitlines()[-1]}")
    if done.returncode not in (0, 1):  # killed by a signal, or died
        last = log.read_text().splitlines()[-1] if log.exists() else "?"
        pytest.fail(f"the fuzzer died ({done.returncode}) on: {last}\n{done.stderr[-2000:]}")
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["ran"] > 100, summary  # enough cases reach the kernels to mean something
    assert summary["failures"] == [], json.dumps(summary, indent=1)
