"""Control flow at run time: planning and running the ops that hold blocks.

``while_block``, ``cond_block`` and ``recurrent_block`` (declared in
``paddle_core/builtin/ops.pbtxt``, with their gradients' ops) list every outer variable their
blocks read or write as inputs and outputs, so the outer plan treats them as ordinary ops.
This module decides the rest:

- planning (``plan_sub_blocks``, called by ``planning.plan`` for these ops): each block is
  planned like a program of its own, recursively (a body may hold loops), fed the op's inputs
  at their planned shapes and fetching what the op hands back (a while body: its carried
  variables; a branch: its ``*_outs``). A while body may write what it is fed (the carried
  variables), and must keep their shapes and dtypes: a body changing one is a ShapeError naming
  the op and both blocks. Concrete output shapes come from the blocks' plans.
- running (``kernel``): the op is a Python step of the outer plan. Each block run is a
  prepared plan of its own, run by the compiled runtime on a host-memory device (no Python
  between the block's ops), in a fresh child scope of the run's scope; Python runs between
  block runs only (the loop test, the branch choice). That is the documented fallback until
  the compiled runtime gains jump steps: its cost is measured by ``bench/bench_while.py``.
  Blocks of native kernels loop in the runtime instead: a while body by ``run_while``, a
  recurrent step (and its gradient) by ``run_scan`` (``scan``), fed one time slice of each
  sequence per run, with no Python between runs.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.errors import KernelRuntimeError, PaddleCoreError, ProgramError, ShapeError
from ..base.host import aligned_empty, host_array
from ..graph.variable import format_shape

CONTROL_OPS = frozenset(
    {
        "while_block",
        "cond_block",
        "while_block_backward",
        "recurrent_block",
        "recurrent_block_backward",
    }
)

# The scope of the run in progress: a block run's child scope is made from it. Set by
# ``PreparedProgram`` around each run, so nested plans see their own.
current_scope: contextvars.ContextVar[Any] = contextvars.ContextVar("paddle_core_scope")


def _where(op: Any) -> str:
    return f"op {op.type!r} (#{op.block.ops.index(op)} in block {op.block.idx})"


def plan_sub_blocks(step: Any, shapes: dict, device: Any, plan_fn: Callable) -> dict[str, Any]:
    """Plan the blocks of control-flow ``step`` (``plan_fn`` is ``planning.plan``); record its
    outputs' concrete shapes in ``shapes``; return the blocks' PlanSpecs by attr name."""
    op = step.op
    names = sorted(set(op.input_names))
    signature = tuple((n, *shapes[n]) for n in names)
    program = op.block.program

    def sub_plan(
        attr: str, fetch: list[str], carried: frozenset = frozenset(), fed: dict | None = None
    ) -> Any:
        idx = step.attrs[attr]
        fed_signature = signature if fed is None else tuple((n, *fed[n]) for n in sorted(fed))
        try:
            return plan_fn(program, device, fed_signature, fetch, block_idx=idx, carried=carried)
        except ShapeError as e:
            raise ShapeError(f"{_where(op)}, in its block {idx}: {e}", op=op.type) from None
        except PaddleCoreError as e:
            e.add_note(f"(planning block {idx} of {_where(op)})")
            raise

    if op.type == "while_block":
        carried = op.input("carried")
        specs = {"sub_block": sub_plan("sub_block", carried, frozenset(carried))}
        for out, name in zip(op.output("out"), carried):
            _set_shape(op, shapes, out, shapes[name])
        return specs
    if op.type == "while_block_backward":
        carried = op.input("carried")
        specs = {"sub_block": sub_plan("sub_block", carried, frozenset(carried))}
        specs["grad_block"] = sub_plan("grad_block", step.attrs["grad_outs"])
        for slot, attr in (("carried_grad", "diff_carried"), ("x_grad", "wanted_x")):
            for out, name in zip(op.output(slot), step.attrs[attr]):
                _set_shape(op, shapes, out, shapes[name])
        return specs
    if op.type == "recurrent_block":
        return _plan_recurrent(step, shapes, sub_plan)
    if op.type == "recurrent_block_backward":
        return _plan_recurrent_backward(step, shapes, sub_plan)
    true_outs, false_outs = step.attrs["true_outs"], step.attrs["false_outs"]
    specs = {"true_block": sub_plan("true_block", true_outs)}
    specs["false_block"] = sub_plan("false_block", false_outs)
    for out, t, f in zip(op.output("out"), true_outs, false_outs):
        got_t, got_f = specs["true_block"].shapes[t], specs["false_block"].shapes[f]
        if got_t != got_f:
            raise ShapeError(
                f"{_where(op)}: for the fed shapes its branches differ: true block "
                f"{step.attrs['true_block']} gives {t!r} {got_t[1]}{format_shape(got_t[0])}, "
                f"false block {step.attrs['false_block']} gives {f!r} "
                f"{got_f[1]}{format_shape(got_f[0])}",
                op=op.type,
            )
        _set_shape(op, shapes, out, got_t)
    return specs


def _time_axis(attrs: dict) -> int:
    return 0 if attrs["time_major"] else 1


def _step_shape(op: Any, shapes: dict, seq: str, axis: int) -> tuple[tuple, str]:
    """One time slice of sequence ``seq``: its planned shape without the time axis."""
    shape, dtype = shapes[seq]
    if len(shape) <= axis:
        raise ShapeError(
            f"{_where(op)}: sequence {seq!r} is {dtype}{format_shape(shape)}, with no time axis "
            f"{axis}",
            op=op.type,
        )
    return shape[:axis] + shape[axis + 1 :], dtype


def _steps(op: Any, shapes: dict, axis: int) -> int:
    """The sequences' common length (their time axis)."""
    seqs = op.input("inputs")
    lengths = {shapes[s][0][axis] for s in seqs if len(shapes[s][0]) > axis}
    if len(lengths) > 1:
        got = ", ".join(f"{s!r} {format_shape(shapes[s][0])}" for s in seqs)
        raise ShapeError(
            f"{_where(op)}: the sequences differ in length (time axis {axis}): {got}", op=op.type
        )
    return lengths.pop() if lengths else 0


