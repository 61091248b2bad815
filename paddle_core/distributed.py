"""Data-parallel training across processes, as in Paddle fluid's collective mode: collectives
are ops (from the paddle-ops-dist plugin), and a pass puts them into an ordinary program.

Every process (rank) runs the same script on its own part of the data::

    pc.distributed.init()
    optimizer = pc.distributed.DistributedOptimizer(pc.optimizer.Adam(learning_rate=1e-3))
    optimizer.minimize(loss)  # inside program_guard(main, startup)
    exe.run(startup)          # every rank starts from rank 0's parameters
    for batch in batches(pc.distributed.shard(len(data), seed=0)):
        exe.run(main, feed=...)

and ``paddle-ops launch -n 4 train.py`` starts four of them. ``minimize`` appends backward with
the loss gradient scaled by 1 / world size, then sums each gradient across the ranks (fused
into buckets of about ``fuse_grad_mb``, each one ``c_allreduce`` right after the last op
producing one of its gradients), so every rank applies the same update: that of one process
training on the union of the ranks' batches. The startup program broadcasts every value it
initialises from rank 0, and both programs begin with ``c_check_program``, which refuses to
go on when the ranks did not build the same programs.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from functools import cache

import numpy as np

from ._src.base.errors import DistributedError, ProgramError
from ._src.graph.operator import Operator
from ._src.graph.program import Program, default_startup_program
from ._src.graph.variable import Parameter, Variable
from ._src.plugins.registry import get_registry
from ._src.run.executor import Executor
from .optimizer import Optimizer

__all__ = ["DistributedOptimizer", "barrier", "init", "rank", "shard", "world_size"]

# (rank, world size) variables of the launchers: MPICH's (Hydra), Open MPI's, Paddle's.
_LAUNCHER_ENV = (
    ("PMI_RANK", "PMI_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM"),
)
CHECKED = "dist@checked"  # the persistable flag c_check_program writes


@cache
def _rank_and_size() -> tuple[int, int]:
    for rank_var, size_var in _LAUNCHER_ENV:
        if rank_var in os.environ or size_var in os.environ:
            given = os.environ.get(rank_var), os.environ.get(size_var)
            try:
                rank, size = int(given[0] or ""), int(given[1] or "")
            except ValueError:
                rank, size = -1, 0
            if not 0 <= rank < size:
                raise DistributedError(
                    f"the launcher's {rank_var}={given[0]!r} and {size_var}={given[1]!r} are "
                    "not a rank below a number of processes"
                )
            return rank, size
    return 0, 1


def rank() -> int:
    """This process's rank, 0 .. world_size() - 1 (0 when not launched on several)."""
    return _rank_and_size()[0]


def world_size() -> int:
    """The number of processes of the job (1 when not launched on several)."""
    return _rank_and_size()[1]


def init() -> tuple[int, int]:
    """Join the job: wait until every rank is here (which starts MPI and makes an uncaught
    exception on any rank end them all); return (rank, world size)."""
    if "c_barrier" not in get_registry():
        raise DistributedError(
            "pc.distributed needs the collective ops of paddle-ops-dist; install it with: "
            'pip install "paddle-ops-dist[mpi]"'
        )
    barrier()
    return rank(), world_size()


@cache
def _barrier_program() -> tuple[Program, Variable]:
    program = Program()
    block = program.global_block()
    out = block.create_var("barrier@out", [], "bool")
    block.append_op("c_barrier", {}, {"out": out}, {})
    return program, out


def barrier() -> None:
    """Return once every rank has called barrier()."""
    program, out = _barrier_program()
    Executor("cpu").run(program, fetch_list=[out])


def shard(n_samples: int, seed: int, *, drop_last: bool = False) -> np.ndarray:
    """This rank's sample indices for one epoch: a permutation of range(n_samples), the same on
    every rank for the same ``seed``, dealt out in turn (rank r gets items r, r + N, ...). Batch
    k of every rank together is then batch k of one process with N times the batch size.

    Every rank gets the same number of samples, so they run the same number of steps: when
    n_samples does not divide by the world size, the permutation is padded by its own first
    items (as PyTorch's DistributedSampler pads), or with ``drop_last`` cut to the largest
    multiple of it."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 0:
        raise ProgramError(f"shard(): n_samples must be an int >= 0, got {n_samples!r}")
    size = world_size()
    order = np.random.default_rng(seed).permutation(int(n_samples))
    per_rank = n_samples // size if drop_last else -(-n_samples // size)
    order = np.resize(order, per_rank * size) if n_samples else order
    return order[rank() :: size]


class DistributedOptimizer:
    """Wraps an optimizer so that ``minimize`` trains one model on every rank's data: see the
    module's doc. ``fuse_grad_mb`` is the size of a gradient bucket (one allreduce each)."""

    def __init__(self, optimizer: Optimizer, fuse_grad_mb: float = 32.0) -> None:
        if not isinstance(optimizer, Optimizer):
            raise ProgramError(
                f"DistributedOptimizer wraps a pc.optimizer optimizer, got {optimizer!r}"
            )
        if isinstance(fuse_grad_mb, bool) or not isinstance(fuse_grad_mb, (int, float)):
            raise ProgramError(f"fuse_grad_mb must be a number of MB, got {fuse_grad_mb!r}")
        if not fuse_grad_mb > 0:
            raise ProgramError(f"fuse_grad_mb must be above 0, got {fuse_grad_mb!r}")
        self.optimizer = optimizer
        self.fuse_bytes = int(fuse_grad_mb * 2**20)

    def minimize(
        self,
        loss: Variable,
        startup_program: Program | None = None,
        parameter_list: Iterable[Parameter | str] | None = None,
        no_grad_set: Iterable[Variable | str] | None = None,
    ) -> tuple[list[Operator], list[tuple[Parameter, Variable]]]:
        """Append backward (the loss gradient scaled by 1 / world size), the gradient
        allreduces, the updates, the parameter broadcast to the startup program and the
        program checks; return the update ops and the (parameter, gradient) pairs."""
        program = loss.block.program
        startup = startup_program or default_startup_program()
        scale = 1.0 / world_size()
        params_grads = self.optimizer.backward(loss, parameter_list, no_grad_set, scale)
        with program.role_guard("backward"):
            allreduce_gradients(program, [g for _, g in params_grads], self.fuse_bytes)
        update = self.optimizer.apply_gradients(params_grads, startup)
        broadcast_initialised(startup, self.fuse_bytes)
        check_programs(program, startup)
        return update, params_grads


