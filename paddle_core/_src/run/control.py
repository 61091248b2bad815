"""Control flow at run time: planning and running the ops that hold blocks.

``while_block`` and ``cond_block`` (declared in ``paddle_core/builtin/ops.pbtxt``) list every
outer variable their blocks read or write as inputs and outputs, so the outer plan treats them
as ordinary ops. This module decides the rest:

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
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.errors import KernelRuntimeError, PaddleCoreError, ShapeError
from ..graph.variable import format_shape

CONTROL_OPS = frozenset({"while_block", "cond_block", "while_block_backward"})

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

    def sub_plan(attr: str, fetch: list[str], carried: frozenset = frozenset()) -> Any:
        idx = step.attrs[attr]
        try:
            return plan_fn(program, device, signature, fetch, block_idx=idx, carried=carried)
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
