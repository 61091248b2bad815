"""Memory planning: which planned buffers of a prepared program may share memory, and where.

A value computed and consumed within one run is live from the step that first writes it to
the step that last reads it (both included). Two values whose live intervals do not overlap
may occupy the same bytes; an output and an input of one step never do (both are live at that
step), except where the op declares the output ``inplace`` with that input and the input is
not read after it: then the output takes over the input's memory (``inplace_pairs``).

``assign_offsets`` places the buffers in one arena. Up to ``BY_SIZE_LIMIT`` buffers, greedy
best fit by size (TFLite's "greedy by size", XLA's decreasing-size best-fit heap): the largest
first, each into the smallest gap that fits between the buffers already placed and live at
the same time, else above them; within a few hundred bytes of the most that is live at one
step on the models we measured, but its time grows with buffers x buffers live at once.
Beyond the limit, in step order: at each step its new buffers (largest first) take the
smallest free block that fits, else the top of the arena, and the buffers it last reads are
freed; linear in the buffers times the free blocks, within 1% of greedy by size on deep
programs (but up to a third above it on small wide ones, where big weight gradients come
last). Sizes are rounded up to ``ALIGNMENT``, so every offset keeps the 64-byte alignment
the kernel ABI promises. Which buffers take part, and which must keep bytes of their own,
the runner decides (``prepared.CompiledRunner``); this module knows steps, sizes and
intervals only.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from ..base.host import ALIGNMENT

# Buffers up to which greedy by size places them (it takes about as long as step order up to
# here, ~0.2 ms for 128, but grows with buffers x buffers live at once beyond).
BY_SIZE_LIMIT = 128


@dataclass(frozen=True)
class MemoryPlan:
    """What a prepared program holds. Its planned buffers (values computed and consumed within
    a run, outputs written aside, kernels' workspaces) are allocated once, when the plan is
    built, as views of one arena that values not live at the same step share; fed,
    persistable and fetched values are bound per run instead. ``str()`` of it is a table.

    Not counted: the plans of control-flow ops' blocks (each has its own), and what libraries
    keep behind a kernel's back (oneDNN's cache of primitives and their generated code)."""

    buffers: int  # how many planned buffers the plan has
    planned_bytes: int  # their bytes with a buffer each (each rounded up to 64 bytes)
    arena_bytes: int  # the bytes of the one arena they share by liveness
    # Of the planned buffers: the kernels' workspaces (scratch memory a kernel asks for in
    # prepare and uses while it runs, e.g. oneDNN's scratchpads and operands converted to its
    # layouts): how many kernels asked, and their bytes with a buffer each.
    workspaces: int = 0
    workspace_bytes: int = 0
    # What the kernels' states keep for the plan's life beyond it, as the kernels say.
    kernel_state_bytes: int = 0
    # The fetched values' buffers (one per value, reused once the caller lets go of it).
    fetched_bytes: int = 0
    # The persistable values each run binds from the scope (parameters, optimizer state, the
    # running statistics): the scope's memory, not the plan's.
    persistable_bytes: int = 0

    @property
    def held_bytes(self) -> int:
        """What the plan itself holds: the arena, the kernels' states and the fetched values'
        buffers."""
        return self.arena_bytes + self.kernel_state_bytes + self.fetched_bytes

    def __str__(self) -> str:
        mb = 1 << 20
        rows = [
            ("arena", self.arena_bytes, f"{self.buffers} planned buffers sharing by liveness "
             f"({self.planned_bytes / mb:.2f} MB with a buffer each)"),
            ("  of which workspaces", None, f"{self.workspaces} kernels' scratch "
             f"({self.workspace_bytes / mb:.2f} MB with a buffer each)"),
            ("kernel state", self.kernel_state_bytes, "what kernels keep between runs"),
            ("fetched values", self.fetched_bytes, "a buffer each, reused once let go"),
            ("held by the plan", self.held_bytes, ""),
            ("persistable values", self.persistable_bytes, "the scope's, bound each run"),
        ]  # fmt: skip
        return "\n".join(
            f"{name:22}{'' if size is None else f'{size / mb:10.2f} MB':>13}  {note}".rstrip()
            for name, size, note in rows
        )


class Live(NamedTuple):
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
    other place of this one, the output is first written here, both have one dtype and
    number of elements (a reshape's out and x), and each takes part in one pair per step at
    most."""
    pairs = []
    for s, step in enumerate(steps):
        declared = _declared_inplace(step.info)
        if not declared or step.kernel.impl != "native":
            continue
        slots = {slot: names for slot, _, names in step.inputs}
        taken: set[str] = set()
        for k, slot in declared:
            for x, y in zip(slots.get(slot, ()), step.outputs[k][2]):
                if (
                    x != y  # one variable in both places is the binding's business, not ours
                    and x in shareable
                    and y in shareable
                    and x not in taken
                    and y not in taken
                    and live[x][1] == s
                    and live[y][0] == s
                    and _same_bytes(shapes[x], shapes[y])
                    and _count(step.inputs, x) == 1
                    and _count(step.outputs, x) == 0
                    and _count(step.outputs, y) == 1
                ):
                    pairs.append((x, y))
                    taken.update((x, y))
    return pairs


