"""PreparedProgram: a planned run, executed by a runner.

The compiled runtime runs a plan whose kernels all read host memory (CPU), or whose steps are
all native kernels of the plan's device (CUDA: its buffers are device arrays): native kernels
are called through their function pointers in a C++ loop with no Python between ops, Python
kernels (host plans only) are called back. Variables get one buffer each, in one of four roles:

- fed: bound to the caller's array each run, which is never written: a fed variable that an
  op of the plan updates (``x = x + 1``, a loop's carried value) is bound to a copy of it;
- persistable: bound to the scope's array each run (updated in place), created if absent;
- fetched: a pooled array per run, reused only once the caller has let go of the last one;
- everything else: planned once, when the plan is built, as views of one arena in which
  values whose lifetimes (first write .. last read) do not overlap share memory
  (``memory.py``; ``reuse_memory=False`` gives each its own bytes), and used by every run.

Kernels never see an output overlapping one of their inputs: an op rewriting its own input
(``w = transpose(w)``) writes a scratch buffer that is copied back after it. One plan runs
one call at a time (its planned buffers are shared), so concurrent runs of it take turns.

Other plans (a device plan with ops that fall back to CPU kernels, or with Python kernels)
run with a Python loop that moves data through the device's buffers, copying values to and
from the host for fallback ops; native kernels run as one-step compiled plans (``StepKernel``).

While a profile records (``profiler.py``), either runner also times each op of the run; the
runs of control-flow blocks nested in it record nothing of their own.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import threading
import weakref
from typing import Any

import numpy as np

from ..base import dtypes as D
from ..base.dlpack import has_dlpack
from ..base.errors import (
    PLUGIN_CODE_ERRORS,
    DistributedError,
    FeedError,
    KernelError,
    KernelRuntimeError,
    PaddleCoreError,
    ProgramError,
    shown,
)
from ..base.host import ALIGNMENT, aligned_empty, host_array
from ..base.runtime import compiled_runtime
from ..graph.variable import format_shape
from ..plugins import devices, hooks
from . import control
from .folding import Folded
from .memory import Live, MemoryPlan, aligned, assign_offsets, inplace_pairs, live_intervals
from .planning import PlanSpec, Step
from .profiler import Profile, recording
from .scope import Scope

# Set in a child process made by fork(): see _after_fork_in_child.
_forked = False


def _after_fork_in_child() -> None:
    """GNU OpenMP, the kernels' thread pool, cannot run a parallel region in a child made by
    fork() once the parent has used its threads: the child waits forever for threads that fork
    did not copy. So a forked child runs kernels on one thread, and plans prepared before the
    fork (which may have sized their work for more) are prepared again (executors and models
    drop plans made under an older hooks generation)."""
    global _forked
    _forked = True
    hooks.generation += 1


os.register_at_fork(after_in_child=_after_fork_in_child)


class OutputBuffers:
    """Memory for a value that leaves a run (a fetched output), reused once the caller lets go.

    Each run hands out an array the caller owns. When the caller has dropped last run's array
    and every view of it, its memory is reused: a large fresh allocation costs a page fault per
    4 KiB written, which for a memory-bound op is as much as the op itself. An array the caller
    still holds, or still sees through a view, is never reused, so no result is ever
    overwritten under the caller's feet.
    """

    # References that are ours. To the array: this pool's, the compiled plan's binding (kept
    # until the next run rebinds the buffer) and sys.getrefcount's argument. To the raw
    # memory (which every view of the array has as its base): this pool's, the array's base
    # and the argument.
    _OURS = 3

    def __init__(self, shape: tuple, dtype: str, device: Any) -> None:
        self.shape, self.dtype, self.device = shape, dtype, device
        self.array: Any = None
        self.raw: Any = None

    def take(self) -> Any:
        if (
            self.array is None
            or sys.getrefcount(self.array) > self._OURS
            or sys.getrefcount(self.raw) > self._OURS
        ):
            self.array = self.device.empty(self.shape, self.dtype)
            self.raw = self.array.base
        return self.array


class PreparedProgram:
    """A program ready to run: ``run(feed, scope)`` executes the planned steps in order."""

    def __init__(
        self, spec: PlanSpec, device: Any, num_threads: int, reuse_memory: bool = True
    ) -> None:
        self.spec = spec
        self.program = spec.program
        self.device = device
        # What the caller feeds: the plan's feeds less a prologue's results (folding.py).
        self.feed_names = [n for n in spec.feed_names if n not in spec.folded]
        self._folded: Folded | None = None
        self.fetch_names = spec.fetch_names
        self.steps = spec.steps
        self.persistable_inputs = spec.persistable_inputs
        self.persistable_outputs = spec.persistable_outputs
        num_threads = 1 if _forked else num_threads
        # Control-flow steps run their blocks' plans, prepared here like this one.
        for step in spec.steps:
            if step.sub_specs is not None:
                step.fn = control.kernel(
                    step, lambda s: PreparedProgram(s, device, num_threads, reuse_memory)
                )
        # What this program declares of the persistables it reads or writes, told once to each
        # scope it runs in (Scope.set_var checks arrays against it).
        self._persistables = {
            n: spec.shapes[n] for n in (*spec.persistable_inputs, *spec.persistable_outputs)
        }
        self._told: weakref.WeakSet[Scope] = weakref.WeakSet()
        if _runs_compiled(spec, device):
            self._runner: Any = CompiledRunner(spec, device, num_threads, reuse_memory)
        else:
            self._runner = PythonRunner(spec, device, num_threads)

    def fold(self, prologue: PreparedProgram) -> None:
        """Have ``prologue`` compute this plan's folded feeds (``folding.split``)."""
        self._folded = Folded(prologue)

    @property
    def folded_ops(self) -> list[str]:
        """The types of the ops folded out of this plan: run once, and again only when a
        value they read is set."""
        return [] if self._folded is None else self._folded.prologue.op_types

    def __repr__(self) -> str:
        runner = type(self._runner).__name__
        return f"<PreparedProgram: {len(self.steps)} ops on {self.device} ({runner}), fetch {self.fetch_names}>"

    @property
    def op_types(self) -> list[str]:
        return [s.op.type for s in self.steps]

    @property
    def memory(self) -> MemoryPlan:
        """The planned buffers' count and bytes, with a buffer each and in the shared arena
        (all zero for plans run by the Python loop, which plan no buffers)."""
        return self._runner.memory

    @property
    def compiled(self) -> bool:
        """Whether the compiled runtime runs this plan."""
        return isinstance(self._runner, CompiledRunner)

    @property
    def loop_runner(self) -> CompiledRunner | None:
        """The compiled runner, when a loop may rerun this plan with its feeds bound once
        (``CompiledRunner.loop_ready``); else None."""
        runner = self._runner
        return runner if isinstance(runner, CompiledRunner) and runner.loop_ready else None

    @property
    def scan_runner(self) -> CompiledRunner | None:
        """The compiled runner, when a scan may run this plan once per time step with its
        feeds and fetches bound by the scan (``CompiledRunner.scan_ready``); else None."""
        runner = self._runner
        return runner if isinstance(runner, CompiledRunner) and runner.scan_ready else None

    def run(self, feed: dict[str, Any], scope: Scope, return_numpy: bool = True) -> list[Any]:
        """Run with ``feed``: exactly the planned feeds, each of the planned shape and dtype
        (NumPy arrays, the device's, or other libraries' through DLPack, as ``Executor.run``
        takes them)."""
        if not isinstance(feed, dict) or sorted(feed) != sorted(self.feed_names):
            given = sorted(feed) if isinstance(feed, dict) else type(feed).__name__
            raise FeedError(f"this plan is fed {self.feed_names}, got {given}")
        feed = dict(feed)
        for name in self.feed_names:
            value, (shape, dtype) = feed[name], self.spec.shapes[name]
            held = isinstance(value, np.ndarray) or self.device.holds(value)
            if not held and has_dlpack(value):  # on the device (no copy), else via the host
                adopted = self.device.adopt(value)
                if adopted is None:
                    adopted = devices.dlpack_host_array(value, f"feed {name!r}")
                value = feed[name] = adopted
                held = True
            if not held or value.shape != shape or D.name_of(value.dtype) != dtype:
                got = f"{getattr(value, 'dtype', type(value).__name__)}{list(np.shape(value))}"
                raise FeedError(
                    f"feed {name!r} is {got}, but this plan was prepared for "
                    f"{dtype}{format_shape(shape)}; prepare another plan for other shapes"
                )
        return self._run(feed, scope, return_numpy)

    def _run(self, feed: dict[str, Any], scope: Scope, return_numpy: bool = True) -> list[Any]:
        """``run`` for feeds already checked against the plan (by the executor)."""
        if self._persistables and scope not in self._told:
            scope.declare(self._persistables)
            self._told.add(scope)
        if self._folded is not None:
            feed = {**feed, **self._folded.values(scope)}
        profile = recording.get()
        token = control.current_scope.set(scope)  # for control-flow steps' block runs
        try:
            if profile is None:
                values = self._run_on_device(feed, scope, None)
            else:
                values = self._run_profiled(profile, feed, scope)
        finally:
            control.current_scope.reset(token)
        return [self.device.to_host(v) for v in values] if return_numpy else values

    def _run_on_device(self, feed: dict[str, Any], scope: Scope, times: list | None) -> list:
        current = self.device.current()
        if current is None:
            return self._runner.run(feed, scope, times)
        with current:  # kernels launch on this thread's current GPU
            return self._runner.run(feed, scope, times)

    def _run_profiled(self, profile: Profile, feed: dict[str, Any], scope: Scope) -> list:
        """A run whose ops' times go to ``profile``. The runs of its control-flow ops' blocks
        are part of their op's time: they record nothing of their own."""
        times: list[Any] = []
        now = compiled_runtime().now_ns
        nested = recording.set(None)
        start = now()
        try:
            values = self._run_on_device(feed, scope, times)
        finally:
            recording.reset(nested)
        profile.add_run(self, times[0], start, now())
        return values


