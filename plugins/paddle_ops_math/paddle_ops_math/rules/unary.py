"""Rules of the unary family (kernels: src/unary_cpu.cpp).

Every other unary op and every unary grad op uses ``paddle_core.rules:unary``.
"""

from __future__ import annotations

import math

from paddle_core.rules import unary


def clip_shape(ctx):
    """Like x; the bounds must not be NaN (checked again by the kernel). min > max is allowed:
    every element becomes max, as in NumPy and ONNX."""
    lo, hi = ctx.attrs["min"], ctx.attrs["max"]
    if math.isnan(lo) or math.isnan(hi):
        ctx.fail(f"clip's bounds must not be NaN, got min={lo}, max={hi}")
    unary(ctx)
