"""Rules of the index ops, gather and one_hot (kernels: src/index_cpu.cpp).

Index values are known only at run time: the kernels check each one before using it. These
rules check what the shapes already tell: the index dtype, the axis, an empty axis to take from.
"""

from __future__ import annotations

from math import prod

from .shape import _axis

INDEX_DTYPES = ("int32", "int64")


def _index(ctx, slot: str = "index"):
    index = ctx.input(slot)
    if index.dtype not in INDEX_DTYPES:
        ctx.fail(f"{slot} must be int32 or int64, got {index.dtype} (cast it first)")
    return index


def gather_shape(ctx):
    """x.shape[:axis] + index.shape + x.shape[axis + 1:], x's dtype."""
    x, index = ctx.input("x"), _index(ctx)
    if x.ndim == 0:
        ctx.fail("x is 0-d: it has no axis to gather along")
    axis = _axis(ctx, ctx.attrs["axis"], x.ndim)
    if x.shape[axis] == 0 and None not in index.shape and prod(index.shape) > 0:
        ctx.fail(f"axis {axis} of x has size 0: there is nothing to take index {index.name!r} from")
    ctx.set_output("out", (*x.shape[:axis], *index.shape, *x.shape[axis + 1 :]), x.dtype)


def one_hot_shape(ctx):
    """index.shape + [depth], of the dtype attr."""
    index = _index(ctx)
    ctx.set_output("out", (*index.shape, ctx.attrs["depth"]), ctx.attrs["dtype"])
