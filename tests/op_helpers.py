"""Helpers for the tests of plugins' ops (tests/plugins/*): inputs, tolerances, comparisons.

Every op is compared with a NumPy reference on each dtype it declares, with broadcasting,
empty and non-contiguous inputs; gradients are checked by finite differences in float64
(paddle_core.testing.check_grad).
"""

from __future__ import annotations

import numpy as np

import paddle_core as pc
from paddle_core.testing import check_grad, run_op

FLOATS = ["float32", "float64"]
INTS = ["int32", "int64"]
NUMBERS = FLOATS + INTS
TOLERANCE = {"float32": dict(rtol=2e-6, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-12)}

__all__ = [
    "FLOATS",
    "INTS",
    "NUMBERS",
    "assert_matches",
    "check_grad",
    "pc",
    "rand",
    "run1",
    "run_op",
]


def rand(rng: np.random.Generator, shape, dtype: str, low: float = -3, high: float = 3):
    """Random values of ``dtype``: uniform in [low, high) (integers for int dtypes)."""
    if dtype in INTS:
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
    if got.dtype.kind == "f":
        tol = dict(TOLERANCE[got.dtype.name])
        tol.update({k: v for k, v in (("rtol", rtol), ("atol", atol)) if v is not None})
        np.testing.assert_allclose(got, want, equal_nan=True, **tol)
    else:
        np.testing.assert_array_equal(got, want)
