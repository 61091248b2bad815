"""Rules of scale, cast, fill_constant, full_like, assign (kernels: src/fill_cpu.cpp)."""

from __future__ import annotations


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
    ctx.set_output("out", ctx.attrs["shape"], ctx.attrs["dtype"])


def assign_grad(ctx):
    ctx.append_op("assign", {"x": ctx.output_grad("out")}, {"out": ctx.input_grad("x")})
