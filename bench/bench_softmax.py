"""Softmax and the softmax cross-entropy loss on float32 logits, ours beside PyTorch CPU.

Two shapes: a classifier's [256, 1000] and a language model's [32, 32000]; softmax and
log_softmax forward, the loss with hard labels (softmax_with_cross_entropy, PyTorch's
F.cross_entropy without reduction) forward, and the mean loss with its gradient with respect
to the logits (ours: one program, pc.gradients; PyTorch: torch.autograd.grad). Ours runs one
prepared program per case through pc.Executor. At one thread: ours num_threads=1 and
torch.set_num_threads(1); at two: both 2. Medians over --repeat rounds, each round timing
both systems once in turn; ratios above 1 mean ours is faster.

    python bench/bench_softmax.py [--repeat 25]

PyTorch is optional (`pip install torch==2.13.0`); without it only our figures print.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import banner, interleaved, optional, ours_beside

import paddle_core as pc

torch = optional("torch")
SHAPES = [(256, 1000), (32, 32000)]
CASES = ["softmax", "log_softmax", "loss", "loss fwd+bwd"]


def ours(case: str, x: np.ndarray, label: np.ndarray, threads: int):
    prog = pc.Program()
    with pc.program_guard(prog):
        xv = pc.data("x", list(x.shape))
        yv = pc.data("label", list(label.shape), "int64")
        if case in ("softmax", "log_softmax"):
            fetch = [getattr(pc.ops, case)(xv)]
        else:
            loss = pc.ops.softmax_with_cross_entropy(xv, yv)[1]
            fetch = [loss]
            if case == "loss fwd+bwd":
                mean = pc.ops.mean(loss)
                fetch = [mean, *pc.gradients([mean], [xv])]
    exe = pc.Executor(num_threads=threads)
    feed = {"x": x, "label": label}
    return lambda: exe.run(prog, feed=feed, fetch_list=fetch)


def theirs(case: str, x: np.ndarray, label: np.ndarray):
    F = torch.nn.functional
    t, y = torch.from_numpy(x), torch.from_numpy(label[:, 0])
    if case == "softmax":
        return lambda: F.softmax(t, -1)
    if case == "log_softmax":
        return lambda: F.log_softmax(t, -1)
    if case == "loss":
        return lambda: F.cross_entropy(t, y, reduction="none")
    leaf = t.clone().requires_grad_()
    return lambda: torch.autograd.grad(F.cross_entropy(leaf, y), leaf)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args()
    banner(__doc__)
    rng = np.random.default_rng(0)
    for threads in (1, 2):
        if torch is not None:
            torch.set_num_threads(threads)
        print(f"\n{threads} thread(s)")
        print(f"{'shape':12} {'case':14} {'ours ms':>9} {'PyTorch ms':>10} {'vs PyTorch':>10}")
        for shape in SHAPES:
            x = rng.standard_normal(shape, dtype=np.float32) * 3
            label = rng.integers(0, shape[1], (shape[0], 1))
            for case in CASES:
                calls = {"ours": ours(case, x, label, threads)}
                if torch is not None:
                    calls["torch"] = theirs(case, x, label)
                t = interleaved(calls, args.repeat, warmup_seconds=0.3)
                print(f"{list(shape)!s:12} {case:14}" + ours_beside(t))


if __name__ == "__main__":
    main()
