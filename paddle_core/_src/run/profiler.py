"""Profiling: how long each op of a prepared program takes, run after run.

While a ``Profile`` is active (``with profile() as prof:``), every run of a prepared program
in this thread records when each op of its plan started and ended: the op's kernel, and what
its step does around it (the copy of a scratch output back into its variable; on a device, the
copies to and from the host of an op falling back to a CPU kernel). The compiled loop takes the
readings itself (``Plan.run_profiled``: an instantiation of the loop of its own, so that runs
with no profile active are the loop as it would be without one; the choice is made once per
run); the Python loop takes them around each step. Both read the compiled runtime's steady
clock (``now_ns``). On a device whose work is queued (CUDA), a profiled run waits for the
device after each op, so that an op's time is its work, not its launch.

The ops of a control-flow op's blocks (a loop's body, a branch) run inside that op, and their
time is its time: a profile records the runs of top-level plans only.

A profile keeps each run's raw times; ``records`` (an ``OpRecord`` per op per run),
``by_type`` and ``by_op`` (``OpStats``, largest total first), ``table`` and ``chrome_trace``
(the Trace Event format that chrome://tracing and Perfetto read) are derived from them.
"""

from __future__ import annotations

import contextvars
import io
import json
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from ..base.errors import ConfigError, shown
from ..base.runtime import compiled_runtime

# The profile recording this thread's runs; None when none is (or inside a profiled run, whose
# nested runs belong to their op's time).
recording: contextvars.ContextVar[Profile | None] = contextvars.ContextVar(
    "paddle_core_profile", default=None
)


@dataclass(frozen=True, slots=True)
class OpRecord:
    """One op's time in one run."""

    run: int  # the run of the profile it belongs to, counted from 0
    index: int  # the op's index in its block (the planned program's, after program passes)
    type: str
    outputs: tuple[str, ...]  # the variables it writes
    kernel: str  # the kernel's name in its plugin, e.g. "add_f32"
    device: str  # the device the kernel runs as
    start_ns: int  # on the compiled runtime's steady clock (``now_ns``)
    end_ns: int
    thread: int  # the native id of the thread that ran it

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True, slots=True)
class OpStats:
    """One op type's totals over a profile (``by_type``), or one op's (``by_op``)."""

    type: str
    index: int | None  # by_op: the op's index in its block; by_type: None
    outputs: tuple[str, ...]  # by_op: the variables it writes; by_type: ()
    calls: int
    total_ns: int
    share: float  # of all ops' time in the profile, in [0, 1]

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.calls


@dataclass(frozen=True, slots=True)
class _Op:
    """What a record says of an op, taken once per plan."""

    index: int
    type: str
    outputs: tuple[str, ...]
    kernel: str
    device: str


@dataclass(frozen=True, slots=True)
class _Run:
    ops: tuple[_Op, ...]  # the plan's ops, by their index in the plan
    times: Any  # int64 rows (index in the plan, start, end), in the order the ops ran
    start_ns: int
    end_ns: int
    thread: int


