"""The benchmarks follow one rule for the packages they compare against (they are not run here:
they time things). Every package beyond the standard library, NumPy, paddle-core and this
project's plugins comes from ``timing.optional``, which says what is skipped and how to install
it, so that no benchmark fails for want of PyTorch, ONNX Runtime, threadpoolctl, SciPy or
scikit-learn. And the timing helpers they share call the systems compared as they say."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest
from conftest import ROOT

BENCH = ROOT / "bench"
# paddle-core and the first-party plugins are what the benchmarks measure (bench_conv and
# bench_train switch paddle-ops-nn's layout propagation off for a comparison; bench_cuda names
# the engine, cuDNN or the plugin's own kernels, that its conv2d figure used; bench_dist reads
# the time paddle-ops-dist's collectives waited). A benchmark may import another module of
# bench/ (timing, networks, bench_memory's measure): each is held to this rule itself.
ALLOWED = {"__future__", "numpy", "paddle_core", *(path.stem for path in BENCH.glob("*.py"))}
ALLOWED |= {"paddle_ops_dist", "paddle_ops_math", "paddle_ops_nn"}
ALLOWED |= set(sys.stdlib_module_names)


def imports(path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.append((node.lineno, node.module or ""))
    return found


@pytest.mark.parametrize("path", sorted(BENCH.glob("*.py")), ids=lambda p: p.name)
def test_optional_packages_come_from_timing_optional(path) -> None:
    direct = [
        f"{path.name}:{line}: import {name}"
        for line, name in imports(path)
        if name.split(".")[0] not in ALLOWED
    ]
    assert direct == [], "import these through timing.optional(...):\n" + "\n".join(direct)


def test_a_missing_package_is_skipped_with_a_hint() -> None:
    probe = (
        "import sys\n"
        "sys.modules['threadpoolctl'] = None  # as if it were not installed\n"
        f"sys.path.insert(0, {str(BENCH)!r})\n"
        "from timing import optional\n"
        "print(optional('threadpoolctl'), optional('threadpoolctl'))\n"
    )
    result = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "threadpoolctl is not installed: skipping what needs it (pip install threadpoolctl)",
        "None None",  # said once
    ]


def test_the_performance_page_installs_every_optional_package() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from timing import OPTIONAL
    finally:
        sys.path.remove(str(BENCH))
    page = (ROOT / "docs" / "performance.md").read_text()
    lines = re.findall(r"`\.venv/bin/pip install ([^`]+)`", page)
    assert set(OPTIONAL.values()) == {package for line in lines for package in line.split()}


@pytest.fixture
def timing():
    sys.path.insert(0, str(BENCH))
    try:
        import timing
    finally:
        sys.path.remove(str(BENCH))
    return timing


def test_rounds_call_each_system_in_turn_and_keep_every_round(timing) -> None:
    log = []
    calls = {"ours": lambda: log.append("ours"), "theirs": lambda: log.append("theirs")}
    times = timing.rounds(calls, 3, settle=1)
    # One untimed round first, then per round each system's settling call and its timed one.
    assert log == ["ours", "theirs"] + ["ours", "ours", "theirs", "theirs"] * 3
    assert {name: len(t) for name, t in times.items()} == {"ours": 3, "theirs": 3}
    assert all(t >= 0 for samples in times.values() for t in samples)


def test_quartiles_bound_the_middle_half(timing) -> None:
    assert timing.quartiles([5.0, 1.0, 4.0, 2.0, 3.0]) == (2.0, 4.0)
    assert timing.quartiles([7.0]) == (7.0, 7.0)
