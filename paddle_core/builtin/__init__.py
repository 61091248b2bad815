"""Rules of the core's own ops (declared in ops.pbtxt; their kernels are compiled into the
core's runtime module)."""

from __future__ import annotations

from paddle_core._src.base.errors import KernelRuntimeError
from paddle_core._src.graph.variable import format_shape


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


# -- control flow (while_block, cond_block): planned and run by paddle_core/_src/run/control.py


def _bool_scalar(ctx, what: str) -> None:
    """The condition must be a bool scalar: shape [] or [1]."""
    c = ctx.input("condition")
    if c.dtype != "bool" or tuple(c.shape) not in ((), (1,)):
        ctx.fail(
            f"in block {ctx.block.idx}, the condition {c.name!r} must be a bool scalar "
            f"(shape [] or [1]), got {c.dtype}{format_shape(c.shape)} ({what})"
        )


def while_block_shape(ctx):
    """out is carried, variable for variable; the condition is one of them (the body must
    recompute it, or the loop never ends)."""
    body = ctx.attrs["sub_block"]
    _bool_scalar(ctx, f"body block {body}")
    carried = ctx.input_list("carried")
    condition = ctx.input("condition")
    if condition.name not in [v.name for v in carried]:
        ctx.fail(
            f"in block {ctx.block.idx}, body block {body} never writes the condition "
            f"{condition.name!r}: list it among the carried variables"
        )
    ctx.set_output_list("out", [(v.shape, v.dtype) for v in carried])


def cond_block_shape(ctx):
    """out[i] is true_outs[i], which must have the dtype and shape of false_outs[i]."""
    program = ctx.block.program
    true_idx, false_idx = ctx.attrs["true_block"], ctx.attrs["false_block"]
    _bool_scalar(ctx, f"blocks {true_idx} and {false_idx}")
    true_outs, false_outs = ctx.attrs["true_outs"], ctx.attrs["false_outs"]
    where = f"in block {ctx.block.idx}"
    if len(true_outs) != len(false_outs):
        ctx.fail(
            f"{where}, true block {true_idx} gives {len(true_outs)} value(s) but false block "
            f"{false_idx} gives {len(false_outs)}"
        )
    specs = []
    for i, (t, f) in enumerate(zip(true_outs, false_outs)):
        tv = program.block(true_idx).var(t)
        fv = program.block(false_idx).var(f)
        if (
            tv.dtype != fv.dtype
            or len(tv.shape) != len(fv.shape)
            or any(a is not None and b is not None and a != b for a, b in zip(tv.shape, fv.shape))
        ):
            ctx.fail(
                f"{where}, result {i} differs between the branches: true block {true_idx} "
                f"gives {t!r} {tv.dtype}{format_shape(tv.shape)}, false block {false_idx} gives "
                f"{f!r} {fv.dtype}{format_shape(fv.shape)}"
            )
        shape = tuple(a if a is not None else b for a, b in zip(tv.shape, fv.shape))
        specs.append((shape, tv.dtype))
    ctx.set_output_list("out", specs)


def while_block_kernel(*args, **attrs):
    raise KernelRuntimeError(
        "op 'while_block' runs through its planned body (an executor's plan), never as a "
        "kernel called directly",
        op="while_block",
    )


def cond_block_kernel(*args, **attrs):
    raise KernelRuntimeError(
        "op 'cond_block' runs through its planned blocks (an executor's plan), never as a "
        "kernel called directly",
        op="cond_block",
    )
