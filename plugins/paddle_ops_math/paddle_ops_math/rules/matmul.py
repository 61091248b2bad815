"""Shape rules of the matrix products (kernels: src/matmul_cpu.cpp)."""

from __future__ import annotations

from math import prod

from paddle_core.rules import broadcast_shapes, default_grad


def matmul_shape(ctx):
    """numpy.matmul's shapes: a 1-D x is a row [1, K] and a 1-D y a column [K, 1], promoted for
    the product and their dimension dropped from out (transposes apply to matrices only)."""
    x, y = ctx.input("x"), ctx.input("y")
    xn, yn = x.ndim, y.ndim
    if xn == 0 or yn == 0:
        ctx.fail("x and y must be vectors or matrices (at least 1-D), not 0-d")
    if x.dtype != y.dtype:
        ctx.fail(f"x and y must share a dtype, got {x.dtype} and {y.dtype}")
    xm = (1, *x.shape) if xn == 1 else x.shape
    ym = (*y.shape, 1) if yn == 1 else y.shape
    m, kx = xm[-2:][:: -1 if ctx.attrs["transpose_x"] and xn > 1 else 1]
    ky, n = ym[-2:][:: -1 if ctx.attrs["transpose_y"] and yn > 1 else 1]
    if kx is not None and ky is not None and kx != ky:
        ctx.fail(f"inner dimensions differ: {kx} (x) vs {ky} (y)")
    batch = broadcast_shapes(ctx, xm[:-2], ym[:-2])
    rows, cols = (m,) if xn > 1 else (), (n,) if yn > 1 else ()
    bias = ctx.input("bias")
    if bias is not None:
        if yn == 1:
            ctx.fail("bias needs y as matrices (out's last dimension), but y is a vector")
        size = bias.shape[0] if bias.ndim == 1 else None
        if bias.dtype != x.dtype or bias.ndim != 1 or (None not in (n, size) and size != n):
            ctx.fail(
                f"bias must be {x.dtype}[{n}] (out's last dimension), got "
                f"{bias.dtype}{list(bias.shape)}"
            )
    ctx.set_output("out", (*batch, *rows, *cols), x.dtype)


def matmul_grad(ctx):
    """matmul_grad for x and y; the bias's gradient, where it has one, is out's gradient summed
    over every axis but the last."""
    default_grad(ctx)
    bias_grad = ctx.input_grad("bias")
    if bias_grad is not None:
        rank = len(ctx.op.block.var(ctx.output("out")).shape)
        ctx.append_op(
            "sum",
            {"x": ctx.output_grad("out")},
            {"out": bias_grad},
            # (a vector x makes out [N]: no axis to sum, and out's gradient is the bias's)
            {"axes": list(range(rank - 1)), "keepdim": False, "noop_with_empty_axes": True},
        )


def _flat(dims):
    return None if None in dims else prod(dims)


def matmul_2d_shape(ctx):
    x, y = ctx.input("x"), ctx.input("y")
    xk, yk = ctx.attrs["x_num_col_dims"], ctx.attrs["y_num_col_dims"]
    if xk > x.ndim or yk > y.ndim:
        ctx.fail(f"x_num_col_dims={xk} / y_num_col_dims={yk} exceed the ranks {x.ndim} / {y.ndim}")
    if x.dtype != y.dtype:
        ctx.fail(f"x and y must share a dtype, got {x.dtype} and {y.dtype}")
    inner_x, inner_y = _flat(x.shape[xk:]), _flat(y.shape[:yk])
    if inner_x is not None and inner_y is not None and inner_x != inner_y:
        ctx.fail(f"x flattens to [*, {inner_x}] and y to [{inner_y}, *]: inner dimensions differ")
    ctx.set_output("out", (*x.shape[:xk], *y.shape[yk:]), x.dtype)


def rowwise_add_shape(ctx):
    x, b = ctx.input("x"), ctx.input("b")
    if x.ndim != 2 or b.ndim != 1:
        ctx.fail("x must be 2-D and b 1-D")
    if None not in (x.shape[1], b.shape[0]) and x.shape[1] != b.shape[0]:
        ctx.fail(f"b has {b.shape[0]} elements but x has {x.shape[1]} columns")
    if x.dtype != b.dtype:
        ctx.fail(f"x and b must share a dtype, got {x.dtype} and {b.dtype}")
    ctx.set_output("out", x.shape, x.dtype)
