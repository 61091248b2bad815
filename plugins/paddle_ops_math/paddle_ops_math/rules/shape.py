"""Rules of the shape ops (kernels: src/shape_cpu.cpp).

Shapes may hold None (unknown until run time): each rule keeps what it can and the executor
checks the rest when it re-runs the rule on the fed shapes. Gradients compose the ops
themselves (reshape back, the inverse permutation, split <-> concat, squeeze <-> unsqueeze,
tril / triu of the gradient); only flatten, stack, slice, broadcast_to and tile have grad
kernels (flatten_grad, stack_grad, slice_grad, broadcast_to_grad, tile_grad).
"""

from __future__ import annotations

from math import prod

from paddle_core import ProgramError

# The most outputs stack_grad creates (split's num allows as many): a variable each.
MAX_PARTS = 65536


def _axis(ctx, axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < ndim:
        ctx.fail(f"{what} {axis} is out of range for {ndim} dimensions")
    return axis % ndim


def _axes(ctx, axes: list[int], ndim: int, what: str = "axes") -> list[int]:
    normal = [_axis(ctx, a, ndim, what) for a in axes]
    if len(set(normal)) != len(normal):
        ctx.fail(f"{what} {axes} name an axis twice")
    return normal


def _shape(ctx, slot: str) -> tuple:
    """The declared shape of a grad rule's forward input (None for unknown dimensions)."""
    return ctx.op.block.var(ctx.input(slot)).shape


# -- reshape ------------------------------------------------------------------------------------


def _copied(ctx) -> list[bool]:
    """Per entry of reshape's shape: whether it copies x's dimension (a 0, unless allowzero)."""
    return [d == 0 and not ctx.attrs["allowzero"] for d in ctx.attrs["shape"]]


def reshape_shape(ctx):
    x, shape = ctx.input("x"), ctx.attrs["shape"]
    copied = _copied(ctx)
    if shape.count(-1) > 1:
        ctx.fail(f"shape {shape} has more than one -1")
    if any(c and i >= x.ndim for i, c in enumerate(copied)):
        ctx.fail(f"shape {shape} has a 0 (copy x's dimension) beyond x's {x.ndim} dimensions")
    if -1 in shape and 0 in shape and not any(copied):
        ctx.fail(f"shape {shape} has both -1 and 0 with allowzero: the -1 cannot be inferred")
    out = [x.shape[i] if c else d for i, (d, c) in enumerate(zip(shape, copied))]
    # Dimensions copied by a 0 are equal on both sides and cancel out, so [0, -1] keeps an
    # unknown batch dimension and still infers the rest.
    rest = [d for i, d in enumerate(x.shape) if i >= len(shape) or not copied[i]]
    have = None if None in rest else prod(rest)
    want = prod(d for d, c in zip(shape, copied) if d != -1 and not c)
    if -1 in shape:
        if have is not None and have % want:
            ctx.fail(f"x has {have} elements to spread, which {shape} cannot hold")
        out[shape.index(-1)] = None if have is None else have // want
    elif have is not None and have != want and (None in x.shape or prod(x.shape) != prod(out)):
        ctx.fail(f"x cannot take shape {shape}: the element counts differ")
    ctx.set_output("out", out, x.dtype)


def reshape_grad(ctx):
    """Reshape the gradient back to x's shape: x's known dimensions, 0 where the forward
    copied x's dimension, -1 for one unknown dimension."""
    gx = ctx.input_grad("x")
    if gx is None:
        return
    xshape, shape = _shape(ctx, "x"), ctx.attrs["shape"]
    copied = _copied(ctx)
    copied = [i < len(shape) and copied[i] for i in range(len(xshape))]
    if any(d == 0 and not c for d, c in zip(xshape, copied)):
        # x is empty, and a literal 0 in the shape attr would mean "copy": empty zeros will do.
        ctx.append_op("fill_like", {"x": ctx.input("x")}, {"out": gx}, {"value": 0.0})
        return
    back = [0 if c else (-1 if d is None else d) for d, c in zip(xshape, copied)]
    if back.count(-1) > 1:
        raise ProgramError(
            f"op 'reshape' ({ctx.input('x')!r} of shape {list(xshape)} to {shape}): its gradient "
            "cannot be reshaped back with more than one unknown dimension; declare x's shape"
        )
    ctx.append_op("reshape", {"x": ctx.output_grad("out")}, {"out": gx}, {"shape": back})


# -- flatten ------------------------------------------------------------------------------------


def _flattened(ctx, ndim: int) -> tuple[int, int]:
    """flatten's start_axis and stop_axis as axes of x ([0, ndim), a 0-d x counting as 1-D)."""
    rank = max(ndim, 1)
    start = _axis(ctx, ctx.attrs["start_axis"], rank, "start_axis")
    stop = _axis(ctx, ctx.attrs["stop_axis"], rank, "stop_axis")
    if start > stop:
        ctx.fail(
            f"start_axis {ctx.attrs['start_axis']} (axis {start}) comes after stop_axis "
            f"{ctx.attrs['stop_axis']} (axis {stop}) of x's {rank} dimensions"
        )
    return start, stop


def flatten_shape(ctx):
    """x's dimensions with start_axis ... stop_axis replaced by their product (unknown if one
    of them is, unless another is 0)."""
    x = ctx.input("x")
    start, stop = _flattened(ctx, x.ndim)
    dims = list(x.shape) or [1]
    merged = dims[start : stop + 1]
    size = 0 if 0 in merged else (None if None in merged else prod(merged))
    ctx.set_output("out", [*dims[:start], size, *dims[stop + 1 :]], x.dtype)


# -- transpose ----------------------------------------------------------------------------------


def transpose_shape(ctx):
    x, perm = ctx.input("x"), ctx.attrs["perm"]
    if perm and len(perm) != x.ndim:
        ctx.fail(f"perm {perm} has {len(perm)} entries for {x.ndim} dimensions")
    perm = _axes(ctx, perm, x.ndim, "perm") if perm else range(x.ndim - 1, -1, -1)
    ctx.set_output("out", [x.shape[p] for p in perm], x.dtype)


def transpose_grad(ctx):
    """Transpose the gradient by the inverse permutation."""
    gx = ctx.input_grad("x")
    if gx is None:
        return
    ndim = len(_shape(ctx, "x"))
    perm = [p % ndim for p in ctx.attrs["perm"]] or list(range(ndim - 1, -1, -1))
    inverse = [0] * ndim
    for k, p in enumerate(perm):
        inverse[p] = k
    ctx.append_op("transpose", {"x": ctx.output_grad("out")}, {"out": gx}, {"perm": inverse})


# -- concat, stack and split --------------------------------------------------------------------


def concat_shape(ctx):
    xs = ctx.input_list("xs")
    first = xs[0]
    if first.ndim == 0:
        ctx.fail("0-d tensors have no axis to join along")
    axis = _axis(ctx, ctx.attrs["axis"], first.ndim)
    shape, total = list(first.shape), 0
    for x in xs:
        if x.dtype != first.dtype or x.ndim != first.ndim:
            ctx.fail(
                f"inputs must share one dtype and rank; {x.name!r} differs from {first.name!r}"
            )
        for k, d in enumerate(x.shape):
            if k != axis and d is not None:
                if shape[k] not in (None, d):
                    ctx.fail(f"inputs differ in dimension {k} ({shape[k]} vs {d}), not only axis")
                shape[k] = d
        total = None if total is None or x.shape[axis] is None else total + x.shape[axis]
    shape[axis] = total
    ctx.set_output("out", shape, first.dtype)


def concat_grad(ctx):
    """Split the gradient into the inputs' sizes along axis."""
    grads = ctx.input_grads("xs")
    if all(g is None for g in grads):
        return
    names = ctx.inputs("xs")
    shapes = [ctx.op.block.var(n).shape for n in names]
    axis = ctx.attrs["axis"] % len(shapes[0])
    sections = [-1 if s[axis] is None else s[axis] for s in shapes]
    if sections.count(-1) > 1:
        raise ProgramError(
            f"op 'concat' (axis {axis} of {names}): its gradient cannot be split back with more "
            "than one input of unknown size along the axis; declare their sizes"
        )
    outs = [g if g is not None else ctx.unused_grad(n) for g, n in zip(grads, names)]
    ctx.append_op(
        "split",
        {"x": ctx.output_grad("out")},
        {"outs": outs},
        {"sections": sections, "axis": axis},
    )


def stack_shape(ctx):
    """xs' common shape (each dimension known where any input knows it) with their count
    inserted at axis, in [-(ndim + 1), ndim] as numpy.stack takes it."""
    xs = ctx.input_list("xs")
    first = xs[0]
    axis = ctx.attrs["axis"]
    if not -(first.ndim + 1) <= axis <= first.ndim:
        ctx.fail(
            f"axis {axis} is out of range for stacking {first.ndim}-D tensors: it must be in "
            f"[{-(first.ndim + 1)}, {first.ndim}]"
        )
    shape = list(first.shape)
    for x in xs:
        if x.dtype != first.dtype or x.ndim != first.ndim:
            ctx.fail(
                f"inputs must share one dtype and shape; {x.name!r} differs from {first.name!r}"
            )
        for k, d in enumerate(x.shape):
            if d is not None:
                if shape[k] not in (None, d):
                    ctx.fail(f"inputs must share one shape; they differ in dimension {k}")
                shape[k] = d
    shape.insert(axis % (first.ndim + 1), len(xs))
    ctx.set_output("out", shape, first.dtype)


def stack_grad_shape(ctx):
    """One xs_grad per slice of out_grad along axis: out_grad's shape without that axis."""
    g = ctx.input("out_grad")
    if g.ndim == 0:
        ctx.fail("out_grad is 0-d: it has no stacked axis")
    axis = _axis(ctx, ctx.attrs["axis"], g.ndim)
    count = g.shape[axis]
    if count is None:
        ctx.fail(f"out_grad's dimension {axis} (the stacked axis) must be known: it counts xs")
    if count > MAX_PARTS:
        ctx.fail(
            f"out_grad's dimension {axis} (the stacked axis) is {count}: stack_grad gives at "
            f"most {MAX_PARTS} xs_grad"
        )
    part = (*g.shape[:axis], *g.shape[axis + 1 :])
    ctx.set_output_list("xs_grad", [(part, g.dtype)] * count)


def split_shape(ctx):
    x, num, sections = ctx.input("x"), ctx.attrs["num"], ctx.attrs["sections"]
    if x.ndim == 0:
        ctx.fail("a 0-d tensor has no axis to split along")
    axis = _axis(ctx, ctx.attrs["axis"], x.ndim)
    if (num > 0) == bool(sections):
        ctx.fail(f"give exactly one of num and sections, got num={num}, sections={sections}")
    dim = x.shape[axis]
    if num:
        sizes = [None] * num if dim is None else _parts(ctx, dim, num, axis)
    else:
        sizes = _sections(ctx, sections, dim)
    before, after = x.shape[:axis], x.shape[axis + 1 :]
    ctx.set_output_list("outs", [((*before, s, *after), x.dtype) for s in sizes])


def _parts(ctx, dim: int, num: int, axis: int) -> list[int]:
    """num parts of ceil(dim / num) elements, the last one taking the rest: equal parts when
    num divides dim, else ONNX's rule (Split's num_outputs; numpy.array_split spreads the
    remainder over the first parts instead)."""
    size = -(-dim // num)
    last = dim - size * (num - 1)
    if last < 0:
        ctx.fail(
            f"axis {axis} has size {dim}: {num - 1} parts of {size} would leave {last} "
            "elements for the last one"
        )
    return [size] * (num - 1) + [last]


def _sections(ctx, sections: list[int], dim: int | None) -> list[int | None]:
    if sections.count(-1) > 1:
        ctx.fail(f"sections {sections} has more than one -1")
    known = sum(s for s in sections if s != -1)
    if dim is None:
        return [None if s == -1 else s for s in sections]
    if -1 in sections:
        if known > dim:
            ctx.fail(f"sections {sections} take more than the axis' {dim} elements")
        return [dim - known if s == -1 else s for s in sections]
    if known != dim:
        ctx.fail(f"sections {sections} add up to {known}, but the axis has {dim} elements")
    return list(sections)


def split_grad(ctx):
    """Concatenate the parts' gradients (zeros for parts that received none)."""
    gx = ctx.input_grad("x")
    if gx is None:
        return
    grads = [
        g if g is not None else ctx.zeros_like(n)
        for g, n in zip(ctx.output_grads("outs"), ctx.outputs("outs"))
    ]
    ctx.append_op("concat", {"xs": grads}, {"out": gx}, {"axis": ctx.attrs["axis"]})


# -- slice --------------------------------------------------------------------------------------


def slice_shape(ctx):
    x, attrs = ctx.input("x"), ctx.attrs
    axes, starts, ends = attrs["axes"], attrs["starts"], attrs["ends"]
    steps = attrs["steps"] or [1] * len(axes)
    if not len(axes) == len(starts) == len(ends) == len(steps):
        ctx.fail(
            "axes, starts, ends and steps need one entry per sliced axis, got "
            f"{len(axes)}, {len(starts)}, {len(ends)} and {len(steps)}"
        )
    if 0 in steps:
        ctx.fail(f"steps {steps} must not hold 0")
    out = list(x.shape)
    for a, start, end, step in zip(_axes(ctx, axes, x.ndim), starts, ends, steps):
        if out[a] is not None:
            out[a] = len(range(*slice(start, end, step).indices(out[a])))
    ctx.set_output("out", out, x.dtype)


# -- squeeze and unsqueeze ----------------------------------------------------------------------


def squeeze_shape(ctx):
    x, axes = ctx.input("x"), ctx.attrs["axes"]
    if not axes and None in x.shape:
        ctx.fail(
            "axes=[] removes every axis of size 1, but x's sizes are not all known; name the axes"
        )
    axes = _axes(ctx, axes, x.ndim) if axes else [k for k, d in enumerate(x.shape) if d == 1]
    for a in axes:
        if x.shape[a] not in (1, None):
            ctx.fail(f"axis {a} has size {x.shape[a]}, not 1")
    ctx.set_output("out", [d for k, d in enumerate(x.shape) if k not in axes], x.dtype)


def squeeze_grad(ctx):
    """Put the removed axes back (unsqueeze) into the gradient."""
    gx = ctx.input_grad("x")
    if gx is None:
        return
    xshape, axes = _shape(ctx, "x"), ctx.attrs["axes"]
    axes = [a % len(xshape) for a in axes] or [k for k, d in enumerate(xshape) if d == 1]
    ctx.append_op("unsqueeze", {"x": ctx.output_grad("out")}, {"out": gx}, {"axes": axes})


def unsqueeze_shape(ctx):
    x = ctx.input("x")
    rank = x.ndim + len(ctx.attrs["axes"])
    inserted = set(_axes(ctx, ctx.attrs["axes"], rank))
    rest = iter(x.shape)
    ctx.set_output("out", [1 if k in inserted else next(rest) for k in range(rank)], x.dtype)


def unsqueeze_grad(ctx):
    """Remove the inserted axes (squeeze) from the gradient."""
    gx = ctx.input_grad("x")
    if gx is None:
        return
    rank = len(_shape(ctx, "x")) + len(ctx.attrs["axes"])
    axes = [a % rank for a in ctx.attrs["axes"]]
    if not axes:  # nothing was inserted (and squeeze without axes removes every size-1 axis)
        ctx.append_op("assign", {"x": ctx.output_grad("out")}, {"out": gx})
        return
    ctx.append_op("squeeze", {"x": ctx.output_grad("out")}, {"out": gx}, {"axes": axes})


# -- broadcast_to and expand --------------------------------------------------------------------


def broadcast_to_shape(ctx):
    x, shape = ctx.input("x"), ctx.attrs["shape"]
    lead = len(shape) - x.ndim
    if lead < 0:
        ctx.fail(f"shape {shape} has fewer dimensions than x")
    out = []
    for k, t in enumerate(shape):
        d = x.shape[k - lead] if k >= lead else 1  # missing leading dimensions act as 1
        if t == -1:
            if k < lead:
                ctx.fail(f"shape {shape}: -1 at position {k} would keep a dimension x lacks")
            out.append(d)
        elif d not in (None, 1, t):
            ctx.fail(f"x's dimension {k - lead} (size {d}) cannot be broadcast to {t} in {shape}")
        else:
            out.append(t)
    ctx.set_output("out", out, x.dtype)


def broadcast_to_grad_shape(ctx):
    """x_grad like x. broadcast_to_grad has no shape attr (the core cannot re-run the forward
    rule), so out_grad is held to what broadcast_to can give: x broadcast to out_grad's shape."""
    x, g = ctx.input("x"), ctx.input("out_grad")
    if g.dtype != x.dtype:
        ctx.fail(f"out_grad must have x's dtype {x.dtype}, got {g.dtype}")
    lead = g.ndim - x.ndim
    if lead < 0 or any(
        d not in (None, 1, t) and t is not None for d, t in zip(x.shape, g.shape[lead:])
    ):
        ctx.fail(f"x cannot be broadcast to out_grad's shape {list(g.shape)}")
    ctx.set_output("x_grad", x.shape, x.dtype)


def expand_grad(ctx):
    """expand is broadcast_to: sum the gradient back with broadcast_to_grad."""
    gx = ctx.input_grad("x")
    if gx is not None:
        ctx.append_op(
            "broadcast_to_grad",
            {"x": ctx.input("x"), "out_grad": ctx.output_grad("out")},
            {"x_grad": gx},
        )


# -- tile ---------------------------------------------------------------------------------------


def tile_shape(ctx):
    """numpy.tile: x's shape and repeat_times aligned to the right (1s in front of the shorter),
    multiplied (an unknown dimension stays unknown unless repeated 0 times)."""
    x, reps = ctx.input("x"), list(ctx.attrs["repeat_times"])
    rank = max(x.ndim, len(reps))
    dims = [1] * (rank - x.ndim) + list(x.shape)
    reps = [1] * (rank - len(reps)) + reps
    out = [0 if r == 0 else (None if d is None else d * r) for d, r in zip(dims, reps)]
    ctx.set_output("out", out, x.dtype)


# -- tril and triu ------------------------------------------------------------------------------


def triangle_shape(ctx):
    """tril, triu: like x, which must hold matrices (at least 2-D)."""
    x = ctx.input("x")
    if x.ndim < 2:
        ctx.fail(
            f"x must be at least 2-D (matrices in its last two axes), got {x.ndim}-D "
            f"{list(x.shape)}"
        )
    ctx.set_output("out", x.shape, x.dtype)


def triangle_grad(ctx):
    """tril / triu keep some elements and zero the rest: the gradient keeps the same ones."""
    gx = ctx.input_grad("x")
    if gx is not None:
        ctx.append_op(
            ctx.op.type,
            {"x": ctx.output_grad("out")},
            {"out": gx},
            {"diagonal": ctx.attrs["diagonal"]},
        )


# -- shape and size -----------------------------------------------------------------------------


def shape_of_shape(ctx):
    """shape: int64 [end - start], start and end as ONNX's Shape clamps them."""
    nd = ctx.input("x").ndim
    start, end = (
        min(max(v + nd if v < 0 else v, 0), nd) for v in (ctx.attrs["start"], ctx.attrs["end"])
    )
    ctx.set_output("out", (max(end - start, 0),), "int64")


def size_shape(ctx):
    """size: an int64 scalar."""
    ctx.set_output("out", (), "int64")


# -- pad ----------------------------------------------------------------------------------------


def pad_shape(ctx):
    """x's dimensions plus their paddings; every mode but constant needs a nonempty axis to
    repeat into its padding."""
    x, pads, mode = ctx.input("x"), ctx.attrs["paddings"], ctx.attrs["mode"]
    if len(pads) != 2 * x.ndim:
        ctx.fail(
            f"paddings has {len(pads)} entries; x's {x.ndim} axes need {2 * x.ndim} "
            "(before and after each)"
        )
    out = []
    for k, d in enumerate(x.shape):
        before, after = pads[2 * k], pads[2 * k + 1]
        size = None if d is None else d + before + after
        if size is not None and size < 0:
            ctx.fail(f"axis {k} of size {d} padded by {before} and {after} would have {size}")
        if d == 0 and size and mode != "constant":
            ctx.fail(f"axis {k} is empty: mode {mode!r} has nothing to repeat into its padding")
        out.append(size)
    ctx.set_output("out", out, x.dtype)