def _plan_recurrent(step: Any, shapes: dict, sub_plan: Callable) -> dict[str, Any]:
    """The step block is fed one time slice of each sequence, the states and the other
    inputs; it fetches the outputs' slices and the new states, which keep the states' shapes
    (the scan swaps their buffers)."""
    op, attrs = step.op, step.attrs
    axis = _time_axis(attrs)
    n = _steps(op, shapes, axis)
    states = attrs["step_states"]
    if len(set(states)) != len(states):  # (a loaded program's: rnn() makes distinct ones)
        raise ProgramError(
            f"{_where(op)}: step_states names a variable twice ({states}); each state is a "
            "variable of its own"
        )
    fed = {
        name: _step_shape(op, shapes, seq, axis)
        for name, seq in zip(attrs["step_inputs"], op.input("inputs"))
    }
    fed.update((name, shapes[init]) for name, init in zip(states, op.input("initial_states")))
    fed.update((name, shapes[name]) for name in op.input("x"))
    outs, new_states = attrs["step_outputs"], attrs["step_new_states"]
    _check_step_results(op, outs + new_states, fed, len(set(new_states)) == len(new_states))
    spec = sub_plan("sub_block", outs + new_states, fed=fed)
    for state, new, init in zip(states, new_states, op.input("initial_states")):
        if spec.shapes[new] != fed[state]:
            got, want = spec.shapes[new], fed[state]
            raise ShapeError(
                f"{_where(op)}, in its step block {attrs['sub_block']}: state {state!r} (from "
                f"{init!r}) is {want[1]}{format_shape(want[0])}, but the step gives its new "
                f"value {new!r} as {got[1]}{format_shape(got[0])}; a state keeps its shape "
                "and dtype",
                op=op.type,
            )
    for out, name in zip(op.output("outputs"), outs):
        shape, dtype = spec.shapes[name]
        _set_shape(op, shapes, out, ((*shape[:axis], n, *shape[axis:]), dtype))
    for final, tape, state in zip(op.output("final_states"), op.output("state_tape"), states):
        shape, dtype = fed[state]
        _set_shape(op, shapes, final, (shape, dtype))
        _set_shape(op, shapes, tape, ((n, *shape), dtype))
    return {"sub_block": spec}


