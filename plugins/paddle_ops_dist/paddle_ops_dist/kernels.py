"""The kernels of the collective ops, one for every device: the arrays' module picks the
communicator, MPI's for NumPy arrays (mpi.py), NCCL's on their GPU for CuPy ones (nccl.py).
A list of tensors travels as one message: packed into one buffer, then unpacked; an allreduce's
outputs are views of that buffer, so that the gradients of a data-parallel step are computed
into it from the next step on (``_Allreduce``)."""

from __future__ import annotations

import time
import weakref
from typing import Any

import numpy as np

from paddle_core import DistributedError

from . import mpi

# Seconds this process has spent waiting for each collective op to complete (its
# communication, and the other ranks it waits for): bench/bench_dist.py reports it per step.
WAITED: dict[str, float] = {}


def _communicator(array: Any) -> tuple[Any, Any]:
    """(the communicator, the array module) for ``array``'s device."""
    if isinstance(array, np.ndarray):
        return mpi.world(), np
    from . import nccl  # (CuPy: only for CUDA arrays)

    return nccl.world(), nccl.cupy()


def _run(comm: Any, what: str, *args: Any) -> None:
    started = time.perf_counter()
    try:
        comm.wait(comm.start(what, *args), what)
    finally:
        WAITED[what] = WAITED.get(what, 0.0) + time.perf_counter() - started


def _packed(xs: list[Any], xp: Any, flat: Any = None) -> Any:
    """A buffer holding every array of ``xs`` one after another (a fused bucket): one message.
    ``flat`` (new by default) owns its memory: each of ``_unpacked``'s views has it as base."""
    if flat is None:
        flat = xp.empty(sum(x.size for x in xs), xp.result_type(*xs))
    start = 0
    for x in xs:
        flat[start : start + x.size] = x.reshape(-1)
        start += x.size
    return flat


def _unpacked(flat: Any, like: list[Any]) -> list[Any]:
    parts, start = [], 0
    for x in like:
        parts.append(flat[start : start + x.size].reshape(x.shape))
        start += x.size
    return parts


def _check_root(comm: Any, root: int, what: str) -> None:
    if root >= comm.size:
        raise DistributedError(f"{what}: root={root} is not a rank of the {comm.size} processes")


def _check_nranks(comm: Any, nranks: int, what: str) -> None:
    if nranks != comm.size:
        raise DistributedError(
            f"{what}: its nranks attr is {nranks}, but the job has {comm.size} processes (build "
            "the program with nranks=pc.distributed.world_size())"
        )


# Buffers a bucket's tensors were packed into, by id: the outputs are views of them, and the
# executor binds the gradient variables to those views, so that from the next step on backward
# writes each gradient straight into its place in the message (as PyTorch DDP's bucket views
# and Paddle's coalesced gradients do), and nothing is copied.
_fused: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def _fused_buffer(x: list[Any]) -> Any:
    """The buffer the tensors of ``x`` are the whole of, one view each, if this module packed
    them into it before; else None."""
    owner = getattr(x[0], "base", None)
    if owner is None or _fused.get(id(owner)) is not owner:
        return None
    if any(a.base is not owner for a in x) or sum(a.size for a in x) != owner.size:
        return None
    return owner if len({id(a) for a in x}) == len(x) else None


# Buckets at least this large, of ranks on one machine, lie in shared memory (mpi.SharedBucket);
# a smaller one costs less as one MPI message than as SharedBucket's three barriers.
SHARED_BYTES = 1 << 18
_shared: dict[int, mpi.SharedBucket] = {}  # id of a bucket's buffer -> its shared memory
# The buckets (sizes, dtype, shapes) given shared memory: each only once, since windows live
# as long as the process (freeing one is collective). Another bucket like one of these (a
# gradient bound elsewhere, as when fetched) goes through MPI.
_shared_made: set[tuple] = set()


def _new_bucket(comm: Any, xp: Any, x: list[Any]) -> Any:
    """A new buffer for the tensors of ``x``, holding them one after another: in shared
    memory where that pays and is the first for this kind of bucket."""
    kind = (xp.result_type(*x).str, tuple(a.shape for a in x))
    size = sum(a.size for a in x)
    if (
        xp is np
        and kind not in _shared_made
        and size * np.dtype(kind[0]).itemsize >= SHARED_BYTES
        and mpi.on_one_machine(comm)
    ):
        _shared_made.add(kind)
        bucket = mpi.SharedBucket(comm, size, np.dtype(kind[0]))
        _shared[id(bucket.array)] = bucket
        return _packed(x, xp, bucket.array)
    return _packed(x, xp)


