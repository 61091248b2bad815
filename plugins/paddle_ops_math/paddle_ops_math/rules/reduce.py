"""Shape rules of the reductions (kernels: src/reduce_cpu.cpp).

Axes are checked here, when the op is appended: each in [-ndim, ndim), none twice (empty means
all, or none with noop_with_empty_axes; a 0-d x takes 0 or -1, as in NumPy and PyTorch). The
kernels check them again at prepare time.
"""

from __future__ import annotations


def _axes(ctx, ndim: int, axes, none_if_empty: bool = False) -> list[int]:
    """``axes`` as sorted non-negative axes of an ``ndim``-D x (empty: all of them, or none)."""
    if not axes:
        return [] if none_if_empty else list(range(ndim))
    if ndim == 0:
        if list(axes) in ([0], [-1]):
            return []  # the one element of a 0-d x: nothing to drop or keep
        ctx.fail(f"axes {list(axes)} of a 0-d x may only be one of 0 and -1 (or empty)")
    seen: set[int] = set()
    for a in axes:
        if not -ndim <= a < ndim:
            ctx.fail(f"axis {a} is out of range for a {ndim}-D x (valid: {-ndim}..{ndim - 1})")
        if a % ndim in seen:
            ctx.fail(f"axes {list(axes)} name axis {a % ndim} twice")
        seen.add(a % ndim)
    return sorted(seen)


def _reduce(ctx, axes, dtype: str | None = None, *, needs_elements: bool = False) -> None:
    """Set out to x reduced over ``axes`` (already normalised), with ``dtype`` (default x's)."""
    x = ctx.input("x")
    if needs_elements and any(x.shape[a] == 0 for a in axes):
        ctx.fail(f"{ctx.op} of no elements: axes {list(axes)} of x include an empty one")
    keep = ctx.attrs["keepdim"]
    shape = [1 if a in axes else d for a, d in enumerate(x.shape) if keep or a not in axes]
    ctx.set_output("out", shape, dtype or x.dtype)


FLOATS = ("float32", "float64", "float16", "bfloat16")
# sum and prod of the integers narrower than 64 bits: int64, or uint64 for unsigned ones
# (NumPy's; the kernels' Wide<T>).
WIDENED = {f"{sign}int{bits}": f"{sign}int64" for sign in ("", "u") for bits in (8, 16, 32)}


def _reduced(ctx) -> list[int]:
    """The axes a reduction's attrs reduce (axes, noop_with_empty_axes)."""
    noop = ctx.attrs["noop_with_empty_axes"]
    return _axes(ctx, ctx.input("x").ndim, ctx.attrs["axes"], noop)


def reduce_shape(ctx) -> None:
    """mean: x's shape reduced over axes, x's dtype (a floating one)."""
    x = ctx.input("x")
    if x.dtype not in FLOATS:
        ctx.fail(f"x must be one of {', '.join(FLOATS)}, got {x.dtype} (cast it first)")
    _reduce(ctx, _reduced(ctx))


def sum_shape(ctx) -> None:
    """sum, prod: like reduce_shape, but integers accumulate into int64, or uint64 for unsigned
    ones (like NumPy)."""
    _reduce(ctx, _reduced(ctx), WIDENED.get(ctx.input("x").dtype))


def extreme_shape(ctx) -> None:
    """max, min: like reduce_shape, any number dtype. No elements give max's or min's identity
    (-inf or inf), as in ONNX, so empty reduced axes are no error."""
    _reduce(ctx, _reduced(ctx))


def argmax_shape(ctx) -> None:
    """argmax, argmin: int64 indices, x's shape without ``axis`` (a 0-d x: axis 0 or -1)."""
    x, axis = ctx.input("x"), ctx.attrs["axis"]
    if x.ndim == 0:
        if axis not in (0, -1):
            ctx.fail(f"axis {axis} is out of range for a 0-d x (valid: -1, 0)")
        ctx.set_output("out", (), "int64")
        return
    _reduce(ctx, _axes(ctx, x.ndim, [axis]), "int64", needs_elements=True)
