"""Shape rules shared by many ops, for manifests to name (``paddle_core.rules:unary``).

A shape rule receives a ``ShapeContext``: it reads input variables' ``shape`` (tuples, ``None``
for unknown dimensions) and ``dtype``, and sets each output's shape and dtype. Unknown
dimensions propagate; known ones must agree.
"""

from __future__ import annotations

import math
from typing import Any

from ..base.dtypes import INT_RANGE


def unary(ctx: Any) -> None:
    """The first output has the shape and dtype of the first input."""
    x = next(vs[0] for vs in ctx.inputs.values() if vs)
    ctx.set_output(ctx.output_slots[0], x.shape, x.dtype)


def check_fill_value(ctx: Any, dtype: str, attr: str = "value") -> None:
    """Fail unless the float attr ``attr`` fills ``dtype``: for an integer dtype, a finite value
    within its range (truncated toward zero, as NumPy's full does), not one that would wrap
    around or stand for NaN. Any value fills a floating dtype."""
    value = ctx.attrs[attr]
    if dtype not in INT_RANGE:
        return
    if not math.isfinite(value):
        ctx.fail(
            f"{attr} {value!r} has no {dtype} equivalent (an integer fill needs a finite value)"
        )
    low, high = INT_RANGE[dtype]
    if not low <= math.trunc(value) <= high:
        ctx.fail(f"{attr} {value!r} does not fit {dtype} [{low}, {high}]")


def grad_shapes(ctx: Any) -> None:
    """The rule of most grad ops: each output ``<name>_grad`` has the shape and dtype of the
    input ``<name>`` (of the grad op, which default_grad wires to the forward op's)."""
    for slot in ctx.output_slots:
        base = ctx.inputs.get(slot.removesuffix("_grad"))
        if slot.endswith("_grad") and base:
            ctx.set_output_list(slot, [(v.shape, v.dtype) for v in base])


def elementwise(ctx: Any) -> None:
    """The first output is all inputs broadcast together (NumPy rules); dtypes must match."""
    vars_ = [v for vs in ctx.inputs.values() for v in vs]
    first = vars_[0]
    shape, dtype = first.shape, first.dtype
    for v in vars_:
        if v.dtype != dtype:
            ctx.fail(f"inputs must share one dtype, got {first.dtype} and {v.dtype}")
        if v.shape != shape:
            shape = None  # differing shapes: broadcast below
    if shape is None:
        shape = broadcast_shapes(ctx, *(v.shape for v in vars_))
    ctx.set_output(ctx.output_slots[0], shape, dtype)


def broadcast_shapes(ctx: Any, *shapes: tuple) -> tuple:
    """NumPy broadcasting with unknown (None) dimensions; ``ctx.fail`` on a mismatch.

    An unknown dimension broadcast with a known one n > 1 gives n (it must be 1 or n at run
    time); with 1 or another unknown it stays unknown.
    """
    if all(s == shapes[0] for s in shapes):
        return tuple(shapes[0]) if shapes else ()
    rank = max(len(s) for s in shapes)
    out = []
    for axis in range(-rank, 0):
        dim = 1
        for s in shapes:
            if len(s) < -axis:
                continue
            d = s[axis]
            if d == 1:
                continue
            if d is None:
                dim = None if dim == 1 else dim
            elif dim in (1, None):
                dim = d
            elif dim != d:
                ctx.fail(
                    "shapes "
                    + ", ".join(str(list(s)) for s in shapes)
                    + f" cannot be broadcast together (axis {axis}: {dim} vs {d})"
                )
        out.append(dim)
    return tuple(out)