def _scope_value(scope: Scope, name: str) -> Any:
    value = scope.find_var(name)
    if value is None:
        raise FeedError(
            f"persistable variable {name!r} has no value in the scope; "
            "initialise it first (run the startup program or scope.set_var)"
        )
    return value


class CompiledRunner:
    """Runs a plan on a host-memory device (CPU) through the compiled runtime's loop."""

    def __init__(
        self, spec: PlanSpec, device: Any, num_threads: int, reuse_memory: bool = True
    ) -> None:
        runtime = compiled_runtime()
        self.spec = spec
        self.device = device
        self.plan = runtime.Plan(num_threads, device.stream())
        self.index: dict[str, int] = {}
        self.layout: list[tuple[tuple, str]] = []  # (shape, dtype) by buffer index
        self.scratch_copies = 0  # outputs written to scratch because they are also inputs
        for name, (shape, dtype) in spec.shapes.items():
            self.index[name] = self.plan.add_buffer(list(shape), D.to_enum(dtype))
            self.layout.append((shape, dtype))
        fed = set(spec.feed_names)
        # Fed variables an op writes: bound to copies (the caller's arrays are never written,
        # and may be read-only: a DLPack view, np.frombuffer over bytes).
        self.written_feeds = fed & {n for s in spec.steps for _, _, ns in s.outputs for n in ns}
        persistable = set(spec.persistable_inputs) | set(spec.persistable_outputs)
        self.persistable = [n for n in spec.shapes if n in persistable and n not in fed]
        self.read_first = set(spec.persistable_inputs)  # must have a value before the run
        self.fetched = [n for n in dict.fromkeys(spec.fetch_names) if n not in fed | persistable]
        self.outputs = {n: OutputBuffers(*spec.shapes[n], device) for n in self.fetched}
        # Fetched values the caller must not share with us: the scope's and the caller's own.
        self.copied_out = fed | persistable
        per_run = fed | persistable | set(self.fetched)
        scratch: list[tuple[int, int]] = []  # (scratch buffer, step writing it)
        for s, step in enumerate(spec.steps):
            ins = [[self.index[n] for n in names] for _, _, names in step.inputs]
            outs = [[self.index[n] for n in names] for _, _, names in step.outputs]
            if step.kernel.impl == "native":
                copies = self._separate_outputs(step, outs)
                self.scratch_copies += len(copies)
                scratch += [(buffer, s) for buffer, _ in copies]
                self.plan.add_native(step.fn, ins, outs, *_native_args(step))
                for buffer, target in copies:
                    self.plan.add_copy(buffer, target)
            else:
                flat = [i for slot in outs for i in slot]
                self.plan.add_python(_python_step(step, spec.shapes), ins, flat)
        planned = [n for n in spec.shapes if n not in per_run]  # planned once, used every run
        _prepare(self.plan, spec.steps)  # (first: kernels say there what scratch they need)
        # (buffer, step) of each kernel's workspace, and what kernels' states keep
        self.workspaces, state_bytes = _add_workspaces(self.plan, self.layout)
        workspaces = self.workspaces
        memory, self._arena = self._bind_planned(planned, scratch + workspaces, reuse_memory)
        self.memory = dataclasses.replace(
            memory,
            workspaces=len(workspaces),
            workspace_bytes=sum(aligned(self._nbytes(index)) for index, _ in workspaces),
            kernel_state_bytes=state_bytes,
            fetched_bytes=sum(self._nbytes(self.index[n]) for n in self.fetched),
            persistable_bytes=sum(self._nbytes(self.index[n]) for n in self.persistable),
        )
        self._failure = runtime.KernelFailure
        self._lock = threading.Lock()
        # What a profiled run calls after each op: a device with queued work waits for it.
        self._sync = None if device.host_memory else device.synchronize

    def _check_fits_in_memory(self, arena: int) -> None:
        """Refuse a run whose buffers (the arena of planned values, and each fetched value)
        outgrow the memory available, naming the largest value: allocating would succeed
        (Linux overcommits) and the process be killed once the kernels write the memory."""
        available = _available_memory()
        sizes = {n: self._nbytes(self.index[n]) for n in self.index}
        total = arena + sum(sizes[n] for n in self.fetched)
        if available and total > available:
            name = max(sizes, key=sizes.get)
            shape, dtype = self.layout[self.index[name]]
            raise ProgramError(
                f"running this program needs {total / 2**30:.1f} GiB of buffers at once, more "
                f"than the {available / 2**30:.1f} GiB of memory available; the largest is "
                f"{name!r} ({dtype}{format_shape(shape)}, {sizes[name] / 2**30:.1f} GiB)"
            )

    def _bind_planned(
        self, planned: list[str], scratch: list[tuple[int, int]], reuse: bool
    ) -> tuple[MemoryPlan, Any]:
        """Bind the planned buffers to views of one arena, shared by liveness; return the
        figures and the arena. ``scratch``: (buffer, step) of buffers live at one step only
        (outputs written aside and copied back after it, kernels' workspaces).

        Values bound per run never take part: fed ones (the caller's arrays; with
        persistable inputs, the only values read before they are written, as planning
        checks), persistable ones (the scope's, outliving the run) and fetched ones (handed
        to the caller). Of the planned ones, values a Python step reads or writes keep bytes
        of their own for the whole run (``pinned``): a Python kernel gets the array itself
        and may keep it (a cache, a closure), and its outputs are rebound to the arrays it
        returns. StepKernels bind arrays of their own and are not run by this loop. Native
        kernels see data only while they run (prepare gets data-less tensors, and every run
        rebinds fed and fetched buffers anyway), so the bytes of a value no longer read can
        hold another one.
        """
        steps = self.spec.steps
        end = max(len(steps) - 1, 0)
        live = live_intervals(steps)
        pinned: set[str] = set()
        for step in steps:
            if step.kernel.impl != "native":
                for side in (step.inputs, step.outputs):
                    pinned.update(n for _, _, names in side for n in names)
        shareable = {n for n in planned if n not in pinned} if reuse else set()
        buffers: dict[Any, Live] = {}
        for name in planned:
            first, last = live[name] if name in shareable else (0, end)
            buffers[self.index[name]] = Live(self._nbytes(self.index[name]), first, last)
        for index, s in scratch:  # written by step s, copied back right after it
            buffers[index] = Live(self._nbytes(index), *((s, s) if reuse else (0, end)))
        pairs = inplace_pairs(steps, live, self.spec.shapes, shareable)
        offsets, size = assign_offsets(buffers, [(self.index[x], self.index[y]) for x, y in pairs])
        if self.device.host_memory:  # aligned here: views at multiples of 64 bytes stay aligned
            self._check_fits_in_memory(size)
            raw = self.device.empty((size + ALIGNMENT,), "uint8")
            arena = aligned_empty((size,), "uint8", raw=raw)
        else:  # device allocations come aligned (Device.empty)
            arena = self.device.empty((size,), "uint8")
        for index, offset in offsets.items():
            shape, dtype = self.layout[index]
            view = arena[offset : offset + buffers[index].size].view(dtype).reshape(shape)
            self.plan.bind(index, view)
        figures = MemoryPlan(
            buffers=len(buffers),
            planned_bytes=sum(aligned(b.size) for b in buffers.values()),
            arena_bytes=size,
        )
        return figures, arena

    def _nbytes(self, index: int) -> int:
        shape, dtype = self.layout[index]
        return math.prod(shape) * D.ITEMSIZE[dtype]

    def _separate_outputs(self, step: Step, outs: list) -> list[tuple[int, int]]:
        """Point the outputs ``_scratch_outputs`` names at scratch buffers; return (scratch,
        buffer) pairs to copy back after the step."""
        copies = []
        for slot, k in _scratch_outputs(step):
            target = outs[slot][k]
            shape, dtype = self.layout[target]
            scratch = self.plan.add_buffer(list(shape), D.to_enum(dtype))
            self.layout.append((shape, dtype))
            outs[slot][k] = scratch
            copies.append((scratch, target))
        return copies

    def run(self, feed: dict[str, Any], scope: Scope, times: list | None = None) -> list[Any]:
        """Run; with ``times`` (a list), append to it the ops' times (``profiler``): an int64
        array of (index in the plan, start, end) rows, one per op in the order they ran."""
        with self._lock:  # planned buffers are shared by every run of this plan
            return self._run_locked(feed, scope, times)

    @property
    def scan_ready(self) -> bool:
        """Whether this plan can run again and again on buffers its caller binds (``bind``):
        native steps only (no Python kernel may rebind a buffer), nothing read from or
        written to a scope, no random numbers, on host memory (the loops read it)."""
        spec = self.spec
        return (
            self.device.host_memory
            and all(step.kernel.impl == "native" for step in spec.steps)
            and not self.persistable
            and not spec.random
        )

    @property
    def loop_ready(self) -> bool:
        """Whether this plan can run as a loop body with ``bind_feeds`` once, then
        ``run_while``: ``scan_ready``, and nothing fetched but fed values (a body's carried
        variables, which its steps update in place)."""
        return self.scan_ready and not self.fetched

    def bind(self, arrays: dict[str, Any]) -> None:
        """Bind the buffers of fed or fetched variables to arrays (a scan's own, of the
        planned shapes): the steps read and write them in place. The caller (a control-flow
        kernel, run inside its outer plan's run) is this plan's only user."""
        for name, array in arrays.items():
            self.plan.bind(self.index[name], self.device.kernel_array(array))

    def array(self, name: str) -> Any:
        """The array bound to ``name``'s buffer now."""
        return self.plan.array(self.index[name])

    def run_scan(
        self, n: int, reverse: bool, load: list, save_before: list, save: list, swaps: list
    ) -> None:
        """``n`` runs of the steps in the compiled runtime's scan (``runtime.cpp``,
        ``run_scan``): ``load``, ``save_before`` and ``save`` are (variable, array,
        outer, outer_stride, time_stride) slices, ``swaps`` pairs of variables."""
        index = self.index

        def items(slices: list) -> list:
            return [(array, index[name], *rest) for name, array, *rest in slices]

        try:
            self.plan.run_scan(
                n,
                reverse,
                items(load),
                items(save_before),
                items(save),
                [(index[a], index[b]) for a, b in swaps],
            )
        except self._failure as e:
            raise _failed(self.spec.steps, e) from None

    def bind_feeds(self, feed: dict[str, Any]) -> dict[str, Any]:
        """Bind the fed buffers to ``feed``'s arrays (a loop's own: steps write the carried
        ones); return the arrays bound, by name. The caller (a loop kernel, run inside its
        outer plan's run) is this plan's only user."""
        for name in self.spec.feed_names:
            self.plan.bind(self.index[name], self.device.kernel_array(feed[name]))
        return {name: self.plan.array(self.index[name]) for name in self.spec.feed_names}

    def rerun(self) -> None:
        """Run the steps once more on the buffers as bound."""
        try:
            self.plan.run([], [])
        except self._failure as e:
            raise _failed(self.spec.steps, e) from None

    def run_while(self, condition: str, max_iters: int) -> int:
        """Run the steps on the buffers as bound, again and again while the bool variable
        ``condition`` holds, in the compiled runtime; return how many times (-1: the
        condition still held after ``max_iters``)."""
        try:
            return self.plan.run_while(self.index[condition], max_iters)
        except self._failure as e:
            raise _failed(self.spec.steps, e) from None

    def _run_locked(self, feed: dict[str, Any], scope: Scope, times: list | None) -> list[Any]:
        shapes, index = self.spec.shapes, self.index
        indices, arrays = [], []
        device, written = self.device, self.written_feeds
        for name in self.spec.feed_names:
            indices.append(index[name])
            value = feed[name]
            arrays.append(
                device.kernel_copy(value) if name in written else device.kernel_array(value)
            )
        for name in self.persistable:
            value = _scope_value(scope, name) if name in self.read_first else scope.find_var(name)
            if value is None:
                value = self.device.empty(*shapes[name])
            else:
                value = _checked_persistable(name, value, shapes[name], self.device, scope)
            indices.append(index[name])
            arrays.append(value)
        for name in self.fetched:
            indices.append(index[name])
            arrays.append(self.outputs[name].take())
        if self.spec.random:
            self.plan.set_random_counter(scope.next_random_run())
        try:
            if times is None:
                self.plan.run(indices, arrays)
            else:
                times.append(self.plan.run_profiled(indices, arrays, self._sync))
        except self._failure as e:
            raise _failed(self.spec.steps, e) from None
        except ValueError as e:  # an array that does not fit its buffer: refused, not run
            if isinstance(e, PaddleCoreError):
                raise
            raise FeedError(f"a value does not fit the plan: {e}") from None
        for name in self.spec.persistable_outputs:
            scope.update_var(name, self.plan.array(index[name]))
        copied_out = self.copied_out
        return [
            self.plan.array(index[n]).copy() if n in copied_out else self.plan.array(index[n])
            for n in self.spec.fetch_names
        ]