def _check_step_results(op: Any, results: list[str], fed: dict, distinct: bool) -> None:
    """A step's results are values its ops compute, the new states all different ones: the
    scan swaps each new state's buffer with its state's (a loaded program could say
    otherwise; rnn() builds them so)."""
    for name in results:
        if name in fed:
            raise ProgramError(
                f"{_where(op)}: {name!r} is a result of its step block but also fed to it; a "
                "step's outputs and new states are values its ops compute (copy it: assign)"
            )
    if not distinct:
        raise ProgramError(f"{_where(op)}: two states take the same new value; copy it (assign)")


def _plan_recurrent_backward(step: Any, shapes: dict, sub_plan: Callable) -> dict[str, Any]:
    """The gradient block is fed a run's sequence slices, states (from the tape), the other
    inputs, the slices of the outputs' gradients, the new states' gradients and the running
    sums; it fetches grad_outs."""
    op, attrs = step.op, step.attrs
    axis = _time_axis(attrs)
    step_inputs, states = attrs["step_inputs"], attrs["step_states"]
    seqs = dict(zip(step_inputs, op.input("inputs")))
    tapes = dict(zip(states, op.input("state_tape")))
    fed = {name: _step_shape(op, shapes, seq, axis) for name, seq in seqs.items()}
    fed.update((name, _step_shape(op, shapes, tape, 0)) for name, tape in tapes.items())
    fed.update((name, shapes[name]) for name in op.input("x"))
    for seed, grad in zip(attrs["output_seeds"], op.input("outputs_grad")):
        fed[seed] = _step_shape(op, shapes, grad, axis)
    for seed, state in zip(attrs["state_seeds"], attrs["diff_states"]):
        fed[seed] = fed[state]
    for acc, name in zip(attrs["accumulators"], attrs["wanted_x"]):
        fed[acc] = shapes[name]
    grad_outs = attrs["grad_outs"]
    _check_step_results(op, grad_outs, fed, len(set(grad_outs)) == len(grad_outs))
    spec = sub_plan("grad_block", grad_outs, fed=fed)
    for out, name in zip(op.output("inputs_grad"), attrs["wanted_inputs"]):
        _set_shape(op, shapes, out, shapes[seqs[name]])
    for out, name in zip(op.output("initial_states_grad"), attrs["diff_states"]):
        _set_shape(op, shapes, out, fed[name])
    for out, name in zip(op.output("x_grad"), attrs["wanted_x"]):
        _set_shape(op, shapes, out, shapes[name])
    return {"grad_block": spec}


def _set_shape(op: Any, shapes: dict, name: str, planned: tuple) -> None:
    """Record output ``name``'s concrete (shape, dtype); one buffer per variable, so a
    variable written twice keeps its size."""
    before = shapes.get(name)
    if before is not None and before != planned:
        raise ShapeError(
            f"{_where(op)} writes {name!r} as {planned[1]}{format_shape(planned[0])}, but it is "
            f"already {before[1]}{format_shape(before[0])} in this run",
            op=op.type,
        )
    shapes[name] = planned


