"""Start-up cost: cold `paddle-ops list` beside `python -c "import numpy"`, measured in one run.

Each command runs in a fresh process (interpreter start included), alternating between the
commands so machine noise hits both alike; we report medians and the ratio. Two cases for
`paddle-ops list`: with the plugin index warm (the normal case: nothing was installed since
the last run) and with it invalidated (the first run after installing or removing a plugin).

    python bench/bench_startup.py [--runs 21]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()

    bindir = Path(sys.executable).parent
    paddle_ops = shutil.which("paddle-ops", path=str(bindir)) or "paddle-ops"
    cache = tempfile.mkdtemp(prefix="paddle-core-bench-")
    env = {**os.environ, "PADDLE_CORE_CACHE_DIR": cache}
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
        "paddle-ops list (warm index)": [paddle_ops, "list"],
        "paddle-ops list (no index)": [paddle_ops, "list"],
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, cmd in commands.items():
            if name.endswith("(no index)"):
                shutil.rmtree(cache, ignore_errors=True)
            elif name.endswith("(warm index)") and not os.path.isdir(cache):
                timed(cmd, env)  # rebuild the index the previous "(no index)" run removed
            times[name].append(timed(cmd, env))
    shutil.rmtree(cache, ignore_errors=True)

    ref = times["python -c 'import numpy'"]
    ref_wall = statistics.median(w for w, _ in ref)
    ref_cpu = statistics.median(c for _, c in ref)
    print(
        f"{'command':31} {'wall median':>11} {'wall min':>9} {'CPU median':>10}  {'vs numpy (wall, CPU)':>20}"
    )
    for name, samples in times.items():
        wall = statistics.median(w for w, _ in samples)
        low = min(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        print(
            f"{name:31} {wall * 1e3:9.1f}ms {low * 1e3:7.1f}ms {cpu * 1e3:8.1f}ms"
            f"  {wall / ref_wall:9.2f}x {cpu / ref_cpu:9.2f}x"
        )
    print(f"\n{args.runs} runs each, interleaved; target: paddle-ops list (warm index) <= 1.00x")


if __name__ == "__main__":
    main()
