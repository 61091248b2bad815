"""float16 and bfloat16 kernels beside float32 (ours) and NumPy's float16, as time ratios.

The 16-bit floats compute in float32 and round each result once: elementwise kernels convert
a chunk at a time (F16C and AVX2 where the CPU has them), reductions and matmul run their
float32 code on widened copies. Each row times one op as a one-op program through
``pc.Executor`` (one thread, steady state, same feed) in float32, float16 and bfloat16, and
NumPy's float16 (which converts element by element), interleaved in one run: ratios compare
like with like on a loaded machine. ``--portable`` switches the vector conversions off
(PADDLE_OPS_MATH_DISABLE_AVX2=1, read once per process) to show what they bring.

    python bench/bench_dtypes.py [--n 4194304] [--matmul 512] [--repeat 7] [--portable]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

import numpy as np
from timing import interleaved

import paddle_core as pc
from paddle_core.testing import run_op


def program(op: str, arrays: list[np.ndarray], attrs: dict) -> Callable[[], object]:
    """A one-op program on these inputs, run on one thread."""
    prog = pc.Program()
    with pc.program_guard(prog):
        names = [f"x{k}" for k in range(len(arrays))]
        xs = [pc.data(n, list(a.shape), a.dtype.name) for n, a in zip(names, arrays)]
        out = getattr(pc.ops, op)(*xs, **attrs)
    exe, feed = pc.Executor(num_threads=1), dict(zip(names, arrays))
    return lambda: exe.run(prog, feed=feed, fetch_list=[out])


def cast(x: np.ndarray, dtype: str) -> np.ndarray:
    """x as ``dtype`` by our cast (bfloat16 arrays without importing ml_dtypes here)."""
    return run_op("cast", {"x": x}, {"dtype": dtype})["out"][0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1 << 22)
    parser.add_argument("--matmul", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--portable", action="store_true", help="no F16C / AVX2 conversions")
    args = parser.parse_args()
    if args.portable:
        os.environ["PADDLE_OPS_MATH_DISABLE_AVX2"] = "1"
    rng = np.random.default_rng(0)
    x, y = (rng.uniform(-2, 2, args.n).astype(np.float32) for _ in range(2))
    m = args.matmul
    a, b = (rng.uniform(-1, 1, (m, m)).astype(np.float32) for _ in range(2))
    # op: (inputs in float32, attrs, NumPy's float16 on float16 inputs)
    ops = {
        "add": ([x, y], {}, np.add),
        "exp": ([x], {}, np.exp),
        "sum": ([x], {}, np.sum),
        "cast": ([x], {}, None),  # float32 -> the dtype (the row's dtype is its output's)
        "matmul": ([a, b], {}, np.matmul),
    }
    print(f"n = {args.n}, matmul {m}x{m}, one thread, median of {args.repeat} interleaved runs")
    print(
        f"vector conversions: {'off (--portable)' if args.portable else 'where the CPU has them'}"
    )
    header = f"{'op':7} {'float32 ms':>10} {'float16':>8} {'bfloat16':>9} {'NumPy f16':>10}"
    print(header + f" {'x f32 (f16)':>12} {'x NumPy (f16)':>14}")
    for op, (inputs, attrs, reference) in ops.items():
        calls = {}
        for dtype in ("float32", "float16", "bfloat16"):
            if op == "cast":
                calls[dtype] = program("cast", inputs, {"dtype": dtype})
            else:
                calls[dtype] = program(op, [cast(v, dtype) for v in inputs], attrs)
        if reference is not None:
            halves = [v.astype(np.float16) for v in inputs]
            calls["numpy"] = lambda reference=reference, halves=halves: reference(*halves)
        else:
            calls["numpy"] = lambda v=inputs[0]: v.astype(np.float16)
        t = interleaved(calls, args.repeat, warmup_seconds=0.2)
        row = f"{op:7} {t['float32'] * 1e3:10.2f} {t['float16'] * 1e3:8.2f}"
        row += f" {t['bfloat16'] * 1e3:9.2f} {t['numpy'] * 1e3:10.2f}"
        row += f" {t['float16'] / t['float32']:12.2f} {t['numpy'] / t['float16']:14.2f}"
        print(row)
    print("\nx f32: our float16 time / our float32 time (the cost of 16 bits).")
    print("x NumPy: NumPy's float16 time / ours (above 1: we are faster).")


if __name__ == "__main__":
    main()