def _buckets(block, names: list[str], limit: int) -> list[list[str]]:
    """``names`` in order, cut into runs of one dtype holding about ``limit`` bytes each."""
    buckets: list[list[str]] = []
    size, dtype = 0, None
    for name in names:
        var = block.var(name)
        nbytes = int(np.prod(var.shape)) * np.dtype(var.dtype).itemsize
        if not buckets or var.dtype != dtype or size >= limit:
            buckets.append([])
            size, dtype = 0, var.dtype
        buckets[-1].append(name)
        size += nbytes
    return buckets


def allreduce_gradients(program: Program, grads: list[Variable], fuse_bytes: int) -> None:
    """Sum ``grads`` across the ranks in place: one ``c_allreduce`` per bucket, in the order
    backward produces them, each right after the last op writing one of its gradients."""
    block = program.global_block()
    wanted = {g.name for g in grads}
    last: dict[str, int] = {}
    for index, op in enumerate(block.ops):
        for name in op.output_names:
            if name in wanted:
                last[name] = index
    missing = wanted - set(last)
    if missing:
        raise ProgramError(f"no op of the program computes the gradients {sorted(missing)}")
    produced = sorted(last, key=last.__getitem__)  # (stable: the same order on every rank)
    buckets = _buckets(block, produced, fuse_bytes)
    for bucket in reversed(buckets):  # from the end, so that earlier positions hold
        at = max(last[name] for name in bucket) + 1
        block.insert_op(at, "c_allreduce", {"x": bucket}, {"out": bucket}, {"reduce_type": "sum"})


def broadcast_initialised(startup: Program, fuse_bytes: int) -> None:
    """Append to ``startup`` a broadcast from rank 0 of every persistable value it writes, so
    that every rank starts from the same parameters and state."""
    block = startup.global_block()
    written = dict.fromkeys(
        name
        for op in block.ops
        if not op.type.startswith("c_")
        for name in op.output_names
        if block.var(name).persistable
    )
    for bucket in _buckets(block, list(written), fuse_bytes):
        block.append_op("c_broadcast", {"x": bucket}, {"out": bucket}, {"root": 0})


def check_programs(program: Program, startup: Program) -> None:
    """Put ``c_check_program`` first in both programs, with a fingerprint of both."""
    summary = [  # (ops numbered as they will be: after the check)
        f"{which} op {index}: {_describe(op)}"
        for which, p in (("startup", startup), ("main", program))
        for index, op in enumerate(
            (op for op in p.global_block().ops if op.type != "c_check_program"), start=1
        )
    ]
    fingerprint = hashlib.sha256("\n".join(summary).encode()).hexdigest()
    attrs = {"fingerprint": fingerprint, "summary": summary}
    for p, role in ((startup, "forward"), (program, "backward")):
        block = p.global_block()
        if block.ops and block.ops[0].type == "c_check_program":  # (minimize called again)
            block.rewrite_op(block.ops[0], attrs=attrs)
            continue
        flag = block.create_var(CHECKED, [], "bool", persistable=True)
        with p.role_guard(role):
            block.prepend_op("c_check_program", {}, {"out": flag}, attrs)


def _describe(op: Operator) -> str:
    """One line per op: its type, its variables with shapes and dtypes, and its attrs."""
    block = op.block

    def side(slots: dict[str, list[str]]) -> str:
        return ", ".join(
            f"{slot}={name}:{block.var(name).dtype}{list(block.var(name).shape)}"
            for slot, names in slots.items()
            for name in names
        )

    attrs = ", ".join(f"{k}={v!r}" for k, v in sorted(op.attrs.items()) if k != "summary")
    return f"{op.type}({side(op.inputs)}) -> ({side(op.outputs)}) {{{attrs[:200]}}}"
