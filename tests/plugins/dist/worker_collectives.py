"""Run under `paddle-ops launch -n N worker_collectives.py [cpu|cuda]`: every collective op
against a NumPy reference, for every dtype its kernel declares, sizes 0, 1, odd and several MB,
in place and not, on the CPU (MPI) or each rank's GPU (NCCL). Every rank makes
every rank's input itself (seeded by rank), so that each checks its result on its own."""

from __future__ import annotations

import sys

import numpy as np

import paddle_core as pc

RANK, SIZE = pc.distributed.init()
# The device the programs run on: cpu (MPI), or cuda (NCCL): each rank its own GPU.
DEVICE = sys.argv[1] if len(sys.argv) > 1 else "cpu"
if DEVICE == "cuda":
    DEVICE = f"cuda:{pc.distributed.local_rank()}"
SHAPES = [(0,), (1,), (SIZE * 7, 3), (SIZE, 1 << 19)]  # the last: 2 MB per rank in float32
LARGE = SHAPES[-1]
REDUCE = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}


def value(rank: int, shape: tuple, dtype: str, reduce_type: str = "sum") -> np.ndarray:
    rng = np.random.default_rng([rank, *shape])
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if reduce_type == "prod":  # small factors: no overflow, exact in every dtype
        return rng.choice(np.array([-1, 1, 2], dtype), shape)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50 if np.dtype(dtype).kind == "i" else 0, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def dtypes(op: str, shape: tuple) -> list[str]:
    """The op's dtypes; at the several-MB size, its first and last (the others differ only in
    what MPI is told, which the small sizes check)."""
    declared = pc.get_registry().op(op).dtypes_for("cpu")
    return [declared[0], declared[-1]] if shape == LARGE else declared


def run(op: str, x: np.ndarray, attrs: dict, inplace: bool, out_shape=None) -> np.ndarray:
    program = pc.Program()
    block = program.global_block()
    with pc.program_guard(program):
        var = pc.data("x", list(x.shape), str(x.dtype))
    if inplace:
        out = var
    else:
        out = block.create_var("out", list(out_shape or x.shape), str(x.dtype))
    duplicable = op in ("c_allreduce", "c_broadcast", "c_reduce")
    wrap = (lambda v: [v]) if duplicable else (lambda v: v)
    block.append_op(op, {"x": wrap(var)}, {"out": wrap(out)}, attrs)
    (result,) = pc.Executor(DEVICE).run(program, feed={"x": x}, fetch_list=[out])
    return np.asarray(result) if DEVICE == "cpu" else result.get()


def check(what: str, got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, want.shape)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


cases = 0
for shape in SHAPES:
    for inplace in (False, True):
        where = f"shape {shape}, in place {inplace}, rank {RANK} of {SIZE}"
        for op, reduce_types in (("c_allreduce", REDUCE), ("c_reduce", REDUCE)):
            for dtype in dtypes(op, shape):
                for reduce_type in reduce_types:
                    xs = [value(r, shape, dtype, reduce_type) for r in range(SIZE)]
                    want = REDUCE[reduce_type](np.stack(xs), axis=0).astype(dtype)
                    root = SIZE - 1
                    attrs = {"reduce_type": reduce_type}
                    if op == "c_reduce":
                        attrs["root"] = root
                        want = want if RANK == root else np.zeros_like(want)
                    got = run(op, xs[RANK], attrs, inplace)
                    check(f"{op} {reduce_type} {dtype}, {where}", got, want)
                    cases += 1
        for dtype in dtypes("c_broadcast", shape):
            root = SIZE - 1
            got = run("c_broadcast", value(RANK, shape, dtype), {"root": root}, inplace)
            check(f"c_broadcast {dtype}, {where}", got, value(root, shape, dtype))
            cases += 1
    for dtype in dtypes("c_allgather", shape):
        xs = [value(r, shape, dtype) for r in range(SIZE)]
        gathered = (SIZE * shape[0], *shape[1:])
        got = run("c_allgather", xs[RANK], {"nranks": SIZE}, False, gathered)
        check(f"c_allgather {dtype}, shape {shape}", got, np.concatenate(xs))
        cases += 1
    for dtype in dtypes("c_reduce_scatter", shape):
        if shape[0] % SIZE:
            continue
        xs = [value(r, shape, dtype) for r in range(SIZE)]
        part = shape[0] // SIZE
        want = np.sum(np.stack(xs), axis=0).astype(dtype)[RANK * part : (RANK + 1) * part]
        got = run("c_reduce_scatter", xs[RANK], {"nranks": SIZE}, False, want.shape)
        check(f"c_reduce_scatter {dtype}, shape {shape}", got, want)
        cases += 1