class Profile:
    """The op times of the runs made while it is active (``with pc.profiler.profile() as
    prof:``); entered again, it adds to what it has."""

    def __init__(self) -> None:
        self.start_ns: int | None = None  # when it was first entered (``now_ns``)
        self._runs: list[_Run] = []
        # id(plan) -> (a weak reference to the plan, its ops): a profile keeps no plan alive
        self._ops: dict[int, tuple[weakref.ref, tuple[_Op, ...]]] = {}
        self._records: list[OpRecord] | None = None
        self._token: contextvars.Token | None = None

    def __enter__(self) -> Profile:
        if self._token is not None:
            raise ConfigError("this profile is recording already: it cannot be entered twice")
        if self.start_ns is None:
            self.start_ns = compiled_runtime().now_ns()
        self._token = recording.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            recording.reset(self._token)
            self._token = None

    def __repr__(self) -> str:
        total = sum(r.duration_ns for r in self.records)
        return f"<Profile: {len(self._runs)} runs, {len(self.records)} op records, {_ms(total)} ms>"

    def __str__(self) -> str:
        return self.table("type") + "\n" + self.table("op", limit=20)

    def add_run(self, plan: Any, times: Any, start_ns: int, end_ns: int) -> None:
        """Record one run of ``plan`` (a PreparedProgram): ``times`` is an int64 array of
        (index of the op in the plan, start, end) rows, one per op in the order they ran."""
        cached = self._ops.get(id(plan))
        if cached is None or cached[0]() is not plan:
            cached = self._ops[id(plan)] = (weakref.ref(plan), _ops_of(plan))
        run = _Run(cached[1], times, start_ns, end_ns, threading.get_native_id())
        self._runs.append(run)
        self._records = None

    @property
    def runs(self) -> int:
        """How many runs it recorded."""
        return len(self._runs)

    @property
    def records(self) -> list[OpRecord]:
        """An OpRecord per op per run, in the order they ran."""
        if self._records is None:
            self._records = [
                OpRecord(n, *_fields(run.ops[k]), start, end, run.thread)
                for n, run in enumerate(self._runs)
                for k, start, end in run.times.tolist()
            ]
        return self._records

    def by_type(self) -> list[OpStats]:
        """Totals per op type, largest first."""
        return self._totals(lambda r: (r.type, None, ()))

    def by_op(self) -> list[OpStats]:
        """Totals per op (its index, type and outputs), largest first."""
        return self._totals(lambda r: (r.type, r.index, r.outputs))

    def _totals(self, key: Any) -> list[OpStats]:
        totals: dict[tuple, list[int]] = {}
        for r in self.records:
            entry = totals.setdefault(key(r), [0, 0])
            entry[0] += 1
            entry[1] += r.duration_ns
        everything = sum(total for _, total in totals.values()) or 1
        stats = [
            OpStats(type, index, outputs, calls, total, total / everything)
            for (type, index, outputs), (calls, total) in totals.items()
        ]
        stats.sort(key=lambda s: (-s.total_ns, s.type, s.index or 0))
        return stats

    def table(self, by: str = "type", limit: int | None = None) -> str:
        """The totals by op ``type`` or by ``op`` as a text table, largest total first: calls,
        total, mean, share of all ops' time; ``limit`` keeps the first rows."""
        if by not in ("type", "op"):
            raise ConfigError(f"Profile.table: by must be 'type' or 'op', got {shown(by)}")
        if limit is not None and (type(limit) is not int or limit < 1):
            raise ConfigError(
                f"Profile.table: limit must be an int >= 1 or None, got {shown(limit)}"
            )
        # (rich's import and layout: only to show a profile)
        from rich import box
        from rich.console import Console
        from rich.table import Table

        stats = self.by_type() if by == "type" else self.by_op()
        ops = sum(s.total_ns for s in stats)
        runs = sum(r.end_ns - r.start_ns for r in self._runs)
        title = f"{'by op type' if by == 'type' else 'by op'}: {len(self._runs)} runs, "
        title += f"{_ms(ops)} ms in ops"
        if runs:
            title += f" ({ops / runs:.0%} of the runs' time)"
        shown_rows = stats if limit is None else stats[:limit]
        if len(shown_rows) < len(stats):
            title += f"; the first {len(shown_rows)} of {len(stats)}"
        heads = ["op type"] if by == "type" else ["op", "type", "outputs"]
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        for head in heads:
            table.add_column(head, overflow="ellipsis", no_wrap=True, max_width=40)
        for head in ("calls", "total ms", "mean µs", "share %"):
            table.add_column(head, justify="right")
        for s in shown_rows:
            cells = [s.type] if by == "type" else [f"#{s.index}", s.type, _outputs(s.outputs)]
            share = f"{100 * s.share:.1f}"
            table.add_row(*cells, str(s.calls), _ms(s.total_ns), f"{s.mean_ns / 1e3:.1f}", share)
        console = Console(file=io.StringIO(), width=200, highlight=False, markup=False)
        with console.capture() as captured:
            console.print(table)
        rows = "\n".join(line.rstrip() for line in captured.get().splitlines()).strip("\n")
        return f"{title}\n{rows}\n"

    def chrome_trace(self) -> dict[str, Any]:
        """The runs and their ops as Trace Event JSON (chrome://tracing, Perfetto): a complete
        ("X") event per op run (cat "op") inside one per run (cat "run"), ts and dur in
        microseconds from the profile's start."""
        origin = self.start_ns or 0
        pid = os.getpid()

        def event(name: str, cat: str, start: int, end: int, tid: int, args: dict) -> dict:
            ts, dur = (start - origin) / 1e3, (end - start) / 1e3
            return {"name": name, "cat": cat, "ph": "X", "ts": ts, "dur": dur, "pid": pid,
                    "tid": tid, "args": args}  # fmt: skip

        events = []
        for n, run in enumerate(self._runs):
            events.append(event("run", "run", run.start_ns, run.end_ns, run.thread, {"run": n}))
            for k, start, end in run.times.tolist():
                op = run.ops[k]
                args = {"run": n, "op": op.index, "outputs": list(op.outputs)}
                args |= {"kernel": op.kernel, "device": op.device}
                events.append(event(op.type, "op", start, end, run.thread, args))
        return {"traceEvents": events, "displayTimeUnit": "ms"}

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Write ``chrome_trace()`` to ``path`` as JSON (open it in chrome://tracing or
        https://ui.perfetto.dev)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.chrome_trace(), f)


def profile() -> Profile:
    """A new Profile: ``with pc.profiler.profile() as prof:`` records the op times of every
    run made in the block (in this thread); then ``print(prof)``, ``prof.table()``,
    ``prof.by_op()``, ``prof.export_chrome_trace("trace.json")``."""
    return Profile()


def _ops_of(plan: Any) -> tuple[_Op, ...]:
    """A plan's steps as the records name them: index in the block, type, outputs, kernel."""
    position: dict[int, dict[int, int]] = {}
    ops = []
    for step in plan.steps:
        block = step.op.block
        where = position.get(id(block))
        if where is None:
            where = position[id(block)] = {id(op): i for i, op in enumerate(block.ops)}
        outputs = tuple(n for _, _, names in step.outputs for n in names)
        index = where.get(id(step.op), -1)
        ops.append(_Op(index, step.op.type, outputs, step.kernel.ref, str(step.device)))
    return tuple(ops)


def _fields(op: _Op) -> tuple[int, str, tuple[str, ...], str, str]:
    return op.index, op.type, op.outputs, op.kernel, op.device


def _outputs(names: tuple[str, ...]) -> str:
    """An op's outputs in a table: the first, and how many more."""
    more = f" (+{len(names) - 1})" if len(names) > 1 else ""
    return (names[0] if names else "-") + more


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.3f}"
