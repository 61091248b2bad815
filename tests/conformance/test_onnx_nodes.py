"""ONNX's node test cases for the ops we provide, run through the public API (issue 12).

Every single-node case of the `onnx` wheel whose ONNX op an installed plugin maps is imported
with `pc.onnx.load` and run on the CPU (onnx_adapter.py says how). Outcomes: pass, wrong (always
a failure), gap, n/a (a reason in `onnx_adapter.NOT_APPLICABLE`).

The known gaps are a ratchet in onnx_gaps.txt, one case a line with our error's reason: the test
fails on a wrong answer, on a case that cannot run and is not listed (a regression), and on a
listed case that now runs (delete its line: the list only shrinks).

    python tests/conformance/test_onnx_nodes.py                # the per-op table and totals
    python tests/conformance/test_onnx_nodes.py -v             # ... and every case not passing
    python tests/conformance/test_onnx_nodes.py --update-gaps  # rewrite onnx_gaps.txt

Without onnx (a test-only dependency, the `test` extra) the tests skip.
"""

from __future__ import annotations

import argparse
import functools
import sys
import warnings
from collections import Counter
from pathlib import Path

import pytest

try:
    import onnx_adapter as adapter
    from onnx.backend.test.case.node import collect_testcases
except ImportError as e:  # onnx is a test-only dependency: the suite runs without it
    if e.name is None or not e.name.startswith("onnx"):
        raise
    if __name__ == "__main__":
        sys.exit(f"needs onnx ({e}): pip install -e '.[test]'")
    pytest.skip(
        f"onnx is not installed ({e}): pip install -e '.[test]' to run ONNX's node cases",
        allow_module_level=True,
    )


GAPS_FILE = Path(__file__).with_name("onnx_gaps.txt")
GAPS_HEADER = """\
# ONNX node cases we cannot run yet, one a line: the case, then our error's reason.
# tests/conformance/test_onnx_nodes.py fails when a case not listed here cannot run and when a
# listed one runs: delete its line (the list only shrinks). Rewrite it with
#     python tests/conformance/test_onnx_nodes.py --update-gaps
"""


@functools.cache
def outcomes() -> tuple[adapter.Outcome, ...]:
    """Every case's outcome, once per process (collecting ONNX's cases takes seconds)."""
    with warnings.catch_warnings():  # the generators overflow casts on purpose
        warnings.simplefilter("ignore")
        cases = adapter.node_cases(collect_testcases())
    return tuple(adapter.run_case(case) for case in cases)


def read_gaps(path: Path = GAPS_FILE) -> dict[str, str]:
    """The listed gaps: case name -> reason."""
    gaps = {}
    for line in path.read_text().splitlines():
        name, _, reason = line.partition("#")
        if name.strip():
            gaps[name.strip()] = reason.strip()
    return gaps


def write_gaps(results: tuple[adapter.Outcome, ...], path: Path = GAPS_FILE) -> None:
    lines = sorted(f"{r.case}  # {r.reason}" for r in results if r.status == adapter.GAP)
    path.write_text(GAPS_HEADER + "".join(f"{line}\n" for line in lines))


def table(results: tuple[adapter.Outcome, ...]) -> str:
    """Cases per ONNX op type: pass, wrong, gap, n/a, and the totals."""
    per_op: dict[str, Counter] = {}
    for r in results:
        per_op.setdefault(r.op_type, Counter())[r.status] += 1
    statuses = [adapter.PASS, adapter.WRONG, adapter.GAP, adapter.NA]
    rows = [f"{'onnx op':<20} {'cases':>5} " + " ".join(f"{s:>5}" for s in statuses)]
    for op, counts in sorted(per_op.items()):
        cells = " ".join(f"{counts[s]:>5}" for s in statuses)
        rows.append(f"{op:<20} {counts.total():>5} {cells}")
    totals = Counter(r.status for r in results)
    cells = " ".join(f"{totals[s]:>5}" for s in statuses)
    rows.append(f"{'total':<20} {len(results):>5} {cells}")
    return "\n".join(rows)


def test_onnx_node_cases() -> None:
    """No wrong answer; the gaps are exactly the listed ones."""
    results = outcomes()
    listed = read_gaps()
    wrong = [f"{r.case} ({r.op_type}): {r.reason}" for r in results if r.status == adapter.WRONG]
    regressed = [
        f"{r.case}  # {r.reason}"
        for r in results
        if r.status == adapter.GAP and r.case not in listed
    ]
    status = {r.case: r.status for r in results}
    stale = [
        f"{name}  ({status.get(name, 'no longer collected')})"
        for name in listed
        if status.get(name) != adapter.GAP
    ]
    problems = []
    if wrong:
        problems.append("wrong answers (bugs):\n  " + "\n  ".join(wrong))
    if regressed:
        problems.append(
            f"cases that cannot run and are not in {GAPS_FILE.name} (regressions):\n  "
            + "\n  ".join(regressed)
        )
    if stale:
        problems.append(
            f"delete these lines from {GAPS_FILE.name}, the cases no longer fail:\n  "
            + "\n  ".join(stale)
        )
    assert not problems, "\n".join(problems)


def test_onnx_node_summary() -> None:
    """The per-op counts add up; every n/a has its reason."""
    results = outcomes()
    print("\n" + table(results))
    totals = Counter(r.status for r in results)
    assert totals.total() == len(results) > 0
    assert set(totals) <= {adapter.PASS, adapter.WRONG, adapter.GAP, adapter.NA}
    assert totals[adapter.PASS] > 0
    assert all(r.reason for r in results if r.status in (adapter.GAP, adapter.NA))
    names = {r.case for r in results}
    unused = [key for key in adapter.NOT_APPLICABLE if not adapter.matches_any(key, names)]
    assert not unused, f"NOT_APPLICABLE keys that match no case: {unused}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update-gaps", action="store_true", help=f"rewrite {GAPS_FILE.name}")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every case not passing")
    args = parser.parse_args()
    results = outcomes()
    if args.verbose:
        for r in results:
            if r.status != adapter.PASS:
                print(f"{r.status:<5} {r.case}: {r.reason}")
    print(table(results))
    if args.update_gaps:
        write_gaps(results)
        print(f"wrote {GAPS_FILE}")


if __name__ == "__main__":
    main()
