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

from . import ops
from ._src.base.errors import DistributedError, ProgramError
from ._src.graph.operator import Operator
from ._src.graph.program import Program, default_startup_program, program_guard
from ._src.graph.variable import Parameter, Variable
from ._src.plugins.registry import get_registry
from ._src.run.executor import Executor
from .optimizer import Optimizer

__all__ = [
    "DistributedOptimizer",
    "barrier",
    "init",
    "local_rank",
    "rank",
    "shard",
    "world_size",
]

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


def local_rank() -> int:
    """This process's rank among those on its machine (MPICH's MPI_LOCALRANKID, Open MPI's
    OMPI_COMM_WORLD_LOCAL_RANK; else its rank): the GPU to run on, ``f"cuda:{local_rank()}"``."""
    for name in ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return rank()


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
def _barrier_program() -> tuple[Program, Variable, Executor]:
    program = Program()
    block = program.global_block()
    out = block.create_var("barrier@out", [], "bool")
    block.append_op("c_barrier", {}, {"out": out}, {})
    return program, out, Executor("cpu")  # (prepared once)


def barrier() -> None:
    """Return once every rank has called barrier()."""
    program, out, executor = _barrier_program()
    executor.run(program, fetch_list=[out])


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
    module's doc. ``fuse_grad_mb`` is the size of a gradient bucket (one allreduce each).
    ``sync_batch_norm`` normalises with the statistics of every rank's batch together (two
    allreduces per batch norm and step; the ranks' batches must be of one size, as ``shard``'s
    are): N ranks then train exactly as one process, batch norm included. Take the evaluation
    clone before ``minimize``: after it, the batch norms are plain ops computing batch
    statistics. ``overlap`` starts each bucket's allreduce (``c_allreduce_start``) as soon as
    backward has produced it and waits for it (``c_wait``) only before the first op reading one
    of its gradients, so that the rest of backward runs while it travels."""

    def __init__(
        self,
        optimizer: Optimizer,
        fuse_grad_mb: float = 32.0,
        sync_batch_norm: bool = False,
        overlap: bool = False,
    ) -> None:
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
        self.sync_batch_norm = bool(sync_batch_norm)
        self.overlap = bool(overlap)

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
        if self.sync_batch_norm:
            sync_batch_norms(program)
        params_grads = self.optimizer.backward(loss, parameter_list, no_grad_set, scale)
        update = self.optimizer.apply_gradients(params_grads, startup)
        with program.role_guard("backward"):  # (between backward and the updates reading them)
            grads = [g for _, g in params_grads]
            allreduce_gradients(program, grads, self.fuse_bytes, self.overlap)
        broadcast_initialised(startup, self.fuse_bytes)
        check_programs(program, startup)
        return update, params_grads


def sync_batch_norms(program: Program) -> int:
    """Replace each training-mode batch_norm of ``program``'s global block with the same
    computation on the statistics of all ranks' batches (each rank's mean and variance summed
    across the ranks); return how many. Backward through the ops it builds sums the statistics'
    gradients across the ranks too (c_allreduce's gradient)."""
    block = program.global_block()
    replaced, index = 0, 0
    while index < len(block.ops):
        op = block.ops[index]
        if op.type != "batch_norm" or op.attrs["is_test"] or op.attrs["channel_block"]:
            index += 1
            continue
        end = len(block.ops)
        with program_guard(program), program.role_guard(op.role):
            _synced_batch_norm(block, op)
        built = block.ops[end:]
        del block.ops[end:]
        block.ops[index : index + 1] = built  # in the batch norm's place
        program._version += 1
        index += len(built)
        replaced += 1
    return replaced


def _synced_batch_norm(block, op: Operator) -> None:
    """Append batch_norm ``op``'s computation with the ranks' joint statistics, writing its
    outputs y, mean_out and variance_out."""
    (x, scale, bias, mean, variance) = (
        block.var(op.inputs[slot][0]) for slot in ("x", "scale", "bias", "mean", "variance")
    )
    axes = [0, *range(2, len(x.shape))]
    per_channel = [1, -1] + [1] * (len(x.shape) - 2)
    n = world_size()

    def joint_mean(value: Variable) -> Variable:  # the mean over every rank's batch
        local = ops.mean(value, axes=axes, keepdim=True)
        block.append_op("c_allreduce", {"x": [local]}, {"out": [local]}, {})
        return ops.scale(local, scale=1.0 / n)

    batch_mean = joint_mean(x)
    centered = ops.sub(x, batch_mean)
    batch_variance = joint_mean(ops.square(centered))
    inv_std = ops.rsqrt(ops.scale(batch_variance, bias=op.attrs["epsilon"]))
    normalised = ops.mul(ops.mul(centered, inv_std), ops.reshape(scale, shape=per_channel))
    y = op.outputs["y"][0]
    block.append_op("add", {"x": normalised, "y": ops.reshape(bias, shape=per_channel)}, {"out": y})
    momentum = op.attrs["momentum"]
    for running, batch, slot in (
        (mean, batch_mean, "mean_out"),
        (variance, batch_variance, "variance_out"),
    ):
        kept = ops.scale(running, scale=momentum)
        new = ops.scale(ops.reshape(batch, shape=[-1]), scale=1.0 - momentum)
        block.append_op("add", {"x": kept, "y": new}, {"out": op.outputs[slot][0]})


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


def allreduce_gradients(
    program: Program, grads: list[Variable], fuse_bytes: int, overlap: bool = False
) -> None:
    """Sum ``grads`` across the ranks in place: one ``c_allreduce`` per bucket, in the order
    backward produces them, each right after the last op writing one of its gradients; with
    ``overlap``, a ``c_allreduce_start`` there and a ``c_wait`` right before the first op
    reading one of them."""
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
    inserts = []  # (position, op type, inputs, outputs, attrs), from the last position back
    for number, bucket in enumerate(_buckets(block, produced, fuse_bytes)):
        start = max(last[name] for name in bucket) + 1
        if not overlap:
            inserts.append((start, "c_allreduce", {"x": bucket}, {"out": bucket}, {}))
            continue
        handle = block.create_var(program.unique_name("allreduce@handle"), [], "int64")
        reads = (
            i for i in range(start, len(block.ops)) if set(block.ops[i].input_names) & set(bucket)
        )
        numbered = {"bucket": number}
        inserts.append((start, "c_allreduce_start", {"x": bucket}, {"handle": handle}, numbered))
        wait = (next(reads, len(block.ops)), "c_wait", {"handle": handle, "x": bucket})
        inserts.append((*wait, {"out": bucket}, {}))
    # At one position a wait goes in first, so that a start put there after it runs before it.
    for at, type_, inputs, outputs, attrs in sorted(
        inserts, key=lambda i: (i[0], i[1] == "c_wait"), reverse=True
    ):
        block.insert_op(at, type_, inputs, outputs, attrs)


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
