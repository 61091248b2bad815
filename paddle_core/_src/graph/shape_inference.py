"""Shape inference: what a shape rule sees and how its answer is checked.

A plugin's shape rule (named in its manifest) receives a ``ShapeContext``: input variables
(``.shape`` with ``None`` for unknown dimensions, ``.dtype``), the validated attrs, and setters
for each output. Appending an op runs it on declared shapes; planning runs it again on the fed,
concrete ones (``TensorSpec`` stands in for variables there).
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..base.dtypes import DTYPES, ITEMSIZE, SHOWN_DTYPES
from ..base.errors import PLUGIN_CODE_ERRORS, PluginError, ShapeError, counted
from ..base.limits import MAX_BYTES, MAX_RANK, shape_problem
from .variable import Variable, format_shape

DTYPE_SET = frozenset(DTYPES)


class TensorSpec:
    """What a shape rule reads of a variable (name, shape, dtype, ndim), without a program:
    the executor re-runs shape rules on concrete shapes when it prepares a plan."""

    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name: str, shape: tuple, dtype: str) -> None:
        self.name, self.shape, self.dtype = name, shape, dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)


class ShapeContext:
    """What a shape rule sees: input variables (``.shape``, ``.dtype``), attrs, and setters.

    A rule reads ``ctx.input("x")`` (or ``ctx.input_list("xs")`` for duplicable slots),
    ``ctx.attrs["axis"]``, and calls ``ctx.set_output("out", shape, dtype)`` for each output;
    ``ctx.fail("why")`` raises a ShapeError naming the op and its inputs.
    """

    __slots__ = ("op", "attrs", "inputs", "outputs", "output_slots", "block")

    def __init__(
        self,
        op: str,
        inputs: dict[str, list[Variable]],
        attrs: dict[str, Any],
        output_slots: list[str],
        block: Any = None,
    ) -> None:
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.output_slots = output_slots  # declared output slot names, in order
        # The block the op is in, where known: control-flow ops' rules read their sub-blocks
        # (``ctx.block.program.block(ctx.attrs["sub_block"])``); other rules never need it.
        self.block = block
        self.outputs: dict[str, list[tuple[tuple, str]]] = {}

    def input(self, slot: str) -> Variable | None:
        """The variable in a single-variable slot (None for an unused dispensable slot)."""
        vars_ = self.inputs.get(slot)
        return vars_[0] if vars_ else None

    def input_list(self, slot: str) -> list[Variable]:
        return self.inputs.get(slot, [])

    def set_output(self, slot: str, shape: Any, dtype: str) -> None:
        self.outputs[slot] = [(tuple(shape), dtype)]

    def set_output_list(self, slot: str, specs: list[tuple[Any, str]]) -> None:
        self.outputs[slot] = [(tuple(shape), dtype) for shape, dtype in specs]

    def fail(self, message: str) -> NoReturn:
        raise ShapeError(f"op {self.op!r}{self.describe_inputs()}: {message}", op=self.op)

    def describe_inputs(self) -> str:
        parts = [
            f"{slot}={v.name!r} {v.dtype}{format_shape(v.shape)}"
            for slot, vars_ in self.inputs.items()
            for v in vars_
        ]
        return f" ({', '.join(parts)})" if parts else ""


def infer(info: Any, ctx: ShapeContext) -> None:
    """Run the op's shape rule; every failure becomes a ShapeError naming the op. A grad op's
    inputs are first checked against its forward op (``check_forward_relation``)."""
    if info.type.endswith("_grad"):
        check_forward_relation(info, ctx)
    rule = info._shape_rule
    if rule is None:
        try:
            rule = info.shape_rule()
        except PluginError as e:
            raise ShapeError(f"op {info.type!r} cannot infer shapes: {e}", op=info.type) from e
    try:
        rule(ctx)
    except ShapeError:
        raise
    except PLUGIN_CODE_ERRORS as e:  # a bug in the rule surfaces as our error, naming the op
        raise ShapeError(
            f"op {info.type!r}{ctx.describe_inputs()}: its shape rule raised "
            f"{type(e).__name__}: {e}",
            op=info.type,
        ) from e


def check_forward_relation(info: Any, ctx: ShapeContext) -> None:
    """A grad op ``<f>_grad`` gets what op ``<f>`` had and gave: its forward inputs must fit
    ``<f>``'s shape rule, and each ``<out>`` or ``<out>_grad`` input must have the shape and
    dtype that rule gives ``<out>``. Kernels index out_grad by the forward shapes, so this keeps
    a grad op called directly, or in a hand-built or loaded program, inside its buffers. Where
    the grad op lacks a forward input (relu_grad reads out, not x), ``<out>_grad`` is held to
    ``<out>`` instead."""
    from ..plugins.registry import get_registry  # (the registry builds on this layer)

    forward = get_registry().ops.get(info.type.removesuffix("_grad"))
    if forward is None:
        return
    proto = forward.proto
    outs = [o.name for o in proto.outputs]
    given = {s: ctx.inputs.get(s) for s in (*outs, *(f"{o}_grad" for o in outs))}
    if not any(given.values()):
        return
    expected: dict[str, list[tuple[tuple, str]]] = {}
    slots = {i.name: ctx.inputs.get(i.name) for i in proto.inputs}
    required = all(v for i, v in zip(proto.inputs, slots.values()) if not i.dispensable)
    if required and forward.attr_types.keys() <= {*forward.attr_defaults, *ctx.attrs}:
        attrs = {
            **forward.attr_defaults,
            **{k: v for k, v in ctx.attrs.items() if k in forward.attr_types},
        }
        fctx = ShapeContext(
            forward.type, {k: v for k, v in slots.items() if v}, attrs, outs, ctx.block
        )
        try:
            infer(forward, fctx)
        except ShapeError as e:
            ctx.fail(f"its inputs are not ones {forward.type!r} accepts: {e}")
        expected = fctx.outputs
    for out in outs:
        want = expected.get(out)
        if want is None and given[out]:  # no forward result: hold out_grad to out
            want = [(v.shape, v.dtype) for v in given[out]]
        for slot in (out, f"{out}_grad"):
            if want is None or not given[slot]:
                continue
            if len(given[slot]) != len(want):
                ctx.fail(
                    f"{slot} has {counted(len(given[slot]), 'value')}; {forward.type!r} gives {len(want)}"
                )
            for v, (shape, dtype) in zip(given[slot], want):
                if v.dtype != dtype or not shape_fits(v.shape, shape):
                    ctx.fail(
                        f"{slot} {v.name!r} is {v.dtype}{format_shape(v.shape)}; "
                        f"{forward.type!r} gives {out} as {dtype}{format_shape(shape)}"
                    )


def shape_fits(shape: tuple, want: tuple) -> bool:
    """Same rank, and each dimension equal where both are known."""
    return len(shape) == len(want) and all(
        a == b or a is None or b is None for a, b in zip(shape, want)
    )


def check_spec(info: Any, slot: str, shape: tuple, dtype: str) -> None:
    """Catch a shape rule returning nonsense here, not in a kernel at run time."""
    # One pass: a known dtype, dims ints >= 0 (or None), and their bytes (unknown and zero dims
    # counting as 1, as shape_problem counts them), which settle the common case.
    ok = dtype in DTYPE_SET
    size = ITEMSIZE[dtype] if ok else 0
    for d in shape:
        if d is not None:
            if type(d) is not int or d < 0:
                ok = False
                break
            size *= d or 1
    if ok and size <= MAX_BYTES and len(shape) <= MAX_RANK:
        return
    problem = shape_problem(shape, ITEMSIZE[dtype]) if ok else None
    if problem:
        raise ShapeError(
            f"op {info.type!r}: output {slot!r}"
            f"{' ' + dtype + format_shape(shape) if len(shape) <= MAX_RANK else ''} {problem}",
            op=info.type,
        )
    if not ok:
        raise ShapeError(
            f"op {info.type!r}: its shape rule gave output {slot!r} shape {shape!r} and dtype "
            f"{dtype!r}; expected ints >= 0 or None, and one of {SHOWN_DTYPES} "
            f"(a bug in {info.plugin.label})",
            op=info.type,
        )
