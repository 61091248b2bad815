"""CPU kernels of the collective ops, on MPI through mpi4py's buffer interface (no copies
through pickle: NumPy arrays go to MPI as they are).

Every wait is a non-blocking MPI call polled against a deadline (``PADDLE_DIST_TIMEOUT``
seconds, default 300): a rank that never arrives makes the others raise
``pc.DistributedError`` rather than wait forever. Once MPI runs on more than one process, an
exception nobody catches ends the whole job (MPI_Abort after the traceback), so that no rank is
left waiting in a collective for one that has died.

A single process without mpi4py (``world_size() == 1``) runs the ops as the identities they
are there, so a data-parallel script also runs, unchanged, where no MPI is installed.
"""

from __future__ import annotations

import os
import sys
import time
from functools import cache
from typing import Any

import numpy as np

from paddle_core import DistributedError, distributed

_INSTALL = 'pip install "paddle-ops-dist[mpi]"'


def _timeout() -> float:
    value = os.environ.get("PADDLE_DIST_TIMEOUT", "300")
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise DistributedError(
            f"PADDLE_DIST_TIMEOUT={value!r}: expected a number of seconds above 0"
        )
    return seconds


class Single:
    """The communicator of a lone process without MPI: every collective is the identity."""

    rank, size = 0, 1

    def start(self, what: str, *args: Any) -> None:
        if what in ("c_allreduce", "c_reduce", "c_allgather", "c_reduce_scatter"):
            send, recv = args[0], args[1]
            if send is not None and recv is not None:
                recv[...] = send.reshape(recv.shape)

    def wait(self, request: Any, what: str) -> None:
        pass


class Mpi:
    """MPI's COMM_WORLD (a duplicate: the ops' messages never meet a user's own)."""

    OPS = ("sum", "max", "min", "prod")

    def __init__(self) -> None:
        try:  # (deferred: mpi4py initialises MPI when imported)
            from mpi4py import MPI
        except ImportError as e:
            raise DistributedError(
                f"the collective ops need MPI (mpi4py could not be imported: {e}); install "
                f"it with: {_INSTALL}, and run the script with paddle-ops launch -n N"
            ) from e
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD.Dup()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.reduce_ops = dict(zip(self.OPS, (MPI.SUM, MPI.MAX, MPI.MIN, MPI.PROD)))
        self.timeout = _timeout()
        if self.size > 1:
            _abort_on_uncaught(self)

    def start(self, what: str, *args: Any) -> Any:
        """Start the collective of op ``what``: (send, recv[, reduce_type][, root]) as MPI
        takes them."""
        MPI, comm = self.MPI, self.comm
        if what == "c_allreduce":
            send, recv, op = args
            return comm.Iallreduce(
                MPI.IN_PLACE if send is None else send, recv, self.reduce_ops[op]
            )
        if what == "c_reduce":
            send, recv, op, root = args
            root_here = self.rank == root
            return comm.Ireduce(
                MPI.IN_PLACE if root_here else send,
                recv if root_here else None,
                self.reduce_ops[op],
                root,
            )
        if what == "c_broadcast":
            buffer, root = args
            return comm.Ibcast(buffer, root)
        if what == "c_allgather":
            send, recv = args
            return comm.Iallgather(send, recv)
        if what == "c_reduce_scatter":
            send, recv = args
            return comm.Ireduce_scatter_block(send, recv, MPI.SUM)
        assert what == "c_barrier", what
        return comm.Ibarrier()

    def wait(self, request: Any, what: str) -> None:
        """Poll ``request`` until it completes; past the timeout, raise on this rank."""
        deadline = time.perf_counter() + self.timeout
        pause = 0.0
        while not request.Test():
            if time.perf_counter() > deadline:
                raise DistributedError(
                    f"{what} on rank {self.rank} of {self.size} waited more than "
                    f"{self.timeout:g} s (PADDLE_DIST_TIMEOUT) for the other ranks: one of "
                    "them has stopped, or runs a different program"
                )
            # Spin briefly (a collective usually completes in microseconds), then yield the
            # core: ranks may outnumber the cores.
            time.sleep(pause)
            pause = min(pause * 2 or 1e-5, 1e-3)


