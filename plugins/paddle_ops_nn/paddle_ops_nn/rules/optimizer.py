"""Rules of the optimizers (kernels: src/optimizer_cpu.cpp)."""

from __future__ import annotations

import math

SCALARS = ("learning_rate", "beta1_pow", "beta2_pow")


def optimizer_shape(ctx):
    """Each ``<name>_out`` is shaped like input ``<name>``; the gradient and moments are shaped
    like param, the scalars hold one element, and all share param's dtype."""
    param = ctx.input("param")
    for slot, (v,) in ctx.inputs.items():
        if v.dtype != param.dtype:
            ctx.fail(f"{slot} is {v.dtype}, but param is {param.dtype}")
        if slot in SCALARS:
            if None not in v.shape and math.prod(v.shape) != 1:
                ctx.fail(f"{slot} must hold one element, got shape {list(v.shape)}")
        elif not _same_shape(v.shape, param.shape):
            ctx.fail(f"{slot} must have param's shape {list(param.shape)}, got {list(v.shape)}")
    for slot in ctx.output_slots:
        source = ctx.input(slot.removesuffix("_out"))
        ctx.set_output(slot, source.shape, source.dtype)


def _same_shape(a, b) -> bool:
    """Equal ranks, and no two known dimensions that differ."""
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))
