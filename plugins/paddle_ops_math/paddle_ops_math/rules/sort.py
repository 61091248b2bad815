"""Rules of the sorting ops, sort, argsort and topk (kernels: src/sort_cpu.cpp).

Their gradients move out_grad back to where each element came from: scatter (reduction add)
into zeros of x's shape at the positions argsort (sort) or topk's indices give.
"""

from __future__ import annotations


def _axis(ctx) -> int:
    """The sorted axis, non-negative; a 0-d x is one element along axis 0 (or -1)."""
    x, axis = ctx.input("x"), ctx.attrs["axis"]
    rank = max(x.ndim, 1)
    if not -rank <= axis < rank:
        ctx.fail(f"axis {axis} is out of range for a {x.ndim}-D x (valid: {-rank}..{rank - 1})")
    return axis % rank


def sort_shape(ctx):
    """sort: x's shape and dtype."""
    _axis(ctx)
    ctx.set_output("out", ctx.input("x").shape, ctx.input("x").dtype)


def argsort_shape(ctx):
    """argsort: int64 positions, x's shape."""
    _axis(ctx)
    ctx.set_output("out", ctx.input("x").shape, "int64")


def topk_shape(ctx):
    """topk: values (x's dtype) and int64 indices, x's shape with axis cut to k."""
    x, k, axis = ctx.input("x"), ctx.attrs["k"], _axis(ctx)
    size = x.shape[axis] if x.ndim else 1
    if size is not None and k > size:
        ctx.fail(f"k = {k} is larger than x's size {size} along axis {axis}")
    if x.ndim == 0 and k != 1:
        ctx.fail(f"k = {k}: a 0-d x has one element, so k must be 1")
    shape = list(x.shape)
    if x.ndim:
        shape[axis] = k
    ctx.set_output("values", shape, x.dtype)
    ctx.set_output("indices", shape, "int64")


def _scatter_back(ctx, index: str, g: str, target: str) -> None:
    """target = zeros of x's shape with g added at index along the sorted axis."""
    x = ctx.input("x")
    if not ctx.op.block.var(x).shape:  # a 0-d x: its one element is its own gradient
        ctx.append_op("assign", {"x": g}, {"out": target})
        return
    attrs = {"axis": ctx.attrs["axis"], "reduction": "add"}
    inputs = {"x": ctx.zeros_like(x), "index": index, "updates": g}
    ctx.append_op("scatter", inputs, {"out": target}, attrs)


def sort_grad(ctx):
    """x_grad[order[j]] = out_grad[j] along the axis, order being argsort's (the same order)."""
    gx, g = ctx.input_grad("x"), ctx.output_grad("out")
    if gx is None or g is None:
        return
    attrs = {"axis": ctx.attrs["axis"], "descending": ctx.attrs["descending"]}
    order = ctx.append_op("argsort", {"x": ctx.input("x")}, {}, attrs).outputs["out"][0]
    _scatter_back(ctx, order, g, gx)


def topk_grad(ctx):
    """x_grad[indices[j]] = values_grad[j] along the axis, zeros elsewhere."""
    gx, g = ctx.input_grad("x"), ctx.output_grad("values")
    if gx is None or g is None:
        return
    _scatter_back(ctx, ctx.output("indices"), g, gx)
