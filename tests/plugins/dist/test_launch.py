"""`paddle-ops launch` and the distributed example, as a user runs them."""

from __future__ import annotations

import re

from conftest import ROOT, run_cli
from dist_helpers import launch, succeeded


def test_the_distributed_example_reaches_the_single_process_accuracy(tmp_path):
    script = ROOT / "examples" / "train_digits_distributed.py"
    checkpoint = str(tmp_path / "checkpoint.npz")
    result, _ = launch(2, script, "--model", "mlp", "--checkpoint", checkpoint)
    out = succeeded(result)
    accuracy = float(re.search(r"test accuracy after 30 epochs: ([\d.]+)", out)[1])
    assert accuracy >= 0.97
    assert "on 2 processes" in out and "checkpoint restored on every rank: True" in out


def test_launch_refuses_no_processes():
    result = run_cli("launch", "-n", "0", "train.py", check=2)
    assert "-n must be at least 1" in result.stderr


def test_the_job_status_is_the_failing_ranks(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import sys\nsys.exit(5)\n")
    result, _ = launch(2, script)
    assert result.returncode == 5
    assert "the job failed (exit status 5)" in result.stderr
