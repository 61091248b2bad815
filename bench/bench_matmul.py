"""Matrix products: float32 matmul (256^2 and 1024^2), and thread-pool behaviour.

1. GEMM speed: ours (pc.Executor steady state; OpenBLAS from scipy-openblas32 running on our
   OpenMP threads) beside NumPy (its own OpenBLAS, threads set with threadpoolctl) and PyTorch,
   at one and two threads, measured in this run. Target: at least 0.95x NumPy.
2. Oversubscription: a program alternating 256^2 GEMMs with OpenMP elementwise ops, against
   the same GEMMs and elementwise ops run as separate programs. Two thread pools in one
   process (OpenBLAS's own and OpenMP's) made alternating 256^2 GEMMs 15-35x slower in our
   trials; with one pool the ratio stays near 1.
3. Mixing libraries: our GEMMs (256^2, 1024^2) alternating with NumPy's in one loop, and a
   parallel elementwise op run right after NumPy's GEMM against the same op alone, in fresh
   processes: by default (NumPy's OpenBLAS runs its jobs on our pool), with
   PADDLE_OPS_MATH_SHARE_BLAS=0 (its own pool, as before) and with OPENBLAS_THREAD_TIMEOUT=1.
   Targets: our 1024^2 GEMM at least 0.9x NumPy's; the elementwise op 1.0x (within noise).

    python bench/bench_matmul.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import json
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
import json, statistics, time, numpy as np, paddle_core as pc

def runner(build, feed):
    prog = pc.Program()
    with pc.program_guard(prog):
        fetch = build()
    exe = pc.Executor(num_threads=2)
    run = lambda: exe.run(prog, feed=feed, fetch_list=fetch)
    run()
    return run

def timed(f):
    start = time.perf_counter()
    f()
    return time.perf_counter() - start

steady = lambda times: statistics.median(times[len(times) // 4:])
rng = np.random.default_rng(0)
result = {}
for n in (256, 1024):  # ours and NumPy's GEMM, one after the other
    a = rng.standard_normal((n, n)).astype(np.float32)
    ours = runner(lambda: [pc.ops.matmul(pc.data("a", [n, n]), pc.data("b", [n, n]))],
                  {"a": a, "b": a})
    rounds = 200 if n == 256 else 30
    times = [(timed(ours), timed(lambda: a @ a)) for _ in range(rounds)]
    result[f"gemm{n}"] = steady([t[1] for t in times]) / steady([t[0] for t in times])
v = rng.standard_normal(1 << 22).astype(np.float32)  # a 4M-element scale: alone, then after
scale = runner(lambda: [pc.ops.scale(pc.data("v", [1 << 22]), scale=0.5)], {"v": v})
pairs = []  # interleaved, so that both see the same machine: alone (after itself), after GEMM
for _ in range(150):
    alone = timed(scale)
    a @ a  # NumPy's 1024^2 GEMM
    pairs.append((alone, timed(scale)))
result["elementwise"] = steady([p[1] for p in pairs]) / steady([p[0] for p in pairs])
print(json.dumps(result))
"""

SETTINGS = ("(defaults)", "PADDLE_OPS_MATH_SHARE_BLAS=0", "OPENBLAS_THREAD_TIMEOUT=1")


def mixing_libraries() -> None:
    """Program runs and NumPy's BLAS alternating in one process, in a fresh process per
    setting: our GEMM as a fraction of NumPy's speed (target >= 0.9 at 1024^2), and a
    parallel elementwise op run right after NumPy's GEMM against the same op run alone
    (target: 1.0 within noise)."""
    print("\nOurs and NumPy's work alternating in one process, 2 threads each:")
    print(f"  {'setting':32} {'GEMM 256^2':>10} {'GEMM 1024^2':>11} {'elementwise':>11}")
    print(f"  {'':32} {'ours/NumPy speed':>22} {'after/alone':>11}")
    for knob in SETTINGS:
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
            check=True,
        )
        r = json.loads(result.stdout)
        print(f"  {knob:32} {r['gemm256']:9.2f}x {r['gemm1024']:10.2f}x {r['elementwise']:10.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    gemm_table(args.repeat)
    oversubscription(args.repeat)
    mixing_libraries()
    print("\ntarget: paddle-core >= 0.95x NumPy at each size and thread count (table 1)")


if __name__ == "__main__":
    main()
