"""Executor: prepare a program once, then run it many times on a device.

Preparing (``planning.plan``) does all the thinking, once per (program version, feed
names/shapes/dtypes, fetch list): prune, select kernels, infer concrete shapes. The resulting
``PreparedProgram`` is cached and only moves tensors: on CPU its run loop is compiled.
"""

from __future__ import annotations

import math
import os
import weakref
from collections import OrderedDict
from typing import Any

import numpy as np

from ..base.dlpack import has_dlpack
from ..base.dtypes import ITEMSIZE, canonical, name_of, numpy_dtype
from ..base.errors import (
    ConfigError,
    FeedError,
    PaddleCoreError,
    ProgramError,
    brief,
    did_you_mean,
    shown,
)
from ..base.limits import MAX_BYTES, MAX_LIST_ITEMS, MAX_THREADS, take
from ..base.warn import warn
from ..graph.program import Program, default_main_program
from ..graph.variable import Variable, format_shape
from ..plugins import devices, hooks
from ..plugins.config import ConfigWarning, thread_setting
from ..plugins.registry import get_registry
from . import folding, scheduling
from .planning import plan
from .prepared import PreparedProgram
from .scope import Scope, global_scope


def default_num_threads() -> int:
    """PADDLE_CORE_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs this process may use."""
    threads, problem = thread_setting()
    if problem:
        warn(problem, ConfigWarning)
    if threads is not None:
        return threads
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def check_setting(
    owner: str, name: str, value: Any, low: int, high: int, none_ok: bool = False
) -> None:
    """ConfigError unless ``value`` (``owner``'s setting ``name``) is an int in [low, high]."""
    if value is None and none_ok:
        return
    if type(value) is not int or not low <= value <= high:
        raise ConfigError(
            f"{owner}: {name} must be an int in [{low}, {high}]"
            f"{' or None' if none_ok else ''}, got {shown(value)}"
        )


