"""Control flow in programs: ``while_loop``, ``cond``, the block form ``While`` and ``rnn``.

Each builds its body (or branches, or step) in a sub-block of the current block
(``Program.create_block`` / ``rollback``) and appends one op holding it (``while_block``,
``cond_block``, ``recurrent_block``, declared in ``paddle_core/builtin/ops.pbtxt``) whose
inputs and outputs list every outer variable the sub-blocks read or write. Mistakes are caught
here, while building, with errors naming the op and the blocks. Re-exported by ``paddle_core.layers``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from . import ops
from ._src.base.errors import ProgramError, ShapeError, shown
from ._src.graph.block import Block
from ._src.graph.program import default_main_program
from ._src.graph.variable import Variable, format_shape
from ._src.model.expression import Expression

MAX_ITERS = 1_000_000  # while_block's default max_iters


# What to do with a model's expression, which control flow does not take.
_EXPRESSION_HINT = (
    " (a model's expressions: build the loop or cond inside `with model.guard():` from their "
    "`.variable`s)"
)


def _hint_for(value: Any) -> str:
    return _EXPRESSION_HINT if isinstance(value, Expression) else ""


def _check_condition(pred: Any, where: str, op: str) -> None:
    if not isinstance(pred, Variable):
        raise ProgramError(
            f"{where}: the condition must be a Variable, got {type(pred).__name__}{_hint_for(pred)}"
        )
    if pred.dtype != "bool" or tuple(pred.shape) not in ((), (1,)):
        raise ShapeError(
            f"{where}: the condition {pred.name!r} must be a bool scalar (shape [] or [1]), "
            f"got {pred.dtype}{format_shape(pred.shape)}",
            op=op,
        )


def _check_max_iters(max_iters: Any, where: str) -> None:
    """Before the body is built: a refused loop leaves nothing behind in the program."""
    if type(max_iters) is not int or not 1 <= max_iters < 2**63:
        raise ProgramError(f"{where}: max_iters must be an int >= 1, got {shown(max_iters)}")


def _outer_reads(blocks: Sequence[Block], parent: Block) -> list[str]:
    """Variables the ops of ``blocks`` read that are not their own: the parent chain's."""
    names: dict[str, None] = {}
    for block in blocks:
        for op in block.ops:
            for name in op.input_names:
                if name not in block.vars and parent.find_var(name) is not None:
                    names[name] = None
    return list(names)


def _outer_writes(block: Block, parent: Block) -> list[str]:
    names: dict[str, None] = {}
    for op in block.ops:
        for name in op.output_names:
            if name not in block.vars and parent.find_var(name) is not None:
                names[name] = None
    return list(names)


def _same_type(a: Variable, b: Variable) -> bool:
    return (
        a.dtype == b.dtype
        and len(a.shape) == len(b.shape)
        and all(x is None or y is None or x == y for x, y in zip(a.shape, b.shape))
    )


def _append_while(
    parent: Block,
    body: Block,
    condition: Variable,
    carried: list[str],
    max_iters: int,
    in_place: bool,
) -> Any:
    """The while_block op; ``in_place``: its outputs are the carried variables themselves (the
    block form), else new ones (the loop's inputs keep their values: backward needs them)."""
    reads = [n for n in _outer_reads([body], parent) if n not in carried]
    return parent.append_op(
        "while_block",
        {"condition": condition, "carried": carried, "x": reads},
        {"out": carried} if in_place else None,
        {"sub_block": body, "max_iters": max_iters},
    )


def _write_into(body: Block, value: Variable, var: Variable) -> bool:
    """Have the body op computing ``value`` (a variable of the body) write loop variable
    ``var`` itself, saving the assign after it: only when no other op reads or writes
    ``value`` and no op after it reads ``var`` (whose old value it would then see)."""
    op = value.op
    if value.block is not body or op is None or op.block is not body:
        return False
    position = next(k for k, other in enumerate(body.ops) if other is op)
    for k, other in enumerate(body.ops):
        if value.name in other.input_names or (
            other is not op and value.name in other.output_names
        ):
            return False
        if k > position and var.name in other.input_names:
            return False
    op.outputs = {
        slot: [var.name if n == value.name else n for n in names]
        for slot, names in op.outputs.items()
    }
    del body.vars[value.name]
    var.op = op
    body.program._version += 1
    return True


