"""Where a second thread starts to pay: chained adds of n float32 elements at one and two
threads, per op, ours beside PyTorch eager, measured in this run.

Our elementwise kernels split a loop across threads only from 32K elements a thread
(paddle_core/parallel.hpp, kGrain): below that an op runs on the calling thread and pays no
OpenMP fork and join, so a step of tiny ops (an LSTM cell's gates, [16, 1024]) costs what it
costs on one thread. The 2-thread / 1-thread column shows where splitting starts to pay; a
ratio near 1 below the threshold means tiny ops lose nothing to the second thread.

    python bench/bench_grain.py [--ops 200] [--repeat 15]
"""

from __future__ import annotations

import argparse

import numpy as np
import timing
from timing import optional, steady

import paddle_core as pc

SIZES = [4096, 16384, 32768, 65536, 131072, 262144, 1048576]


def ours(n: int, ops: int, threads: int):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = y = pc.data("x", [n], "float32")
        for _ in range(ops):
            y = pc.ops.add(y, x)
    exe = pc.Executor("cpu", num_threads=threads)
    feed = {"x": np.ones(n, np.float32)}
    return lambda: exe.run(prog, feed=feed, fetch_list=[y])


def torch_chain(torch, n: int, ops: int, threads: int):
    def run():
        torch.set_num_threads(threads)
        x = torch.ones(n)
        y = x
        for _ in range(ops):
            y = y + x
        return y

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    timing.banner(__doc__)
    torch = optional("torch")
    print(f"{'elements':>9} {'ours µs/op 1t':>14} {'2t':>8} {'2t/1t':>6}   PyTorch 1t    2t  2t/1t")
    for n in SIZES:
        us = {}
        for threads in (1, 2):
            us[threads] = steady(ours(n, args.ops, threads), args.repeat) / args.ops * 1e6
        line = f"{n:9d} {us[1]:14.2f} {us[2]:8.2f} {us[2] / us[1]:6.2f}"
        if torch is not None:
            t = {th: steady(torch_chain(torch, n, args.ops, th), args.repeat) for th in (1, 2)}
            t = {th: v / args.ops * 1e6 for th, v in t.items()}
            line += f"   {t[1]:10.2f} {t[2]:5.2f} {t[2] / t[1]:6.2f}"
        print(line)


if __name__ == "__main__":
    main()
