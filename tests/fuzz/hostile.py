"""Hostile values, and a sweep that calls an entry point with each of them.

``sweep(call, values)`` calls ``call(value)`` for every value and returns what went wrong: a
raw (non paddle-core) exception, or a call that took too long. A result or one of the core's
errors is fine; what the result means is each test's business.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import paddle_core as pc


class Raising:
    """An object whose every protocol method raises: repr, str, len, iter, index, eq, hash..."""

    def _raise(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("hostile object")

    __repr__ = __str__ = __len__ = __iter__ = __index__ = __int__ = __float__ = _raise
    __bool__ = __eq__ = __hash__ = __getitem__ = __fspath__ = __array__ = _raise  # type: ignore


class Huge:
    """A sequence claiming to be astronomically long."""

    def __len__(self) -> int:
        return 2**62

    def __getitem__(self, k: int) -> int:
        if k >= 3:
            raise IndexError(k)
        return 1


def _numbers() -> list[Any]:
    return [
        0, 1, -1, 7, 2**31, 2**63, 2**200, -(2**200), 1.5, -0.0, math.nan, math.inf, -math.inf,
        True, False, np.int64(3), np.uint64(2**64 - 1), np.float32("nan"), np.float16(1),
        complex(1, 2), np.complex64(1),
    ]  # fmt: skip


def _texts() -> list[Any]:
    return ["", "x", "\x00", "a\x00b", "ü" * 5, "x" * 100_000, " ", "./a/../b", b"bytes", "-1"]


def _containers() -> list[Any]:
    return [
        [], [None], [[1]], [1, "a"], [2**70], [-5], [math.nan], (), (1,), {}, {"a": 1},
        {1: 2}, {None: None}, set(), frozenset({1}), range(3), range(10**12), Huge(),
        [Raising()], {"x": Raising()},
    ]  # fmt: skip


def _arrays() -> list[Any]:
    return [
        np.array([]), np.zeros((0, 3), np.float32), np.array(1.0), np.ones((2, 3)),
        np.ones((2, 3), np.float16), np.ones((2, 3), np.complex64), np.array(["a", "b"]),
        np.array([object(), None]), np.ones((2, 3), np.float32)[:, ::2], np.ones(3, ">f4"),
        np.ones((2, 3), np.float32).view([("a", "<f4")]), np.ma.masked_array([1.0, 2.0]),
        np.array(np.datetime64("2020-01-01")),
    ]  # fmt: skip


def resident_mb() -> float:
    """This process's resident memory in MiB (0 where /proc is not there): fuzzers report how
    much it grew after their warm-up, a leak's trace."""
    import os

    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


WARM_UP = 200  # cases a fuzzer runs before it takes its resident memory as the baseline


def values() -> list[Any]:
    """Every hostile value, a fresh list (some are mutable)."""
    return [
        None, object(), Raising(), Ellipsis, slice(1), type, print, NotImplemented,
        *_numbers(), *_texts(), *_containers(), *_arrays(),
    ]  # fmt: skip


def name(value: Any) -> str:
    """A short description of a value that never raises."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__} whose repr raises>"
    return text if len(text) <= 60 else text[:57] + "..."


def sweep(
    call: Callable[[Any], Any], candidates: Iterable[Any] | None = None, slow: float = 10.0
) -> list[str]:
    """Call ``call`` with each value; one line per raw exception or slow call."""
    found = []
    for value in values() if candidates is None else candidates:
        start = time.perf_counter()
        try:
            call(value)
        except pc.PaddleCoreError:
            pass
        except Exception as e:
            # Where the core let it through: its last frame in paddle_core.
            frames = traceback.extract_tb(e.__traceback__)
            ours = [f for f in frames if "paddle_core" in f.filename] or frames
            where = ours[-1]
            found.append(
                f"{name(value)}: {type(e).__name__}: {str(e)[:160]} "
                f"({where.filename.rsplit('/', 1)[-1]}:{where.lineno})"
            )
        if time.perf_counter() - start > slow:
            found.append(f"{name(value)}: took {time.perf_counter() - start:.0f} s")
    return found
