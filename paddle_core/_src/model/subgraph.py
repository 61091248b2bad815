"""Subgraphs: the ops a set of expressions needs, planned once per feed signature.

An expression is a variable's value at a point of its model's net: after the ops that were in
the global block when it was made (its anchor is the last of them; an expression of a
persistable variable has none and is the value in the scope). ``extract`` walks back from the
latest anchor: an op is kept when it writes a variable still needed, and then its inputs are
needed. Unlike the executor's ``prune`` it keeps
no op for its side effect alone, and it skips ops of the "optimize" role that write persistable
variables (parameter updates, optimizer state, the step counter) unless a training step is
among the targets: evaluating an expression never trains.

A ``Subgraph`` is made once per (program version, plugins, targets). It knows the data
variables its ops read (the feeds it needs), the persistable variables they read (from the
scope) and whether an op writes a persistable variable (``stateful``: a training step, a batch
norm moving its running statistics); a stateful subgraph runs on every call, and nothing it
computes is served from a cache. Its plans are cached per feed signature; while no fed dtype or
shape changed (the model counts such changes), the last one is taken with no look at the feeds.
"""

from __future__ import annotations

from typing import Any

from ..base.dtypes import name_of
from ..base.errors import FeedError, ProgramError
from ..plugins import hooks
from ..plugins.registry import get_registry
from ..run.planning import first_reads, plan, prune
from ..run.prepared import PreparedProgram
from .expression import Target

MAX_PLANS = 16  # feed signatures kept per subgraph (batch sizes, mostly)


def extract(
    block: Any, targets: list[Target], fed: set[str], origins: list[int | None] | None = None
) -> list[tuple[int, Any]]:
    """(index, op) of the ops ``targets`` need, in block order (see the module docstring).

    ``origins``: for a block a program pass rewrote, each op's index in the block before the
    pass (None for an op the pass inserted, which counts as part of the op before it), the
    indices the targets know; None where the block is the program's own."""
    ops = block.ops
    at = list(range(len(ops))) if origins is None else _places(origins)
    forced = {i for t in targets for i in t.forced}
    updates = any(t.updates for t in targets)
    pending = sorted(targets, key=lambda t: t.end)  # a name is needed before its end
    end = max([t.end for t in targets] + [i + 1 for i in forced], default=0)
    feed_until = first_reads(block, fed)  # a fed variable's computing ops: see first_reads
    need: set[str] = set()
    kept = []
    for i in range(len(ops) - 1, -1, -1):
        if at[i] >= end:
            continue
        while pending and pending[-1].end > at[i]:
            need.add(pending.pop().name)
        op = ops[i]
        inserted = origins is not None and origins[i] is None
        if inserted or at[i] not in forced:
            if not any(n in need and feed_until.get(n, -1) <= i for n in op.output_names):
                continue
            if not updates and op.role == "optimize" and _writes_persistable(block, op):
                continue  # read the scope's value instead: evaluating never trains
        kept.append((i, op))
        need.update(op.input_names)
    kept.reverse()
    return kept


def _places(origins: list[int | None]) -> list[int]:
    """Each op's place in the program before a pass: its own, or for an op the pass inserted,
    that of the op before it (-1 before the first)."""
    places, last = [], -1
    for origin in origins:
        last = last if origin is None else origin
        places.append(last)
    return places


def _writes_persistable(block: Any, op: Any) -> bool:
    return any((v := block.find_var(n)) is not None and v.persistable for n in op.output_names)


class Subgraph:
    """The ops some expressions need, what they read, and their prepared plans."""

    def __init__(self, model: Any, program: Any, targets: list[Target] | None) -> None:
        """``targets`` None: the whole program, as ``Executor.run`` without fetches runs it."""
        self.model = model
        self.program = program
        self.version = program.version
        self.registry, self.generation = get_registry(), hooks.generation
        block = program.global_block()
        data = {n for n, v in block.vars.items() if v.is_data}
        if targets is None:
            self.targets: list[Target] = []
            self.ops = prune(block, [], data)
            self._select: Any = None  # the executor's prune
        else:
            self.targets = targets
            kept = extract(block, targets, data)
            _check_no_rewrite(block, targets, kept)
            self.ops = [op for _, op in kept]
            self._select = self._pick
        self.fetch_names = [t.name for t in self.targets]
        read = {n for op in self.ops for n in op.input_names} | set(self.fetch_names)
        self.feed_names = sorted(n for n in read if n in data)  # the plan signature's order
        self.persistables = [
            n for n in sorted(read) if (v := block.find_var(n)) is not None and v.persistable
        ]
        self.stateful = any(_writes_persistable(block, op) for op in self.ops)
        self._plans: dict[tuple, PreparedProgram] = {}
        self._last: PreparedProgram | None = None  # the plan for the model's feed layout
        self._layout = -1
        self._reads_by_name = False  # whether that plan reads only the feeds it names
        self._fed_by: Any = None  # the model's feed store, once it held every feed needed

    def valid(self, program: Any) -> bool:
        """Whether this subgraph still describes ``program`` with today's plugins."""
        return (
            program is self.program
            and program.version == self.version
            and get_registry() is self.registry
            and hooks.generation == self.generation
        )

    def _pick(self, block: Any, fed: set[str], origins: list[int | None] | None) -> list[Any]:
        if block is self.program.global_block():
            return self.ops
        # A copy rewritten by a paddle_core_transform_program pass: the same walk, with the
        # pass's ops placed among the program's.
        return [op for _, op in extract(block, self.targets, fed, origins)]

    def prepared(self, feed: dict[str, Any], layout: int) -> PreparedProgram:
        """The plan for these feeds (arrays the model checked), built on first use.
        ``layout`` is the model's count of changes to fed dtypes and shapes: while it stays
        the same, so does the plan."""
        if layout == self._layout:
            return self._last  # type: ignore[return-value]
        signature = tuple((n, feed[n].shape, name_of(feed[n].dtype)) for n in self.feed_names)
        # (``feed`` may hold more than this subgraph reads: the signature takes what it does.)
        prepared = self._plans.get(signature)
        if prepared is None:
            model = self.model
            spec = plan(self.program, model.device, signature, self.fetch_names, self._select)
            prepared = PreparedProgram(spec, model.device, model.num_threads)
            model.prepare_count += 1
            if len(self._plans) >= MAX_PLANS:
                del self._plans[next(iter(self._plans))]
            self._plans[signature] = prepared
        self._last, self._layout = prepared, layout
        self._reads_by_name = prepared.compiled
        return prepared

    def feed_from(self, feeds: dict[str, Any], what: str) -> dict[str, Any]:
        """The feeds this subgraph reads, from the model's fed values (FeedError naming
        ``what`` when one is missing)."""
        try:
            return {name: feeds[name] for name in self.feed_names}
        except KeyError as e:
            missing = [n for n in self.feed_names if n not in feeds]
            raise FeedError(
                f"{what} needs data {', '.join(map(repr, missing))}, which the model has not "
                f"been fed; pass feed={{{e.args[0]!r}: ...}} to value() or run()"
            ) from None


def _check_no_rewrite(block: Any, targets: list[Target], kept: list[tuple[int, Any]]) -> None:
    """One run holds one value per variable: a target rewritten by a later op the run needs
    (a parameter and the training step updating it) cannot be fetched by that run."""
    for target in targets:
        for i, op in kept:
            if i >= target.end and target.name in op.output_names:
                raise ProgramError(
                    f"{target.name!r} is rewritten by op {op.type!r} (op {i} of block "
                    f"{block.idx}), which another target of this run needs; one run holds one "
                    "value per variable: evaluate them in separate runs"
                )
