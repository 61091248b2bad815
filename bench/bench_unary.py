"""Unary kernels on 16M float32 beside NumPy and PyTorch.

exp, tanh, sigmoid, log, sqrt, sin, cos, floor, ceil and round. Ours runs as a one-op program through ``pc.Executor`` in steady state: a first run prepares
the plan, then ``exe.run`` is timed with the same feed (the fetched output is a fresh array
each run, as NumPy's and PyTorch's are). NumPy: ``np.exp`` etc.; sigmoid as
``1 / (1 + np.exp(-x))`` and, when SciPy is installed, ``scipy.special.expit``. PyTorch:
``torch.exp`` etc. on the same buffer (``torch.from_numpy``), allocating like the others and,
for reference, with ``out=`` a preallocated tensor (its allocator does not ask for huge pages,
so a fresh 64 MB output costs it page faults that NumPy's does not); skipped with a note when
PyTorch is not installed. Every figure is the median of ``--repeat`` runs, all measured in
this run; GB/s counts bytes read plus written (8 per element). Rows: one thread (ours with
``Executor(num_threads=1)``, ``torch.set_num_threads(1)``), then two threads (NumPy has one).
"x NumPy" and "x torch" are speed ratios: their time over ours (above 1: we are faster).
Targets, one thread: exp, tanh, sigmoid at least 2x NumPy and 1.2x PyTorch; log, sin, cos at
least NumPy's speed. log, sqrt take x in [0.01, 10], the others x in [-10, 10].

    python bench/bench_unary.py [--n 16777216] [--repeat 7] [--threads 1 2]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from timing import interleaved, optional

import paddle_core as pc

torch = optional("torch")
special = optional("scipy.special")
expit = special.expit if special is not None else None

OPS = ["exp", "tanh", "sigmoid", "log", "sqrt", "sin", "cos", "floor", "ceil", "round"]


def ours(op: str, x: np.ndarray, threads: int) -> Callable[[], object]:
    prog = pc.Program()
    with pc.program_guard(prog):
        out = getattr(pc.ops, op)(pc.data("x", list(x.shape), "float32"))
    exe = pc.Executor(num_threads=threads)
    return lambda: exe.run(prog, feed={"x": x}, fetch_list=[out])


def numpy_fns(op: str, x: np.ndarray) -> dict[str, Callable[[], object]]:
    if op == "sigmoid":
        fns = {"numpy": lambda: 1 / (1 + np.exp(-x))}
        if expit is not None:
            fns["scipy expit"] = lambda: expit(x)
        return fns
    fn = getattr(np, op)
    return {"numpy": lambda: fn(x)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    inputs = {
        "any": rng.uniform(-10, 10, args.n).astype(np.float32),
        "positive": rng.uniform(0.01, 10, args.n).astype(np.float32),
    }
    gb = args.n * 8 / 1e9
    header = f"{'op':8} {'thr':>3} {'ours ms':>8} {'GB/s':>6}  {'reference':12} {'ms':>7}"
    header += f" {'GB/s':>6} {'x NumPy':>8} {'torch ms':>9} {'x torch':>8} {'torch out=':>10}"
    print(f"{args.n} float32 elements, median of {args.repeat} runs\n{header}")
    np.seterr(over="ignore")  # 1 / (1 + np.exp(-x)) overflows harmlessly for x < -88
    for threads in args.threads:
        if torch is not None:
            torch.set_num_threads(threads)
        for op in OPS:
            x = inputs["positive" if op in ("log", "sqrt") else "any"]
            fns = {"ours": ours(op, x, threads), **numpy_fns(op, x)}
            if torch is not None:
                tx, tfn = torch.from_numpy(x), getattr(torch, op)
                fns["torch"] = lambda tx=tx, tfn=tfn: tfn(tx)
                tout = torch.empty_like(tx)
                fns["torch out="] = lambda tx=tx, tfn=tfn, tout=tout: tfn(tx, out=tout)
            t = interleaved(fns, args.repeat, pause=0.02)
            refs = [name for name in fns if name not in ("ours", "torch", "torch out=")]
            for k, name in enumerate(refs):
                row = f"{op if k == 0 else '':8} {threads:3d} "
                row += f"{t['ours'] * 1e3:8.2f} {gb / t['ours']:6.1f}" if k == 0 else " " * 15
                row += f"  {name:12} {t[name] * 1e3:7.2f} {gb / t[name]:6.1f}"
                row += f" {t[name] / t['ours']:8.2f}"
                if "torch" in t and k == 0:
                    row += f" {t['torch'] * 1e3:9.2f} {t['torch'] / t['ours']:8.2f}"
                    row += f" {t['torch out='] * 1e3:10.2f}"
                print(row)
    print("\nx NumPy, x torch: their time / ours. NumPy is single-threaded in every row.")
    print("torch out=: PyTorch writing into a preallocated tensor (no fresh 64 MB output).")


if __name__ == "__main__":
    main()
