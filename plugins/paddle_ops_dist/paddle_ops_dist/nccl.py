"""The communicator of the CUDA kernels: NCCL through CuPy (``cupy.cuda.nccl``), one per GPU,
its unique id sent from rank 0 over MPI. Its collectives queue on the executor's stream (CuPy's
current stream while a plan runs), ordered with the kernels before and after them, and return
at once: nothing waits on the host, so PADDLE_DIST_TIMEOUT does not apply.

Where CuPy has no NCCL, the same ops go through MPI with the arrays copied to and from the host
(warned once): slower, never wrong.
"""

from __future__ import annotations

import warnings
from typing import Any

from paddle_core import DistributedError

from . import mpi


def cupy() -> Any:
    try:  # (deferred: only for CUDA arrays)
        import cupy as cp
    except ImportError as e:  # (a CUDA array without CuPy cannot reach a kernel)
        raise DistributedError(f"the CUDA collectives need CuPy: {e}") from e
    return cp


_communicators: dict[int, Any] = {}  # GPU index -> its communicator


def world() -> Any:
    """The communicator of ring 0 on the current GPU: NCCL's, else MPI's through the host."""
    cp = cupy()
    gpu = cp.cuda.Device().id
    if gpu not in _communicators:
        from cupy.cuda import nccl as library  # (CuPy's NCCL, loaded with its library)

        if library.available:
            _communicators[gpu] = Nccl(library, mpi.world())
        else:
            warnings.warn(
                "CuPy has no NCCL here: the CUDA collective ops go through MPI, copying the "
                "arrays to and from the host (pip install nvidia-nccl-cu13 for NCCL)",
                stacklevel=2,
            )
            _communicators[gpu] = ThroughHost(mpi.world(), cp)
    return _communicators[gpu]


class Nccl:
    """An NCCL communicator of every rank, on this GPU."""

    def __init__(self, library: Any, host: Any) -> None:
        self.nccl = library
        self.rank, self.size = host.rank, host.size
        unique_id = library.get_unique_id() if self.rank == 0 else None
        if self.size > 1:  # rank 0's id, to every rank
            unique_id = host.comm.bcast(unique_id, root=0)
        self.comm = library.NcclCommunicator(self.size, unique_id, self.rank)
        self.ops = {
            "sum": library.NCCL_SUM,
            "max": library.NCCL_MAX,
            "min": library.NCCL_MIN,
            "prod": library.NCCL_PROD,
        }
        self.dtypes = {
            "bool": library.NCCL_UINT8,
            "int8": library.NCCL_INT8,
            "uint8": library.NCCL_UINT8,
            "int32": library.NCCL_INT32,
            "int64": library.NCCL_INT64,
            "float16": library.NCCL_FLOAT16,
            "float32": library.NCCL_FLOAT32,
            "float64": library.NCCL_FLOAT64,
        }

    def start(self, what: str, *args: Any) -> None:
        """Queue the collective of op ``what`` on the current stream: (send, recv[,
        reduce_type][, root]) as in mpi.Mpi.start."""
        stream = cupy().cuda.get_current_stream().ptr
        first = args[0]
        dtype, count = self.dtypes[first.dtype.name], first.size
        if what == "c_allreduce":
            send, recv, op = args
            self.comm.allReduce(send.data.ptr, recv.data.ptr, count, dtype, self.ops[op], stream)
        elif what == "c_reduce":
            send, recv, op, root = args
            self.comm.reduce(send.data.ptr, recv.data.ptr, count, dtype, self.ops[op], root, stream)
        elif what == "c_broadcast":
            buffer, root = args
            self.comm.broadcast(buffer.data.ptr, buffer.data.ptr, count, dtype, root, stream)
        elif what == "c_allgather":
            send, recv = args
            self.comm.allGather(send.data.ptr, recv.data.ptr, count, dtype, stream)
        else:
            assert what == "c_reduce_scatter", what
            send, recv = args
            self.comm.reduceScatter(
                send.data.ptr, recv.data.ptr, recv.size, dtype, self.nccl.NCCL_SUM, stream
            )

    def wait(self, request: Any, what: str) -> None:
        pass  # (stream-ordered: the ops after it on the stream wait for it)


class ThroughHost:
    """MPI's communicator for CUDA arrays: each copied to the host, sent, and copied back."""

    def __init__(self, host: Any, cp: Any) -> None:
        self.host, self.cupy = host, cp
        self.rank, self.size = host.rank, host.size

    def start(self, what: str, *args: Any) -> None:
        arrays = [self.cupy.asnumpy(a) if isinstance(a, self.cupy.ndarray) else a for a in args]
        self.host.wait(self.host.start(what, *arrays), what)
        for device, host in zip(args, arrays):  # the received buffers, back on the GPU
            if device is not host:
                device.set(host)

    def wait(self, request: Any, what: str) -> None:
        pass
