"""Shape rules of conv2d, conv2d_transpose, pool2d and the adaptive pools (kernels:
src/conv_cpu.cpp, src/pool_cpu.cpp; the same geometry in C++ is src/window.hpp and src/pool.hpp).

Spatial sizes may be unknown (None) when appending; channels, kernels and every attr are
checked here, naming the value that does not fit. The grad ops use the core's grad_shapes: the
core holds a grad op's inputs to these forward rules first (an ``out_grad`` of any other shape
is refused), so a grad op called directly or from a hand-built program never hands its kernel
tensors that do not fit. With channel_block b (set by the layout pass, layout.py), out is
oneDNN's blocked [N, C / b, OH, OW, b] and x may be too (rules/layout.py).
"""

from __future__ import annotations

from typing import NamedTuple

from .layout import blocked_shape, plain_shape

FLOATS = ("float32", "float64")


class _Activation(NamedTuple):
    """x as the rules read it: its NCHW shape, whichever layout holds it."""

    shape: tuple
    dtype: str


def _fmt(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _nchw(ctx, slot: str):
    var = ctx.input(slot)
    if var.ndim != 4:
        ctx.fail(f"{slot} must be 4-D (NCHW), got {_fmt(var.shape)}")
    if var.dtype not in FLOATS:
        ctx.fail(f"{slot} must be float32 or float64, got {var.dtype}")
    return var


def _x(ctx) -> _Activation:
    """x: 4-D (NCHW), or with channel_block b, blocked [N, C / b, H, W, b]."""
    var = ctx.input("x")
    b = ctx.attrs.get("channel_block", 0)
    if b and var.ndim == 5:
        if var.dtype not in FLOATS:
            ctx.fail(f"x must be float32 or float64, got {var.dtype}")
        return _Activation(plain_shape(ctx, var.shape, b, "x"), var.dtype)
    var = _nchw(ctx, "x")
    return _Activation(var.shape, var.dtype)


def _out(ctx, shape: tuple, dtype: str) -> tuple:
    """Set out: [N, C, OH, OW] in the layout channel_block names; returns its shape."""
    b = ctx.attrs.get("channel_block", 0)
    shape = blocked_shape(ctx, shape, b, "out") if b else shape
    ctx.set_output("out", shape, dtype)
    return shape


def _pair(ctx, name: str) -> tuple[int, int]:
    values = ctx.attrs[name]
    if len(values) != 2:
        ctx.fail(f"attr {name!r} must have 2 values (height, width), got {list(values)}")
    return tuple(values)


def _paddings(ctx) -> tuple[tuple[int, int], tuple[int, int]]:
    """((top, bottom), (left, right)) from 2 values (both sides) or 4."""
    p = list(ctx.attrs["paddings"])
    if len(p) == 2:
        p = [p[0], p[0], p[1], p[1]]
    if len(p) != 4:
        ctx.fail(
            "attr 'paddings' must have 2 values (height, width) or 4 (top, bottom, left, "
            f"right), got {list(ctx.attrs['paddings'])}"
        )
    return (p[0], p[1]), (p[2], p[3])


def _windows(ctx, size, kernel, stride, pads, dilation, ceil_mode, axis) -> int | None:
    """How many windows fit along an axis of ``size`` (None if unknown); fail if none does."""
    if size is None:
        return None
    span = dilation * (kernel - 1) + 1
    room = size + pads[0] + pads[1] - span
    if room < 0:
        ctx.fail(
            f"the {axis} window ({span}, with dilation) is larger than the padded input "
            f"({size} + padding {pads[0] + pads[1]})"
        )
    count = room // stride + 1
    if ceil_mode and room % stride:
        count += 1
        if (count - 1) * stride >= size + pads[0]:  # the extra window would hold padding only
            count -= 1
    return count


def _same_dtype(ctx, x, slot: str) -> None:
    var = ctx.input(slot)
    if var is not None and var.dtype != x.dtype:
        ctx.fail(f"{slot} must have x's dtype {x.dtype}, got {var.dtype}")


def _conv_filter(ctx, x, transpose: bool) -> tuple[int, int]:
    """(groups, output channels), after checking filter and bias against x."""
    w = _nchw(ctx, "filter")
    _same_dtype(ctx, x, "filter")
    groups, channels = ctx.attrs["groups"], x.shape[1]
    if transpose:
        if channels is not None and w.shape[0] != channels:
            ctx.fail(f"filter {_fmt(w.shape)} must have x's {channels} channels first")
        if w.shape[0] % groups:
            ctx.fail(f"x's channels ({w.shape[0]}) must be divisible by groups ({groups})")
        out_channels = w.shape[1] * groups
    else:
        out_channels = w.shape[0]
        if channels is not None and channels % groups:
            ctx.fail(f"x's channels ({channels}) must be divisible by groups ({groups})")
        if out_channels % groups:
            ctx.fail(
                f"filter's output channels ({out_channels}) must be divisible by groups ({groups})"
            )
        if channels is not None and w.shape[1] != channels // groups:
            ctx.fail(
                f"filter {_fmt(w.shape)} must have x's channels / groups = "
                f"{channels // groups} input channels"
            )
    bias = ctx.input("bias")
    if bias is not None:
        _same_dtype(ctx, x, "bias")
        if tuple(bias.shape) != (out_channels,):
            ctx.fail(
                f"bias must be [{out_channels}] (one per output channel), got {_fmt(bias.shape)}"
            )
    return groups, out_channels


def _conv_out(ctx) -> tuple:
    x = _x(ctx)
    _, filters = _conv_filter(ctx, x, transpose=False)
    w = ctx.input("filter")
    strides, dilations, pads = _pair(ctx, "strides"), _pair(ctx, "dilations"), _paddings(ctx)
    size = [
        _windows(
            ctx, x.shape[2 + a], w.shape[2 + a], strides[a], pads[a], dilations[a], False, axis
        )
        for a, axis in enumerate(("height", "width"))
    ]
    return (x.shape[0], filters, *size)


def _conv_transpose_out(ctx) -> tuple:
    x = _nchw(ctx, "x")
    _, filters = _conv_filter(ctx, x, transpose=True)
    w = ctx.input("filter")
    strides, dilations, pads = _pair(ctx, "strides"), _pair(ctx, "dilations"), _paddings(ctx)
    wanted = list(ctx.attrs["output_size"])
    if wanted and len(wanted) != 2:
        ctx.fail(f"attr 'output_size' must be empty or [height, width], got {wanted}")
    size = []
    for a, axis in enumerate(("height", "width")):
        h = x.shape[2 + a]
        least = None
        if h is not None:
            least = (h - 1) * strides[a] - sum(pads[a]) + dilations[a] * (w.shape[2 + a] - 1) + 1
            if least < 1:
                ctx.fail(f"the padding crops the whole {axis} of the output ({least} left)")
        if not wanted:
            size.append(least)
            continue
        if least is not None and not least <= wanted[a] < least + strides[a]:
            ctx.fail(
                f"output_size {wanted}: its {axis} must be in [{least}, {least + strides[a]}) "
                f"for x {_fmt(x.shape)}"
            )
        size.append(wanted[a])
    return (x.shape[0], filters, *size)


def _pool_out(ctx) -> tuple:
    x = _x(ctx)
    if ctx.attrs["global_pooling"]:
        return (*x.shape[:2], 1, 1)
    ksize, strides, pads = _pair(ctx, "ksize"), _pair(ctx, "strides"), _paddings(ctx)
    for a, axis in enumerate(("height", "width")):
        if max(pads[a]) >= ksize[a]:
            ctx.fail(
                f"the {axis} padding {list(pads[a])} must be smaller than the window "
                f"({ksize[a]}), or some windows would hold padding only"
            )
    size = [
        _windows(
            ctx, x.shape[2 + a], ksize[a], strides[a], pads[a], 1, ctx.attrs["ceil_mode"], axis
        )
        for a, axis in enumerate(("height", "width"))
    ]
    return (*x.shape[:2], *size)


def conv2d_shape(ctx) -> None:
    dtype = ctx.input("x").dtype
    if ctx.attrs["channel_block"] and dtype != "float32":
        ctx.fail(
            f"channel_block (blocked tensors) needs float32, which oneDNN computes; x is {dtype}"
        )
    fingerprint = ctx.input("filter_fingerprint")
    if fingerprint is not None and (fingerprint.dtype, tuple(fingerprint.shape)) != ("int64", (1,)):
        ctx.fail(
            "filter_fingerprint must be int64 [1] (a fingerprint op's out), got "
            f"{fingerprint.dtype}{_fmt(fingerprint.shape)}"
        )
    out = _out(ctx, _conv_out(ctx), dtype)
    residual = ctx.input("residual")
    if residual is not None:
        if residual.dtype != dtype or not _fits(residual.shape, out):
            ctx.fail(
                f"residual must be out's {dtype}{_fmt(out)}, got "
                f"{residual.dtype}{_fmt(residual.shape)}"
            )
    if (
        ctx.attrs["fuse_activation"] == "clip"
        and not ctx.attrs["fuse_alpha"] <= ctx.attrs["fuse_beta"]
    ):
        ctx.fail(
            f"clip's bounds fuse_alpha {ctx.attrs['fuse_alpha']} and fuse_beta "
            f"{ctx.attrs['fuse_beta']} must be ordered"
        )


def _fits(a: tuple, b: tuple) -> bool:
    """Whether shapes ``a`` and ``b`` can be the same (unknown dimensions match any)."""
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def conv2d_transpose_shape(ctx) -> None:
    ctx.set_output("out", _conv_transpose_out(ctx), ctx.input("x").dtype)


def pool2d_shape(ctx) -> None:
    _out(ctx, _pool_out(ctx), ctx.input("x").dtype)


def _output_size(ctx) -> tuple[int, int]:
    """The adaptive pools' output_size: [OH, OW], or one value for both."""
    size = list(ctx.attrs["output_size"])
    if len(size) == 1:
        size *= 2
    if len(size) != 2:
        ctx.fail(
            "attr 'output_size' must have 1 value (both axes) or 2 (height, width), got "
            f"{list(ctx.attrs['output_size'])}"
        )
    return size[0], size[1]


def adaptive_pool2d_shape(ctx) -> None:
    """adaptive_avg_pool2d, adaptive_max_pool2d: [N, C, *output_size]; every bin holds at
    least one element, so x's planes must not be empty."""
    x = _nchw(ctx, "x")
    size = _output_size(ctx)
    for a, axis in enumerate(("height", "width")):
        if x.shape[2 + a] == 0:
            ctx.fail(f"x's {axis} is 0: an empty plane has nothing to pool into bins")
    ctx.set_output("out", (*x.shape[:2], *size), x.dtype)