def kernel(step: Any, prepare: Callable[[Any], Any]) -> Callable:
    """The Python kernel running control-flow ``step``; ``prepare`` turns a block's PlanSpec
    into a PreparedProgram."""
    blocks = {attr: prepare(spec) for attr, spec in step.sub_specs.items()}
    if step.op.type == "while_block":
        return WhileKernel(step, blocks["sub_block"])
    if step.op.type == "while_block_backward":
        return WhileBackwardKernel(step, blocks["sub_block"], blocks["grad_block"])
    if step.op.type == "recurrent_block":
        return RecurrentKernel(step, blocks["sub_block"])
    if step.op.type == "recurrent_block_backward":
        return RecurrentBackwardKernel(step, blocks["grad_block"])
    return CondKernel(step, blocks["true_block"], blocks["false_block"])


def _run_block(plan: Any, values: dict[str, Any]) -> list[Any]:
    scope = current_scope.get()
    return plan._run({n: values[n] for n in plan.feed_names}, scope.new_scope())


class WhileKernel:
    """Runs the body while the condition holds, at most ``max_iters`` times."""

    def __init__(self, step: Any, body: Any) -> None:
        self.op = step.op
        self.body = body
        # The backward op names it by attr: it has no condition input.
        self.condition = step.attrs.get("condition") or step.op.input("condition")[0]
        self.carried = step.op.input("carried")
        self.x = step.op.input("x")
        self.max_iters = step.attrs["max_iters"]
        self.iterations = 0  # body runs of the last call (for tests and benchmarks)

    def __call__(self, condition: Any, carried: list, x: list, **attrs: Any) -> list[Any]:
        values = dict(zip(self.x, x))
        values.update(zip(self.carried, carried))
        self.loop(values)
        return [values[name] for name in self.carried]

    def loop(self, values: dict[str, Any], tape: list | None = None) -> None:
        """Run the loop on ``values`` (updated to the carried values after it); with a
        ``tape``, append the carried values each body run starts from."""
        for name in self.carried:  # copies: the body writes them in place
            values[name] = np.array(values[name], copy=True)
        # A body of native steps only runs as a loop of the compiled runtime, on buffers bound
        # once: no Python between body runs (with a tape, Python copies between them).
        runner = self.body.loop_runner
        if runner is not None:
            values.update(runner.bind_feeds(values))
            if tape is None:
                self.iterations = runner.run_while(self.condition, self.max_iters)
                if self.iterations < 0:
                    self._too_many()
                return
        n = 0
        while bool(values[self.condition]):
            if n == self.max_iters:
                self._too_many()
            if tape is not None:
                tape.append({name: values[name].copy() for name in self.carried})
            if runner is not None:
                runner.rerun()  # updates the carried arrays in place
            else:
                values.update(zip(self.body.fetch_names, _run_block(self.body, values)))
            n += 1
        self.iterations = n

    def _too_many(self) -> None:
        raise KernelRuntimeError(
            f"{_where(self.op)}: the condition {self.condition!r} still holds after "
            f"max_iters={self.max_iters} runs of body block {self.op.attrs['sub_block']}"
            "; raise max_iters if the loop is meant to run longer",
            op=self.op.type,
        )


class WhileBackwardKernel(WhileKernel):
    """A while_block's gradient: the loop again, recording each body run's carried values,
    then the gradient block once per body run, last first, carrying the gradients back."""

    def __init__(self, step: Any, body: Any, grad: Any) -> None:
        super().__init__(step, body)
        self.grad = grad
        self.seeds = step.op.input("out_grad")
        self.diff = step.attrs["diff_carried"]
        self.wanted_x = step.attrs["wanted_x"]

    def __call__(self, carried: list, x: list, out_grad: list, **attrs: Any) -> tuple:
        values = dict(zip(self.x, x))
        values.update(zip(self.carried, carried))
        values.update(zip(self.seeds, out_grad))
        tape: list[dict[str, Any]] = []
        self.loop(values, tape)
        grads = [np.array(g, copy=True) for g in out_grad]
        x_grads = [np.zeros_like(values[name]) for name in self.wanted_x]
        k = len(self.diff)
        for start in reversed(tape):
            values.update(start)
            values.update(zip(self.seeds, grads))
            produced = _run_block(self.grad, values)
            grads = produced[:k]
            for total, part in zip(x_grads, produced[k:]):
                total += part
        return grads, x_grads


