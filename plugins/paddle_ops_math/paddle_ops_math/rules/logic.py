"""Shape and grad rules of the logic family (manifest/logic.pbtxt): predicates, logical ops,
where."""

from __future__ import annotations

from paddle_core.rules import broadcast_shapes

from .elementwise import compare_shape


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


def where_shape(ctx):
    """where: cond bool; x and y one dtype; out the three shapes broadcast together."""
    cond, x, y = ctx.input("cond"), ctx.input("x"), ctx.input("y")
    if cond.dtype != "bool":
        ctx.fail(f"cond must be bool, got {cond.dtype} (compare or cast it first)")
    if x.dtype != y.dtype:
        ctx.fail(f"x and y must share one dtype, got {x.dtype} and {y.dtype}")
    ctx.set_output("out", broadcast_shapes(ctx, cond.shape, x.shape, y.shape), x.dtype)


def where_grad(ctx):
    """out_grad goes to x where cond holds and to y elsewhere, summed back to each one's shape
    (broadcast_to_grad)."""
    g, cond = ctx.output_grad("out"), ctx.input("cond")
    zeros = None
    for slot, picks_x in (("x", True), ("y", False)):
        target = ctx.input_grad(slot)
        if target is None:
            continue
        zeros = zeros or ctx.zeros_like(g)
        x, y = (g, zeros) if picks_x else (zeros, g)
        spread = ctx.append_op("where", {"cond": cond, "x": x, "y": y}, {}).outputs["out"][0]
        grad_inputs = {"x": ctx.input(slot), "out_grad": spread}
        ctx.append_op("broadcast_to_grad", grad_inputs, {"x_grad": target})
