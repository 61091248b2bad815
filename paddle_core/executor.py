"""Executor: prepare a program once, then run it many times on a device.

``prepare`` does all the thinking, once per (program version, feed names/shapes/dtypes, fetch
list): prune to the ops the fetches need, resolve each op's kernel by (op, device, dtype)
through the ``paddle_core_select_kernel`` hook, validate and decode attrs, check that every
input will be available. The resulting ``PreparedProgram`` only moves tensors.

Pruning keeps an op if a fetched variable needs it, or if it writes a persistable variable (its
effect outlives the run: parameter updates, counters). Fed variables are not recomputed.
"""

from __future__ import annotations

import warnings
import weakref
from collections import OrderedDict
from typing import Any

from . import hooks
from .device import Device, get_device
from .errors import (
    FeedError,
    KernelNotFoundError,
    KernelRuntimeError,
    ProgramError,
    did_you_mean,
)
from .framework import Program, Variable, default_main_program, format_shape
from .registry import get_registry
from .scope import Scope, global_scope

_warned_fallbacks: set[tuple[str, str, str]] = set()


class Step:
    """One op of a prepared program: a kernel and where its arguments come from."""

    __slots__ = ("op", "kernel", "fn", "args", "outputs", "attrs", "fallback", "checks")

    def __init__(
        self, op: Any, kernel: Any, fn: Any, attrs: dict[str, Any], fallback: bool
    ) -> None:
        self.op = op
        self.kernel = kernel
        self.fn = fn
        self.attrs = attrs
        self.fallback = fallback  # a CPU kernel inside a non-CPU run: copy in and out
        self.args: list[tuple[str, bool, list[str]]] = []  # (slot, duplicable, names)
        self.outputs: list[tuple[str, bool, list[str]]] = []
        self.checks: list[tuple[str, tuple, str]] = []  # (name, declared shape, dtype)


class PreparedProgram:
    """A program ready to run: ``run(feed, scope)`` executes the planned steps in order."""

    def __init__(
        self, program: Program, device: Device, feed_names: list[str], fetch_names: list[str]
    ):
        self.program = program
        self.device = device
        self.feed_names = feed_names
        self.fetch_names = fetch_names
        self.steps: list[Step] = []
        self.persistable_inputs: list[str] = []  # read from the scope
        self.persistable_outputs: list[str] = []  # written back to the scope

    def __repr__(self) -> str:
        return (
            f"<PreparedProgram: {len(self.steps)} ops on {self.device}, fetch {self.fetch_names}>"
        )

    @property
    def op_types(self) -> list[str]:
        return [s.op.type for s in self.steps]

    def run(self, feed: dict[str, Any], scope: Scope, return_numpy: bool = True) -> list[Any]:
        device = self.device
        values: dict[str, Any] = {}
        for name in self.persistable_inputs:
            value = scope.find_var(name)
            if value is None:
                raise FeedError(
                    f"persistable variable {name!r} has no value in the scope; "
                    "initialise it first (run the startup program or scope.set_var)"
                )
            if not device.holds(value):  # e.g. a NumPy array set by the user, on CUDA
                value = device.to_device(value)
                scope.set_var(name, value)  # moved once, not on every run
            values[name] = value
        values.update(feed)
        for step in self.steps:
            _run_step(step, values, device)
        for name in self.persistable_outputs:
            scope.set_var(name, values[name])
        fetched = [values[name] for name in self.fetch_names]
        return [device.to_host(v) for v in fetched] if return_numpy else fetched


