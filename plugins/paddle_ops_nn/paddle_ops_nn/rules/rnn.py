"""Shape and grad rules of lstm and gru (kernels: src/rnn_cpu.cpp; conventions: the header of
manifest/rnn.pbtxt).

Every weight, bias and state is held to x and the attrs when the op is appended, each named by
its slot, position, layer and direction, so a wrong one is a ShapeError before any memory is
touched; the kernels check the same again at prepare time, and sequence_length's values (data,
not shapes) before they compute. Unknown dimensions (None) pass and propagate.
"""

from __future__ import annotations

from dataclasses import dataclass

from paddle_core import ProgramError

FLOATS = ("float32", "float64")
INTS = ("int32", "int64")
WEIGHTS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


@dataclass(frozen=True)
class Cell:
    gates: int  # G: gate blocks of H rows in each weight (lstm i, f, g, o; gru r, z, n)
    width: int  # reserve columns per step, in units of H
    states: tuple[str, ...]  # the initial-state inputs
    finals: tuple[str, ...]  # the final-state outputs, in the same order


CELLS = {
    "lstm": Cell(gates=4, width=6, states=("h0", "c0"), finals=("h_n", "c_n")),
    "gru": Cell(gates=3, width=5, states=("h0",), finals=("h_n",)),
}


