"""The fuzzers, each in a child process so that a crash or a hang is caught and reported with
the case that caused it: fuzz_ops.py over every installed op, fuzz_plugins.py over corrupted
manifests and forged kernel modules installed as plugins. Short, seeded runs by default; set
PADDLE_CORE_FUZZ_SECONDS (and PADDLE_CORE_FUZZ_SEED) for long ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OUTER_SETTINGS

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

HERE = Path(__file__).parent


def fuzz(tmp_path: Path, fuzzer: str, min_cases: int = 0) -> dict:
    """Run ``fuzzer`` for the configured time (and at least ``min_cases`` cases); its JSON
    summary, or a failure naming the case it died or hung on."""
    seconds = float(OUTER_SETTINGS.get("PADDLE_CORE_FUZZ_SECONDS", "15"))
    seed = OUTER_SETTINGS.get("PADDLE_CORE_FUZZ_SEED", "0")
    log = tmp_path / "fuzz.log"
    command = [sys.executable, str(HERE / fuzzer), "--seconds", str(seconds), "--seed", seed]
    if min_cases:
        command += ["--min-cases", str(min_cases)]
    try:
        done = subprocess.run(
            [*command, "--log", str(log)],
            cwd=tmp_path,  # not the checkout's root, whose source tree would shadow the core
            capture_output=True,
            text=True,
            timeout=seconds + 120 + 2 * min_cases,  # a slow case takes up to a second or two
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{fuzzer} hung on: {log.read_text().splitlines()[-1]}")
    if done.returncode not in (0, 1):  # killed by a signal, or died
        last = log.read_text().splitlines()[-1] if log.exists() else "?"
        pytest.fail(f"{fuzzer} died ({done.returncode}) on: {last}\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def test_every_op_gives_a_result_or_a_typed_error_never_a_crash(tmp_path):
    summary = fuzz(tmp_path, "fuzz_ops.py")
    assert summary["ran"] > 100, summary  # enough cases reach the kernels to mean something
    assert summary["failures"] == [], json.dumps(summary, indent=1)


def test_forged_plugins_are_recorded_problems_and_the_others_keep_working(tmp_path):
    # Each case discovers every installed plugin anew (its manifests parsed again): at least
    # 80 cases, however slow the machine, so that some reach their kernels.
    summary = fuzz(tmp_path, "fuzz_plugins.py", min_cases=80)
    # Enough cases get past discovery, and some to their kernels, to mean something.
    assert summary["discovered"] > 10 and summary["ran"] > 0, summary
    assert summary["failures"] == [], json.dumps(summary, indent=1)
