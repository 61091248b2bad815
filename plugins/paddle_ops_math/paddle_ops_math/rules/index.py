"""Rules of the index ops: gather and one_hot (kernels: src/index_cpu.cpp), gather_nd, scatter
and scatter_nd (src/scatter_cpu.cpp).

Index values are known only at run time: the kernels check each one before using it. These
rules check what the shapes already tell: the index dtype, the axis, an empty axis to take from,
how index, updates and x fit together.
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


def _fits(a: tuple, b: tuple) -> bool:
    """Shapes a and b agree (an unknown dimension fits any)."""
    return len(a) == len(b) and all(p is None or q is None or p == q for p, q in zip(a, b))


def _depth(ctx, index, room: int) -> int:
    """q, the length of index's tuples: known, in [1, room]."""
    if index.ndim < 1:
        ctx.fail("index must be at least 1-D: tuples of q indices in its last dim")
    q = index.shape[-1]
    if q is None:
        ctx.fail("index's last dim (q, the length of its tuples) must be known")
    if not 1 <= q <= room:
        ctx.fail(f"index has tuples of {q} indices; x has {room} dims to index")
    return q


def gather_nd_shape(ctx):
    """index.shape[:-1] + x.shape[batch_dims + q:], x's dtype."""
    x, index, b = ctx.input("x"), _index(ctx), ctx.attrs["batch_dims"]
    if b >= index.ndim or b > x.ndim:
        ctx.fail(f"batch_dims {b} must be below index's rank {index.ndim} and at most x's {x.ndim}")
    q = _depth(ctx, index, x.ndim - b)
    if not _fits(x.shape[:b], index.shape[:b]):
        ctx.fail(f"the first {b} dims (batch_dims) of x and index differ")
    batch = [i if d is None else d for d, i in zip(x.shape[:b], index.shape[:b])]
    ctx.set_output("out", (*batch, *index.shape[b:-1], *x.shape[b + q :]), x.dtype)


def _updates(ctx, want: tuple, what: str):
    updates, x = ctx.input("updates"), ctx.input("x")
    if updates.dtype != x.dtype:
        ctx.fail(f"updates must have x's dtype {x.dtype}, got {updates.dtype}")
    if not _fits(updates.shape, want):
        ctx.fail(f"updates must have {what} {list(want)}, got {list(updates.shape)}")


def scatter_shape(ctx):
    """x's shape and dtype; index of x's rank, no dim larger than x's but along axis; updates
    of index's shape."""
    x, index = ctx.input("x"), _index(ctx)
    if x.ndim == 0:
        ctx.fail("x is 0-d: it has no axis to scatter along")
    axis = _axis(ctx, ctx.attrs["axis"], x.ndim)
    if index.ndim != x.ndim:
        ctx.fail(f"index must have x's rank {x.ndim}, got {index.ndim}")
    for k, (i, d) in enumerate(zip(index.shape, x.shape)):
        if k != axis and None not in (i, d) and i > d:
            ctx.fail(f"index's dim {k} ({i}) is larger than x's ({d}); only axis {axis} may be")
    _updates(ctx, index.shape, "index's shape")
    ctx.set_output("out", x.shape, x.dtype)


def scatter_nd_shape(ctx):
    """x's shape and dtype; updates of shape index.shape[:-1] + x.shape[q:]."""
    x, index = ctx.input("x"), _index(ctx)
    q = _depth(ctx, index, x.ndim)
    _updates(ctx, (*index.shape[:-1], *x.shape[q:]), "shape index.shape[:-1] + x.shape[q:]")
    ctx.set_output("out", x.shape, x.dtype)
