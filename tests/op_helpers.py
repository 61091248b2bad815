"""Helpers for the tests of plugins' ops (tests/plugins/*): inputs, tolerances, comparisons.

Every op is compared with a NumPy reference on each dtype it declares, with broadcasting,
empty and non-contiguous inputs; gradients are checked by finite differences in float64
(paddle_core.testing.check_grad).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy: np.dtype("bfloat16"))
import numpy as np

import paddle_core as pc
from paddle_core.testing import TOLERANCES, check_grad, run_op

FLOATS = ["float32", "float64"]
INTS = ["int32", "int64"]
NUMBERS = FLOATS + INTS
# The 16-bit floats (computed in float32, rounded once) and every integer dtype.
HALVES = ["float16", "bfloat16"]
ALL_INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
ALL_NUMBERS = FLOATS + HALVES + ALL_INTS
TOLERANCE = {
    "float32": dict(rtol=2e-6, atol=1e-6),
    "float64": dict(rtol=1e-12, atol=1e-12),
    **{d: dict(zip(("rtol", "atol"), TOLERANCES[d])) for d in HALVES},
}

__all__ = [
    "ALL_INTS",
    "ALL_NUMBERS",
    "FLOATS",
    "HALVES",
    "INTS",
    "NUMBERS",
    "assert_matches",
    "check_grad",
    "cpu_has_avx2_fma",
    "finishes_within",
    "on_both_paths",
    "pc",
    "rand",
    "run1",
    "run_op",
]


def cpu_has_avx2_fma() -> bool:
    """Whether this CPU has AVX2 and FMA: where the plugins' *_avx2.cpp loops run."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx2" in flags and "fma" in flags


def on_both_paths(tmp_path: Path, script: str, inputs: dict, switch: str) -> tuple[dict, dict]:
    """What ``script`` saves (it is run as ``python -c script inputs.npz out.npz``) with the
    AVX2 loops (environment variable ``switch``=0) and with the portable ones (``switch``=1),
    each in a fresh process: the plugins read their switch once."""
    np.savez(tmp_path / "inputs.npz", **inputs)
    results = []
    for disable in ("0", "1"):
        out = tmp_path / f"out{disable}.npz"
        command = [sys.executable, "-P", "-c", script, str(tmp_path / "inputs.npz"), str(out)]
        subprocess.run(command, check=True, env={**os.environ, switch: disable})
        results.append(dict(np.load(out)))
    return results[0], results[1]


def finishes_within(seconds: float, script: str) -> str:
    """What ``script`` prints, run in a fresh process (``python -P -c script``); a test failure
    when it fails, or when it has not finished after ``seconds`` (a hang fails the test instead
    of stopping the suite)."""
    command = [sys.executable, "-P", "-c", script]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"not finished after {seconds} s:\n{script}") from None
    assert done.returncode == 0, f"exit status {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


def rand(rng: np.random.Generator, shape, dtype: str, low: float = -3, high: float = 3):
    """Random values of ``dtype``: uniform in [low, high) (integers for int dtypes; unsigned
    ones from max(low, 0))."""
    if dtype in ALL_INTS:
        low = max(low, 0) if dtype.startswith("u") else low
        return rng.integers(int(low), int(high) + 1, size=shape).astype(dtype)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return rng.uniform(low, high, size=shape).astype(dtype)


def run1(op: str, inputs: dict, attrs: dict | None = None):
    """The single output of ``op``."""
    (out,) = run_op(op, inputs, attrs)["out"]
    return out


def assert_matches(got, want, rtol: float | None = None, atol: float | None = None) -> None:
    """Same dtype and shape, values equal (floats within the dtype's tolerance)."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    if got.dtype.name in TOLERANCE:  # floats (bfloat16's kind is "V", ml_dtypes')
        tol = dict(TOLERANCE[got.dtype.name])
        tol.update({k: v for k, v in (("rtol", rtol), ("atol", atol)) if v is not None})
        f64 = np.float64
        np.testing.assert_allclose(got.astype(f64), want.astype(f64), equal_nan=True, **tol)
    else:
        np.testing.assert_array_equal(got, want)


def numeric(main, loss, feed, scope, name, eps=1e-6):
    """d(loss)/d(name) of program ``main`` by central differences: ``name`` a feed or a
    variable of ``scope`` (put back as it was afterwards)."""
    exe = pc.Executor()
    base = feed[name] if name in feed else scope.get(name)
    grad = np.zeros_like(base)
    for k in range(base.size):
        values = []
        for sign in (1, -1):
            changed = base.copy()
            changed.flat[k] += sign * eps
            if name in feed:
                f = {**feed, name: changed}
            else:
                f = feed
                scope.set_var(name, changed)
            values.append(exe.run(main, feed=f, fetch_list=[loss], scope=scope)[0])
        grad.flat[k] = (values[0] - values[1]) / (2 * eps)
    if name not in feed:
        scope.set_var(name, base.copy())
    return grad
