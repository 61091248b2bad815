"""Rules of scale, cast, fill_constant, fill_constant_batch_size_like, full_like, assign, range
(kernels: src/fill_cpu.cpp)."""

from __future__ import annotations

import math

import numpy as np

from paddle_core.rules import check_fill_value


def scale_grad(ctx):
    """d(scale * x + b)/dx = scale, in either bias order."""
    ctx.append_op(
        "scale",
        {"x": ctx.output_grad("out")},
        {"out": ctx.input_grad("x")},
        {"scale": ctx.attrs["scale"], "bias": 0.0},
    )


def cast_shape(ctx):
    x = ctx.input("x")
    ctx.set_output("out", x.shape, ctx.attrs["dtype"])


def cast_grad(ctx):
    """The gradient is cast back to x's dtype."""
    x = ctx.op.block.var(ctx.input("x"))
    ctx.append_op(
        "cast", {"x": ctx.output_grad("out")}, {"out": ctx.input_grad("x")}, {"dtype": x.dtype}
    )


def fill_constant_shape(ctx):
    check_fill_value(ctx, ctx.attrs["dtype"])
    ctx.set_output("out", ctx.attrs["shape"], ctx.attrs["dtype"])


def fill_constant_batch_size_like_shape(ctx):
    """shape, with shape[output_dim_idx] = input.shape[input_dim_idx] (unknown until the run
    where it is unknown in input)."""
    attrs, x = ctx.attrs, ctx.input("input")
    shape = list(attrs["shape"])
    out_axis = _axis(ctx, "output_dim_idx", len(shape), f"out's shape {shape}")
    in_axis = _axis(ctx, "input_dim_idx", x.ndim, f"input of shape {list(x.shape)}")
    others = [d for k, d in enumerate(shape) if k != out_axis and d < 0]
    if others:
        ctx.fail(f"shape {shape}: only the dimension at output_dim_idx may be negative")
    check_fill_value(ctx, attrs["dtype"])
    shape[out_axis] = x.shape[in_axis]
    ctx.set_output("out", shape, attrs["dtype"])


def _axis(ctx, attr: str, ndim: int, of: str) -> int:
    """The attr's axis in [0, ndim), counting a negative one from the end."""
    given = ctx.attrs[attr]
    if not -ndim <= given < ndim:
        ctx.fail(f"{attr} {given} is out of range for {of}: it must be in [{-ndim}, {ndim})")
    return given % ndim


def full_like_shape(ctx):
    x = ctx.input("x")
    check_fill_value(ctx, x.dtype)
    ctx.set_output("out", x.shape, x.dtype)


def assign_grad(ctx):
    ctx.append_op("assign", {"x": ctx.output_grad("out")}, {"out": ctx.input_grad("x")})


def range_shape(ctx):
    """[max(ceil((limit - start) / delta), 0)] of dtype, counted as numpy.arange counts: in
    double for floats, exactly for integers (which need integral attrs within 2^53, where a
    double holds every integer, and every value within the dtype)."""
    attrs, dtype = ctx.attrs, ctx.attrs["dtype"]
    values = {name: attrs[name] for name in ("start", "limit", "delta")}
    for name, v in values.items():
        if not math.isfinite(v):
            ctx.fail(f"{name} must be finite, got {v}")
    if values["delta"] == 0:
        ctx.fail("delta must not be 0")
    if dtype.startswith(("int", "uint")):
        for name, v in values.items():
            if not v.is_integer() or abs(v) > 2**53:
                ctx.fail(
                    f"{name} = {v!r}: a {dtype} range needs integral start, limit and delta "
                    "within 2**53 (where the attrs' doubles hold every integer)"
                )
        start, limit, delta = (int(v) for v in values.values())
        n = max(-((start - limit) // delta), 0)
        low, high = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
        last = start + (n - 1) * delta
        if n and not (low <= start <= high and low <= last <= high):
            ctx.fail(f"the values {start} .. {last} do not fit {dtype}")
    else:
        start, limit, delta = values.values()
        n = max(math.ceil((limit - start) / delta), 0)
    ctx.set_output("out", (n,), dtype)
