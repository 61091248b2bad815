"""Timing helpers shared by the benchmarks (run them as `python bench/<name>.py`).

One rule for what a benchmark compares against: every package beyond NumPy and paddle-core
(PyTorch, ONNX Runtime, threadpoolctl, SciPy, scikit-learn) comes from ``optional``, and a
benchmark skips what needs a missing one, saying so, instead of failing.
"""

from __future__ import annotations

import functools
import importlib
import os
import statistics
import time
from collections.abc import Callable
from types import ModuleType

Call = Callable[[], object]

# Untimed calls of the same library before each timed one: the steady state of a loop of its
# own calls, its data in the caches. ONNX Runtime's and PyTorch's thread pools spin for a while
# after a call; timed straight after another library's call, a call shared its cores with those
# threads (PyTorch's 2-thread encoder inference measured 1.5x its own 1-thread time, ours
# 1.4x). A rest instead of these calls left every library's threads asleep and its cores idle,
# 10-30% slower than in a loop of its own calls.
SETTLE = 2  # (interleaved's settle where libraries that spin are compared)

# What the helpers time with: the wall clock, or (use_cpu_time) the process's CPU time.
clock = time.perf_counter


def use_cpu_time() -> None:
    """Time with the CPU time of this process (``time.process_time``) instead of the wall
    clock: on a machine others load, the wall clock counts the time the process waits for a
    core. Meaningful at one thread only: at more, it adds the threads' times (and their spins)."""
    global clock
    clock = time.process_time


# The optional packages, and what pip installs each (docs/performance.md).
OPTIONAL = {
    "torch": "torch==2.13.0",
    "onnxruntime": "onnxruntime",
    "onnx": "onnx",
    "threadpoolctl": "threadpoolctl",
    "scipy": "scipy",
    "sklearn": "scikit-learn",
    "cupy": "cupy-cuda13x",  # GPU benchmarks only (bench/gpu_check.sh)
}


@functools.cache
def optional(module: str) -> ModuleType | None:
    """``module`` (a package of ``OPTIONAL`` or one of its submodules), imported; or None,
    after saying once that what needs it is skipped and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        package = OPTIONAL[module.split(".")[0]]
        print(f"{module} is not installed: skipping what needs it (pip install {package})")
        return None


def steady(fn: Call, repeat: int, *, pause: float = 0.0, warmup: int = 2) -> float:
    """Median seconds per call of ``fn`` called back to back (steady state), after ``warmup``
    calls. ``pause`` first lets other libraries' idle threads fall asleep (NumPy's OpenBLAS
    spins up to ~0.1 s after a call), so they do not compete with the system being timed."""
    time.sleep(pause)
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = clock()
        fn()
        samples.append(clock() - start)
    return statistics.median(samples)


def interleaved(
    calls: dict[str, Call],
    repeat: int,
    *,
    pause: float = 0.0,
    settle: int = 0,
    warmup_seconds: float = 0.0,
) -> dict[str, float]:
    """Median seconds per call of each function, timed in rounds that call each once in turn
    (``rounds``, which says what the arguments do)."""
    times = rounds(calls, repeat, pause=pause, settle=settle, warmup_seconds=warmup_seconds)
    return {name: statistics.median(t) for name, t in times.items()}


def rounds(
    calls: dict[str, Call],
    repeat: int,
    *,
    pause: float = 0.0,
    settle: int = 0,
    warmup_seconds: float = 0.0,
) -> dict[str, list[float]]:
    """Seconds of each function's call in each of ``repeat`` rounds that call each once in
    turn: load that comes and goes on a shared machine then hits every system alike, and the
    calls of one round saw the same machine. ``pause`` before each call lets spinning thread
    pools go idle; ``settle`` untimed calls of the same function before each timed one let it
    start where the previous function's threads no longer spin, with its own threads awake (as
    in a loop of its own calls); ``warmup_seconds`` of untimed rounds first (the first calls
    over a fresh large buffer run slow for every library)."""
    start = time.perf_counter()
    while True:
        for fn in calls.values():
            fn()
        if time.perf_counter() - start >= warmup_seconds:
            break
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, fn in calls.items():
            if pause:
                time.sleep(pause)
            for _ in range(settle):
                fn()
            begin = clock()
            fn()
            times[name].append(clock() - begin)
    return times


def quartiles(values: list[float]) -> tuple[float, float]:
    """The lower and upper quartiles of ``values`` (at least one)."""
    if len(values) < 2:
        return values[0], values[0]
    low, _, high = statistics.quantiles(values, n=4, method="inclusive")
    return low, high


def banner(doc: str) -> None:
    """Print a benchmark's title (the first line of its docstring) and the machine's load: other
    work running beside a benchmark skews its figures."""
    print(doc.split("\n")[0])
    print(
        f"(load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs: other work skews figures)"
    )


def ours_beside(t: dict[str, float], other: str = "torch") -> str:
    """Columns of ours' milliseconds, then, where ``other`` was timed too, its milliseconds and
    its time over ours (above 1: ours is faster)."""
    line = f" {t['ours'] * 1e3:9.3f}"
    if other in t:
        line += f" {t[other] * 1e3:10.3f} {t[other] / t['ours']:9.2f}x"
    return line
