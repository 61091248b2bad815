"""The core's own ops, which every backward appends: fill_like (integer values checked where
the op is appended, as fill_constant's) and add_n (16-bit floats summed in float32 and rounded
once, integers wrapping around)."""

from __future__ import annotations

import importlib
import math
import os
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import paddle_core as pc
from paddle_core._src.base.runtime import compiled_runtime
from paddle_core.testing import run_op


@pytest.mark.parametrize(
    ("dtype", "value", "problem"),
    [
        ("int32", 1e10, r"value 10000000000.0 does not fit int32 \[-2147483648, 2147483647\]"),
        ("int32", -(2.0**31) - 1, r"value -2147483649.0 does not fit int32"),
        ("int64", 2.0**63, r"value 9.223372036854776e\+18 does not fit int64"),
        ("int32", math.nan, r"value nan has no int32 equivalent"),
        ("int64", -math.inf, r"value -inf has no int64 equivalent"),
    ],
)
def test_fill_like_refuses_a_value_its_integer_dtype_cannot_hold(dtype, value, problem):
    """A plain C++ cast of such a value is undefined (it gave -2147483648 for 1e10 and NaN)."""
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [3], dtype)
        with pytest.raises(pc.ShapeError, match=rf"op 'fill_like'.*{problem}"):
            pc.ops.fill_like(x, value=value)


def test_fill_like_truncates_values_its_dtype_holds_toward_zero():
    for dtype, value, want in [
        ("int32", -3.9, -3),
        ("int32", 2.0**31 - 1, 2**31 - 1),
        ("int32", -(2.0**31) - 0.5, -(2**31)),  # truncated into the range
        ("int64", -(2.0**63), -(2**63)),
    ]:
        (got,) = run_op("fill_like", {"x": np.zeros(2, dtype)}, {"value": value})["out"]
        np.testing.assert_array_equal(got, np.full(2, want, dtype))
    # Floats take any value: out of range is infinite, as NumPy's full gives.
    (got,) = run_op("fill_like", {"x": np.zeros(2, np.float16)}, {"value": 1e10})["out"]
    assert got.dtype == np.float16 and np.isposinf(got).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_add_n_of_16_bit_floats_sums_in_float32_and_rounds_once(dtype):
    """1 + u + u + u, u a quarter of the spacing of the 16-bit floats at 1: each partial sum
    rounded would fall back to 1; summed in float32, 1 + 3u rounds once, up to 1 + 4u."""
    np_dtype = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    u = 2.0 ** (-12 if dtype == "float16" else -9)
    xs = [np.full(3, v, np_dtype) for v in (1.0, u, u, u)]
    (got,) = run_op("add_n", {"xs": xs})["out"]
    assert got.dtype == np_dtype
    np.testing.assert_array_equal(got.astype(np.float64), np.full(3, 1 + 4 * u))
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(1000).astype(np_dtype) for _ in range(7)]
    total = xs[0].astype(np.float32)
    for x in xs[1:]:
        total = total + x.astype(np.float32)  # in order, in float32
    (got,) = run_op("add_n", {"xs": xs})["out"]
    np.testing.assert_array_equal(got.view(np.uint16), total.astype(np_dtype).view(np.uint16))


def test_add_n_of_integers_wraps_around():
    xs = [np.array([2**31 - 1, -(2**31)], np.int32), np.array([1, -1], np.int32)]
    (got,) = run_op("add_n", {"xs": xs})["out"]
    np.testing.assert_array_equal(got, np.array([-(2**31), 2**31 - 1], np.int32))


@pytest.mark.skipif(
    "libasan" not in os.environ.get("LD_PRELOAD", ""), reason="runs under ./dev sanitize only"
)
def test_dev_sanitize_instruments_the_cores_kernels_as_the_plugins():
    """The core's module (runtime and built-in kernels) holds ASan's checks and UBSan's, as the
    plugins' modules do; among the core's, the check of fill_like's float to integer conversion
    (float-cast-overflow, which -fsanitize=undefined leaves out)."""
    modules = {compiled_runtime(): [b"__ubsan_handle_float_cast_overflow"]}
    for name in ("paddle_ops_math._C", "paddle_ops_nn._C"):
        try:
            modules[importlib.import_module(name)] = []
        except ImportError:  # a plugin not installed
            pass
    for module, specific in modules.items():
        code = Path(module.__file__).read_bytes()
        for check in [b"__asan_report_", b"__ubsan_handle_", *specific]:
            assert check in code, f"{module.__name__} lacks {check.decode()}"
