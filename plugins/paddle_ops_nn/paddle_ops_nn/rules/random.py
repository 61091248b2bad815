"""Rules of the random family (kernels: src/random_cpu.cpp)."""

from __future__ import annotations


def random_shape(ctx):
    """A new tensor of the `shape` and `dtype` attrs."""
    if ctx.attrs.get("min", 0.0) >= ctx.attrs.get("max", 1.0):
        ctx.fail(f"min ({ctx.attrs['min']}) must be below max ({ctx.attrs['max']})")
    ctx.set_output("out", ctx.attrs["shape"], ctx.attrs["dtype"])


def dropout_shape(ctx):
    """out like x; mask of x's shape, uint8."""
    x = ctx.input("x")
    ctx.set_output("out", x.shape, x.dtype)
    ctx.set_output("mask", x.shape, "uint8")


def dropout_grad_shape(ctx):
    """x_grad like out_grad, which must be shaped like the mask (the kernel reads both)."""
    g, mask = ctx.input("out_grad"), ctx.input("mask")
    if mask.dtype != "uint8":
        ctx.fail(f"mask must be uint8 (what dropout gives), got {mask.dtype}")
    if len(g.shape) != len(mask.shape) or any(
        a is not None and b is not None and a != b for a, b in zip(g.shape, mask.shape)
    ):
        ctx.fail(f"out_grad {list(g.shape)} must have the mask's shape {list(mask.shape)}")
    ctx.set_output("x_grad", g.shape, g.dtype)