class Executor:
    """Runs programs on one device; prepared plans are cached per program version and signature,
    and dropped when plugins are registered or unregistered."""

    def __init__(
        self,
        device: Any = "cpu",
        *,
        num_threads: int | None = None,
        cache_size: int = 64,
        reuse_memory: bool = True,
        fold_constants: bool = True,
        early_updates: bool = True,
    ) -> None:
        self.device = devices.get_device(device)
        check_setting("Executor", "num_threads", num_threads, 1, MAX_THREADS, none_ok=True)
        check_setting("Executor", "cache_size", cache_size, 1, 2**31 - 1)
        switches = {
            "reuse_memory": reuse_memory,
            "fold_constants": fold_constants,
            "early_updates": early_updates,
        }
        for name, value in switches.items():
            if type(value) is not bool:
                raise ConfigError(f"Executor: {name} must be True or False, got {shown(value)}")
        self.num_threads = num_threads or default_num_threads()  # for kernels that thread
        self.cache_size = cache_size
        # Whether values whose lifetimes within a run do not overlap share memory (off: each
        # planned value keeps a buffer of its own, as a check on a kernel suspected of
        # reading memory it did not write).
        self.reuse_memory = reuse_memory
        # Whether ops that read only parameters the plan does not write run once and again
        # only when those are set, not on every run (folding.py; off: every op every run).
        self.fold_constants = fold_constants
        # Whether each parameter update runs as soon as its gradient is ready, not after the
        # whole backward pass (scheduling.py; off: in the program's order).
        self.early_updates = early_updates
        self._last: _RepeatedCall | None = None  # the previous run(), for its fast repeat
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

        ``feed`` maps data variable names to arrays: NumPy arrays, or any array with
        ``__dlpack__`` (PyTorch, JAX, CuPy), each of its variable's dtype. They are read where
        they are, no copy, when the device can (host memory on CPU, the executor's GPU on
        CUDA), else moved; a feed is never written. ``fetch_list`` holds Variables or names
        (one Variable or name alone counts as a list of one). Returns a list, one value per
        fetch, as NumPy arrays, or with ``return_numpy=False`` as the device's arrays (NumPy
        on CPU, CuPy on CUDA), which export through DLPack (``torch.from_dlpack``).
        """
        if type(fetch_list) is not list:
            fetch_list = _fetch_items(fetch_list)
        if type(return_numpy) is not bool:
            raise ConfigError(
                f"Executor.run: return_numpy must be True or False, got {shown(return_numpy)}"
            )
        program = default_main_program() if program is None else program
        feed = {} if feed is None else feed
        scope = scope if scope is not None else global_scope()
        self.run_count += 1
        last = self._last
        if last is not None:
            same_call = last.feeds(program, feed, fetch_list, self.device)
            if same_call is not None:  # the same call again: no re-checks
                return last.plan._run(same_call, scope, return_numpy)
        if not isinstance(program, Program):
            raise ProgramError(f"Executor.run expects a Program, got {type(program).__name__}")
        block = program.global_block()
        feed_values = {
            name: self._feed_value(block, name, value) for name, value in _feed_items(feed)
        }
        fetch_names = [_fetch_name(block, f) for f in _fetch_items(fetch_list)]
        signature = tuple((n, a.shape, name_of(a.dtype)) for n, a in sorted(feed_values.items()))
        plan = self._plan(program, signature, fetch_names)
        self._last = _RepeatedCall(program, feed_values, fetch_list, plan)
        return plan._run(feed_values, scope, return_numpy)

    def prepare(
        self, program: Program, feed: dict[str, Any], fetch_list: list[Any]
    ) -> PreparedProgram:
        """Build (or fetch from the cache) the plan for these feeds (arrays or (shape, dtype)
        pairs) and fetches."""
        if not isinstance(program, Program):
            raise ProgramError(f"Executor.prepare expects a Program, got {type(program).__name__}")
        block = program.global_block()
        signature = []
        for name, value in sorted(_feed_items(feed)):
            if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str):
                shape, dtype = _feed_spec(block, name, *value)
            else:
                array = self._feed_value(block, name, value)
                shape, dtype = array.shape, name_of(array.dtype)
            signature.append((name, shape, dtype))
        fetch_names = [_fetch_name(block, f) for f in _fetch_items(fetch_list)]
        return self._plan(program, tuple(signature), fetch_names)

    def _plan(self, program: Program, signature: tuple, fetch_names: list[str]) -> PreparedProgram:
        # This executor's plans for the program live on the program (they go with it), made
        # under one (registry, hooks generation): when plugins change, kernels may differ.
        plugins = (get_registry(), hooks.generation)
        cached = program.plan_cache.get(self)
        if cached is None or cached[0] != plugins:
            cached = program.plan_cache[self] = (plugins, OrderedDict())
        plans = cached[1]
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
        adopted = None if isinstance(value, np.ndarray) else self.device.adopt(value)
        if adopted is None:
            return feed_array(block, name, value)
        _check_feed(name, _feed_var(block, name), adopted, value)  # on its device: no copy
        return adopted

    def _build_plan(
        self, program: Program, signature: tuple, fetch_names: list[str]
    ) -> PreparedProgram:
        spec = plan(program, self.device, signature, fetch_names)
        if self.early_updates:
            scheduling.update_early(spec)
        prologue, spec = folding.split(spec) if self.fold_constants else (None, spec)
        prepared = PreparedProgram(spec, self.device, self.num_threads, self.reuse_memory)
        if prologue is not None:
            prepared.fold(
                PreparedProgram(prologue, self.device, self.num_threads, self.reuse_memory)
            )
        return prepared


class _RepeatedCall:
    """A run() call remembered so that the same call again skips planning and re-checking.

    A training or serving loop calls run() with the same program, feed names and fetch list
    every time. It matches when the program object, its version, the plugins, the feed names
    and the fetch list are the same, and each fed array is exactly of the planned dtype and
    shape: a NumPy array, or an array the device adopts (PyTorch or JAX arrays in host memory
    on CPU; CuPy, PyTorch or JAX arrays on the GPU of a CUDA executor). So it is exactly as
    safe as the full checks it replaces.
    """

    __slots__ = ("program", "version", "plugins", "feed_specs", "fetch_list", "plan")

    def __init__(self, program: Program, feed: dict, fetch_list: Any, plan: Any):
        self.program = weakref.ref(program)  # remembering a call must not keep its program
        self.version = program.version
        self.plugins = (get_registry(), hooks.generation)
        self.feed_specs = {name: (a.dtype, a.shape) for name, a in feed.items()}
        self.fetch_list = list(fetch_list)
        self.plan = plan

    def feeds(
        self, program: Any, feed: Any, fetch_list: list[Any], device: Any
    ) -> dict[str, Any] | None:
        """The feeds to run the plan with when this is the same call again (device arrays
        adopted as the full path adopts them), else None."""
        if (
            program is not self.program()
            or program.version != self.version
            or get_registry() is not self.plugins[0]
            or hooks.generation != self.plugins[1]
            or type(feed) is not dict
            or len(feed) != len(self.feed_specs)
            or len(fetch_list) != len(self.fetch_list)
            or not all(map(_same_fetch, fetch_list, self.fetch_list))
        ):
            return None
        specs = self.feed_specs
        adopted = None  # a copy of feed, made only when a device array is adopted
        for name, value in feed.items():
            spec = specs.get(name)
            if spec is None:
                return None
            if type(value) is not np.ndarray:
                value = device.adopt(value)  # None for anything the full path would convert
                if value is None:
                    return None
                if adopted is None:
                    adopted = dict(feed)
                adopted[name] = value
            if value.dtype is not spec[0] or value.shape != spec[1]:
                return None
        return feed if adopted is None else adopted


def _same_fetch(a: Any, b: Any) -> bool:
    """Whether two fetch-list items are the same: one Variable, or equal names. (Not ==: an
    item may be anything a caller passed, a NumPy array whose == has no truth value.)"""
    return a is b or (type(a) is str and type(b) is str and a == b)


def feed_array(block: Any, name: str, value: Any) -> Any:
    """``value`` as a NumPy array of variable ``name``'s dtype, checked against its shape."""
    var = _feed_var(block, name)
    given = value
    if not isinstance(value, np.ndarray):
        value = _to_array(name, var, value)
    if not value.dtype.isnative:  # kernels read native byte order
        value = value.astype(value.dtype.newbyteorder("="))
    _check_feed(name, var, value, given)
    return value


