"""Shape and grad rules of batch_norm and layer_norm (kernels: src/norm_cpu.cpp).

Every input is checked against the forward relation, in the grad ops too (their y_grad has
x's shape, their statistics the forward op's shapes), so a mismatch is a ShapeError naming the
op and the value when the op is appended; the kernels check again at prepare time. Unknown
dimensions (None) pass and propagate.

batch_norm: x [N, C, ...]; scale, bias, mean, variance and the saved statistics [C].
layer_norm: x viewed as [rows, cols], split at begin_norm_axis; scale and bias [cols] (flat, as
in Paddle 1.x), mean and variance [rows].

The grad rules refuse a backward that needs a gradient through a statistic: the running mean
and variance are not trained (with is_test they are inputs of y, yet get no gradient), and no
grad op takes the gradient of an output other than y.
"""

from __future__ import annotations

import math

from paddle_core import ProgramError
from paddle_core.rules import default_grad

from .layout import CHANNELS_LAST

FLOATS = ("float32", "float64")


def _fmt(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _x(ctx, min_rank: int = 2, what: str = "[N, C, ...]"):
    x = ctx.input("x")
    if x.dtype not in FLOATS:
        ctx.fail(f"x must be float32 or float64, got {x.dtype}")
    if x.ndim < min_rank:
        ctx.fail(f"x must be {what} (rank >= {min_rank}), got shape {_fmt(x.shape)}")
    return x


def _size(ctx, x, slot: str, n: int | None, of: str) -> int | None:
    """Check input ``slot`` is a vector of x's dtype with ``n`` elements (``of`` says what n
    is); return its length, or n where that is unknown."""
    var = ctx.input(slot)
    if var is None:
        return n
    if var.dtype != x.dtype:
        ctx.fail(f"{slot} is {var.dtype}, but x is {x.dtype}")
    if var.ndim != 1:
        ctx.fail(f"{slot} must be a vector [{_dim(n)}] ({of}), got shape {_fmt(var.shape)}")
    (size,) = var.shape
    if n is not None and size is not None and size != n:
        ctx.fail(f"{slot} has {size} elements, but {of} is {n}: it must be [{n}]")
    return n if n is not None else size


def _dim(n: int | None) -> str:
    return "?" if n is None else str(n)


def _same_as_x(ctx, x, slot: str) -> None:
    var = ctx.input(slot)
    if var.dtype != x.dtype:
        ctx.fail(f"{slot} is {var.dtype}, but x is {x.dtype}")
    if len(var.shape) != len(x.shape) or any(
        a is not None and b is not None and a != b for a, b in zip(var.shape, x.shape)
    ):
        ctx.fail(f"{slot} must have x's shape {_fmt(x.shape)}, got {_fmt(var.shape)}")


# -- batch_norm --------------------------------------------------------------------------------


def _channels(ctx, x, slots) -> int | None:
    """x's channel count (axis 1), checked against each of ``slots``; with channel_block b, x
    is blocked, [N, C / b, ..., b]."""
    c = x.shape[1]
    b = ctx.attrs["channel_block"]
    if b == CHANNELS_LAST:
        if x.ndim < 3 or x.shape[1] != 1:
            ctx.fail(
                f"x must be channels last with channel_block -1, [N, 1, ..., C], got {_fmt(x.shape)}"
            )
        c = x.shape[-1]
    elif b:
        if x.ndim < 3 or x.shape[-1] != b:
            ctx.fail(
                f"x must be blocked with channel_block {b}, [N, C / {b}, ..., {b}], got "
                f"{_fmt(x.shape)}"
            )
        c = None if c is None else c * b
    for slot in slots:
        c = _size(ctx, x, slot, c, "x's channel count (axis 1)")
    return c


def batch_norm_shape(ctx) -> None:
    """y like x; mean_out and variance_out like mean and variance; saved statistics [C]."""
    x = _x(ctx)
    c = _channels(ctx, x, ("scale", "bias", "mean", "variance"))
    ctx.set_output("y", x.shape, x.dtype)
    for slot in ("mean_out", "variance_out", "saved_mean", "saved_inv_std"):
        ctx.set_output(slot, (c,), x.dtype)


def batch_norm_grad_shape(ctx) -> None:
    """x_grad like x; scale_grad and bias_grad [C]."""
    x = _x(ctx)
    c = _channels(ctx, x, ("scale", "saved_mean", "saved_inv_std"))
    _same_as_x(ctx, x, "y_grad")
    ctx.set_output("x_grad", x.shape, x.dtype)
    ctx.set_output("scale_grad", (c,), x.dtype)
    ctx.set_output("bias_grad", (c,), x.dtype)


def batch_norm_backward(ctx) -> None:
    """batch_norm_grad (default_grad) for x, scale and bias; never for the running statistics."""
    _refuse_output_grads(ctx, ("mean_out", "variance_out", "saved_mean", "saved_inv_std"))
    if ctx.attrs.get("is_test"):
        # With is_test, y depends on the running statistics; asking while training would
        # reserve gradients that nobody writes (y does not depend on them then: they are 0).
        for slot in ("mean", "variance"):
            if ctx.input_grad(slot) is not None:
                name = ctx.input(slot)
                raise ProgramError(
                    f"op 'batch_norm' (is_test=True) computes no gradient for its running "
                    f"{slot} {name!r}, but the backward needs one; running statistics are not "
                    f"trained: mark {name!r} stop_gradient (pc.layers.batch_norm does) or put "
                    "it in no_grad_set"
                )
    default_grad(ctx)


# -- layer_norm --------------------------------------------------------------------------------


def _rows_cols(ctx, x) -> tuple[int | None, int | None]:
    """(rows, cols) of x split at begin_norm_axis, which must be in [1, rank) (negative:
    counted from the end)."""
    given = ctx.attrs["begin_norm_axis"]
    axis = given + x.ndim if given < 0 else given
    if not 1 <= axis < x.ndim:
        ctx.fail(
            f"begin_norm_axis {given} is out of range for x of shape {_fmt(x.shape)}: it must "
            f"be in [1, {x.ndim}), or in [{1 - x.ndim}, 0) counting from the end"
        )
    head, tail = x.shape[:axis], x.shape[axis:]
    rows = None if None in head else math.prod(head)
    cols = None if None in tail else math.prod(tail)
    return rows, cols


ROW_SIZE = "a row's size, prod(x.shape[begin_norm_axis:]),"
ROW_COUNT = "the row count, prod(x.shape[:begin_norm_axis]),"


def layer_norm_shape(ctx) -> None:
    """y like x; mean and variance [rows]; scale and bias (if given) [cols]."""
    x = _x(ctx, what="[rows..., cols...]")
    rows, cols = _rows_cols(ctx, x)
    for slot in ("scale", "bias"):
        _size(ctx, x, slot, cols, ROW_SIZE)
    ctx.set_output("y", x.shape, x.dtype)
    ctx.set_output("mean", (rows,), x.dtype)
    ctx.set_output("variance", (rows,), x.dtype)


def layer_norm_grad_shape(ctx) -> None:
    """x_grad like x; scale_grad and bias_grad [cols]."""
    x = _x(ctx, what="[rows..., cols...]")
    rows, cols = _rows_cols(ctx, x)
    cols = _size(ctx, x, "scale", cols, ROW_SIZE)
    for slot in ("mean", "variance"):
        _size(ctx, x, slot, rows, ROW_COUNT)
    _same_as_x(ctx, x, "y_grad")
    ctx.set_output("x_grad", x.shape, x.dtype)
    ctx.set_output("scale_grad", (cols,), x.dtype)
    ctx.set_output("bias_grad", (cols,), x.dtype)


def layer_norm_backward(ctx) -> None:
    """layer_norm_grad (default_grad) for x, scale and bias, from y's gradient only."""
    _refuse_output_grads(ctx, ("mean", "variance"))
    default_grad(ctx)


def _refuse_output_grads(ctx, slots) -> None:
    """Refuse, rather than silently drop, a gradient flowing back through a statistic."""
    for slot in slots:
        if ctx.output_grad(slot) is not None:
            name = ctx.output(slot)
            raise ProgramError(
                f"op {ctx.op.type!r} propagates no gradient through its output {slot} "
                f"{name!r}, but the backward needs one; differentiate through y only (or mark "
                f"{name!r} stop_gradient)"
            )
