"""Shape and grad rules of softmax and its losses (kernels: src/softmax_cpu.cpp).

Axes, dtypes and label shapes are checked here, when the op is appended (and again on the fed
shapes); the kernels check them once more at prepare time. The class axis of a loss is x's
``axis`` (the last one for cross_entropy and accuracy). Hard labels are int64 with x's shape,
the class axis either 1 (Paddle's ``[..., 1]``) or dropped (``[...]``); which one is decided
here, by the label's rank. Soft labels have x's shape and dtype. Losses have x's shape with the
class axis as 1.
"""

from __future__ import annotations

from paddle_core import ProgramError
from paddle_core.rules import default_grad

FLOATS = ("float32", "float64")


def _fmt(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _float_input(ctx, slot: str):
    var = ctx.input(slot)
    if var.dtype not in FLOATS:
        ctx.fail(f"{slot} must be float32 or float64, got {var.dtype} (cast it first)")
    return var


def _class_axis(ctx, var, slot: str, axis: int) -> int:
    """``axis`` as a non-negative axis of ``var``; ``ctx.fail`` if it has no such axis."""
    if var.ndim == 0:
        ctx.fail(f"{slot} is 0-d: it has no class axis (axis {axis})")
    if not -var.ndim <= axis < var.ndim:
        ctx.fail(
            f"axis {axis} is out of range for a {var.ndim}-D {slot} "
            f"(valid: {-var.ndim}..{var.ndim - 1})"
        )
    return axis % var.ndim


def _merge(ctx, have: tuple, want: tuple, what: str) -> tuple:
    """``want`` with its unknown dimensions taken from ``have``; ``ctx.fail`` where known
    dimensions differ (or the ranks do)."""
    if len(have) != len(want) or any(
        a is not None and b is not None and a != b for a, b in zip(have, want)
    ):
        ctx.fail(what)
    return tuple(b if b is not None else a for a, b in zip(have, want))


def _label(ctx, x, slot: str, axis: int, soft: bool) -> tuple:
    """Check the label against x (the input ``slot``) with class axis ``axis``; return the
    per-row shape ``[..., 1]`` (x's shape with the axis as 1), refined by the label's known
    dimensions."""
    label = ctx.input("label")
    keep = (*x.shape[:axis], 1, *x.shape[axis + 1 :])
    if soft:
        if label.dtype != x.dtype:
            ctx.fail(
                f"label must have {slot}'s dtype {x.dtype} with soft_label=True, got {label.dtype}"
            )
        shape = _merge(
            ctx,
            label.shape,
            x.shape,
            f"label must have {slot}'s shape {_fmt(x.shape)} with soft_label=True, "
            f"got {_fmt(label.shape)}",
        )
        return (*shape[:axis], 1, *shape[axis + 1 :])
    if label.dtype != "int64":
        ctx.fail(f"label must be int64 class indices (soft_label=False), got {label.dtype}")
    drop = (*x.shape[:axis], *x.shape[axis + 1 :])
    expected = (
        f"hard labels have the shape {_fmt(keep)} or {_fmt(drop)} ({slot}'s with the class axis "
        f"{axis} as 1, or without it), got {_fmt(label.shape)}"
    )
    if label.ndim == x.ndim:
        return _merge(ctx, label.shape, keep, expected)
    if label.ndim == x.ndim - 1:
        shape = _merge(ctx, label.shape, drop, expected)
        return (*shape[:axis], 1, *shape[axis:])
    ctx.fail(expected)


def _classes(ctx, x, slot: str, axis: int) -> None:
    if x.shape[axis] == 0:
        ctx.fail(f"{slot} has no classes (its class axis {axis} is empty)")


def softmax_shape(ctx) -> None:
    """softmax, log_softmax: out is like x; axis must be one of x's."""
    x = _float_input(ctx, "x")
    _class_axis(ctx, x, "x", ctx.attrs["axis"])
    ctx.set_output("out", x.shape, x.dtype)


def cross_entropy_shape(ctx) -> None:
    """cross_entropy: x [..., C] (C > 0) and its label; out [..., 1]."""
    x = _float_input(ctx, "x")
    axis = _class_axis(ctx, x, "x", -1)
    _classes(ctx, x, "x", axis)
    ctx.set_output("out", _label(ctx, x, "x", axis, ctx.attrs["soft_label"]), x.dtype)


def softmax_with_cross_entropy_shape(ctx) -> None:
    """softmax_with_cross_entropy: softmax is like logits; loss has the class axis as 1."""
    x = _float_input(ctx, "logits")
    axis = _class_axis(ctx, x, "logits", ctx.attrs["axis"])
    _classes(ctx, x, "logits", axis)
    loss = _label(ctx, x, "logits", axis, ctx.attrs["soft_label"])
    ctx.set_output("softmax", x.shape, x.dtype)
    ctx.set_output("loss", loss, x.dtype)


def softmax_with_cross_entropy_grad_shape(ctx) -> None:
    """logits_grad like softmax. The grad op reads softmax (shaped like logits), not logits, so
    the core cannot re-run the forward rule: label, loss_grad and softmax_grad are held to
    softmax here."""
    x = _float_input(ctx, "softmax")
    axis = _class_axis(ctx, x, "softmax", ctx.attrs["axis"])
    loss = _label(ctx, x, "softmax", axis, ctx.attrs["soft_label"])
    for slot, want in (("loss_grad", loss), ("softmax_grad", x.shape)):
        g = ctx.input(slot)
        if g is not None and g.dtype != x.dtype:
            ctx.fail(f"{slot} must have softmax's dtype {x.dtype}, got {g.dtype}")
        if g is not None:
            _merge(ctx, g.shape, want, f"{slot} must have shape {_fmt(want)}, got {_fmt(g.shape)}")
    ctx.set_output("logits_grad", x.shape, x.dtype)


def accuracy_shape(ctx) -> None:
    """accuracy: x [..., C] with k <= C, hard labels; three 0-d outputs."""
    x = _float_input(ctx, "x")
    axis = _class_axis(ctx, x, "x", -1)
    k, classes = ctx.attrs["k"], x.shape[axis]
    if classes is not None and k > classes:
        ctx.fail(f"k={k} is larger than the number of classes {classes} (x's last dimension)")
    _label(ctx, x, "x", axis, soft=False)
    ctx.set_output("accuracy", (), "float32")
    ctx.set_output("correct", (), "int64")
    ctx.set_output("total", (), "int64")


def _refuse_soft_label_grad(ctx) -> None:
    """Soft labels get no gradient: refuse, rather than silently drop, one the backward needs.
    (Asked only for soft labels: asking reserves a gradient someone must write, and a hard
    label's would never be.)"""
    if ctx.attrs["soft_label"] and ctx.input_grad("label") is not None:
        raise ProgramError(
            f"op {ctx.op.type!r} computes no gradient for its soft label "
            f"{ctx.input('label')!r}, but the backward needs one; mark the label "
            "stop_gradient (or put it in no_grad_set) if it is a constant target"
        )


def cross_entropy_backward(ctx) -> None:
    """cross_entropy_grad for x (default_grad), never for the label."""
    _refuse_soft_label_grad(ctx)
    default_grad(ctx)


def softmax_with_cross_entropy_backward(ctx) -> None:
    """softmax_with_cross_entropy_grad for logits, from loss's gradient and/or softmax's (the
    grad op takes whichever flows back), never for the label."""
    _refuse_soft_label_grad(ctx)
    logits_grad = ctx.input_grad("logits")
    if logits_grad is None:
        return
    ctx.append_op(
        "softmax_with_cross_entropy_grad",
        {
            "softmax": ctx.output("softmax"),
            "label": ctx.input("label"),
            "loss_grad": ctx.output_grad("loss"),
            "softmax_grad": ctx.output_grad("softmax"),
        },
        {"logits_grad": logits_grad},
        {k: ctx.attrs[k] for k in ("soft_label", "ignore_index", "axis")},
    )