def _fmt(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _fits(shape, want) -> bool:
    return len(shape) == len(want) and all(
        a is None or b is None or a == b for a, b in zip(shape, want)
    )


@dataclass(frozen=True)
class Dims:
    steps: int | None  # T
    batch: int | None  # B
    inputs: int | None  # I
    hidden: int  # H
    layers: int  # L
    directions: int  # D

    @property
    def units(self) -> int:
        return self.layers * self.directions

    def unit(self, k: int) -> str:
        layer, reverse = divmod(k, self.directions)
        return f"layer {layer}{', reverse' if reverse else ''}"


def _dims(ctx) -> Dims:
    x = ctx.input("x")
    if x.dtype not in FLOATS:
        ctx.fail(f"x must be float32 or float64, got {x.dtype}")
    if x.ndim != 3:
        ctx.fail(f"x must be time-major [T, B, I] (rank 3), got shape {_fmt(x.shape)}")
    steps, batch, inputs = x.shape
    directions = 2 if ctx.attrs["bidirectional"] else 1
    return Dims(steps, batch, inputs, ctx.attrs["hidden_size"], ctx.attrs["num_layers"], directions)


def _check_weights(ctx, cell: Cell, d: Dims, dtype: str) -> None:
    """Each weight slot holds L * D tensors of x's dtype, shaped as the manifest says."""
    rows = cell.gates * d.hidden
    for slot in WEIGHTS:
        vars_ = ctx.input_list(slot)
        if len(vars_) != d.units:
            ctx.fail(
                f"{slot} has {len(vars_)} tensor(s), but num_layers {d.layers} x "
                f"{d.directions} direction(s) needs {d.units}, one per layer and direction "
                "(layer-major, forward first)"
            )
        for k, var in enumerate(vars_):
            want = _weight_shape(slot, k, rows, d)
            if var.dtype != dtype:
                ctx.fail(f"{slot}[{k}] ({d.unit(k)}) is {var.dtype}, but x is {dtype}")
            if not _fits(var.shape, want):
                ctx.fail(
                    f"{slot}[{k}] ({d.unit(k)}) must be {_fmt(want)} for hidden_size "
                    f"{d.hidden}{_input_note(slot, k, d)}, got {_fmt(var.shape)}"
                )


def _weight_shape(slot: str, k: int, rows: int, d: Dims) -> tuple:
    if slot == "weight_hh":
        return (rows, d.hidden)
    if slot == "weight_ih":
        return (rows, d.inputs if k < d.directions else d.directions * d.hidden)
    return (rows,)


def _input_note(slot: str, k: int, d: Dims) -> str:
    if slot != "weight_ih":
        return ""
    if k < d.directions:
        return f" and x's {_fmt([d.inputs])[1:-1]} input features (its last axis)"
    return f" and the {d.directions * d.hidden} features of the layer below"


def _check_states(ctx, cell: Cell, d: Dims, dtype: str) -> None:
    """The initial states are [L * D, B, H]; sequence_length is int32 or int64 [B]."""
    want = (d.units, d.batch, d.hidden)
    for slot in cell.states:
        var = ctx.input(slot)
        if var is None:
            continue
        if var.dtype != dtype:
            ctx.fail(f"{slot} is {var.dtype}, but x is {dtype}")
        if not _fits(var.shape, want):
            ctx.fail(f"{slot} must be [L * D, B, H] = {_fmt(want)}, got {_fmt(var.shape)}")
    lengths = ctx.input("sequence_length")
    if lengths is not None:
        if lengths.dtype not in INTS:
            ctx.fail(f"sequence_length must be int32 or int64, got {lengths.dtype}")
        if not _fits(lengths.shape, (d.batch,)):
            ctx.fail(
                f"sequence_length must be [B] = {_fmt([d.batch])}, one length per sequence, "
                f"got {_fmt(lengths.shape)}"
            )


def _checked(ctx) -> tuple[Cell, Dims, str]:
    cell = CELLS[ctx.op.removesuffix("_grad")]
    d = _dims(ctx)
    dtype = ctx.input("x").dtype
    _check_weights(ctx, cell, d, dtype)
    _check_states(ctx, cell, d, dtype)
    return cell, d, dtype


def rnn_shape(ctx) -> None:
    """out [T, B, D * H]; the final states [L * D, B, H]; reserve [L * D, T + 1, B, W * H]."""
    cell, d, dtype = _checked(ctx)
    ctx.set_output("out", (d.steps, d.batch, d.directions * d.hidden), dtype)
    for slot in cell.finals:
        ctx.set_output(slot, (d.units, d.batch, d.hidden), dtype)
    rows = None if d.steps is None else d.steps + 1
    ctx.set_output("reserve", (d.units, rows, d.batch, cell.width * d.hidden), dtype)


def rnn_grad_shape(ctx) -> None:
    """Each <input>_grad like its input. (The reserve and the outputs' gradients are held to
    the forward op's results by the core, before this rule runs.)"""
    cell, d, dtype = _checked(ctx)
    ctx.set_output("x_grad", ctx.input("x").shape, dtype)
    for slot in WEIGHTS:
        ctx.set_output_list(f"{slot}_grad", [(v.shape, dtype) for v in ctx.input_list(slot)])
    for slot in cell.states:
        ctx.set_output(f"{slot}_grad", (d.units, d.batch, d.hidden), dtype)


def rnn_backward(ctx) -> None:
    """<op>_grad, for the inputs that need a gradient, from the gradients that flow back through
    out and the final states (absent ones stay absent: the kernel reads them as zeros). None
    flows back through reserve."""
    op = ctx.op.type
    if ctx.output_grad("reserve") is not None:
        name = ctx.output("reserve")
        raise ProgramError(
            f"op {op!r} propagates no gradient through its output reserve {name!r} (activations "
            f"kept for its gradient), but the backward needs one; differentiate through out and "
            f"the final states only (or mark {name!r} stop_gradient)"
        )
    cell = CELLS[op]
    outputs = {}
    for slot in ("x", *WEIGHTS, *cell.states):
        names = ctx.inputs(slot)
        grads = ctx.input_grads(slot)
        if not names or all(g is None for g in grads):
            continue
        # A frozen weight among trained ones: the kernel writes every weight's gradient.
        grads = [ctx.unused_grad(n) if g is None else g for g, n in zip(grads, names)]
        outputs[f"{slot}_grad"] = grads if slot in WEIGHTS else grads[0]
    if not outputs:
        return
    inputs = {"x": ctx.input("x"), **{slot: ctx.inputs(slot) for slot in WEIGHTS}}
    inputs["reserve"] = ctx.output("reserve")
    for slot in (*cell.states, "sequence_length"):
        inputs[slot] = ctx.input(slot)
    for slot in ("out", *cell.finals):
        inputs[f"{slot}_grad"] = ctx.output_grad(slot)
    attrs = {k: ctx.attrs[k] for k in ("hidden_size", "num_layers", "bidirectional")}
    ctx.append_op(f"{op}_grad", inputs, outputs, attrs)