def _run_step(step: Step, values: dict[str, Any], device: Device) -> None:
    args = []
    for _, duplicable, names in step.args:
        if duplicable:
            args.append([values[n] for n in names])
        else:
            args.append(values[names[0]] if names else None)
    if step.fallback:
        args = [_map(device.to_host, a) for a in args]
    try:
        result = step.fn(*args, **step.attrs)
    except Exception as e:
        raise KernelRuntimeError(
            f"op {step.op.type!r} failed in {step.kernel.ref!r} ({step.kernel.plugin.label}, "
            f"{step.kernel.device}/{step.kernel.dtype}): {type(e).__name__}: {e}",
            op=step.op.type,
        ) from e
    if len(step.outputs) == 1:
        result = (result,)
    elif not isinstance(result, (tuple, list)) or len(result) != len(step.outputs):
        _bad_result(step, f"should return {len(step.outputs)} outputs as a tuple")
    for (slot, duplicable, names), value in zip(step.outputs, result):
        if not names:  # a dispensable output this op instance does not produce
            continue
        produced = value if duplicable else [value]
        if len(produced) != len(names):
            _bad_result(
                step, f"returned {len(produced)} arrays for output {slot!r}, expected {len(names)}"
            )
        for name, array in zip(names, produced):
            values[name] = device.to_device(array) if step.fallback else array
    for name, shape, dtype in step.checks:
        _check_output(step, name, values[name], shape, dtype)


def _map(fn: Any, arg: Any) -> Any:
    if arg is None:
        return None
    return [fn(a) for a in arg] if isinstance(arg, list) else fn(arg)


def _bad_result(step: Step, problem: str) -> None:
    raise KernelRuntimeError(
        f"op {step.op.type!r}: kernel {step.kernel.ref!r} ({step.kernel.plugin.label}) {problem}",
        op=step.op.type,
    )


def _check_output(step: Step, name: str, value: Any, shape: tuple, dtype: str) -> None:
    """Catch a kernel whose output contradicts the op's inferred shape or dtype."""
    got_shape = getattr(value, "shape", None)
    got_dtype = getattr(getattr(value, "dtype", None), "name", None)
    if (
        got_shape is None
        or got_dtype != dtype
        or len(got_shape) != len(shape)
        or any(d is not None and d != g for d, g in zip(shape, got_shape))
    ):
        _bad_result(
            step,
            f"produced {name!r} as {type(value).__name__} {got_dtype}{list(got_shape or [])}, "
            f"but the op declares {dtype}{format_shape(shape)}",
        )


