"""Shape rules shared across families, and the predicates' and logic ops'."""

from __future__ import annotations

from paddle_core.rules import elementwise


def compare_shape(ctx):
    """Like elementwise (NumPy broadcasting of x and y), producing bool."""
    elementwise(ctx)
    shape, _ = ctx.outputs["out"][0]
    ctx.set_output("out", shape, "bool")


def predicate_shape(ctx):
    """isnan, isinf, isfinite: bool, shaped like x."""
    x = ctx.input("x")
    ctx.set_output("out", x.shape, "bool")


def logical_shape(ctx):
    """logical_not / and / or / xor: bool inputs (broadcast), a bool result."""
    for slot, vars_ in ctx.inputs.items():
        for v in vars_:
            if v.dtype != "bool":
                ctx.fail(f"{slot} must be bool, got {v.dtype} (compare or cast it first)")
    if ctx.input("y") is None:
        ctx.set_output("out", ctx.input("x").shape, "bool")
    else:
        compare_shape(ctx)