def _checked_persistable(
    name: str, value: Any, planned: tuple[tuple, str], device: Any, scope: Scope
) -> Any:
    """The scope's value of ``name`` as the plan binds it, checked against the declaration;
    a NumPy array the user set for a plan on device memory moves there once, in the scope."""
    shape, dtype = planned
    if not device.host_memory and isinstance(value, np.ndarray):
        value = device.to_device(value)
        scope.update_var(name, value)
    if not device.host_memory:  # the runtime checks the layout of what it binds
        if not device.holds(value) or value.shape != shape or D.name_of(value.dtype) != dtype:
            _declared(name, value, shape, dtype)
        return value
    if not isinstance(value, np.ndarray) or value.shape != shape or D.name_of(value.dtype) != dtype:
        _declared(name, value, shape, dtype)
    flags = value.flags
    if not (flags.c_contiguous and flags.aligned and flags.writeable):
        raise FeedError(
            f"persistable variable {name!r} must be a writeable, aligned C-contiguous array in "
            "the scope (it is updated in place)"
        )
    return value


def _declared(name: str, value: Any, shape: tuple, dtype: str) -> None:
    declared = f"{dtype}{format_shape(shape)}"
    hint = f" (set it with scope.set_var({name!r}, np.asarray(value, {dtype!r})))"
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        got = f"{type(value).__name__} {value.dtype}{list(value.shape)}"
        hint = hint if D.name_of(value.dtype) != dtype else ""  # (a shape no cast mends)
    else:  # (a list, a number: set_var stores what it is given)
        got = f"{type(value).__name__} {shown(value, 40)}, not an array"
    raise FeedError(
        f"persistable variable {name!r} holds {got} in the scope, but the program declares "
        f"{declared}{hint}"
    )


