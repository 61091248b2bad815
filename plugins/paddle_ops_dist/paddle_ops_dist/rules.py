"""Shape and grad rules of the collective ops. Every rank appends the same ops with the same
shapes, so each gradient is again a collective: what a rank's x contributed to every rank's out
comes back to it through the transposed collective."""

from __future__ import annotations

from paddle_core import ProgramError


def same_shapes(ctx):
    ctx.set_output_list("out", [(v.shape, v.dtype) for v in ctx.input_list("x")])


def flag_shape(ctx):
    ctx.set_output("out", [], "bool")


def handle_shape(ctx):
    ctx.set_output("handle", [], "int64")


def wait_shape(ctx):
    ctx.set_output_list("out", [(v.shape, v.dtype) for v in ctx.input_list("x")])


def allgather_shape(ctx):
    x, n = ctx.input("x"), ctx.attrs["nranks"]
    if x.ndim == 0:
        ctx.fail("c_allgather concatenates along axis 0; x must have at least one dimension")
    first = x.shape[0] * n if x.shape[0] >= 0 else -1
    ctx.set_output("out", [first, *x.shape[1:]], x.dtype)


def reduce_scatter_shape(ctx):
    x, n = ctx.input("x"), ctx.attrs["nranks"]
    if x.ndim == 0:
        ctx.fail("c_reduce_scatter splits along axis 0; x must have at least one dimension")
    if x.shape[0] >= 0 and x.shape[0] % n:
        ctx.fail(f"x's first dimension, {x.shape[0]}, does not split into nranks={n} equal parts")
    first = x.shape[0] // n if x.shape[0] >= 0 else -1
    ctx.set_output("out", [first, *x.shape[1:]], x.dtype)


def _transposed(ctx, op: str, attrs: dict) -> None:
    """x's gradients through ``op`` applied to out's, for the items that have both; zeros for
    an x whose out gets no gradient."""
    pairs, zeros = [], []
    for x, x_grad, out_grad in zip(ctx.inputs("x"), ctx.input_grads("x"), ctx.output_grads("out")):
        if x_grad is not None:
            (pairs if out_grad is not None else zeros).append((x, x_grad, out_grad))
    if pairs:
        ctx.append_op(op, {"x": [p[2] for p in pairs]}, {"out": [p[1] for p in pairs]}, attrs)
    for x, x_grad, _ in zeros:
        ctx.append_op("fill_like", {"x": x}, {"out": x_grad}, {"value": 0.0})


def _sum_only(ctx, op: str) -> None:
    if ctx.attrs["reduce_type"] != "sum":
        raise ProgramError(
            f"{op} with reduce_type={ctx.attrs['reduce_type']!r} has no gradient; only "
            "reduce_type='sum' has one"
        )


def allreduce_grad(ctx):
    """Every rank's out is the sum of all x: each x's gradient is the sum of out's."""
    _sum_only(ctx, "c_allreduce")
    _transposed(ctx, "c_allreduce", {"reduce_type": "sum", "ring_id": ctx.attrs["ring_id"]})


def broadcast_grad(ctx):
    """Only the root's x reaches every out: it gets the sum of their gradients, others zeros."""
    attrs = {"reduce_type": "sum", "root": ctx.attrs["root"], "ring_id": ctx.attrs["ring_id"]}
    _transposed(ctx, "c_reduce", attrs)


def reduce_grad(ctx):
    """Every x reaches the root's out only: each gets the root's gradient."""
    _sum_only(ctx, "c_reduce")
    _transposed(ctx, "c_broadcast", {"root": ctx.attrs["root"], "ring_id": ctx.attrs["ring_id"]})


def _single(ctx, op: str) -> None:
    x_grad, out_grad = ctx.input_grad("x"), ctx.output_grad("out")
    if x_grad is None:
        return
    if out_grad is None:
        ctx.append_op("fill_like", {"x": ctx.input("x")}, {"out": x_grad}, {"value": 0.0})
        return
    attrs = {"nranks": ctx.attrs["nranks"], "ring_id": ctx.attrs["ring_id"]}
    ctx.append_op(op, {"x": out_grad}, {"out": x_grad}, attrs)


def allgather_grad(ctx):
    """Rank r's x is part r of every rank's out: its gradient is the sum of those parts."""
    _single(ctx, "c_reduce_scatter")


def reduce_scatter_grad(ctx):
    """Part r of every x is summed into rank r's out: each x gets every rank's out gradient."""
    _single(ctx, "c_allgather")