def _same_bytes(a: tuple[tuple, str], b: tuple[tuple, str]) -> bool:
    """Whether two (shape, dtype) hold the same elements' worth of bytes: one dtype, one count."""
    return a[1] == b[1] and math.prod(a[0]) == math.prod(b[0])


@lru_cache(maxsize=1024)
def _declared_inplace(info: Any) -> tuple[tuple[int, str], ...]:
    """(output slot index, input slot) of each output the op declares ``inplace``; cached, as
    protobuf reads are slow and a plan has many steps of few op types."""
    return tuple((k, p.inplace) for k, p in enumerate(info.proto.outputs) if p.inplace)


def _count(side: list, name: str) -> int:
    """How many times ``name`` is bound to the slots of one side of a step."""
    return sum(names.count(name) for _, _, names in side)


def assign_offsets(
    buffers: dict[Hashable, Live],
    together: Iterable[tuple[Hashable, Hashable]] = (),
    by_size: bool | None = None,
) -> tuple[dict[Hashable, int], int]:
    """An offset per buffer, and the arena's size: buffers live at one step never overlap,
    except the pairs ``together``, which get one offset (the output of an in-place pair takes
    its input's memory). Offsets are multiples of ``ALIGNMENT``. ``by_size``: greedy by size
    (True) or in step order (False); by default, by size up to ``BY_SIZE_LIMIT`` buffers."""
    group: dict[Hashable, Hashable] = {}  # key -> the key it shares with (pairs' keys only)

    def root(key: Hashable) -> Hashable:
        while key in group:
            key = group[key]
        return key

    for a, b in together:
        a, b = root(a), root(b)
        if a != b:
            group[b] = a
    merged: dict[Hashable, Live] = {}
    for key, (size, first, last) in buffers.items():
        size = aligned(size)
        if group:
            key = root(key)
            if key in merged:
                m = merged[key]
                size, first, last = max(m.size, size), min(m.first, first), max(m.last, last)
        merged[key] = Live(size, first, last)
    if by_size is None:
        by_size = len(merged) <= BY_SIZE_LIMIT
    offsets = _by_size(merged) if by_size else _in_step_order(merged)
    top = max((offsets[key] + live.size for key, live in merged.items()), default=0)
    if group:
        offsets = {key: offsets[root(key)] for key in buffers}
    return offsets, top


def _by_size(buffers: dict[Hashable, Live]) -> dict[Hashable, int]:
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last), by offset
    offsets: dict[Hashable, int] = {}
    for key, (size, first, last) in sorted(buffers.items(), key=_largest_first):
        if size == 0:
            offsets[key] = 0
            continue
        # The smallest gap that fits between the placed buffers live at the same time (the
        # first exact fit ends the search: none is smaller), else above them all.
        best, best_gap, below = -1, 0, 0  # below: where the busy bytes seen so far end
        for offset, end, other_first, other_last in placed:
            if other_first > last or other_last < first:
                continue  # not live at the same time
            gap = offset - below
            if gap >= size and (best < 0 or gap < best_gap):
                best, best_gap = below, gap
                if gap == size:
                    break
            if end > below:
                below = end
        offset = below if best < 0 else best
        offsets[key] = offset
        insort(placed, (offset, offset + size, first, last))
    return offsets


def _largest_first(item: tuple[Hashable, Live]) -> tuple[int, int, int]:
    size, first, last = item[1]
    return -size, first, last


def _in_step_order(buffers: dict[Hashable, Live]) -> dict[Hashable, int]:
    starting: dict[int, list[Hashable]] = {}
    ending: dict[int, list[Hashable]] = {}
    for key, live in buffers.items():
        if live.size:
            starting.setdefault(live.first, []).append(key)
            ending.setdefault(live.last, []).append(key)
    free: list[tuple[int, int]] = []  # (offset, size) of free blocks below top, by offset
    offsets = {key: 0 for key, live in buffers.items() if not live.size}
    top = 0
    for step in sorted(starting.keys() | ending.keys()):
        for key in sorted(starting.get(step, ()), key=lambda k: -buffers[k].size):
            size = buffers[key].size
            fits = [(n, j) for j, (_, n) in enumerate(free) if n >= size]
            if fits:  # the smallest free block that fits; the rest of it stays free
                n, j = min(fits)
                offset = free[j][0]
                if n == size:
                    del free[j]
                else:
                    free[j] = (offset + size, n - size)
            elif free and sum(free[-1]) == top:  # the free block at the top, grown
                offset = free.pop()[0]
                top = offset + size
            else:
                offset, top = top, top + size
            offsets[key] = offset
        for key in ending.get(step, ()):  # freed after the step, merged with free neighbours
            offset, size = offsets[key], buffers[key].size
            j = bisect_left(free, (offset, 0))
            if j < len(free) and free[j][0] == offset + size:
                size += free.pop(j)[1]
            if j and sum(free[j - 1]) == offset:
                j -= 1
                offset, size = free[j][0], free.pop(j)[1] + size
            free.insert(j, (offset, size))
    return offsets