def _runs_compiled(spec: PlanSpec, device: Any) -> bool:
    """Whether the compiled loop runs this plan: every kernel reads host memory, or every step
    is a native kernel of the plan's own device that needs no scratch copy (the loop copies
    and calls Python kernels on host memory only)."""
    if device.host_memory and all(s.device.host_memory for s in spec.steps):
        return True
    return all(
        s.device == device and s.kernel.impl == "native" and not _scratch_outputs(s)
        for s in spec.steps
    )


def _scratch_outputs(step: Step) -> list[tuple[int, int]]:
    """(output slot, item) of each output that is also an input of its step, except one the
    op declares ``inplace`` with the input it shares (item k of one with item k of the
    other): kernels never see an output overlapping an input, so these write scratch."""
    reads: dict[str, list[tuple[int, int]]] = {}
    for j, (_, _, names) in enumerate(step.inputs):
        for item, name in enumerate(names):
            reads.setdefault(name, []).append((j, item))
    if not any(n in reads for _, _, names in step.outputs for n in names):
        return []  # the common case: no output is also an input
    position = {slot: j for j, (slot, _, _) in enumerate(step.inputs)}
    found = []
    for s, (out_proto, (_, _, names)) in enumerate(zip(step.info.proto.outputs, step.outputs)):
        partner = position.get(out_proto.inplace)
        for k, name in enumerate(names):
            if reads.get(name, [(partner, k)]) != [(partner, k)]:
                found.append((s, k))
    return found