# Seconds this process has spent waiting for each collective op to complete (its
# communication, and the other ranks it waits for): bench/bench_dist.py reports it per step.
WAITED: dict[str, float] = {}


def _abort_on_uncaught(comm: Mpi) -> None:
    """Make an uncaught exception on this rank end every rank of the job, after the traceback."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        previous(kind, value, tb)
        sys.stderr.write(
            f"paddle-ops-dist: rank {comm.rank} of {comm.size} failed ({kind.__name__}); "
            "ending the job\n"
        )
        sys.stderr.flush()
        comm.comm.Abort(1)

    sys.excepthook = hook


@cache
def world() -> Single | Mpi:
    """The communicator of ring 0: every process of the job."""
    if distributed.world_size() == 1:
        try:  # (deferred: only to learn whether it is there)
            import mpi4py  # noqa: F401
        except ImportError:
            return Single()
    return Mpi()


def _run(what: str, *args: Any) -> None:
    comm = world()
    started = time.perf_counter()
    try:
        comm.wait(comm.start(what, *args), what)
    finally:
        WAITED[what] = WAITED.get(what, 0.0) + time.perf_counter() - started


def _packed(xs: list[np.ndarray]) -> np.ndarray:
    """One contiguous buffer holding every array of ``xs`` (a fused bucket): one message."""
    if len(xs) == 1:
        return np.array(xs[0], copy=True).reshape(-1)
    return np.concatenate([x.reshape(-1) for x in xs])


def _unpacked(flat: np.ndarray, like: list[np.ndarray]) -> list[np.ndarray]:
    parts, start = [], 0
    for x in like:
        parts.append(flat[start : start + x.size].reshape(x.shape))
        start += x.size
    return parts


def _check_root(root: int, what: str) -> None:
    size = world().size
    if root >= size:
        raise DistributedError(f"{what}: root={root} is not a rank of the {size} processes")


def _check_nranks(nranks: int, what: str) -> None:
    size = world().size
    if nranks != size:
        raise DistributedError(
            f"{what}: its nranks attr is {nranks}, but the job has {size} processes (build the "
            "program with nranks=pc.distributed.world_size())"
        )


def allreduce(x: list[np.ndarray], *, reduce_type: str, ring_id: int) -> list[np.ndarray]:
    flat = _packed(x)
    _run("c_allreduce", None, flat, reduce_type)
    return _unpacked(flat, x)


def broadcast(x: list[np.ndarray], *, root: int, ring_id: int) -> list[np.ndarray]:
    _check_root(root, "c_broadcast")
    flat = _packed(x)
    _run("c_broadcast", flat, root)
    return _unpacked(flat, x)


def reduce(x: list[np.ndarray], *, reduce_type: str, root: int, ring_id: int) -> list[np.ndarray]:
    _check_root(root, "c_reduce")
    flat = _packed(x)
    _run("c_reduce", flat, flat, reduce_type, root)
    if world().rank != root:
        flat[...] = 0
    return _unpacked(flat, x)


def allgather(x: np.ndarray, *, nranks: int, ring_id: int) -> np.ndarray:
    _check_nranks(nranks, "c_allgather")
    out = np.empty((nranks * x.shape[0], *x.shape[1:]), x.dtype)
    _run("c_allgather", np.ascontiguousarray(x), out)
    return out


def reduce_scatter(x: np.ndarray, *, nranks: int, ring_id: int) -> np.ndarray:
    _check_nranks(nranks, "c_reduce_scatter")
    out = np.empty((x.shape[0] // nranks, *x.shape[1:]), x.dtype)
    _run("c_reduce_scatter", np.ascontiguousarray(x), out)
    return out


def barrier(x: list[np.ndarray] | None, *, ring_id: int) -> np.ndarray:
    _run("c_barrier")
    return np.array(True)


_checked: set[str] = set()  # fingerprints every rank has agreed on


def check_program(*, fingerprint: str, summary: list[str], ring_id: int) -> np.ndarray:
    """Compare ``fingerprint`` across the ranks (once per fingerprint); on a difference, name
    the first op where each differing rank's ``summary`` leaves rank 0's."""
    comm = world()
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