class CondKernel:
    """Runs one of two blocks, chosen by the condition's value."""

    def __init__(self, step: Any, true_plan: Any, false_plan: Any) -> None:
        self.branches = (false_plan, true_plan)
        self.condition = step.op.input("condition")[0]
        self.x = step.op.input("x")

    def __call__(self, condition: Any, x: list, **attrs: Any) -> list[Any]:
        values = dict(zip(self.x, x))
        values[self.condition] = condition
        return _run_block(self.branches[bool(condition)], values)


# -- recurrent_block: a step block run once per time step --------------------------------------

Slice = tuple[str, Any, int]  # (a block's variable, an array, the array's time axis)


def scan(
    plan: Any,
    n: int,
    reverse: bool,
    fixed: dict[str, Any],
    load: list[Slice],
    save_before: list[Slice],
    save: list[Slice],
    carries: list[tuple[str, str, Any]],
) -> dict[str, Any]:
    """Run ``plan`` (a block's) once per time step t of ``n`` (last first with ``reverse``).

    Its feeds are ``fixed`` (the same every run), the slices ``load`` copy in (slice t of the
    array) and the ``carries`` (fed, fetched, start): a run reads ``fed``, which holds
    ``start`` at first and then the last run's ``fetched``. Before a run ``save_before``
    copies fed values into slice t of their arrays, after it ``save`` fetched ones. Returns
    each carry's value after the last run. A plan of native kernels runs as the compiled
    runtime's scan, with no Python between runs; any other with Python between runs.
    """
    runner = plan.scan_runner
    if runner is None:
        return _python_scan(plan, n, reverse, fixed, load, save_before, save, carries)
    shapes = plan.spec.shapes
    arrays = dict(fixed)
    for name, _, _ in load:
        arrays[name] = aligned_empty(*shapes[name])
    for fed, fetched, start in carries:
        arrays[fed] = aligned_empty(*shapes[fed])
        arrays[fed][...] = start
        arrays[fetched] = aligned_empty(*shapes[fetched])
    for name in plan.fetch_names:
        if name not in arrays:
            arrays[name] = aligned_empty(*shapes[name])
    runner.bind(arrays)
    runner.run_scan(
        n,
        reverse,
        [_layout(s) for s in load],
        [_layout(s) for s in save_before],
        [_layout(s) for s in save],
        [(fed, fetched) for fed, fetched, _ in carries],
    )
    return {fed: runner.array(fed) for fed, _, _ in carries}


def _layout(item: Slice) -> tuple:
    """A slice as the runtime's scan takes it: (variable, array, outer, outer_stride,
    time_stride) in bytes."""
    name, array, axis = item
    shape = array.shape
    time_stride = math.prod(shape[axis + 1 :]) * array.itemsize
    return name, array, math.prod(shape[:axis]), shape[axis] * time_stride, time_stride


def _python_scan(
    plan: Any,
    n: int,
    reverse: bool,
    fixed: dict[str, Any],
    load: list[Slice],
    save_before: list[Slice],
    save: list[Slice],
    carries: list[tuple[str, str, Any]],
) -> dict[str, Any]:
    values = dict(fixed)
    carry = {fed: np.array(start, copy=True) for fed, _, start in carries}
    for t in range(n - 1, -1, -1) if reverse else range(n):
        for name, array, axis in load:
            values[name] = np.ascontiguousarray(array[(slice(None),) * axis + (t,)])
        values.update(carry)
        for name, array, axis in save_before:
            array[(slice(None),) * axis + (t,)] = values[name]
        got = dict(zip(plan.fetch_names, _run_block(plan, values)))
        for name, array, axis in save:
            array[(slice(None),) * axis + (t,)] = got[name]
        for fed, fetched, _ in carries:
            carry[fed] = got[fetched]
    return carry


