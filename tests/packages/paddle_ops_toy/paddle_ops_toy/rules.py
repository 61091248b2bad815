"""Shape rules, grad rules and NumPy kernels of paddle-ops-toy, op by op.

Kernels take inputs positionally (a list for duplicable slots, None for an unused dispensable
one) and attrs as keywords, and return the output (a tuple when the op has several outputs).
"""

from __future__ import annotations

import numpy as np

from paddle_core.rules import broadcast_shapes

# -- scale ---------------------------------------------------------------------------------------


def scale_cpu(x, *, scale, bias, bias_after_scale):
    if bias_after_scale:
        out = x * scale + bias
    else:
        out = (x + bias) * scale
    return out.astype(x.dtype, copy=False)


def scale_grad(ctx):
    """d(out)/d(x) = scale, so x's gradient is out's gradient scaled (no bias)."""
    ctx.append_op(
        "scale",
        inputs={"x": ctx.output_grad("out")},
        outputs={"out": ctx.input_grad("x")},
        attrs={"scale": ctx.attrs["scale"], "bias": 0.0},
    )


# -- add -----------------------------------------------------------------------------------------


def add_cpu(x, y):
    return np.add(x, y)


# -- matmul --------------------------------------------------------------------------------------


def matmul_shape(ctx):
    x, y = ctx.input("x"), ctx.input("y")
    if x.ndim < 2 or y.ndim < 2:
        ctx.fail("both operands must be at least 2-D")
    if x.dtype != y.dtype:
        ctx.fail(f"operands must share a dtype, got {x.dtype} and {y.dtype}")
    m, kx = x.shape[-2:][:: -1 if ctx.attrs["transpose_x"] else 1]
    ky, n = y.shape[-2:][:: -1 if ctx.attrs["transpose_y"] else 1]
    if kx is not None and ky is not None and kx != ky:
        ctx.fail(f"inner dimensions differ: {kx} (x) vs {ky} (y)")
    batch = broadcast_shapes(ctx, x.shape[:-2], y.shape[:-2])
    ctx.set_output("out", (*batch, m, n), x.dtype)


def matmul_cpu(x, y, *, transpose_x, transpose_y):
    if transpose_x:
        x = np.swapaxes(x, -1, -2)
    if transpose_y:
        y = np.swapaxes(y, -1, -2)
    return np.matmul(x, y)


# -- relu, leaky_relu ----------------------------------------------------------------------------


def relu_cpu(x):
    return np.maximum(x, 0).astype(x.dtype, copy=False)


def leaky_relu_cpu(x, *, alpha):
    return np.where(x > 0, x, x * alpha).astype(x.dtype, copy=False)


# -- concat, split -------------------------------------------------------------------------------


def _axis(ctx, axis, ndim):
    if not -ndim <= axis < ndim:
        ctx.fail(f"axis {axis} is out of range for rank {ndim}")
    return axis % ndim


def concat_shape(ctx):
    xs = ctx.input_list("xs")
    first = xs[0]
    axis = _axis(ctx, ctx.attrs["axis"], first.ndim)
    total = 0
    for x in xs:
        if x.ndim != first.ndim or x.dtype != first.dtype:
            ctx.fail(
                f"all inputs need rank {first.ndim} and dtype {first.dtype}; {x.name!r} differs"
            )
        for i, (a, b) in enumerate(zip(x.shape, first.shape)):
            if i != axis and a is not None and b is not None and a != b:
                ctx.fail(f"inputs differ on axis {i} ({a} vs {b}), which is not the concat axis")
        total = None if total is None or x.shape[axis] is None else total + x.shape[axis]
    shape = list(first.shape)
    shape[axis] = total
    ctx.set_output("out", shape, first.dtype)


def concat_cpu(xs, *, axis):
    return np.concatenate(xs, axis=axis)


def split_shape(ctx):
    x = ctx.input("x")
    num = ctx.attrs["num"]
    axis = _axis(ctx, ctx.attrs["axis"], x.ndim)
    length = x.shape[axis]
    if length is not None and length % num:
        ctx.fail(f"axis {axis} has length {length}, which does not split into {num} equal parts")
    shape = list(x.shape)
    shape[axis] = None if length is None else length // num
    ctx.set_output_list("outs", [(shape, x.dtype)] * num)


def split_cpu(x, *, num, axis):
    return np.split(x, num, axis=axis)


# -- reduce --------------------------------------------------------------------------------------


def reduce_shape(ctx):
    x = ctx.input("x")
    axes = {_axis(ctx, a, x.ndim) for a in ctx.attrs["axes"]} or set(range(x.ndim))
    keep = ctx.attrs["keepdim"]
    shape = [1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes]
    ctx.set_output("out", shape, x.dtype)


def reduce_cpu(x, *, axes, keepdim, reduction):
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max}[reduction]
    out = fn(x, axis=tuple(axes) if axes else None, keepdims=keepdim)
    return np.asarray(out, dtype=x.dtype)


# -- fill ----------------------------------------------------------------------------------------


def fill_shape(ctx):
    ctx.set_output("out", ctx.attrs["shape"], ctx.attrs["dtype"])


def fill_cpu(*, shape, value, dtype):
    return np.full(shape, value, dtype=dtype)


# -- linear --------------------------------------------------------------------------------------


def linear_shape(ctx):
    x, w, b = ctx.input("x"), ctx.input("w"), ctx.input("b")
    if x.ndim != 2 or w.ndim != 2:
        ctx.fail("x and w must be 2-D")
    if None not in (x.shape[1], w.shape[0]) and x.shape[1] != w.shape[0]:
        ctx.fail(f"x has {x.shape[1]} features but w expects {w.shape[0]}")
    if b is not None and (b.ndim != 1 or b.shape[0] not in (None, w.shape[1])):
        ctx.fail(f"b must be 1-D of length {w.shape[1]}")
    ctx.set_output("out", (x.shape[0], w.shape[1]), x.dtype)


def linear_cpu(x, w, b):
    out = x @ w
    return out if b is None else out + b


# -- dropout -------------------------------------------------------------------------------------


def dropout_shape(ctx):
    x = ctx.input("x")
    ctx.set_output("out", x.shape, x.dtype)
    if not ctx.attrs["is_test"]:
        ctx.set_output("mask", x.shape, "uint8")


def dropout_cpu(x, *, p, is_test, seed):
    if is_test:
        return x.copy(), None
    mask = (np.random.default_rng(seed).random(x.shape) >= p).astype(np.uint8)
    return (x * mask / (1.0 - p)).astype(x.dtype), mask