def _native_args(step: Step) -> tuple[list[tuple[str, int, Any]], int, int, int]:
    """What the runtime's add_native takes besides the kernel and its buffers: the attrs as
    (name, type, value), the device the kernel runs as, and its key for random numbers."""
    types = step.info.attr_types
    attrs = [(name, types[name], value) for name, value in step.attrs.items()]
    return attrs, step.device.kernel_device_type, step.device.index, step.random_key


def _add_workspaces(
    plan: Any, layout: list[tuple[tuple, str]]
) -> tuple[list[tuple[int, int]], int]:
    """A buffer for each kernel that asked for a workspace in prepare (the plan binds it:
    planned with the other buffers, live at the kernel's step only); return (buffer, step)
    pairs, and the bytes the kernels say their states keep. ``layout``: the plan's (shape,
    dtype) by buffer index, extended."""
    workspaces, state_bytes = [], 0
    for op, size, kept in plan.kernel_memory():
        state_bytes += kept
        if size:
            index = plan.add_buffer([size], D.to_enum("uint8"))
            layout.append(((size,), "uint8"))
            plan.use_workspace(op, index)
            workspaces.append((index, op))  # (an op's index is its step's)
    return workspaces, state_bytes


def _prepare(plan: Any, steps: list[Step]) -> None:
    """Run the native kernels' prepare; a refusal is a KernelError naming op and kernel."""
    try:
        plan.prepare()
    except compiled_runtime().KernelFailure as e:
        index, message = e.args
        step = steps[index]
        raise KernelError(
            f"{step.describe()} rejected its inputs: {message}", op=step.op.type
        ) from None


