"""Matrix products: float32 matmul (256^2 and 1024^2), and thread-pool behaviour.

1. GEMM speed: ours (pc.Executor steady state; OpenBLAS from scipy-openblas32 running on our
   OpenMP threads) beside NumPy (its own OpenBLAS, threads set with threadpoolctl) and PyTorch,
   at one and two threads, measured in this run. Target: at least 0.95x NumPy.
2. Oversubscription: a program alternating 256^2 GEMMs with OpenMP elementwise ops, against
   the same GEMMs and elementwise ops run as separate programs. Two thread pools in one
   process (OpenBLAS's own and OpenMP's) made alternating 256^2 GEMMs 15-35x slower in our
   trials; with one pool the ratio stays near 1.
3. Mixing libraries: our 256^2 GEMM alternating with NumPy's (its own OpenBLAS and thread
   pool) in one loop, in fresh processes under each setting of the documented knobs.

    python bench/bench_matmul.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

import numpy as np
from timing import optional, steady

import paddle_core as pc


def program_runner(build, feed, threads: int):
    """A steady-state runner for the program ``build()`` appends to (returns its fetches)."""
    prog = pc.Program()
    with pc.program_guard(prog):
        fetch = build()
    exe = pc.Executor("cpu", num_threads=threads)
    exe.run(prog, feed=feed, fetch_list=fetch)
    return lambda: exe.run(prog, feed=feed, fetch_list=fetch)


def gemm_table(repeat: int) -> None:
    # NumPy's GEMM at a given thread count needs threadpoolctl: without it, no NumPy column.
    threadpoolctl, torch = optional("threadpoolctl"), optional("torch")
    rng = np.random.default_rng(0)
    print(
        f"{'size':>6} {'threads':>7} {'paddle-core':>12} {'NumPy':>8} {'PyTorch':>8} {'vs NumPy':>9} {'vs PyTorch':>10}   (GFLOP/s)"
    )
    for n in (256, 1024):
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        flops = 2 * n**3
        for threads in (1, 2):
            ours = program_runner(
                lambda n=n: [pc.ops.matmul(pc.data("a", [n, n]), pc.data("b", [n, n]))],
                {"a": a, "b": b},
                threads,
            )
            (got,) = ours()
            np.testing.assert_allclose(got, a @ b, rtol=1e-3, atol=1e-3)
            numpy_s = float("nan")
            if threadpoolctl is not None:
                with threadpoolctl.threadpool_limits(limits=threads, user_api="blas"):
                    numpy_s = steady(lambda a=a, b=b: a @ b, repeat, pause=0.3)
            ours_s = steady(ours, repeat, pause=0.3)
            torch_s = float("nan")
            if torch is not None:
                torch.set_num_threads(threads)
                ta, tb = torch.from_numpy(a), torch.from_numpy(b)
                torch_s = steady(lambda ta=ta, tb=tb: ta @ tb, repeat, pause=0.3)
            print(
                f"{n:>6} {threads:>7} {flops / ours_s / 1e9:12.1f} {flops / numpy_s / 1e9:8.1f} "
                f"{flops / torch_s / 1e9:8.1f} {numpy_s / ours_s:8.2f}x {torch_s / ours_s:9.2f}x"
            )


def oversubscription(repeat: int) -> None:
    rng = np.random.default_rng(1)
    n, big, rounds = 256, 1 << 22, 10
    feed = {
        "w": rng.standard_normal((n, n)).astype(np.float32) / n,
        "x": rng.standard_normal((n, n)).astype(np.float32),
        "v": rng.standard_normal(big).astype(np.float32),
    }

    def gemms():
        x, w = pc.data("x", [n, n]), pc.data("w", [n, n])
        for _ in range(rounds):
            x = pc.ops.matmul(x, w)
        pc.data("v", [big])
        return [x]

    def elementwise():
        v = pc.data("v", [big])
        for _ in range(rounds):
            v = pc.ops.scale(v, scale=0.5)
        pc.data("x", [n, n]), pc.data("w", [n, n])
        return [v]

    def alternating():
        x, w, v = pc.data("x", [n, n]), pc.data("w", [n, n]), pc.data("v", [big])
        for _ in range(rounds):
            x = pc.ops.matmul(x, w)
            v = pc.ops.scale(v, scale=0.5)
        return [x, v]

    runners = [program_runner(f, feed, 2) for f in (gemms, elementwise, alternating)]
    ratios = []
    for _ in range(5):  # several rounds: one ratio is noisy on a shared 2-core machine
        apart = steady(runners[0], repeat, pause=0.3) + steady(runners[1], repeat, pause=0.3)
        ratios.append(steady(runners[2], repeat, pause=0.3) / apart)
    print(
        f"\n{rounds} x (256^2 GEMM, 4M-element OpenMP scale) in one program, 2 threads: "
        f"median {statistics.median(ratios):.2f}x the time of running them apart "
        "(1.00: one thread pool; two pools were 15-35x)"
    )


MIXED = """
import statistics, time, numpy as np, paddle_core as pc
n = 256
a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
prog = pc.Program()
with pc.program_guard(prog):
    out = pc.ops.matmul(pc.data("a", [n, n]), pc.data("b", [n, n]))
exe = pc.Executor(num_threads=2)
feed = {"a": a, "b": a}
ours, theirs = [], []
for i in range(80):
    s = time.perf_counter(); exe.run(prog, feed=feed, fetch_list=[out]); ours.append(time.perf_counter() - s)
    s = time.perf_counter(); a @ a; theirs.append(time.perf_counter() - s)
f = lambda v: 2 * n**3 / statistics.median(v[20:]) / 1e9
print(f"{f(ours):.1f} {f(theirs):.1f}")
"""


def mixing_libraries() -> None:
    print("\n256^2 GEMMs, ours and NumPy's alternating in one loop, 2 threads each (GFLOP/s):")
    for knob in ("(defaults)", "OPENBLAS_THREAD_TIMEOUT=1", "OMP_WAIT_POLICY=passive"):
        env = dict(os.environ)
        if "=" in knob:
            key, value = knob.split("=")
            env[key] = value
        result = subprocess.run(  # from bench/, not the checkout: the installed package
            [sys.executable, "-c", MIXED],
            env=env,
            capture_output=True,
            text=True,
            cwd=os.path.dirname(os.path.abspath(__file__)),
        )
        ours, numpy_ = result.stdout.split()
        print(f"  {knob:28} ours {ours:>6}   NumPy {numpy_:>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    gemm_table(args.repeat)
    oversubscription(args.repeat)
    mixing_libraries()
    print("\ntarget: paddle-core >= 0.95x NumPy at each size and thread count")


if __name__ == "__main__":
    main()
