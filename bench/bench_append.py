"""Program building: time to append validated ops through the generated API (µs per op).

Each append validates attrs (pydantic), checks inputs, runs the shape rule and creates the
output variable. Three programs of 10,000 ops: a chain of `scale` (three attrs), a chain of
broadcasting `add` (no attrs, two inputs), and `matmul` (two bool attrs, a Python shape rule).
Target: under 15 µs per appended op. For scale: PaddlePaddle 3.3's static graph takes 160-700 µs
per appended op on this class of machine (see the project's ANCHORS notes).

Each build starts after a full garbage collection (untimed): a program's ops, variables and
blocks refer to each other, so a dropped program is freed by Python's cycle collector, which
otherwise ran, and was timed, inside the next build (3-10 µs an op of that one).

    python bench/bench_append.py [--ops 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import paddle_core as pc


def build(kind: str, n: int) -> float:
    """Seconds to append ``n`` ops of ``kind`` to a fresh program."""
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 16], dtype="float32")
        w = pc.data("w", shape=[16, 16], dtype="float32")
        start = time.perf_counter()
        if kind == "scale":
            for _ in range(n):
                x = pc.ops.scale(x, scale=2.0, bias=1.0)
        elif kind == "add":
            for _ in range(n):
                x = pc.ops.add(x, w)
        else:
            for _ in range(n):
                x = pc.ops.matmul(x, w, transpose_y=True)
        elapsed = time.perf_counter() - start
    assert len(prog.global_block().ops) == n
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'op appended':12} {'µs/op median':>13} {'µs/op best':>11}   ({args.ops} ops x {args.repeat})"
    )
    for kind in ("scale", "add", "matmul"):
        build(kind, 100)  # first use builds the op's validator and loads its rules
        runs = []
        for _ in range(args.repeat):
            gc.collect()  # the last program's teardown, outside the timing
            runs.append(build(kind, args.ops) / args.ops * 1e6)
        print(f"{kind:12} {statistics.median(runs):13.2f} {min(runs):11.2f}")
    print("\ntarget: < 15 µs per appended op")


if __name__ == "__main__":
    main()
