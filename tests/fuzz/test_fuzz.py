"""The fuzzers, each in a child process so that a crash or a hang is caught and reported with
the case that caused it: fuzz_ops.py over every installed op, fuzz_plugins.py over corrupted
manifests and forged kernel modules installed as plugins, and empty_sweep.py, every op on inputs
of no element beside huge dimensions. Short, seeded runs by default; set
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
    args = ["--seconds", str(seconds), "--seed", seed]
    if min_cases:
        args += ["--min-cases", str(min_cases)]
    # A slow case takes up to a second or two.
    return run_logged(tmp_path, fuzzer, args, timeout=seconds + 120 + 2 * min_cases)


def run_logged(tmp_path: Path, script: str, args: list[str], timeout: float) -> dict:
    """Run ``script`` (which writes each case to ``--log`` before running it) with ``args``; its
    JSON summary, or a failure naming the case it died or hung on."""
    log = tmp_path / "fuzz.log"
    try:
        done = subprocess.run(
            [sys.executable, str(HERE / script), *args, "--log", str(log)],
            cwd=tmp_path,  # not the checkout's root, whose source tree would shadow the core
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{script} hung on: {log.read_text().splitlines()[-1]}")
    if done.returncode not in (0, 1):  # killed by a signal, or died
        last = log.read_text().splitlines()[-1] if log.exists() else "?"
        pytest.fail(f"{script} died ({done.returncode}) on: {last}\n{done.stderr[-2000:]}")
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


def test_every_op_answers_inputs_of_no_element_at_once(tmp_path):
    # [2**40, 0] holds nothing: a kernel that walks its 2**40 empty rows takes hours, so the
    # sweep (a few seconds) hangs and the log names the case; one that takes over the sweep's
    # budget of seconds is a failure of its own.
    summary = run_logged(tmp_path, "empty_sweep.py", [], timeout=180)
    assert summary["ran"] > 500, summary  # enough cases reach the kernels to mean something
    assert summary["failures"] == [], json.dumps(summary, indent=1)
