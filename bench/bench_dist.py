"""Data-parallel training: throughput at 1, 2 and 4 processes of one thread each (weak
scaling: the same batch per rank), and the time each step waits in its collectives.

Two models, trained with pc.distributed.DistributedOptimizer(Adam) on random data shaped as
the 8x8 digits (which data the step sees does not change its time):
  cnn  examples/train_digits.py's CNN (batch norm), batch 32 per rank
  mlp  64 -> 1024 -> 1024 -> 10 (relu), batch 64 per rank: 1.1 M parameters, 4.5 MB of
       gradients summed every step
Each count of processes runs as its own job (`paddle-ops launch -n N`); rank 0 reports the
median step time of rounds of steps and the time it waits for its allreduces (blocking ones,
or with overlap=True, what c_wait still waits after the rest of backward). Beside them, N
independent processes each training its own model at once, with no collective: the ceiling
any data-parallel run on this machine can reach, where processes slow each other down
through shared caches, memory bandwidth and (on a virtual machine) the host. The jobs run
--repeats times, interleaved, and each figure is the median over the repeats, each ratio
taken against the one-process job of its own repeat (a machine whose speed drifts moves
both). Target: throughput at 2 processes at least 1.8x one process's. 4 processes share this
machine's cores when it has fewer than 4, so that figure measures oversubscription as much as
scaling.

Then one allreduce of 1 KB to 16 MB at 2 processes: the c_allreduce op in a program beside
mpi4py's own Allreduce. Then the ring-allreduce cost model of docs/distributed.md for
ResNet-18's gradients (11.7 M float32 values) on a 25 Gbit/s network, from a measured
single-process training step of ResNet-18 (3x32x32, batch 32) when PyTorch is installed (the
model comes from torch.onnx).

    python bench/bench_dist.py [--steps 40] [--rounds 5] [--repeats 3] [--procs 1 2 4]
                               [--model cnn mlp]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import networks
import numpy as np
import timing
from timing import optional

import paddle_core as pc

MODELS = {"cnn": ([1, 8, 8], 32), "mlp": ([64], 64)}
LINK_GBIT, LATENCY_S = 25.0, 5e-6  # docs/distributed.md's network
RESNET18_PARAMS = 11_689_512  # torchvision's, 1000 classes (without PyTorch here)


def net(model: str, image):
    if model == "mlp":
        x = pc.layers.fc(image, 1024, act="relu")
        return pc.layers.fc(pc.layers.fc(x, 1024, act="relu"), 10)
    x = image
    for filters in (16, 32):
        x = pc.layers.conv2d(x, filters, 3, padding=1, bias_attr=False)
        x = pc.layers.batch_norm(x, act="relu")
        x = pc.layers.pool2d(x, 2, pool_stride=2)
    return pc.layers.fc(x, 10)


HOWS = {  # how the ranks' gradients meet: the label printed for each
    "blocking": "blocking",
    "overlapped": "overlapped",
    "independent": "none (ceiling)",
}


def worker(model: str, steps: int, rounds: int, how: str) -> None:
    """One rank of the job: time ``rounds`` rounds of ``steps`` steps; rank 0 prints JSON.
    ``how``: the allreduces blocking or overlapped, or none (each rank trains alone)."""
    from paddle_ops_dist import kernels  # (what the collectives waited: only under launch)

    rank, size = pc.distributed.init()
    shape, batch = MODELS[model]
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", shape)
        label = pc.layers.data("label", [1], dtype="int64")
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(net(model, image), label))
        optimizer = pc.optimizer.Adam(1e-3)
        if how != "independent":
            overlap = how == "overlapped"
            optimizer = pc.distributed.DistributedOptimizer(optimizer, overlap=overlap)
        optimizer.minimize(loss)
    exe, scope = pc.Executor("cpu"), pc.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(rank)
    feed = {
        "image": rng.random((batch, *shape), np.float32),
        "label": rng.integers(0, 10, (batch, 1)),
    }
    for _ in range(5):  # warm up: plans prepared, the program check done
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    times, waits = [], []
    for _ in range(rounds):
        pc.distributed.barrier()
        waited = kernels.WAITED.get("c_allreduce", 0.0)
        start = time.perf_counter()
        for _ in range(steps):
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        times.append((time.perf_counter() - start) / steps)
        waits.append((kernels.WAITED.get("c_allreduce", 0.0) - waited) / steps)
    if rank == 0:
        step, wait = statistics.median(times), statistics.median(waits)
        print(json.dumps({"procs": size, "step": step, "wait": wait, "batch": batch}))


def launch(model: str, procs: int, steps: int, rounds: int, how: str) -> dict | None:
    command = shutil.which("paddle-ops", path=os.path.dirname(sys.executable))
    args = [command, "launch", "-n", str(procs), __file__, "--worker", model, "--how", how]
    args += ["--steps", str(steps), "--rounds", str(rounds)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(args, capture_output=True, text=True, env=env)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode or not lines:
        print(f"{model} at {procs} processes ({how}) failed:\n{result.stderr[-2000:]}")
        return None
    return json.loads(lines[-1])


def scaling(models: list[str], procs: list[int], steps: int, rounds: int, repeats: int) -> None:
    print(
        f"{'model':<6}{'procs':>6}{'allreduces':>16}{'step ms':>10}{'samples/s':>12}"
        f"{'vs 1 proc':>11}{'waiting ms/step':>17}"
    )
    for model in models:
        jobs = [(n, how) for n in procs for how in (HOWS if n > 1 else ["blocking"])]
        runs: dict[tuple[int, str], list[dict]] = {job: [] for job in jobs}
        ratios: dict[tuple[int, str], list[float]] = {job: [] for job in jobs}
        for _ in range(repeats):
            base = None
            for n, how in jobs:
                figures = launch(model, n, steps, rounds, how)
                if figures is None:
                    continue
                runs[n, how].append(figures)
                throughput = n * figures["batch"] / figures["step"]
                base = base or (throughput if n == 1 else None)
                if base:
                    ratios[n, how].append(throughput / base)
        for n, how in jobs:
            if not runs[n, how]:
                continue
            step = statistics.median(f["step"] for f in runs[n, how])
            wait = statistics.median(f["wait"] for f in runs[n, how])
            throughput = n * runs[n, how][0]["batch"] / step
            ratio = f"{statistics.median(ratios[n, how]):.2f}x" if ratios[n, how] else "-"
            print(
                f"{model:<6}{n:>6}{HOWS[how]:>16}{step * 1e3:>10.2f}{throughput:>12.0f}"
                f"{ratio:>11}{wait * 1e3:>17.3f}"
            )


ALLREDUCE_BYTES = [1 << 10, 1 << 16, 1 << 20, 1 << 24]


def allreduce_worker() -> None:
    """One rank timing one allreduce of each size: a program of one c_allreduce, in place on a
    persistable float32 vector (after its first run, the bucket buffer itself), beside
    mpi4py's Allreduce on a NumPy array of that size; rank 0 prints JSON."""
    from paddle_ops_dist import mpi  # (only under launch: the plugin's MPI communicator)

    rank, _ = pc.distributed.init()
    world = mpi.world()
    MPI, comm, rows = world.MPI, world.comm, []
    for nbytes in ALLREDUCE_BYTES:
        program = pc.Program()
        block = program.global_block()
        g = block.create_var("g", [nbytes // 4], "float32", persistable=True)
        block.append_op("c_allreduce", {"x": [g]}, {"out": [g]}, {})
        scope, exe = pc.Scope(), pc.Executor("cpu")
        scope.set_var("g", np.zeros(nbytes // 4, np.float32))  # (zeros: sums stay finite)
        theirs = np.zeros(nbytes // 4, np.float32)
        for _ in range(3):
            exe.run(program, scope=scope)
        calls = {
            "ours": functools.partial(exe.run, program, scope=scope),
            "mpi4py": functools.partial(comm.Allreduce, MPI.IN_PLACE, theirs, MPI.SUM),
        }
        times: dict[str, list[float]] = {"ours": [], "mpi4py": []}
        for _ in range(200 if nbytes < 1 << 22 else 30):  # interleaved
            for who, call in calls.items():
                comm.Barrier()
                start = time.perf_counter()
                call()
                times[who].append(time.perf_counter() - start)
        rows.append([nbytes, *(statistics.median(times[who]) for who in ("ours", "mpi4py"))])
    if rank == 0:
        print(json.dumps(rows))


def one_allreduce() -> None:
    """The allreduce_worker's table, from a job of 2 processes."""
    command = shutil.which("paddle-ops", path=os.path.dirname(sys.executable))
    args = [command, "launch", "-n", "2", __file__, "--allreduce-worker"]
    result = subprocess.run(args, capture_output=True, text=True)
    lines = [line for line in result.stdout.splitlines() if line.startswith("[")]
    if result.returncode or not lines:
        print(f"the allreduce job failed:\n{result.stderr[-2000:]}")
        return
    print("\nOne allreduce of float32 values, 2 processes (median us; ours: Executor.run of a")
    print("program of one c_allreduce, shared memory from 256 KB; mpi4py: its Allreduce):")
    print(f"{'bytes':>10}{'ours':>10}{'mpi4py':>10}{'ours/mpi4py':>13}")
    for nbytes, ours, theirs in json.loads(lines[-1]):
        print(f"{nbytes:>10}{ours * 1e6:>10.1f}{theirs * 1e6:>10.1f}{ours / theirs:>12.2f}x")


def resnet18_step() -> tuple[float, int] | None:
    """(seconds per training step, parameters) of ResNet-18 (3x32x32, batch 32, SGD) in one
    process, the model imported from PyTorch's ONNX export; None without PyTorch."""
    torch = optional("torch")
    if torch is None:
        return None
    models = networks.torch_models()  # the tests' ResNet-18, written with torch.nn
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "resnet18.onnx"
        x = torch.zeros(32, 3, 32, 32)
        torch.onnx.export(models.ResNet18().eval(), (x,), str(path), dynamo=False)
        imported = pc.onnx.load(str(path))
    program, scope = imported.program, imported.scope
    (logits,) = [program.global_block().var(name) for name in imported.outputs]
    startup = pc.Program()
    with pc.program_guard(program, startup):
        label = pc.layers.data("label", [1], dtype="int64")
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        pc.optimizer.SGD(0.01).minimize(loss)
    feed = {
        imported.inputs[0]: np.random.default_rng(0).random((32, 3, 32, 32), np.float32),
        "label": np.zeros((32, 1), np.int64),
    }
    exe = pc.Executor("cpu")
    exe.run(startup, scope=scope)  # the learning rate (the parameters are the model's)
    step = timing.steady(lambda: exe.run(program, feed=feed, fetch_list=[loss], scope=scope), 10)
    return step, sum(int(np.prod(p.shape)) for p in program.all_parameters() if p.trainable)


def cost_model(measured: tuple[float, int] | None) -> None:
    step, params = measured or (None, RESNET18_PARAMS)
    grad_bytes = params * 4
    link = LINK_GBIT * 1e9 / 8
    print(
        f"\nResNet-18: {params / 1e6:.1f} M parameters, {grad_bytes / 2**20:.1f} MB of float32 "
        f"gradients per step; a ring allreduce on {LINK_GBIT:g} Gbit/s, {LATENCY_S * 1e6:g} us "
        "per hop:"
    )
    if step is not None:
        print(f"one process's training step here (3x32x32, batch 32): {step * 1e3:.0f} ms")
    for n in (2, 8, 64):
        comm = 2 * (n - 1) / n * grad_bytes / link + 2 * (n - 1) * LATENCY_S
        line = f"  {n:>3} machines: {comm * 1e3:6.1f} ms of communication per step"
        if step is not None:  # no overlap with backward: the worst case
            line += f", {step / (step + comm):.0%} scaling efficiency without overlap"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", choices=list(MODELS), help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats of the jobs")
    parser.add_argument("--procs", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--model", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--no-resnet", action="store_true", help="skip the ResNet-18 step")
    parser.add_argument("--how", choices=list(HOWS), help=argparse.SUPPRESS)
    parser.add_argument("--allreduce-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.steps, args.rounds, args.how)
        return
    if args.allreduce_worker:
        allreduce_worker()
        return
    scaling(args.model, args.procs, args.steps, args.rounds, args.repeats)
    one_allreduce()
    cost_model(None if args.no_resnet else resnet18_step())


if __name__ == "__main__":
    main()
