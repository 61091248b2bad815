"""A large elementwise op: 16M-element float32 add inside a program, steady state.

Ours (pc.Executor, one and two threads) beside NumPy's `a + b` (allocates its result) and
`np.add(a, b, out=c)` (writes into an existing buffer), and PyTorch (`a + b`, one and two
threads), measured in this run. Memory-bound: the figure that matters is GB/s moved (two
inputs read, one output written).
Targets: at least 1.3x NumPy's `a + b` and at least 0.95x `np.add(a, b, out=c)`.

    python bench/bench_add.py [--n 16777216] [--repeat 21]
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import optional, steady

import paddle_core as pc


def ours(a: np.ndarray, b: np.ndarray, threads: int):
    prog = pc.Program()
    with pc.program_guard(prog):
        out = pc.ops.add(pc.data("a", list(a.shape)), pc.data("b", list(b.shape)))
    exe = pc.Executor("cpu", num_threads=threads)
    feed = {"a": a, "b": b}
    (got,) = exe.run(prog, feed=feed, fetch_list=[out])
    np.testing.assert_array_equal(got, a + b)
    return lambda: exe.run(prog, feed=feed, fetch_list=[out])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a = rng.standard_normal(args.n).astype(np.float32)
    b = rng.standard_normal(args.n).astype(np.float32)
    c = np.empty_like(a)
    gigabytes = 3 * a.nbytes / 1e9
    systems = {
        "paddle-core, 1 thread": ours(a, b, 1),
        "paddle-core, 2 threads": ours(a, b, 2),
        "NumPy a + b": lambda: a + b,
        "NumPy np.add(out=)": lambda: np.add(a, b, out=c),
    }
    torch = optional("torch")
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)

        def torch_add(threads: int):
            def run():
                torch.set_num_threads(threads)
                return ta + tb

            return run

        systems["PyTorch a + b, 1 thread"] = torch_add(1)
        systems["PyTorch a + b, 2 threads"] = torch_add(2)
    results = {name: steady(fn, args.repeat) for name, fn in systems.items()}
    numpy_alloc, numpy_out = results["NumPy a + b"], results["NumPy np.add(out=)"]
    print(
        f"{'system':26} {'ms':>7} {'GB/s':>6} {'vs a + b':>9} {'vs out=':>8}   ({args.n:,} float32)"
    )
    for name, seconds in results.items():
        print(
            f"{name:26} {seconds * 1e3:7.2f} {gigabytes / seconds:6.1f} "
            f"{numpy_alloc / seconds:8.2f}x {numpy_out / seconds:7.2f}x"
        )
    print("\ntargets: paddle-core >= 1.30x NumPy a + b and >= 0.95x np.add(out=)")


if __name__ == "__main__":
    main()
