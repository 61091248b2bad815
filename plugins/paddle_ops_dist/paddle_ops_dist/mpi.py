"""The communicator of the CPU kernels: MPI through mpi4py's buffer interface (no copies
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
        if what in ("c_allgather", "c_reduce_scatter"):  # (the others work in place)
            send, recv = args
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
        self.one_machine: bool | None = None  # (on_one_machine's answer, once asked)
        if self.size > 1:
            _abort_on_uncaught(self)

    def start(self, what: str, *args: Any) -> Any:
        """Start the collective of op ``what``: (send, recv[, reduce_type][, root]) as MPI
        takes them."""
        MPI, comm = self.MPI, self.comm
        if what == "c_allreduce":  # in place: send is recv
            _, recv, op = args
            return comm.Iallreduce(MPI.IN_PLACE, recv, self.reduce_ops[op])
        if what == "c_reduce":  # in place on the root: send is recv
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
        started = time.perf_counter()
        deadline = started + self.timeout
        while not request.Test():
            now = time.perf_counter()
            if now > deadline:
                raise DistributedError(
                    f"{what} on rank {self.rank} of {self.size} waited more than "
                    f"{self.timeout:g} s (PADDLE_DIST_TIMEOUT) for the other ranks: one of "
                    "them has stopped, or runs a different program"
                )
            # For the first 10 ms, poll and yield the core between polls (a collective usually
            # completes within that, and ranks may outnumber the cores); then sleep between
            # polls, a tenth of the time waited so far, at most 1 ms. (Not time.sleep(0): it
            # sleeps for the timer's slack, 50 us or more, where sched_yield costs 1 us.)
            waited = now - started
            if waited < 0.01:
                os.sched_yield()
            else:
                time.sleep(min(waited / 10, 1e-3))


_COMBINE = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


class SharedBucket:
    """A bucket of ``size`` values in memory that every rank maps, when all the ranks run on
    one machine (an MPI shared-memory window, one segment per rank). Its allreduce copies half
    what MPI's does through shared memory: each rank combines its slice of every rank's bucket
    and writes the result into that slice of every bucket, so every rank ends with the same
    bytes. Creating one is collective, as MPI's windows are: every rank creates it at once."""

    def __init__(self, comm: Mpi, size: int, dtype: np.dtype) -> None:
        MPI, itemsize = comm.MPI, np.dtype(dtype).itemsize
        self.comm = comm
        self.window = MPI.Win.Allocate_shared(size * itemsize, itemsize, comm=comm.comm)
        self.window.Lock_all(MPI.MODE_NOCHECK)  # (a passive epoch: Sync orders the accesses)
        self.buffers = [
            np.frombuffer(self.window.Shared_query(rank)[0], dtype, size)
            for rank in range(comm.size)
        ]
        self.array = self.buffers[comm.rank]  # this rank's bucket
        lo, hi = comm.rank * size // comm.size, (comm.rank + 1) * size // comm.size
        self.part, self.result = slice(lo, hi), np.empty(hi - lo, dtype)

    def allreduce(self, reduce_type: str) -> None:
        combine, part = _COMBINE[reduce_type], self.part
        self._barrier()  # every rank's bucket holds its values
        combine(self.buffers[0][part], self.buffers[1][part], out=self.result)
        for buffer in self.buffers[2:]:
            combine(self.result, buffer[part], out=self.result)
        self._barrier()  # every rank has read the others' values
        for buffer in self.buffers:
            buffer[part] = self.result
        self._barrier()  # every rank's part of every bucket is written

    def _barrier(self) -> None:
        self.window.Sync()
        self.comm.wait(self.comm.start("c_barrier"), "c_allreduce")
        self.window.Sync()


def on_one_machine(comm: Any) -> bool:
    """Whether the ranks of ``comm`` (several) share one machine's memory. Collective."""
    if not isinstance(comm, Mpi) or comm.size == 1:
        return False
    if comm.one_machine is None:
        node = comm.comm.Split_type(comm.MPI.COMM_TYPE_SHARED)
        comm.one_machine = node.Get_size() == comm.size
        node.Free()
    return comm.one_machine


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