def _failed(steps: list[Step], failure: Any) -> KernelRuntimeError:
    """A kernel's failure at run time (the runtime's KernelFailure) as our error."""
    index, message = failure.args
    step = steps[index]
    return KernelRuntimeError(f"{step.describe()} failed: {message}", op=step.op.type)


def _python_step(step: Step, shapes: dict[str, tuple[tuple, str]]) -> Any:
    """The callback the compiled runtime makes for a Python kernel: unpack slots, call, check."""

    fn, attrs = step.fn, step.attrs
    layout = [(duplicable, bool(names)) for _, duplicable, names in step.inputs]
    out_names = [name for _, _, names in step.outputs for name in names]
    control_flow = step.sub_specs is not None

    def call(inputs: list[list[Any]]) -> list[Any]:
        args = [
            slot if duplicable else (slot[0] if present else None)
            for slot, (duplicable, present) in zip(inputs, layout)
        ]
        produced = _call_kernel(step, fn, args, attrs)
        if control_flow:  # fresh arrays of the planned shapes, from the blocks' own plans
            return _flat(step, produced)
        given = {n: a for (_, _, ns), slot in zip(step.inputs, inputs) for n, a in zip(ns, slot)}
        arrays = _outputs(step, produced, shapes, given)
        if all(given.get(name) is a for name, a in zip(out_names, arrays)):
            return arrays  # all in place: the variables' own buffers, as they were
        arrays = [host_array(a) for a in arrays]
        owners = [_root(x) for x in given.values()]
        roots = None if any(r is None for r in owners) else {id(r) for r in owners}
        return [_own_memory(name, a, given, roots) for name, a in zip(out_names, arrays)]

    return call


