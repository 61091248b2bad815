"""Rules of embedding (kernels: src/embedding_cpu.cpp)."""

from __future__ import annotations


def embedding_shape(ctx):
    """out: ids' shape + [D], w's dtype; ids integer, w a matrix, padding_idx one of its rows."""
    ids, w = ctx.input("ids"), ctx.input("w")
    if ids.dtype not in ("int64", "int32"):
        ctx.fail(f"ids must be int64 or int32, got {ids.dtype}")
    if w.ndim != 2:
        ctx.fail(f"w must be a [V, D] matrix, got {list(w.shape)}")
    rows, padding = w.shape[0], ctx.attrs["padding_idx"]
    if rows is not None and padding >= rows:
        ctx.fail(f"padding_idx {padding} is outside [0, {rows}) (or -1 for none)")
    ctx.set_output("out", (*ids.shape, w.shape[1]), w.dtype)
