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
    for vs in ctx.inputs.values():
        if vs:
            ctx.set_output(ctx.output_slots[0], vs[0].shape, vs[0].dtype)
            return
    ctx.fail("its output takes the shape and dtype of its first input, and none was given")


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
    shapes = []
    dtype = None
    for vs in ctx.inputs.values():
        for v in vs:
            if dtype is None:
                dtype = v.dtype
            elif v.dtype != dtype:
                ctx.fail(f"inputs must share one dtype, got {dtype} and {v.dtype}")
            shapes.append(v.shape)
    ctx.set_output(ctx.output_slots[0], broadcast_shapes(ctx, *shapes), dtype)


def broadcast_shapes(ctx: Any, *shapes: tuple) -> tuple:
    """NumPy broadcasting with unknown (None) dimensions; ``ctx.fail`` on a mismatch.

    An unknown dimension broadcast with a known one n > 1 gives n (it must be 1 or n at run
    time); with 1 or another unknown it stays unknown.
    """
    if not shapes:
        return ()
    if shapes.count(shapes[0]) == len(shapes):
        return tuple(shapes[0])
    rank = max(map(len, shapes))
    out = [1] * rank
    for s in shapes:  # fold each shape into out, aligned at the last axis
        i = rank - len(s)
        for d in s:  # (None tested by identity first: comparing it with an int is slow)
            dim = out[i]
            if d is None:
                if dim == 1:
                    out[i] = None
            elif d != 1 and d != dim:
                if dim == 1 or dim is None:
                    out[i] = d
                else:
                    ctx.fail(
                        "shapes "
                        + ", ".join(str(list(s)) for s in shapes)
                        + f" cannot be broadcast together (axis {i - rank}: {dim} vs {d})"
                    )
            i += 1
    return tuple(out)
