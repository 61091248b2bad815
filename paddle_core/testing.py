"""Testing ops: run one op on NumPy inputs, and check its gradients numerically.

    from paddle_core.testing import run_op, check_grad

    (out,) = run_op("add", {"x": a, "y": b})["out"]       # compare with a NumPy reference
    check_grad("mul", {"x": a, "y": b})                   # analytic vs finite differences

``check_grad`` builds a program with the op and its backward (through the op's grad rule and
grad kernels), seeds the output's gradient with random weights W, and compares the gradient
of sum(out * W) with respect to each input against central differences. Use float64 inputs:
finite differences in float32 are too coarse to judge a kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._src.graph.backward import gradients
from ._src.graph.program import Program, program_guard
from ._src.graph.variable import Variable
from ._src.run.executor import Executor


def _build(
    op_type: str, inputs: dict[str, Any], attrs: dict[str, Any] | None
) -> tuple[Program, dict[str, Any], dict[str, list[Variable]], dict[str, np.ndarray]]:
    """A program holding one op fed from data variables; returns it, the op's input
    variables and output variables by slot, and the feed."""
    prog = Program()
    feed: dict[str, np.ndarray] = {}
    slots: dict[str, Any] = {}
    with program_guard(prog):
        block = prog.global_block()
        for slot, value in inputs.items():
            if value is None:
                continue
            arrays = value if isinstance(value, (list, tuple)) else [value]
            made = []
            for k, array in enumerate(arrays):
                array = np.asarray(array)
                var = block.create_var(f"{slot}_{k}", array.shape, array.dtype.name)
                var.is_data = True
                feed[var.name] = array
                made.append(var)
            slots[slot] = made if isinstance(value, (list, tuple)) else made[0]
        op = block.append_op(op_type, inputs=slots, attrs=attrs or {})
    outputs = {slot: [block.var(n) for n in names] for slot, names in op.outputs.items()}
    return prog, slots, outputs, feed


def run_op(
    op_type: str,
    inputs: dict[str, Any],
    attrs: dict[str, Any] | None = None,
    device: Any = "cpu",
) -> dict[str, list[np.ndarray]]:
    """Run one op; returns {output slot: [arrays]} (one array per variable of the slot)."""
    prog, _, outputs, feed = _build(op_type, inputs, attrs)
    names = [(slot, v.name) for slot, vs in outputs.items() for v in vs]
    values = Executor(device).run(prog, feed=feed, fetch_list=[n for _, n in names])
    result: dict[str, list[np.ndarray]] = {slot: [] for slot in outputs}
    for (slot, _), value in zip(names, values):
        result[slot].append(value)
    return result


def check_grad(
    op_type: str,
    inputs: dict[str, Any],
    attrs: dict[str, Any] | None = None,
    *,
    wrt: Sequence[str] | None = None,
    output: str = "out",
    eps: float = 1e-6,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    seed: int = 0,
) -> None:
    """Assert that the op's gradients match central finite differences.

    ``wrt``: the input slots to check (default: all); ``output``: the output slot whose
    weighted sum is differentiated. Raises AssertionError naming the op, the input and the
    largest mismatch.
    """
    prog, slots, outputs, feed = _build(op_type, inputs, attrs)
    targets = outputs[output]
    rng = np.random.default_rng(seed)
    weights = {}
    with program_guard(prog):
        block = prog.global_block()
        seeds = []
        for t in targets:
            w = block.create_var(f"{t.name}@W", t.shape, t.dtype)
            w.is_data = True
            weights[w.name] = rng.standard_normal(t.shape).astype(t.dtype)
            seeds.append(w)
    wanted = [s for s in slots if wrt is None or s in wrt]
    variables = [
        v for s in wanted for v in (slots[s] if isinstance(slots[s], list) else [slots[s]])
    ]
    grads = gradients(targets, variables, target_gradients=seeds)
    exe = Executor()
    full_feed = {**feed, **weights}
    fetch = [g for g in grads if g is not None]
    analytic = dict(
        zip(
            [v.name for v, g in zip(variables, grads) if g is not None],
            exe.run(prog, feed=full_feed, fetch_list=fetch),
        )
    )

    def objective(values: dict[str, np.ndarray]) -> float:
        outs = exe.run(prog, feed={**values, **weights}, fetch_list=targets)
        return float(
            sum(
                np.sum(o.astype(np.float64) * weights[f"{t.name}@W"]) for o, t in zip(outs, targets)
            )
        )

    for var in variables:
        base = feed[var.name]
        numeric = np.zeros(base.shape, dtype=np.float64)
        for index in np.ndindex(base.shape):
            values = dict(feed)
            plus, minus = base.copy(), base.copy()
            plus[index] += eps
            minus[index] -= eps
            values[var.name] = plus
            f_plus = objective(values)
            values[var.name] = minus
            numeric[index] = (f_plus - objective(values)) / (2 * eps)
        got = analytic.get(var.name)
        if got is None:
            if np.any(numeric != 0):
                raise AssertionError(
                    f"op {op_type!r}: no gradient for input {var.name!r}, but it is not zero"
                )
            continue
        np.testing.assert_allclose(
            got,
            numeric,
            rtol=rtol,
            atol=atol,
            err_msg=f"op {op_type!r}: gradient of input {var.name!r} (analytic vs finite differences)",
        )
