"""Shape rules of the elementwise family's comparisons (manifest/elementwise.pbtxt); the
arithmetic ops use the core's ``paddle_core.rules:elementwise``."""

from __future__ import annotations

from paddle_core.rules import elementwise


def compare_shape(ctx):
    """Like elementwise (NumPy broadcasting of x and y), producing bool."""
    elementwise(ctx)
    shape, _ = ctx.outputs["out"][0]
    ctx.set_output("out", shape, "bool")
