"""Rules of the scans, cumsum (kernels: src/scan_cpu.cpp)."""

from __future__ import annotations


def cumsum_shape(ctx):
    """x's shape; x's dtype, int64 for int32 (like NumPy and PyTorch). A 0-d x has axis 0 / -1."""
    x, axis = ctx.input("x"), ctx.attrs["axis"]
    rank = max(x.ndim, 1)
    if not -rank <= axis < rank:
        ctx.fail(f"axis {axis} is out of range for a {x.ndim}-D x (valid: {-rank}..{rank - 1})")
    ctx.set_output("out", x.shape, "int64" if x.dtype == "int32" else x.dtype)


def cumsum_grad(ctx):
    """Each x[j] enters the outputs the scan reaches from j, so x_grad is the cumsum of out_grad
    the other way round, with the same exclusiveness."""
    gx = ctx.input_grad("x")
    if gx is None:
        return
    attrs = dict(ctx.attrs)
    attrs["reverse"] = not attrs["reverse"]
    ctx.append_op("cumsum", {"x": ctx.output_grad("out")}, {"out": gx}, attrs)
