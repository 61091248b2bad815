"""Rules of the unary family (kernels: src/unary_cpu.cpp).

Every other unary op and every unary grad op uses ``paddle_core.rules:unary``.
"""

from __future__ import annotations

from paddle_core.rules import unary


def clip_shape(ctx):
    """Like x; the bounds must satisfy min <= max (checked again by the kernel)."""
    lo, hi = ctx.attrs["min"], ctx.attrs["max"]
    if not lo <= hi:
        ctx.fail(f"clip needs min <= max, got min={lo}, max={hi}")
    unary(ctx)
