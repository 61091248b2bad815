"""Documentation that runs: the README's and guide's Python blocks, the examples, the walkthrough.

Examples that do not run are a common complaint about op libraries; ours run in CI.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    # Runs against the installed paddle-core, from a directory outside the checkout.
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result


@pytest.mark.parametrize(
    "document", ["README.md", "docs/plugins.md", "docs/model.md", "docs/control_flow.md"]
)
def test_python_blocks_run(document: str, tmp_path: Path) -> None:
    """Each document's Python blocks run in order, as one script."""
    blocks = PYTHON_BLOCK.findall((ROOT / document).read_text())
    assert blocks, f"{document} has no Python blocks"
    prelude = "import numpy as np\nimport paddle_core as pc\n"
    result = run_python(prelude + "\n".join(blocks), tmp_path)
    if document == "README.md":  # the outputs the README shows are the real ones
        for line in (
            "AttrError: op 'scale', attr 'scale': expected a float, got str '2'",
            "OpNotFoundError: unknown op 'scael' (did you mean 'scale'?)",
        ):
            assert line in result.stdout


@pytest.mark.parametrize(
    "script",
    [
        "examples/quickstart.py",
        "examples/linear_regression.py",
        "examples/train_digits.py",
        "examples/train_digits_model.py",
        "examples/train_rnn_sum.py",
        "docs/walkthrough.py",
    ],
)
def test_scripts_run(script: str, tmp_path: Path) -> None:
    run_python((ROOT / script).read_text(), tmp_path)