def while_loop(
    cond_fn: Callable[..., Variable],
    body_fn: Callable[..., Any],
    loop_vars: Sequence[Variable],
    *,
    max_iters: int = MAX_ITERS,
) -> list[Variable]:
    """``while cond_fn(*vars): vars = body_fn(*vars)``, as one ``while_block`` op.

    ``cond_fn`` returns a bool scalar Variable; ``body_fn`` returns the new loop variables
    (a Variable or a sequence, as many as ``loop_vars``, each of the dtype and shape of the one
    it replaces). The loop variables are copied first, so the caller's variables (fed ones
    among them) are never written. Returns new variables holding the loop variables' values
    after the loop; a run needing
    more than ``max_iters`` body runs is a KernelRuntimeError naming the op.
    """
    program = default_main_program()
    parent = program.current_block()
    where = f"while_loop (op 'while_block' in block {parent.idx})"
    _check_max_iters(max_iters, where)
    if not isinstance(loop_vars, (list, tuple)):
        hint = " (one variable: [x])" if isinstance(loop_vars, Variable) else _hint_for(loop_vars)
        raise ProgramError(
            f"{where}: loop_vars must be a non-empty list or tuple of Variables{hint}, got "
            f"{type(loop_vars).__name__}"
        )
    loop_vars = list(loop_vars)
    if not loop_vars or not all(isinstance(v, Variable) for v in loop_vars):
        hint = next((_hint_for(v) for v in loop_vars if isinstance(v, Expression)), "")
        raise ProgramError(f"{where}: loop_vars must be a non-empty sequence of Variables{hint}")
    carried = [ops.assign(v) for v in loop_vars]
    condition = cond_fn(*carried)
    _check_condition(condition, where, "while_block")
    condition = ops.assign(condition)  # the loop's own: the body rewrites it
    body = program.create_block()
    where = f"while_loop (op 'while_block' in block {parent.idx}, body block {body.idx})"
    try:
        new = body_fn(*carried)
        new = list(new) if isinstance(new, (list, tuple)) else [new]
        if len(new) != len(carried) or not all(isinstance(v, Variable) for v in new):
            raise ProgramError(
                f"{where}: body_fn must return {len(carried)} Variable(s), one per loop "
                f"variable, got {len(new)}: {[type(v).__name__ for v in new]}"
            )
        for i, (var, value) in enumerate(zip(carried, new)):
            if not _same_type(var, value):
                raise ShapeError(
                    f"{where}: loop variable {i} ({loop_vars[i].name!r}) starts as "
                    f"{var.dtype}{format_shape(var.shape)} but body_fn returns {value.name!r} "
                    f"as {value.dtype}{format_shape(value.shape)}; a loop variable keeps its "
                    "dtype and shape",
                    op="while_block",
                )
        # A loop variable handed back as another's new value (a swap) is copied first: the
        # new values land in the loop variables only after all are read.
        staged = [
            ops.assign(v) if v in carried and v is not var else v for v, var in zip(new, carried)
        ]
        for var, value in zip(carried, staged):
            if value is not var and not _write_into(body, value, var):
                body.append_op("assign", {"x": value}, {"out": var})
        again = cond_fn(*carried)
        _check_condition(again, where, "while_block")
        if not _write_into(body, again, condition):
            body.append_op("assign", {"x": again}, {"out": condition})
    finally:
        program.rollback()
    names = [v.name for v in carried] + [condition.name]
    op = _append_while(parent, body, condition, names, max_iters, in_place=False)
    return [parent.var(name) for name in op.output("out")[: len(carried)]]


