"""Rules of the core's own ops (declared in ops.pbtxt; their kernels are compiled into the
core's runtime module)."""

from __future__ import annotations


def add_n_shape(ctx):
    xs = ctx.input_list("xs")
    first = xs[0]
    for x in xs[1:]:
        if (
            x.dtype != first.dtype
            or len(x.shape) != len(first.shape)
            or any(a is not None and b is not None and a != b for a, b in zip(x.shape, first.shape))
        ):
            ctx.fail(f"all inputs need {first.dtype}{list(first.shape)}; {x.name!r} differs")
    ctx.set_output("out", first.shape, first.dtype)


def add_n_grad(ctx):
    """Each input's gradient is the output's gradient (copied by a one-input add_n)."""
    g = ctx.output_grad("out")
    for name in ctx.input_grads("xs"):
        if name is not None:
            ctx.append_op("add_n", {"xs": [g]}, {"out": name})
