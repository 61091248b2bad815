"""Running one op on NumPy inputs, and judging its gradients by central finite differences."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._src.base.dtypes import FLOATING, numpy_dtype
from .._src.graph.backward import gradients
from .._src.graph.program import Program, program_guard
from .._src.graph.variable import Variable
from .._src.run.executor import Executor
from .._src.run.scope import Scope


def build(
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
    prog, _, outputs, feed = build(op_type, inputs, attrs)
    names = [(slot, v.name) for slot, vs in outputs.items() for v in vs]
    values = Executor(device).run(prog, feed=feed, fetch_list=[n for _, n in names], scope=Scope())
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
    output: str | Sequence[str] | None = "out",
    eps: float = 1e-6,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    seed: int = 0,
    device: Any = "cpu",
) -> None:
    """Assert that the op's gradients match central finite differences.

    ``wrt``: the input slots to check (default: all); ``output``: the output slot (or slots;
    None: every floating one) whose weighted sum is differentiated; ``device``: where both
    the gradient ops and the finite differences run. Raises AssertionError naming the op, each
    input whose gradient is wrong and its largest mismatch.
    """
    tolerance = {"eps": eps, "rtol": rtol, "atol": atol}
    problems = grad_problems(
        op_type, inputs, attrs, wrt=wrt, output=output, seed=seed, device=device, **tolerance
    )
    if problems:
        raise AssertionError(f"op {op_type!r}: " + "\n".join(problems))


@dataclass
class _Gradients:
    """One op's program with the gradients of a weighted sum of its outputs, computed."""

    prog: Program
    targets: list[Variable]  # the outputs differentiated
    weight_feed: dict[str, np.ndarray]  # their weights, by weight variable name
    feed: dict[str, np.ndarray]  # the op's inputs
    variables: list[Variable]  # the inputs differentiated
    labels: dict[str, str]  # variable name -> "x", or "xs[1]" in a duplicable slot
    analytic: dict[str, np.ndarray]  # variable name -> its gradient (absent: none computed)


_WEIGHT_STREAM = 0x5EED_3E16  # any constant: it only sets the weights' stream apart


def _gradients(
    op_type: str,
    inputs: dict[str, Any],
    attrs: dict[str, Any] | None,
    *,
    wrt: Sequence[str] | None,
    output: str | Sequence[str] | None,
    seed: int,
    device: Any,
    weight_dtype: str | None = None,
) -> _Gradients | list[str]:
    """The op's analytic gradients; a list of problems when ``output`` names none of its
    outputs (empty: nothing to differentiate). The weights are standard normal (``seed``),
    rounded to ``weight_dtype`` when given, so that runs in two dtypes weigh alike."""
    prog, slots, outputs, feed = build(op_type, inputs, attrs)
    if output is None:
        chosen = [s for s, vs in outputs.items() if vs and vs[0].dtype in FLOATING]
        if not chosen:  # integer or bool results only: nothing to differentiate
            return []
    else:
        chosen = [output] if isinstance(output, str) else list(output)
    missing = [s for s in chosen if s not in outputs]
    if missing:
        return [f"has no output {', '.join(map(repr, missing))} (it has {', '.join(outputs)})"]
    targets = [t for s in chosen for t in outputs[s]]
    # A stream of the weights' own: inputs drawn with default_rng(seed) must not be the
    # weights themselves, a direction some gradients (a normalisation's) are nearly blind to.
    rng = np.random.default_rng([seed, _WEIGHT_STREAM])
    weights: list[np.ndarray] = []
    seeds: list[Variable] = []
    with program_guard(prog):
        block = prog.global_block()
        for t in targets:
            name, n = f"{t.name}@W", 0
            while block.find_var(name) is not None:  # never one of the op's own names
                n += 1
                name = f"{t.name}@W{n}"
            w = block.create_var(name, t.shape, t.dtype)
            w.is_data = True
            weight = rng.standard_normal(t.shape)
            if weight_dtype is not None:
                weight = weight.astype(numpy_dtype(weight_dtype))
            weights.append(weight.astype(numpy_dtype(t.dtype)))
            seeds.append(w)
    weight_feed = {w.name: value for w, value in zip(seeds, weights)}
    wanted = [s for s in slots if wrt is None or s in wrt]
    variables, labels = [], {}
    for s in wanted:
        many = isinstance(slots[s], list)
        for k, v in enumerate(slots[s] if many else [slots[s]]):
            variables.append(v)
            labels[v.name] = f"{s}[{k}]" if many else s
    grads = gradients(targets, variables, target_gradients=seeds)
    fetch = [g for g in grads if g is not None]
    # Each run on a scope of its own: a random op (``random: true``) draws the same numbers in
    # every run, so that finite differences see a function of the inputs alone.
    full_feed = {**feed, **weight_feed}
    exe = Executor(device)
    computed = exe.run(prog, feed=full_feed, fetch_list=fetch, scope=Scope()) if fetch else []
    analytic = dict(zip([v.name for v, g in zip(variables, grads) if g is not None], computed))
    return _Gradients(prog, targets, weight_feed, feed, variables, labels, analytic)