class Executor:
    """Runs programs on one device; prepared plans are cached per program version and signature,
    and dropped when plugins are registered or unregistered."""

    def __init__(self, device: Any = "cpu", *, cache_size: int = 64) -> None:
        self.device = get_device(device)
        self.cache_size = cache_size
        self._plans: weakref.WeakKeyDictionary[Program, OrderedDict] = weakref.WeakKeyDictionary()
        self._plugins: tuple = ()  # (registry, hooks generation) the plans were prepared under
        self.prepare_count = 0  # how many plans were built (cache misses)
        self.run_count = 0

    def __repr__(self) -> str:
        return f"Executor({str(self.device)!r})"

    def run(
        self,
        program: Program | None = None,
        feed: dict[str, Any] | None = None,
        fetch_list: list[Any] | None = None,
        scope: Scope | None = None,
        return_numpy: bool = True,
    ) -> list[Any]:
        """Run ``program`` (default: the default main program); return the fetched values.

        ``feed`` maps data variable names to arrays (NumPy on any device; they are moved);
        ``fetch_list`` holds Variables or names. Values come back as NumPy arrays unless
        ``return_numpy=False``.
        """
        program = default_main_program() if program is None else program
        if not isinstance(program, Program):
            raise ProgramError(f"Executor.run expects a Program, got {type(program).__name__}")
        block = program.global_block()
        feed_values = {
            name: self._feed_value(block, name, value) for name, value in (feed or {}).items()
        }
        fetch_names = [_fetch_name(block, f) for f in fetch_list or []]
        signature = tuple((n, a.shape, a.dtype.name) for n, a in sorted(feed_values.items()))
        plan = self._plan(program, signature, fetch_names)
        self.run_count += 1
        moved = {n: self.device.to_device(v) for n, v in feed_values.items()}
        return plan.run(moved, scope if scope is not None else global_scope(), return_numpy)

    def prepare(
        self, program: Program, feed: dict[str, Any], fetch_list: list[Any]
    ) -> PreparedProgram:
        """Build (or fetch from the cache) the plan for these feeds (arrays or (shape, dtype)
        pairs) and fetches."""
        block = program.global_block()
        signature = []
        for name, value in sorted(feed.items()):
            if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str):
                shape, dtype = tuple(value[0]), value[1]
            else:
                array = self._feed_value(block, name, value)
                shape, dtype = array.shape, array.dtype.name
            signature.append((name, shape, dtype))
        return self._plan(program, tuple(signature), [_fetch_name(block, f) for f in fetch_list])

    def _plan(self, program: Program, signature: tuple, fetch_names: list[str]) -> PreparedProgram:
        plugins = (get_registry(), hooks.generation)
        if plugins != self._plugins:  # plugins changed: kernels, passes may differ
            self._plans = weakref.WeakKeyDictionary()
            self._plugins = plugins
        plans = self._plans.get(program)
        if plans is None:
            plans = self._plans[program] = OrderedDict()
        key = (program.version, signature, tuple(fetch_names))
        plan = plans.get(key)
        if plan is not None:
            plans.move_to_end(key)
            return plan
        plan = self._build_plan(program, signature, fetch_names)
        self.prepare_count += 1
        plans[key] = plan
        if len(plans) > self.cache_size:
            plans.popitem(last=False)
        return plan

    def _feed_value(self, block: Any, name: str, value: Any) -> Any:
        import numpy as np

        var = block.vars.get(name)
        if var is None:
            raise FeedError(
                f"feed {name!r} is not a variable of the program{did_you_mean(name, block.vars)}"
            )
        if not isinstance(value, np.ndarray):
            if hasattr(value, "__cuda_array_interface__"):  # already a device array (CuPy)
                value = value.get()
            else:  # lists and scalars take the variable's dtype, unless that loses meaning
                value = np.asarray(value)
                if not np.can_cast(value.dtype, var.dtype, casting="same_kind"):
                    raise FeedError(
                        f"feed {name!r} holds {value.dtype.name} values, which variable "
                        f"{name!r} ({var.dtype}) cannot hold without loss"
                    )
                value = value.astype(var.dtype, copy=False)
        if value.dtype.name != var.dtype:
            raise FeedError(
                f"feed {name!r} has dtype {value.dtype.name}, but variable {name!r} is {var.dtype} "
                f"(convert with .astype({var.dtype!r}))"
            )
        if len(value.shape) != len(var.shape) or any(
            d is not None and d != g for d, g in zip(var.shape, value.shape)
        ):
            raise FeedError(
                f"feed {name!r} has shape {list(value.shape)}, but variable {name!r} is "
                f"declared {format_shape(var.shape)}"
            )
        return value

    def _build_plan(
        self, program: Program, signature: tuple, fetch_names: list[str]
    ) -> PreparedProgram:
        from .hooks import plugin_manager
        from .registry import get_registry

        manager = plugin_manager()
        if manager.hook.paddle_core_transform_program.get_hookimpls():
            program = program.clone()  # passes rewrite a private copy, never the user's program
            manager.hook.paddle_core_transform_program(program=program, device=self.device)
        block = program.global_block()
        feed_names = [name for name, _, _ in signature]
        feed_shapes = {name: (shape, dtype) for name, shape, dtype in signature}
        plan = PreparedProgram(program, self.device, feed_names, fetch_names)
        kept = _prune(block, fetch_names, set(feed_names))
        registry = get_registry()
        available = set(feed_names)
        for op in kept:
            for name in op.input_names:
                if name not in available:
                    var = block.find_var(name)
                    if var is not None and var.persistable:
                        plan.persistable_inputs.append(name)
                        available.add(name)
                    else:
                        raise FeedError(
                            f"op {op.type!r} needs variable {name!r}, which is neither fed nor "
                            f"computed by an earlier op; add it to feed (fed: {', '.join(feed_names) or 'nothing'})"
                        )
            plan.steps.append(self._step(registry, manager, block, op, feed_shapes))
            for name in op.output_names:
                available.add(name)
                var = block.find_var(name)
                if var is not None and var.persistable:
                    plan.persistable_outputs.append(name)
        for name in fetch_names:
            if name not in available:
                var = block.find_var(name)
                if var is not None and var.persistable:
                    plan.persistable_inputs.append(name)
                else:
                    raise FeedError(
                        f"fetch {name!r} is neither fed nor computed by any op of the program"
                    )
        plan.persistable_inputs = list(dict.fromkeys(plan.persistable_inputs))
        plan.persistable_outputs = list(dict.fromkeys(plan.persistable_outputs))
        return plan

    def _step(self, registry: Any, manager: Any, block: Any, op: Any, feed_shapes: dict) -> Step:
        info = registry.op(op.type)
        attrs = (
            op.attrs if op.attr_types is info.attr_types else info.validator().validate(op.attrs)
        )
        dtype = _kernel_dtype(block, op)
        device = self.device.type
        kernel = manager.hook.paddle_core_select_kernel(
            op=op.type,
            device=device,
            dtype=dtype,
            candidates=registry.kernel_candidates(op.type, device, dtype),
        )
        fallback = False
        if kernel is None and device != "cpu":
            kernel = manager.hook.paddle_core_select_kernel(
                op=op.type,
                device="cpu",
                dtype=dtype,
                candidates=registry.kernel_candidates(op.type, "cpu", dtype),
            )
            fallback = kernel is not None
            if fallback and (op.type, device, dtype) not in _warned_fallbacks:
                _warned_fallbacks.add((op.type, device, dtype))
                warnings.warn(
                    f"op {op.type!r} has no {device} kernel for {dtype}; running it on CPU with copies",
                    RuntimeWarning,
                    stacklevel=5,  # the caller of Executor.run or .prepare
                )
        if kernel is None:
            have = (
                "; ".join(f"{d} ({', '.join(info.dtypes_for(d))})" for d in info.devices) or "none"
            )
            raise KernelNotFoundError(
                f"op {op.type!r} has no kernel for device {device} and dtype {dtype} "
                f"({info.plugin.label}); its kernels: {have}",
                op=op.type,
            )
        fn = kernel.load()
        step = Step(op, kernel, fn, attrs, fallback)
        for slot in info.proto.inputs:
            step.args.append((slot.name, slot.duplicable, op.inputs.get(slot.name, [])))
        for slot in info.proto.outputs:
            step.outputs.append((slot.name, slot.duplicable, op.outputs.get(slot.name, [])))
        for name in op.output_names:
            var = block.find_var(name)
            step.checks.append((name, var.shape, var.dtype))
        return step


def _prune(block: Any, fetch_names: list[str], fed: set[str]) -> list[Any]:
    """The ops needed for the fetches, in order (the seeds' extract_subnet_from), plus ops
    writing persistable variables."""
    needed = set(fetch_names) - fed
    kept = []
    for op in reversed(block.ops):
        outputs = op.output_names
        persists = any((v := block.find_var(n)) is not None and v.persistable for n in outputs)
        if persists or any(n in needed for n in outputs):
            kept.append(op)
            needed.update(n for n in op.input_names if n not in fed)
    kept.reverse()
    return kept


def _kernel_dtype(block: Any, op: Any) -> str:
    """The dtype that selects a kernel: the first input's, or the first output's for sources."""
    for name in op.input_names or op.output_names:
        return block.find_var(name).dtype
    raise ProgramError(f"op {op.type!r} has neither inputs nor outputs")


def _fetch_name(block: Any, item: Any) -> str:
    if isinstance(item, Variable):
        return item.name
    if isinstance(item, str):
        if block.find_var(item) is None:
            raise FeedError(
                f"fetch {item!r} is not a variable of the program{did_you_mean(item, block.vars)}"
            )
        return item
    raise FeedError(f"fetch_list items must be Variables or names, got {type(item).__name__}")