def _check_feed(name: str, var: Variable, value: Any, given: Any = None) -> None:
    """A fed array (NumPy or a device's, made from ``given`` where that differs) against its
    variable's dtype and shape."""
    if name_of(value.dtype) != var.dtype:
        numpy_like = given is None or type(given).__module__.split(".")[0] in ("numpy", "cupy")
        hint = f"with .astype({var.dtype!r})" if numpy_like else f"it to {var.dtype} first"
        raise FeedError(
            f"feed {name!r} has dtype {value.dtype.name}, but variable {name!r} is {var.dtype} "
            f"(convert {hint})"
        )
    _check_feed_shape(name, var, tuple(value.shape))


def _feed_items(feed: Any) -> list[tuple[str, Any]]:
    if not isinstance(feed, dict):
        raise FeedError(
            f"feed must be a dict of variable names to values, got {type(feed).__name__}"
        )
    for name in feed:
        if not isinstance(name, str):
            raise FeedError(f"feed keys must be variable names (str), got {shown(name)}")
    return list(feed.items())


def _fetch_items(fetch_list: Any) -> list[Any]:
    """The fetches as a list: None is none, one Variable or name is a list of one."""
    if fetch_list is None:
        return []
    if isinstance(fetch_list, (str, Variable)):
        return [fetch_list]
    items = take(fetch_list, MAX_LIST_ITEMS)
    if items is None or len(items) > MAX_LIST_ITEMS:
        raise FeedError(
            "fetch_list must be a list of Variables or names (or one of them), got "
            f"{type(fetch_list).__name__} {shown(fetch_list)}"
        )
    return items


