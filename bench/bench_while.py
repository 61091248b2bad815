"""A 100-step while loop of small ops beside the same 100 steps unrolled, in this run (rounds
alternate between the two).

Each step is ``s = s * 0.5 + x`` and ``i = i + 1`` on 16 floats (three small ops and the loop
test); the loop is one ``while_block`` op whose body, native kernels only, runs as a loop of the
compiled runtime (``run_while``, run/control.py); the unrolled program is one compiled plan of
300 ops. Both are checked equal first.
Target: the loop at most 2x the unrolled program.

    python bench/bench_while.py [--steps 100] [--repeat 300] [--threads 1]
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import interleaved

import paddle_core as pc
from paddle_core import ops


def looped(steps: int):
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [16], "float32")
        n = ops.fill_constant(shape=[1], dtype="int64", value=steps)
        i = ops.fill_constant(shape=[1], dtype="int64", value=0)
        s = ops.fill_constant(shape=[16], dtype="float32", value=0.0)
        one = ops.fill_constant(shape=[1], dtype="int64", value=1)
        _, out = pc.layers.while_loop(
            lambda i, s: ops.less(i, n),
            lambda i, s: (ops.add(i, one), ops.add(ops.scale(s, scale=0.5), x)),
            [i, s],
        )
    return main, out


def unrolled(steps: int):
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [16], "float32")
        i = ops.fill_constant(shape=[1], dtype="int64", value=0)
        s = ops.fill_constant(shape=[16], dtype="float32", value=0.0)
        one = ops.fill_constant(shape=[1], dtype="int64", value=1)
        for _ in range(steps):
            i = ops.add(i, one)
            s = ops.add(ops.scale(s, scale=0.5), x)
    return main, s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    exe = pc.Executor(num_threads=args.threads)
    feed = {"x": np.linspace(-1, 1, 16, dtype=np.float32)}
    loop, loop_out = looped(args.steps)
    flat, flat_out = unrolled(args.steps)
    np.testing.assert_allclose(
        exe.run(loop, feed=feed, fetch_list=[loop_out])[0],
        exe.run(flat, feed=feed, fetch_list=[flat_out])[0],
        rtol=1e-6,
    )
    calls = {
        "while": lambda: exe.run(loop, feed=feed, fetch_list=[loop_out]),
        "unrolled": lambda: exe.run(flat, feed=feed, fetch_list=[flat_out]),
    }
    times = interleaved(calls, args.repeat, warmup_seconds=0.2)
    a, b = times["while"] * 1e6, times["unrolled"] * 1e6
    print(f"{args.steps} steps: while {a:.1f} µs, unrolled {b:.1f} µs, ratio {a / b:.2f}x")
    print(f"  per step: while {a / args.steps:.2f} µs, unrolled {b / args.steps:.2f} µs")
    print(f"  (median of {args.repeat}, {args.threads} thread(s); target: at most 2x)")


if __name__ == "__main__":
    main()