def cond(pred: Variable, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    """``true_fn()`` if ``pred`` else ``false_fn()``, decided at run time: one ``cond_block``
    op holding both branches, of which one runs.

    Both functions return the same structure (a Variable, or a sequence of them) of the same
    dtypes and shapes; so does ``cond``.
    """
    program = default_main_program()
    parent = program.current_block()
    where = f"cond (op 'cond_block' in block {parent.idx})"
    _check_condition(pred, where, "cond_block")
    for which, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if not callable(fn):
            raise ProgramError(
                f"{where}: {which} must be a function that builds the branch and returns its "
                f"value(s), got {type(fn).__name__}"
            )
    results, blocks = [], []
    for fn in (true_fn, false_fn):
        block = program.create_block()
        try:
            results.append(fn())
        finally:
            program.rollback()
        blocks.append(block)
    where = (
        f"cond (op 'cond_block' in block {parent.idx}, true block {blocks[0].idx}, "
        f"false block {blocks[1].idx})"
    )
    for which, result, block in zip(("true_fn", "false_fn"), results, blocks):
        if not isinstance(result, (Variable, list, tuple)) or len(_as_list(result)) == 0:
            raise ProgramError(
                f"{where}: {which} must return a Variable or a non-empty sequence of them, got "
                f"{_structure(result)}"
            )
        _check_no_outer_writes(block, parent, where, which)
    single = [isinstance(r, Variable) for r in results]
    outs = [_as_list(r) for r in results]
    if single[0] != single[1] or len(outs[0]) != len(outs[1]):
        raise ShapeError(
            f"{where}: the branches return different structures: true_fn "
            f"{_structure(results[0])}, false_fn {_structure(results[1])}",
            op="cond_block",
        )
    for i, (t, f) in enumerate(zip(*outs)):
        if not isinstance(t, Variable) or not isinstance(f, Variable):
            raise ProgramError(
                f"{where}: result {i} must be a Variable in both branches, got "
                f"{type(t).__name__} and {type(f).__name__}"
            )
        if not _same_type(t, f):
            raise ShapeError(
                f"{where}: result {i} differs between the branches: true_fn gives "
                f"{t.name!r} {t.dtype}{format_shape(t.shape)}, false_fn gives {f.name!r} "
                f"{f.dtype}{format_shape(f.shape)}",
                op="cond_block",
            )
    reads = [n for n in _outer_reads(blocks, parent) if n != pred.name]
    for t in outs[0] + outs[1]:  # a branch may hand back an outer variable as it is
        if t.block is not blocks[0] and t.block is not blocks[1] and t.name not in reads:
            if t.name != pred.name:
                reads.append(t.name)
    op = parent.append_op(
        "cond_block",
        {"condition": pred, "x": reads},
        None,
        {
            "true_block": blocks[0],
            "false_block": blocks[1],
            "true_outs": [t.name for t in outs[0]],
            "false_outs": [f.name for f in outs[1]],
        },
    )
    out = [parent.var(name) for name in op.output("out")]
    return out[0] if single[0] else out


def _as_list(result: Any) -> list:
    return [result] if isinstance(result, Variable) else list(result)


def _check_no_outer_writes(block: Block, parent: Block, where: str, which: str) -> None:
    """A branch's effects leave it only as the values it returns: an op of the branch writing
    a variable of an outer block would change nothing outside (one run holds one value per
    variable), so it is refused."""
    written = _outer_writes(block, parent)
    if written:
        op = next(op for op in block.ops if written[0] in op.output_names)
        raise ProgramError(
            f"{where}: op {op.type!r} of {which}'s branch writes {written[0]!r}, a variable of "
            "an outer block; a branch changes nothing outside it but the values it returns: "
            "return the new value instead (e.g. pc.layers.assign(value))"
        )


def _structure(result: Any) -> str:
    if isinstance(result, Variable):
        return "a Variable"
    if isinstance(result, (list, tuple)):
        return f"{len(result)} value(s)"
    return f"a {type(result).__name__}"


class While:
    """The block form (fluid's ``While``)::

        w = While(cond)
        with w.block():
            ...  # ops reading outer variables and writing some of them (assign(x, output=v)),
            ...  # the condition among them

    The outer variables the body writes are loop-carried: each needs a value before the
    loop, keeps its dtype and shape, and holds the last body run's value after it.
    """

    def __init__(self, cond: Variable, *, max_iters: int = MAX_ITERS) -> None:
        program = default_main_program()
        where = f"While (op 'while_block' in block {program.current_block_idx})"
        _check_condition(cond, where, "while_block")
        _check_max_iters(max_iters, where)
        self.cond = cond
        self.max_iters = max_iters

    @contextlib.contextmanager
    def block(self) -> Iterator[Block]:
        program = default_main_program()
        parent = program.current_block()
        body = program.create_block()
        try:
            yield body
        finally:
            program.rollback()
        where = f"While (op 'while_block' in block {parent.idx}, body block {body.idx})"
        carried = _outer_writes(body, parent)
        if self.cond.name not in carried:
            raise ProgramError(
                f"{where}: the body never writes the condition {self.cond.name!r}, so the "
                "loop would never end (recompute it: e.g. "
                "pc.layers.assign(pc.ops.less(i, n), output=cond))"
            )
        _append_while(parent, body, self.cond, carried, self.max_iters, in_place=True)


def assign(x: Variable, output: Variable | None = None) -> Variable:
    """A copy of ``x``; into ``output`` when given (e.g. an outer variable, from a loop body),
    which must have its dtype and shape."""
    if output is None:
        return ops.assign(x)
    if not isinstance(output, Variable):
        raise ProgramError(f"assign: output must be a Variable, got {type(output).__name__}")
    if not _same_type(x, output):
        raise ShapeError(
            f"assign: {x.name!r} is {x.dtype}{format_shape(x.shape)}, but output "
            f"{output.name!r} is {output.dtype}{format_shape(output.shape)}",
            op="assign",
        )
    block = default_main_program().current_block()
    block.append_op("assign", {"x": x}, {"out": output})
    return output


def rnn(
    cell: Callable[[Any, Any], Any],
    inputs: Any,
    initial_states: Any,
    time_major: bool = False,
    is_reverse: bool = False,
    name: str | None = None,
) -> tuple[Any, Any]:
    """Run a recurrent ``cell`` over the time steps of ``inputs``: ``outputs, final_states``,
    as Paddle fluid's ``layers.rnn`` (and ``paddle.nn.RNN``), built as one
    ``recurrent_block`` op holding the cell's step in a sub-block.

    ``cell(x_t, states) -> (out_t, new_states)`` is called once, while building, on
    variables standing for one time step: ``x_t`` has the structure of ``inputs`` (a Variable,
    or a nested list/tuple of them) with the time axis removed, ``states`` that of
    ``initial_states``. It builds ordinary layers and ops; parameters it creates land in the
    global block as usual, and the step reads them (and any other outer variable) as they
    are, so they train: gradients flow to them, to ``inputs`` and to ``initial_states``.
    ``new_states`` has the structure of ``initial_states``, each of its state's shape and
    dtype (a ``ShapeError`` naming the state otherwise; a wrong structure or a value that is
    not a Variable is a ``ProgramError``); ``out_t`` is a Variable or a nested list/tuple.

    ``inputs`` are [B, T, ...] ([T, B, ...] with ``time_major``), all of one length T;
    ``outputs`` has the structure of ``out_t``, each stacked along the time axis in the same
    layout; ``final_states`` holds the last step's new states. ``is_reverse`` runs the steps
    from T - 1 down to 0, the outputs staying in time order (as fluid). ``initial_states``
    is required (fluid falls back to ``cell.get_initial_states``; here the caller builds
    them, e.g. with ``fill_constant_batch_size_like``). There is no ``sequence_length``:
    every sequence runs T steps. ``name`` prefixes the variables it creates.

    A step of native kernels runs as a scan of the compiled runtime (no Python between
    steps); its gradient runs the step's gradient once per step, last first, summing the
    parameters' gradients with ops of its own gradient block. See docs/control_flow.md.
    """
    program = default_main_program()
    parent = program.current_block()
    where = f"rnn (op 'recurrent_block' in block {parent.idx})"
    if not callable(cell):
        raise ProgramError(
            f"{where}: cell must be a function (x_t, states) -> (out_t, new_states), got "
            f"{type(cell).__name__}"
        )
    flat_inputs = _flatten(inputs, "inputs", where)
    flat_states = _flatten(initial_states, "initial_states", where)
    if not flat_inputs:
        raise ProgramError(f"{where}: inputs must hold at least one sequence")
    axis = 0 if time_major else 1
    layout = "[T, B, ...]" if time_major else "[B, T, ...]"
    for seq in flat_inputs:
        if seq.ndim <= axis:
            raise ShapeError(
                f"{where}: sequence {seq.name!r} is {seq.dtype}{format_shape(seq.shape)}; "
                f"inputs are {layout}",
                op="recurrent_block",
            )
    lengths = {s.shape[axis] for s in flat_inputs} - {None}
    if len(lengths) > 1:
        got = ", ".join(f"{s.name!r} {format_shape(s.shape)}" for s in flat_inputs)
        raise ShapeError(
            f"{where}: the sequences differ in length (axis {axis}): {got}", op="recurrent_block"
        )
    prefix = name or program.unique_name("rnn")
    step = program.create_block()
    where = f"rnn (op 'recurrent_block' in block {parent.idx}, step block {step.idx})"
    try:
        xs = [
            step.create_var(
                program.unique_name(f"{prefix}.x_t"), s.shape[:axis] + s.shape[axis + 1 :], s.dtype
            )
            for s in flat_inputs
        ]
        states = [
            step.create_var(program.unique_name(f"{prefix}.state"), s.shape, s.dtype)
            for s in flat_states
        ]
        result = cell(_pack(inputs, xs), _pack(initial_states, states))
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise ProgramError(
                f"{where}: cell must return a pair (out_t, new_states), got {_structure(result)}"
            )
        out, new = result
        flat_out = _flatten(out, "the cell's out_t", where)
        if not flat_out:
            raise ProgramError(f"{where}: the cell's out_t must hold at least one Variable")
        flat_new = _flatten(new, "the cell's new_states", where, like=initial_states)
        for k, (state, value) in enumerate(zip(states, flat_new)):
            if not _same_type(state, value):
                raise ShapeError(
                    f"{where}: state {k} ({flat_states[k].name!r}) is "
                    f"{state.dtype}{format_shape(state.shape)}, but the cell returns its new "
                    f"value {value.name!r} as {value.dtype}{format_shape(value.shape)}; a state "
                    "keeps its shape and dtype",
                    op="recurrent_block",
                )
        # The scan saves each output and swaps each new state's buffer with its state's: they
        # are values the step's ops compute, the new states all different ones.
        flat_out = [v if _computed_in(v, step) else ops.assign(v) for v in flat_out]
        seen: set[str] = set()
        owned = []
        for v in flat_new:
            if not _computed_in(v, step) or v.name in seen:
                v = ops.assign(v)
            seen.add(v.name)
            owned.append(v)
    finally:
        program.rollback()
    reads = _outer_reads([step], parent)
    n = len(flat_out)
    op = parent.append_op(
        "recurrent_block",
        {"inputs": flat_inputs, "initial_states": flat_states, "x": reads},
        {
            "outputs": [f"{prefix}.out_{k}" for k in range(n)],
            "final_states": [f"{prefix}.final_state_{k}" for k in range(len(states))],
            "state_tape": [f"{prefix}.state_tape_{k}" for k in range(len(states))],
        },
        {
            "sub_block": step,
            "time_major": bool(time_major),
            "is_reverse": bool(is_reverse),
            "step_inputs": [v.name for v in xs],
            "step_states": [v.name for v in states],
            "step_outputs": [v.name for v in flat_out],
            "step_new_states": [v.name for v in owned],
        },
    )
    outputs = [parent.var(n) for n in op.output("outputs")]
    finals = [parent.var(n) for n in op.output("final_states")]
    return _pack(out, outputs), _pack(initial_states, finals)


def _computed_in(var: Variable, block: Block) -> bool:
    """Whether an op of ``block`` computes ``var`` (not fed to it, not an outer variable)."""
    return var.block is block and var.op is not None


def _flatten(value: Any, what: str, where: str, like: Any = None) -> list[Variable]:
    """The Variables of a Variable or nested list/tuple, in order; with ``like``, checked to
    have its structure."""
    found: list[Variable] = []

    def walk(v: Any, ref: Any, path: str) -> None:
        if isinstance(v, Variable):
            if like is not None and not isinstance(ref, Variable):
                raise ProgramError(
                    f"{where}: {what}{path} is a Variable where initial_states{path} is "
                    f"{_structure(ref)}; new_states must have initial_states' structure"
                )
            found.append(v)
        elif isinstance(v, (list, tuple)):
            if like is not None and (not isinstance(ref, (list, tuple)) or len(ref) != len(v)):
                raise ProgramError(
                    f"{where}: {what}{path} is {_structure(v)} where initial_states{path} is "
                    f"{_structure(ref)}; new_states must have initial_states' structure"
                )
            for k, item in enumerate(v):
                walk(item, ref[k] if like is not None else None, f"{path}[{k}]")
        else:
            raise ProgramError(
                f"{where}: {what}{path} must be a Variable or a (nested) list/tuple of "
                f"Variables, got {type(v).__name__}{_hint_for(v)}"
            )

    walk(value, like, "")
    return found


def _pack(structure: Any, flat: list[Variable]) -> Any:
    """``flat`` in the nested structure of ``structure`` (lists stay lists, tuples tuples)."""
    items = iter(flat)

    def build(s: Any) -> Any:
        if isinstance(s, Variable):
            return next(items)
        return type(s)(build(x) for x in s)

    return build(structure)