class _Allreduce:
    """One started allreduce of a list of tensors, as one message: ``x`` itself where it is a
    fused buffer already, else a new one they are packed into (NumPy arrays only: CUDA ones
    are packed every time). A buffer in shared memory is reduced there when waited for."""

    def __init__(self, comm: Any, xp: Any, x: list[Any], reduce_type: str) -> None:
        self.comm, self.x, self.reduce_type = comm, x, reduce_type
        self.flat = _fused_buffer(x) if xp is np else None
        self.in_place = self.flat is not None
        if not self.in_place:
            self.flat = _new_bucket(comm, xp, x)
            if xp is np:
                _fused[id(self.flat)] = self.flat
        self.shared = _shared.get(id(self.flat))
        if self.shared is None:
            self.request = comm.start("c_allreduce", self.flat, self.flat, reduce_type)

    def wait(self) -> list[Any]:
        """Wait for the message; the reductions, in x's order: x's own arrays where they were
        the message, else views of it."""
        started = time.perf_counter()
        try:
            if self.shared is not None:
                self.shared.allreduce(self.reduce_type)
            else:
                self.comm.wait(self.request, "c_allreduce")
        finally:  # (the part of the collective that nothing overlapped)
            WAITED["c_allreduce"] = WAITED.get("c_allreduce", 0.0) + time.perf_counter() - started
        return list(self.x) if self.in_place else _unpacked(self.flat, self.x)


def allreduce(x: list[Any], *, reduce_type: str, ring_id: int) -> list[Any]:
    comm, xp = _communicator(x[0])
    return _Allreduce(comm, xp, x, reduce_type).wait()


_pending: dict[int, _Allreduce] = {}  # bucket -> its allreduce, started and not waited for


def allreduce_start(x: list[Any], *, bucket: int, reduce_type: str, ring_id: int) -> Any:
    comm, xp = _communicator(x[0])
    stale = _pending.pop(bucket, None)
    if stale is not None:  # started by a run that failed before its c_wait: every rank did
        stale.wait()
    _pending[bucket] = _Allreduce(comm, xp, x, reduce_type)
    return np.array(bucket, np.int64)


def wait(handle: Any, x: list[Any], *, ring_id: int) -> list[Any]:
    found = _pending.pop(int(handle), None)
    if found is None:
        raise DistributedError(f"c_wait: no collective was started with handle {int(handle)}")
    return found.wait()


def broadcast(x: list[Any], *, root: int, ring_id: int) -> list[Any]:
    comm, xp = _communicator(x[0])
    _check_root(comm, root, "c_broadcast")
    flat = _packed(x, xp)
    _run(comm, "c_broadcast", flat, root)
    return _unpacked(flat, x)


def reduce(x: list[Any], *, reduce_type: str, root: int, ring_id: int) -> list[Any]:
    comm, xp = _communicator(x[0])
    _check_root(comm, root, "c_reduce")
    flat = _packed(x, xp)
    _run(comm, "c_reduce", flat, flat, reduce_type, root)
    if comm.rank != root:
        flat[...] = 0
    return _unpacked(flat, x)


def allgather(x: Any, *, nranks: int, ring_id: int) -> Any:
    comm, xp = _communicator(x)
    _check_nranks(comm, nranks, "c_allgather")
    out = xp.empty((nranks * x.shape[0], *x.shape[1:]), x.dtype)
    _run(comm, "c_allgather", xp.ascontiguousarray(x), out)
    return out


def reduce_scatter(x: Any, *, nranks: int, ring_id: int) -> Any:
    comm, xp = _communicator(x)
    _check_nranks(comm, nranks, "c_reduce_scatter")
    out = xp.empty((x.shape[0] // nranks, *x.shape[1:]), x.dtype)
    _run(comm, "c_reduce_scatter", xp.ascontiguousarray(x), out)
    return out


def barrier(x: list[np.ndarray] | None, *, ring_id: int) -> np.ndarray:
    _run(mpi.world(), "c_barrier")
    return np.array(True)


_checked: set[str] = set()  # fingerprints every rank has agreed on


def check_program(*, fingerprint: str, summary: list[str], ring_id: int) -> np.ndarray:
    """Compare ``fingerprint`` across the ranks (once per fingerprint); on a difference, name
    the first op where each differing rank's ``summary`` leaves rank 0's."""
    comm = mpi.world()
    if fingerprint in _checked or comm.size == 1:
        return np.array(True)
    mine = np.frombuffer(fingerprint.encode().ljust(64)[:64], np.uint8)
    every = np.empty((comm.size, 64), np.uint8)
    comm.wait(comm.start("c_allgather", mine, every), "c_check_program")
    if (every == every[0]).all():
        _checked.add(fingerprint)
        return np.array(True)
    summaries = comm.comm.allgather(summary)  # every rank is here: it took part above
    raise DistributedError(_difference(summaries, [bytes(row) for row in every]))


def _difference(summaries: list[list[str]], prints: list[bytes]) -> str:
    """Which ranks prepared a program unlike rank 0's, and the first op where each differs."""
    differ = [r for r, p in enumerate(prints) if p != prints[0]]
    same = [r for r, p in enumerate(prints) if p == prints[0]]
    lines = [
        f"the ranks prepared different programs: {_ranks(differ)} "
        f"{'differs' if len(differ) == 1 else 'differ'} from {_ranks(same)}"
    ]
    base = summaries[0]
    for r in differ:
        theirs = summaries[r]
        at = next(
            (i for i, (a, b) in enumerate(zip(base, theirs)) if a != b),
            min(len(base), len(theirs)),
        )
        ours = base[at] if at < len(base) else "no more ops"
        other = theirs[at] if at < len(theirs) else "no more ops"
        lines.append(f"  rank {r}: {other}\n  rank 0: {ours}")
    return "\n".join(lines)


def _ranks(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
