"""Constant folding: the ops of a plan whose every input is a persistable value the plan does
not write (a parameter of an evaluation program) compute the same results on every run until
one of those values is set again. They are split off into a plan of their own, the prologue,
which runs before the first run and again only after a scope write to one of its inputs (the
scope's stamps: ``scope.py``); the rest of the plan reads their results as feeds.

Passes make such ops on purpose: the oneDNN layout pass of an inference plan packs each
convolution's filter into the layout its primitive reads (one reorder of the weights per
change, not per run), and batch norm folds into the convolution before it.

An op folds when it is pure and cheap to trust: a native kernel (which writes only its
outputs), no random numbers, no control flow; it reads at least one value and only values
folded already or persistable ones no step of the plan writes; and nothing it writes is
persistable, fed, fetched or written by another step. Values changed in place behind the
scope's back are not seen (as for any stamped cache): set them with ``set_var``.
"""

from __future__ import annotations

import weakref
from typing import Any

from .control import CONTROL_OPS
from .planning import PlanSpec
from .scope import CLOCK, Scope

PASS_NAME = "fold_constants"


def split(spec: PlanSpec) -> tuple[PlanSpec | None, PlanSpec]:
    """(the prologue, the rest) of ``spec``; (None, ``spec``) when no step folds. The rest
    is fed the prologue's results (``spec.folded``) besides its own feeds."""
    written = set(spec.persistable_outputs)
    constant = {n for n in spec.persistable_inputs if n not in written}
    writers: dict[str, int] = {}
    for step in spec.steps:
        for name in _names(step.outputs):
            writers[name] = writers.get(name, 0) + 1
    kept = set(spec.feed_names) | set(spec.fetch_names) | written
    folded: list[Any] = []
    for step in spec.steps:
        ins, outs = _names(step.inputs), _names(step.outputs)
        if (
            ins
            and outs
            and step.kernel.impl == "native"
            and not step.info.draws(step.attrs)
            and step.op.type not in CONTROL_OPS
            and all(n in constant for n in ins)
            and not any(n in kept or writers[n] > 1 for n in outs)
        ):
            folded.append(step)
            constant.update(outs)
    if not folded:
        return None, spec
    results = _read_after(spec, folded)
    if not results:
        return None, spec
    prologue = PlanSpec(spec.program, [], results)
    prologue.steps = folded
    made = {n for s in folded for n in _names(s.outputs)}
    read = {n for s in folded for n in _names(s.inputs)}
    prologue.persistable_inputs = [n for n in spec.persistable_inputs if n in read - made]
    prologue.shapes = {n: spec.shapes[n] for n in read | made}
    rest = PlanSpec(spec.program, [*spec.feed_names, *results], spec.fetch_names)
    rest.steps = [s for s in spec.steps if s not in folded]
    rest.folded = results
    rest.persistable_inputs = [n for n in spec.persistable_inputs if _read(rest.steps, n)]
    rest.persistable_outputs = spec.persistable_outputs
    used = {n for s in rest.steps for n in _names(s.inputs) + _names(s.outputs)}
    used.update(rest.feed_names, rest.fetch_names, rest.persistable_inputs)
    rest.shapes = {n: shape for n, shape in spec.shapes.items() if n in used}
    rest.random = spec.random
    return prologue, rest


def _names(slots: list) -> list[str]:
    return [n for _, _, names in slots for n in names]


def _read(steps: list, name: str) -> bool:
    return any(name in _names(s.inputs) for s in steps)


def _read_after(spec: PlanSpec, folded: list) -> list[str]:
    """The folded results the other steps read, in the order they are made."""
    rest = [s for s in spec.steps if s not in folded]
    return [n for s in folded for n in _names(s.outputs) if _read(rest, n)]


class Folded:
    """A prologue's results per scope, recomputed when a value it reads is set again."""

    def __init__(self, prologue: Any) -> None:
        self.prologue = prologue  # a PreparedProgram fetching the folded values
        self._cache: weakref.WeakKeyDictionary[Scope, tuple[int, dict[str, Any]]] = (
            weakref.WeakKeyDictionary()
        )

    def values(self, scope: Scope) -> dict[str, Any]:
        """The folded values for a run in ``scope``."""
        cached = self._cache.get(scope)
        if cached is not None:
            tick, values = cached
            if tick == CLOCK.now:
                return values
            if not any(scope.stamp(n) > tick for n in self.prologue.persistable_inputs):
                self._cache[scope] = (CLOCK.now, values)
                return values
        tick = CLOCK.now
        arrays = self.prologue._run({}, scope, return_numpy=False)
        values = dict(zip(self.prologue.fetch_names, arrays))
        self._cache[scope] = (tick, values)
        return values