def _own_memory(name: str, array: Any, given: dict[str, Any], roots: set[int] | None) -> Any:
    """Output ``name``'s ``array``, with memory of its own where it shares an input's
    (``return x``, ``x.reshape(...)``): that would change when the input's buffer is next
    written. Not an input returned as itself to its own variable (an op working in place, as
    the collectives do on gradients): that buffer is the output's. ``given``: the inputs by
    variable; ``roots``: the ids of the arrays owning their memory (``_root``), None where
    one is unknown."""
    if given.get(name) is array:
        return array
    root = _root(array)
    if roots is not None and root is not None and id(root) not in roots:  # (no input's memory)
        return array
    if any(np.may_share_memory(array, x) for x in given.values()):
        return array.copy()
    return array


def _root(array: Any) -> Any:
    """The array owning ``array``'s memory (``array`` itself, or the end of its chain of
    bases); None where another object owns it (a buffer, bytes), whose bounds are unknown."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array if array.base is None else None


def _flat(step: Step, result: Any) -> list[Any]:
    """A control-flow kernel's result (a value per output slot; lists for duplicable ones) as
    a flat list of arrays."""
    if len(step.outputs) == 1:
        result = (result,)
    return [
        array
        for (_, duplicable, names), value in zip(step.outputs, result)
        if names
        for array in (value if duplicable else [value])
    ]


def _call_kernel(step: Step, fn: Any, args: list[Any], attrs: dict[str, Any]) -> Any:
    try:
        return fn(*args, **attrs)
    except PLUGIN_CODE_ERRORS as e:
        if step.sub_specs is not None and isinstance(e, PaddleCoreError):
            raise  # a control-flow step's errors name its op and blocks already
        if isinstance(e, DistributedError):
            raise  # a collective's: it names the op and the ranks, and is raised on each
        raise KernelRuntimeError(
            f"{step.describe()} failed: {type(e).__name__}: {e}", op=step.op.type
        ) from e


def _outputs(
    step: Step, result: Any, shapes: dict[str, tuple[tuple, str]], given: dict | None = None
) -> list[Any]:
    """A Python kernel's result as a flat list of arrays, checked against the planned shapes
    (but for an input returned as itself for its own variable: ``given``, the inputs by
    variable, planned already)."""
    if len(step.outputs) == 1:
        result = (result,)
    elif not isinstance(result, (tuple, list)) or len(result) != len(step.outputs):
        _bad_result(step, f"should return {len(step.outputs)} outputs as a tuple")
    flat = []
    for (slot, duplicable, names), value in zip(step.outputs, result):
        if not names:  # a dispensable output this op instance does not produce
            continue
        produced = value if duplicable else [value]
        if len(produced) != len(names):
            _bad_result(
                step, f"returned {len(produced)} arrays for output {slot!r}, expected {len(names)}"
            )
        for name, array in zip(names, produced):
            if given is None or given.get(name) is not array:
                _check_output(step, name, array, *shapes[name])
            flat.append(array)
    return flat


def _bad_result(step: Step, problem: str) -> None:
    raise KernelRuntimeError(f"{step.describe()} {problem}", op=step.op.type)


def _check_output(step: Step, name: str, value: Any, shape: tuple, dtype: str) -> None:
    if isinstance(value, np.ndarray) and value.shape == tuple(shape) and value.dtype == dtype:
        return  # (the usual case, before the slower checks naming what differs)
    got_shape = getattr(value, "shape", None)
    got_dtype = getattr(getattr(value, "dtype", None), "name", None)
    if got_shape is None or got_dtype != dtype or tuple(got_shape) != tuple(shape):
        _bad_result(
            step,
            f"produced {name!r} as {type(value).__name__} {got_dtype}{list(got_shape or [])}, "
            f"but the op declares {dtype}{format_shape(shape)}",
        )


class StepKernel:
    """A native kernel called outside the compiled loop: one step of a plan run by the Python
    loop (a CPU kernel a device falls back to, or a kernel of the device itself), as a
    compiled plan of its own.

    Its inputs and outputs get buffers of their own, so its outputs never overlap its inputs.
    """

    def __init__(self, step: Step, shapes: dict[str, tuple[tuple, str]], num_threads: int):
        runtime = compiled_runtime()
        self.step = step
        self.device = step.device
        self.plan = runtime.Plan(num_threads, step.device.stream())

        def buffer(name: str) -> int:
            shape, dtype = shapes[name]
            return self.plan.add_buffer(list(shape), D.to_enum(dtype))

        ins = [[buffer(n) for n in names] for _, _, names in step.inputs]
        outs = [[buffer(n) for n in names] for _, _, names in step.outputs]
        self.inputs = [i for slot in ins for i in slot]
        self.outputs = [
            (i, *shapes[n])
            for (_, _, names), slot in zip(step.outputs, outs)
            for n, i in zip(names, slot)
        ]
        self.plan.add_native(step.fn, ins, outs, *_native_args(step))
        _prepare(self.plan, [step])
        layout: list[tuple[tuple, str]] = []
        workspaces, _ = _add_workspaces(self.plan, layout)
        self._workspaces = [self.device.empty(*shape_dtype) for shape_dtype in layout]
        for (index, _), array in zip(workspaces, self._workspaces):
            self.plan.bind(index, array)
        self._failure = runtime.KernelFailure

    def __call__(self, args: list[Any], random_counter: int) -> list[Any]:
        """Run on ``args`` (host arrays per input slot, a list for duplicable slots); return
        the outputs' arrays, flat in slot order."""
        self.plan.set_random_counter(random_counter)
        kernel_array = self.device.kernel_array
        arrays = [kernel_array(a) for slot in args if slot is not None for a in _items(slot)]
        produced = [self.device.empty(shape, dtype) for _, shape, dtype in self.outputs]
        try:
            self.plan.run(self.inputs + [i for i, _, _ in self.outputs], arrays + produced)
        except self._failure as e:
            raise _failed([self.step], e) from None
        return produced