class RecurrentKernel:
    """Runs the step block once per time step (``scan``), keeping each run's states."""

    def __init__(self, step: Any, block: Any) -> None:
        op, attrs = step.op, step.attrs
        self.block = block
        self.axis = _time_axis(attrs)
        self.reverse = attrs["is_reverse"]
        self.x = op.input("x")
        self.step_inputs, self.states = attrs["step_inputs"], attrs["step_states"]
        self.outs, self.new_states = attrs["step_outputs"], attrs["step_new_states"]

    def __call__(self, inputs: list, initial_states: list, x: list, **attrs: Any) -> tuple:
        axis, shapes = self.axis, self.block.spec.shapes
        n = inputs[0].shape[axis]
        outputs = []
        for name in self.outs:
            shape, dtype = shapes[name]
            outputs.append(aligned_empty((*shape[:axis], n, *shape[axis:]), dtype))
        tapes = [aligned_empty((n, *s.shape), s.dtype) for s in initial_states]
        final = scan(
            self.block,
            n,
            self.reverse,
            dict(zip(self.x, x)),
            [(name, host_array(seq), axis) for name, seq in zip(self.step_inputs, inputs)],
            [(name, tape, 0) for name, tape in zip(self.states, tapes)],
            [(name, out, axis) for name, out in zip(self.outs, outputs)],
            [(s, new, init) for s, new, init in zip(self.states, self.new_states, initial_states)],
        )
        return outputs, [final[s] for s in self.states], tapes


class RecurrentBackwardKernel:
    """Runs the gradient block once per time step, in the reverse of the forward order:
    state gradients and the parameters' running sums are carried from run to run (the block
    adds each run's part with its own ops), sequence gradients saved per time slice."""

    def __init__(self, step: Any, grad: Any) -> None:
        op, attrs = step.op, step.attrs
        self.grad = grad
        self.axis = _time_axis(attrs)
        self.reverse = not attrs["is_reverse"]
        self.x = op.input("x")
        self.attrs = attrs
        k, m = len(attrs["diff_states"]), len(attrs["wanted_inputs"])
        outs = attrs["grad_outs"]
        self.state_grads, self.input_grads, self.sums = outs[:k], outs[k : k + m], outs[k + m :]

    def __call__(
        self,
        inputs: list,
        state_tape: list,
        x: list,
        outputs_grad: list | None,
        final_states_grad: list | None,
        **attrs: Any,
    ) -> tuple:
        a, axis = self.attrs, self.axis
        n = inputs[0].shape[axis]
        seqs = dict(zip(a["step_inputs"], inputs))
        load = [(name, host_array(seq), axis) for name, seq in seqs.items()]
        load += [(name, host_array(tape), 0) for name, tape in zip(a["step_states"], state_tape)]
        load += [(s, host_array(g), axis) for s, g in zip(a["output_seeds"], outputs_grad or [])]
        input_grads = [
            aligned_empty(seqs[name].shape, seqs[name].dtype) for name in a["wanted_inputs"]
        ]
        fixed = dict(zip(self.x, x))
        carries = list(zip(a["state_seeds"], self.state_grads, final_states_grad or []))
        for acc, out, name in zip(a["accumulators"], self.sums, a["wanted_x"]):
            carries.append((acc, out, np.zeros_like(fixed[name])))
        final = scan(
            self.grad,
            n,
            self.reverse,
            fixed,
            load,
            [],
            [(name, g, axis) for name, g in zip(self.input_grads, input_grads)],
            carries,
        )
        return (
            input_grads,
            [final[s] for s in a["state_seeds"]],
            [final[acc] for acc in a["accumulators"]],
        )