def _feed_var(block: Any, name: str) -> Variable:
    var = block.vars.get(name)
    if var is None:
        raise FeedError(
            f"feed {name!r} is not a variable of the program{did_you_mean(name, block.vars)}"
        )
    return var


def _to_array(name: str, var: Variable, value: Any) -> Any:
    """A non-NumPy feed as a NumPy array: an array of another library (DLPack) as it is, a
    view of its memory where the host reads it; lists and scalars of the variable's dtype."""
    if has_dlpack(value):  # an array: its dtype must be the variable's, as a NumPy array's must
        expected = f"; variable {name!r} is {var.dtype}{format_shape(var.shape)}"
        return devices.dlpack_host_array(value, f"feed {name!r}", expected)
    host = devices.host_copy(value)  # a buffer of a registered device type
    if host is not None:
        return host
    if hasattr(value, "__cuda_array_interface__"):
        raise FeedError(
            f"feed {name!r} is a {type(value).__name__} device array of no registered device "
            "type; feed NumPy arrays or arrays of a registered device (CuPy for cuda)"
        )
    try:
        array = np.asarray(value)
    except Exception as e:  # ragged nested lists, unconvertible or hostile objects, no memory
        raise FeedError(
            f"feed {name!r} is not an array of numbers: {type(e).__name__}: {brief(str(e))}"
        ) from None
    # Lists and scalars take the variable's dtype, unless that loses meaning.
    try:
        target = numpy_dtype(var.dtype)
    except TypeError as e:  # bfloat16 without ml_dtypes
        raise FeedError(
            f"feed {name!r}: NumPy cannot make {var.dtype} (variable {name!r}) from a "
            f"{type(value).__name__} ({e}); feed an array of that dtype"
        ) from None
    if not np.can_cast(array.dtype, target, casting="same_kind"):
        raise FeedError(
            f"feed {name!r} holds {array.dtype.name} values, which variable {name!r} "
            f"({var.dtype}) cannot hold without loss"
        )
    converted = array.astype(target)
    if converted.dtype.kind in "iu" and not np.array_equal(converted, array):
        raise FeedError(
            f"feed {name!r} holds values outside the range of {var.dtype} (variable {name!r})"
        )
    return converted


def _feed_spec(block: Any, name: str, shape: Any, dtype: str) -> tuple[tuple, str]:
    """A (shape, dtype) feed given to ``prepare``, checked like an array would be."""
    var = _feed_var(block, name)
    try:
        dtype = canonical(dtype)
        shape = tuple(shape)
    except (PaddleCoreError, TypeError) as e:
        raise FeedError(f"feed {name!r}: {e}") from None
    if any(type(d) is not int or d < 0 for d in shape):
        raise FeedError(f"feed {name!r}: shape {list(shape)} must hold ints >= 0")
    if math.prod(shape) * ITEMSIZE[dtype] > MAX_BYTES:
        raise FeedError(f"feed {name!r}: shape {list(shape)} is more than any array can hold")
    if dtype != var.dtype:
        raise FeedError(f"feed {name!r} is given as {dtype}, but variable {name!r} is {var.dtype}")
    _check_feed_shape(name, var, shape)
    return shape, dtype


def _check_feed_shape(name: str, var: Variable, shape: tuple) -> None:
    if len(shape) != len(var.shape) or any(
        d is not None and d != g for d, g in zip(var.shape, shape)
    ):
        raise FeedError(
            f"feed {name!r} has shape {list(shape)}, but variable {name!r} is "
            f"declared {format_shape(var.shape)}"
        )


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
