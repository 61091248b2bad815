"""Shape and grad rules of the ops the oneDNN passes insert (kernels: src/layout_cpu.cpp):
reorder_layout (the layouts are src/layout.hpp's), an activation [N, C, H, W] between plain
NCHW and oneDNN's blocked nChw{b}c, stored as [N, C / b, H, W, b] (unknown dimensions (None)
pass and propagate); and fingerprint, int64 [1]."""

from __future__ import annotations

FLOATS = ("float32", "float64")
BLOCKS = (8, 16)


def _fmt(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


CHANNELS_LAST = -1  # channel_block of NHWC, stored [N, 1, H, W, C] (src/layout.hpp)


def blocked_shape(ctx, shape, b: int, what: str) -> tuple:
    """[N, C, H, W] stored blocked by ``b``: [N, C / b, H, W, b]; fails unless b divides C.
    Channels last (b = -1): [N, 1, H, W, C]."""
    n, c, h, w = shape
    if b == CHANNELS_LAST:
        return (n, 1, h, w, c)
    if c is not None and c % b:
        ctx.fail(f"{what} has {c} channels, which channel_block {b} does not divide")
    return (n, None if c is None else c // b, h, w, b)


def plain_shape(ctx, shape, b: int, what: str) -> tuple:
    """The NCHW shape of ``shape`` [N, C / b, H, W, b] (channels last: [N, 1, H, W, C]);
    fails unless it is that."""
    if b == CHANNELS_LAST:
        if len(shape) != 5 or shape[1] != 1:
            ctx.fail(
                f"{what} must be channels last with channel_block -1, [N, 1, H, W, C], got "
                f"{_fmt(shape)}"
            )
        n, _, h, w, c = shape
        return (n, c, h, w)
    if len(shape) != 5 or shape[4] != b:
        ctx.fail(
            f"{what} must be blocked with channel_block {b}, [N, C / {b}, H, W, {b}], got "
            f"{_fmt(shape)}"
        )
    n, blocks, h, w, _ = shape
    return (n, None if blocks is None else blocks * b, h, w)


def _stored_block(ctx, shape) -> int:
    """The channel_block of a blocked x to make NCHW: its b (8 or 16), or -1 for channels last
    (where both fit, [N, 1, H, W, 8], they are the same bytes)."""
    if len(shape) == 5 and shape[4] in BLOCKS:
        return shape[4]
    if len(shape) == 5 and shape[1] == 1:
        return CHANNELS_LAST
    ctx.fail(
        "x must be blocked, [N, C / b, H, W, b] with b = 8 or 16, or channels last, "
        f"[N, 1, H, W, C], to make it NCHW; got {_fmt(shape)}"
    )


def reorder_layout_shape(ctx) -> None:
    x = ctx.input("x")
    if x.dtype not in FLOATS:
        ctx.fail(f"x must be float32 or float64, got {x.dtype}")
    b = ctx.attrs["channel_block"]
    if b:
        if x.ndim != 4:
            ctx.fail(f"x must be 4-D (NCHW) to block its channels, got {_fmt(x.shape)}")
        shape = blocked_shape(ctx, x.shape, b, "x")
    else:
        shape = plain_shape(ctx, x.shape, _stored_block(ctx, x.shape), "x")
    ctx.set_output("out", shape, x.dtype)


def reorder_layout_backward(ctx) -> None:
    """x_grad is out_grad reordered back to x's layout (a reorder only moves elements)."""
    x_grad = ctx.input_grad("x")
    if x_grad is None:
        return
    x = ctx.block.var(ctx.input("x"))
    back = 0 if ctx.attrs["channel_block"] else _stored_block(ctx, x.shape)
    out_grad = ctx.output_grad("out") or ctx.zeros_like(ctx.output("out"))
    ctx.append_op("reorder_layout", {"x": out_grad}, {"out": x_grad}, {"channel_block": back})


def fingerprint_shape(ctx) -> None:
    x = ctx.input("x")
    if x.dtype not in FLOATS:
        ctx.fail(f"x must be float32 or float64, got {x.dtype}")
    ctx.set_output("out", (1,), "int64")