def grad_problems(
    op_type: str,
    inputs: dict[str, Any],
    attrs: dict[str, Any] | None,
    *,
    wrt: Sequence[str] | None,
    output: str | Sequence[str] | None,
    eps: float,
    rtol: float,
    atol: float,
    seed: int,
    device: Any,
) -> list[str]:
    """What ``check_grad`` asserts, as a list of problems (empty when the gradients are right).
    Errors building or running the gradient ops (a PaddleCoreError) propagate."""
    g = _gradients(op_type, inputs, attrs, wrt=wrt, output=output, seed=seed, device=device)
    if isinstance(g, list):
        return g
    exe = Executor(device)
    weights = list(g.weight_feed.values())

    def objective(values: dict[str, np.ndarray]) -> float:
        outs = exe.run(
            g.prog, feed={**values, **g.weight_feed}, fetch_list=g.targets, scope=Scope()
        )
        return float(sum(np.sum(o.astype(np.float64) * w) for o, w in zip(outs, weights)))

    problems = []
    for var in g.variables:
        numeric = _finite_differences(objective, g.feed, var.name, eps)
        got = g.analytic.get(var.name)
        if got is None:
            if np.any(numeric != 0):
                problems.append(
                    f"no gradient for input {g.labels[var.name]!r}, but finite differences give "
                    f"{mismatch(np.zeros_like(numeric), numeric, 0.0, 0.0)}"
                )
            continue
        found = mismatch(got, numeric, rtol, atol)
        if found:
            problems.append(
                f"gradient of input {g.labels[var.name]!r} (analytic vs finite differences): {found}"
            )
    return problems


def lower_precision_grad_problems(
    op_type: str,
    inputs: dict[str, Any],
    attrs: dict[str, Any] | None,
    *,
    dtype: str,
    wrt: Sequence[str] | None,
    rtol: float,
    atol: float,
    seed: int,
    device: Any,
) -> list[str]:
    """The op's gradients computed in ``dtype`` (``inputs`` hold its floating inputs in that
    dtype) against those computed in float64 from the same values and weights, within (rtol,
    atol): for the 16-bit floats, where finite differences in their own precision say little.
    The float64 gradients are the ones a finite-difference check vouches for."""
    wide = {
        s: [_to_float64(a) for a in v] if isinstance(v, (list, tuple)) else _to_float64(v)
        for s, v in inputs.items()
    }
    runs = [
        _gradients(
            op_type,
            values,
            attrs,
            wrt=wrt,
            output=None,
            seed=seed,
            device=device,
            weight_dtype=dtype,
        )
        for values in (inputs, wide)
    ]
    low, high = runs
    if isinstance(low, list) or isinstance(high, list):
        return [p for r in runs if isinstance(r, list) for p in r]
    problems = []
    for var in low.variables:
        got, want = low.analytic.get(var.name), high.analytic.get(var.name)
        if got is None or want is None:
            if (got is None) != (want is None):
                which = dtype if got is None else "float64"
                problems.append(f"no gradient for input {low.labels[var.name]!r} in {which}")
            continue
        found = mismatch(got, want, rtol, atol)
        if found:
            problems.append(
                f"gradient of input {low.labels[var.name]!r} in {dtype} vs float64's: {found}"
            )
    return problems


def _to_float64(a: Any) -> Any:
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.name in FLOATING else a


def _finite_differences(
    objective: Callable[[dict[str, np.ndarray]], float],
    feed: dict[str, np.ndarray],
    name: str,
    eps: float,
) -> np.ndarray:
    """d objective / d feed[name] by central differences, one element at a time."""
    base = feed[name]
    numeric = np.zeros(base.shape, dtype=np.float64)
    for index in np.ndindex(base.shape):
        values = dict(feed)
        plus, minus = base.copy(), base.copy()
        plus[index] += eps
        minus[index] -= eps
        values[name] = plus
        f_plus = objective(values)
        values[name] = minus
        numeric[index] = (f_plus - objective(values)) / (2 * eps)
    return numeric


def mismatch(got: Any, want: Any, rtol: float, atol: float) -> str | None:
    """How ``got`` differs from ``want`` beyond the tolerance (shape, count, the largest
    difference and where), or None when they agree. NaNs agree with NaNs only."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if got.size == 0:
        return None
    a, b = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        bad = ~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        if not bad.any():
            return None
        error = np.where(bad, np.abs(a - b), 0.0)
    error[bad & np.isnan(error)] = np.inf  # a NaN where a number was expected, or the reverse
    index = np.unravel_index(int(np.argmax(error)), error.shape)
    where = f" at {tuple(int(i) for i in index)}" if got.ndim else ""
    return (
        f"{int(bad.sum())} of {bad.size} elements differ, largest mismatch {error[index]:.3g}"
        f"{where} (got {a[index]:.6g}, expected {b[index]:.6g}; rtol {rtol:g}, atol {atol:g})"
    )