def _items(slot: Any) -> list[Any]:
    return slot if isinstance(slot, list) else [slot]


class PythonRunner:
    """Runs a plan with a Python loop on any device (CPU-fallback ops copy in and out)."""

    def __init__(self, spec: PlanSpec, device: Any, num_threads: int) -> None:
        self.spec = spec
        self.device = device
        self.memory = MemoryPlan(buffers=0, planned_bytes=0, arena_bytes=0)
        # Native kernels run as one-step compiled plans.
        self.native = {
            k: StepKernel(step, spec.shapes, num_threads)
            for k, step in enumerate(spec.steps)
            if step.kernel.impl == "native"
        }

    def run(self, feed: dict[str, Any], scope: Scope, times: list | None = None) -> list[Any]:
        """Run; with ``times`` (a list), append to it the ops' times as ``CompiledRunner.run``
        does, each op's copies to and from the host included, waiting for the device after
        each op."""
        device, shapes = self.device, self.spec.shapes
        now = compiled_runtime().now_ns if times is not None else None
        rows: list[tuple[int, int, int]] = []
        counter = scope.next_random_run() if self.spec.random else 0
        values: dict[str, Any] = {}
        for name in self.spec.persistable_inputs:
            value = _scope_value(scope, name)
            if not device.holds(value):  # e.g. a NumPy array set by the user, on CUDA
                value = device.to_device(value)
                scope.update_var(name, value)  # moved once, not on every run
            values[name] = value
        values.update({name: device.kernel_array(array) for name, array in feed.items()})
        if times is not None:
            device.synchronize()  # the feeds' copies are not the first op's time
        for k, step in enumerate(self.spec.steps):
            start = now() if now is not None else 0
            args = []
            for _, duplicable, names in step.inputs:
                slot = [values[n] for n in names]
                if step.fallback:
                    slot = [device.to_host(v) for v in slot]
                args.append(slot if duplicable else (slot[0] if slot else None))
            if k in self.native:
                produced = self.native[k](args, counter)
            else:
                produced = _outputs(step, _call_kernel(step, step.fn, args, step.attrs), shapes)
            names = [n for _, _, slot_names in step.outputs for n in slot_names]
            for name, array in zip(names, produced):
                values[name] = device.to_device(array) if step.fallback else array
            if now is not None:
                device.synchronize()
                rows.append((k, start, now()))
        if times is not None:
            times.append(np.array(rows, np.int64).reshape(-1, 3))
        for name in self.spec.persistable_outputs:
            scope.update_var(name, values[name])
        shared = set(self.spec.feed_names) | set(self.spec.persistable_inputs)
        shared |= set(self.spec.persistable_outputs)  # the caller's and the scope's arrays
        return [values[n].copy() if n in shared else values[n] for n in self.spec.fetch_names]


def _available_memory() -> int:
    """Bytes of memory the OS could give this process now (Linux's MemAvailable), else the
    machine's physical memory, or 0 where the OS says neither."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 0
