"""Reductions: GB/s of sum, mean and max over large float32 tensors, ours beside NumPy and PyTorch.

Cases: sum / mean / max over all 16M elements of a vector, and sum over axis 0 and axis 1 of a
[4096, 4096] matrix (64 MB each: memory-bound). Ours runs inside a program (pc.Executor steady
state: prepared on the first run, then timed on repeated runs with the same feed); PyTorch
(torch.sum etc. on a tensor sharing the NumPy buffer) and NumPy are measured in the same run.
One thread: ours with pc.Executor(num_threads=1), torch.set_num_threads(1). Two threads: ours
with num_threads=2 beside PyTorch's default thread count. NumPy's reductions are single-threaded.
Figures are medians over --repeat rounds, each round timing every system once in turn;
ratios above 1 mean ours is faster. Also prints the
error of each float32 sum of all 16M elements against a float64 sum, in float32 ulps.
Targets: sum over 16M float32 at least 1.0x PyTorch, well ahead of NumPy.

    python bench/bench_reduce.py [--repeat 15]

PyTorch is optional (`pip install torch==2.13.0`); without it its columns are skipped.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import banner, interleaved, optional

import paddle_core as pc

torch = optional("torch")
DEFAULT_TORCH_THREADS = torch.get_num_threads() if torch is not None else 1

N = 1 << 24
# (label, shape, op, axes); the same reduction runs as np.<op> and torch.<op> (amax for max).
CASES = [
    ("sum [16M]", (N,), "sum", []),
    ("sum [4096,4096] axis 0", (4096, 4096), "sum", [0]),
    ("sum [4096,4096] axis 1", (4096, 4096), "sum", [1]),
    ("mean [16M]", (N,), "mean", []),
    ("max [16M]", (N,), "max", []),
]


def numpy_call(op: str, axes: list[int], x: np.ndarray):
    fn, axis = getattr(np, op), tuple(axes) or None
    return lambda: fn(x, axis=axis)


def torch_call(op: str, axes: list[int], x: np.ndarray):
    fn, t = getattr(torch, "amax" if op == "max" else op), torch.from_numpy(x)
    return (lambda: fn(t, dim=axes)) if axes else (lambda: fn(t))


def ours(op: str, axes: list[int], x: np.ndarray, threads: int):
    """A call running a one-op program on x through a prepared executor."""
    prog = pc.Program()
    with pc.program_guard(prog):
        out = getattr(pc.ops, op)(pc.data("x", list(x.shape)), axes=axes)
    exe = pc.Executor(num_threads=threads)
    return lambda: exe.run(prog, feed={"x": x}, fetch_list=[out])[0]


def table(threads: int, data: dict, repeat: int) -> None:
    torch_threads = threads
    if torch is not None:
        torch_threads = DEFAULT_TORCH_THREADS if threads > 1 else 1
        torch.set_num_threads(torch_threads)
    note = f", PyTorch {torch_threads}" if torch is not None else ", PyTorch not installed"
    print(f"\n{threads} thread(s) (ours {threads}{note}; NumPy 1)")
    head = f"{'case':26} {'ours GB/s':>9} {'NumPy':>7} {'PyTorch':>7}   {'vs NumPy':>8} {'vs PyTorch':>10}"
    print(head)
    for label, shape, op, axes in CASES:
        x = data[shape]
        gb = x.nbytes / 1e9
        calls = {"ours": ours(op, axes, x, threads), "numpy": numpy_call(op, axes, x)}
        if torch is not None:
            calls["torch"] = torch_call(op, axes, x)
        t = interleaved(calls, repeat, warmup_seconds=1.0)
        mine, np_s, theirs = t["ours"], t["numpy"], t.get("torch")
        torch_col = f"{gb / theirs:7.1f}" if theirs else f"{'-':>7}"
        ratio = f"{theirs / mine:9.2f}x" if theirs else f"{'-':>10}"
        print(
            f"{label:26} {gb / mine:9.1f} {gb / np_s:7.1f} {torch_col}   "
            f"{np_s / mine:7.2f}x {ratio}"
        )


def accuracy(x: np.ndarray) -> None:
    exact = float(np.sum(x.astype(np.float64)))
    ulp = float(np.spacing(np.float32(abs(exact))))
    mine = float(ours("sum", [], x, 2)())
    line = f"ours {abs(mine - exact) / ulp:.2f}, NumPy {abs(float(np.sum(x)) - exact) / ulp:.2f}"
    if torch is not None:
        line += f", PyTorch {abs(float(torch.sum(torch.from_numpy(x))) - exact) / ulp:.2f}"
    print(f"\nfloat32 sum of 16M uniform [0, 1) values, error vs float64 in ulps: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    data = {shape: rng.random(shape, dtype=np.float32) for shape in {c[1] for c in CASES}}
    banner(__doc__)
    for threads in (1, 2):
        table(threads, data, args.repeat)
    accuracy(data[(N,)])
    print("\ntarget: sum over 16M float32 >= 1.0x PyTorch, well ahead of NumPy")


if __name__ == "__main__":
    main()
