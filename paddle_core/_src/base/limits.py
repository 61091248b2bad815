"""The sizes paddle-core accepts, checked where shapes enter: variables (create_var, data,
parameters), shape rules' outputs (at append and again on fed shapes), and memory allocation.
Python's ints are exact, so the products here cannot overflow; kernels get shapes already
checked, so their int64 element and byte counts cannot either.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Sequence

MAX_RANK = 64  # dimensions per tensor: NumPy's own limit
MAX_BYTES = 1 << 48  # one buffer: far beyond any machine's memory, far below int64 overflow
MAX_THREADS = 4096  # an executor's num_threads
MAX_LIST_ITEMS = 1 << 20  # items of a list attr: read up to this many from what is given


def shape_problem(shape: Sequence, itemsize: int = 1) -> str | None:
    """Why ``shape`` (ints >= 0, None for unknown) of ``itemsize``-byte elements is over the
    limits, or None. Unknown dimensions count as 1. An empty tensor's other dimensions are held
    to the same bound, so that no product of dimensions a kernel forms (its strides) overflows
    int64 either: [0, 2**62] is refused, [0, 3] is not."""
    if len(shape) > MAX_RANK:
        return f"has {len(shape)} dimensions; at most {MAX_RANK} are supported"
    nonzero = 1
    for d in shape:
        if d:
            nonzero *= d
    if nonzero * itemsize <= MAX_BYTES:
        return None  # the common case: the product below cannot exceed this one
    if math.prod(d for d in shape if d is not None) * itemsize > MAX_BYTES:
        return f"is larger than the {MAX_BYTES >> 40} TiB one buffer may hold"
    return (
        f"is empty, but its other dimensions span more than the {MAX_BYTES >> 40} TiB one "
        "buffer may hold"
    )


def take(values: object, limit: int) -> list | None:
    """The items of a list a user gave, at most ``limit`` + 1 of them (so a range(10**12) or an
    endless iterator is refused for its length, not built); None for a str, bytes, set or
    mapping, for what is not iterable and for what raises while iterated."""
    if isinstance(values, (str, bytes, set, frozenset)) or hasattr(values, "keys"):
        return None  # iterable, but not a list: a set has no order, a mapping gives its keys
    try:
        return list(itertools.islice(values, limit + 1))  # type: ignore[call-overload]
    except Exception:  # not iterable (a 0-d NumPy array has __iter__ too), or hostile
        return None


def as_dim(value: object) -> int | None:
    """One dimension as given by a user: an int (NumPy's too) >= 0, or None / -1 for unknown;
    None when it is none of these (floats and bools are not dimensions)."""
    if value is None:
        return -1
    if isinstance(value, bool):
        return None
    try:
        d = operator.index(value)
    except Exception:  # not an integer, or a hostile __index__
        return None
    return d if d >= -1 else None
