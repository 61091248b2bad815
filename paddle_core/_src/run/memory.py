"""Memory planning: which planned buffers of a prepared program may share memory, and where.

A value computed and consumed within one run is live from the step that first writes it to
the step that last reads it (both included). Two values whose live intervals do not overlap
may occupy the same bytes; an output and an input of one step never do (both are live at that
step), except where the op declares the output ``inplace`` with that input and the input is
not read after it: then the output takes over the input's memory (``inplace_pairs``).

``assign_offsets`` places the buffers in one arena, greedy best fit by size (TFLite's "greedy
by size" offsets): the largest first, each into the smallest gap between the buffers already
placed and live at the same time that fits it, else just above them. Sizes are rounded up to
``ALIGNMENT``, so every offset keeps the 64-byte alignment the kernel ABI promises. Which
buffers take part, and which must keep bytes of their own, the runner decides
(``prepared.CompiledRunner``); this module knows steps, sizes and intervals only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..base.host import ALIGNMENT


@dataclass(frozen=True)
class MemoryPlan:
    """What a prepared program holds for its planned buffers: those allocated once, when the
    plan is built, and used by every run (fed, persistable and fetched values are bound per
    run instead, and are not counted)."""

    buffers: int  # how many planned buffers the plan has
    planned_bytes: int  # their bytes with a buffer each (each rounded up to 64 bytes)
    arena_bytes: int  # the bytes of the one arena they share by liveness


@dataclass(frozen=True)
class Live:
    """One buffer to place: its bytes, and the steps it is live over (first..last, included)."""

    size: int
    first: int
    last: int


def aligned(nbytes: int) -> int:
    """``nbytes`` rounded up to ``ALIGNMENT``."""
    return -(-nbytes // ALIGNMENT) * ALIGNMENT


def live_intervals(steps: Sequence[Any]) -> dict[str, tuple[int, int]]:
    """(first write, last read or write) over step indices for each variable the steps
    write; variables only read (fed, persistable) are not included."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for s, step in enumerate(steps):
        for _, _, names in step.inputs:
            for name in names:
                last[name] = s
        for _, _, names in step.outputs:
            for name in names:
                first.setdefault(name, s)
                last[name] = s
    return {name: (s, last[name]) for name, s in first.items()}


def inplace_pairs(
    steps: Sequence[Any],
    live: dict[str, tuple[int, int]],
    shapes: dict[str, tuple[tuple, str]],
    shareable: set[str],
) -> list[tuple[str, str]]:
    """(input, output) pairs of variables that may share memory although one step reads the
    one and writes the other: the op declares the output ``inplace`` with the input's slot
    (item k of one with item k of the other), the input is read by no later step and in no
    other place of this one, the output is first written here, both have one shape and
    dtype, and each takes part in one pair per step at most."""
    pairs = []
    for s, step in enumerate(steps):
        if step.kernel.impl != "native":
            continue
        slots = {slot: names for slot, _, names in step.inputs}
        reads = Counter(name for _, _, names in step.inputs for name in names)
        writes = Counter(name for _, _, names in step.outputs for name in names)
        taken: set[str] = set()
        for proto, (_, _, outputs) in zip(step.info.proto.outputs, step.outputs):
            for x, y in zip(slots.get(proto.inplace, ()) if proto.inplace else (), outputs):
                if (
                    x != y  # one variable in both places is the binding's business, not ours
                    and x in shareable
                    and y in shareable
                    and x not in taken
                    and y not in taken
                    and live[x][1] == s
                    and live[y][0] == s
                    and reads[x] == 1
                    and x not in writes
                    and writes[y] == 1
                    and shapes[x] == shapes[y]
                ):
                    pairs.append((x, y))
                    taken.update((x, y))
    return pairs


def assign_offsets(
    buffers: dict[Hashable, Live], together: Iterable[tuple[Hashable, Hashable]] = ()
) -> tuple[dict[Hashable, int], int]:
    """An offset per buffer, and the arena's size: buffers live at one step never overlap,
    except the pairs ``together``, which get one offset (the output of an in-place pair takes
    its input's memory). Offsets are multiples of ``ALIGNMENT``."""
    group = {key: key for key in buffers}  # union-find over the pairs

    def root(key: Hashable) -> Hashable:
        while group[key] != key:
            group[key] = group[group[key]]
            key = group[key]
        return key

    for a, b in together:
        group[root(b)] = root(a)
    merged: dict[Hashable, Live] = {}
    for key, live in buffers.items():
        r = root(key)
        m = merged.get(r)
        size = aligned(live.size)
        merged[r] = (
            Live(size, live.first, live.last)
            if m is None
            else Live(max(m.size, size), min(m.first, live.first), max(m.last, live.last))
        )
    order = sorted(merged, key=lambda k: (-merged[k].size, merged[k].first, merged[k].last))
    placed: list[tuple[int, int, Live]] = []  # (offset, end, live)
    offsets: dict[Hashable, int] = {}
    top = 0
    for key in order:
        live = merged[key]
        if live.size == 0:
            offsets[key] = 0
            continue
        busy = sorted(
            (offset, end)
            for offset, end, other in placed
            if other.first <= live.last and live.first <= other.last
        )
        best, best_gap, below = None, 0, 0  # below: the end of the busy bytes seen so far
        for offset, end in busy:
            gap = offset - below
            if gap >= live.size and (best is None or gap < best_gap):
                best, best_gap = below, gap
            below = max(below, end)
        offset = below if best is None else best
        offsets[key] = offset
        placed.append((offset, offset + live.size, live))
        top = max(top, offset + live.size)
    return {key: offsets[root(key)] for key in buffers}, top
