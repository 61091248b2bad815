"""Shape rules shared across families."""

from __future__ import annotations

from paddle_core.rules import elementwise


def grad_shapes(ctx):
    """Each output ``<name>_grad`` has the shape and dtype of input ``<name>``."""
    for slot in ctx.output_slots:
        base = ctx.inputs.get(slot.removesuffix("_grad"))
        if slot.endswith("_grad") and base:
            ctx.set_output_list(slot, [(v.shape, v.dtype) for v in base])


def compare_shape(ctx):
    """Like elementwise (NumPy broadcasting of x and y), producing bool."""
    elementwise(ctx)
    shape, _ = ctx.outputs["out"][0]
    ctx.set_output("out", shape, "bool")