# Started, then waited for (a bucket of overlap=True), every dtype and size.
for shape in SHAPES:
    for dtype in dtypes("c_allreduce_start", shape):
        program = pc.Program()
        block = program.global_block()
        with pc.program_guard(program):
            x = pc.data("x", list(shape), dtype)
        handle = block.create_var("handle", [], "int64")
        block.append_op("c_allreduce_start", {"x": [x]}, {"handle": handle}, {})
        block.append_op("c_wait", {"handle": handle, "x": [x]}, {"out": [x]}, {})
        (got,) = pc.Executor(DEVICE).run(
            program, feed={"x": value(RANK, shape, dtype)}, fetch_list=[x]
        )
        got = np.asarray(got) if DEVICE == "cpu" else got.get()
        want = np.sum([value(r, shape, dtype) for r in range(SIZE)], axis=0).astype(dtype)
        check(f"c_allreduce_start + c_wait {dtype}, shape {shape}", got, want)
        cases += 1

# Several tensors of mixed sizes as one fused message (a gradient bucket).
program = pc.Program()
block = program.global_block()
shapes = [(3, 4), (0,), (5,), (2, 2, 2)]
with pc.program_guard(program):
    xs = [pc.data(f"x{i}", list(s), "float32") for i, s in enumerate(shapes)]
block.append_op("c_allreduce", {"x": xs}, {"out": xs}, {})
feed = {f"x{i}": value(RANK, s, "float32") for i, s in enumerate(shapes)}
got = [
    a if DEVICE == "cpu" else a.get()
    for a in pc.Executor(DEVICE).run(program, feed=feed, fetch_list=xs)
]
for i, s in enumerate(shapes):
    want = np.sum([value(r, s, "float32") for r in range(SIZE)], axis=0)
    check(f"fused c_allreduce, item {i}", got[i], want.astype(np.float32))
cases += 1

# A bucket computed each run: from the second run on, the tensors are views of the buffer the
# first packed them into, reduced where they lie (on one machine, in shared memory).
program = pc.Program()
block = program.global_block()
shapes = [(SIZE, 1 << 16), (7,)]  # 256 KB per rank and more: shared memory on the CPU
with pc.program_guard(program):
    fed = [pc.data(f"x{i}", list(s), "float32") for i, s in enumerate(shapes)]
    ys = [pc.ops.scale(x, scale=2.0) for x in fed]
    block.append_op("c_allreduce", {"x": ys}, {"out": ys}, {})
    outs = [pc.ops.scale(y, scale=1.0) for y in ys]
exe = pc.Executor(DEVICE)
for run_number in range(3):
    xs = [[value(r + 10 * run_number, s, "float32") for r in range(SIZE)] for s in shapes]
    feed = {f"x{i}": xs[i][RANK] for i in range(len(shapes))}
    got = [a if DEVICE == "cpu" else a.get() for a in exe.run(program, feed=feed, fetch_list=outs)]
    for i in range(len(shapes)):
        want = (2 * np.sum(xs[i], axis=0)).astype(np.float32)
        check(f"computed bucket, run {run_number}, item {i}", got[i], want)
    cases += 1

if DEVICE == "cpu":  # Shared-memory buckets themselves: every reduction and dtype, twice each.
    from paddle_ops_dist import mpi

    comm = mpi.world()
    assert mpi.on_one_machine(comm)
    size = 1000 * SIZE + 1  # (parts of unequal sizes)
    for dtype in pc.get_registry().op("c_allreduce").dtypes_for("cpu"):
        for reduce_type, reduce in REDUCE.items():
            bucket = mpi.SharedBucket(comm, size, np.dtype(dtype))
            for again in range(2):
                xs = [value(r + 10 * again, (size,), dtype, reduce_type) for r in range(SIZE)]
                bucket.array[:] = xs[RANK]
                bucket.allreduce(reduce_type)
                want = reduce(np.stack(xs), axis=0).astype(dtype)
                check(f"shared bucket {reduce_type} {dtype} #{again}", bucket.array, want)
                cases += 1

pc.distributed.barrier()
print(f"rank {RANK}: {cases} cases ok", flush=True)
