"""Activations on a float32 [256, 4096] tensor, ours beside PyTorch CPU.

relu, leaky_relu, silu, gelu (exact and tanh), elu and softplus: forward, and forward + gradient (of the
sum, with respect to x: ours one program with pc.gradients, PyTorch torch.autograd.grad). Ours
runs one prepared program per case through pc.Executor. At one thread: ours num_threads=1 and
torch.set_num_threads(1); at two: both 2. Medians over --repeat rounds, each round timing both
systems once in turn; ratios above 1 mean ours is faster.

    python bench/bench_activation.py [--repeat 15]

PyTorch is optional (`pip install torch==2.13.0`); without it only our figures print.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import banner, interleaved, optional, ours_beside

import paddle_core as pc

torch = optional("torch")
# (label, our op and attrs, PyTorch's function name in torch.nn.functional and its kwargs)
CASES = [
    ("relu", "relu", {}, "relu", {}),
    ("leaky_relu", "leaky_relu", {}, "leaky_relu", {"negative_slope": 0.02}),
    ("silu", "silu", {}, "silu", {}),
    ("gelu", "gelu", {}, "gelu", {}),
    ("gelu tanh", "gelu", {"approximate": True}, "gelu", {"approximate": "tanh"}),
    ("elu", "elu", {}, "elu", {}),
    ("softplus", "softplus", {}, "softplus", {}),
]


def ours(op: str, attrs: dict, x: np.ndarray, threads: int, grad: bool):
    prog = pc.Program()
    with pc.program_guard(prog):
        xv = pc.data("x", list(x.shape))
        xv.stop_gradient = False
        out = getattr(pc.ops, op)(xv, **attrs)
        fetch = pc.gradients([pc.ops.sum(out)], [xv]) if grad else [out]
    exe = pc.Executor(num_threads=threads)
    return lambda: exe.run(prog, feed={"x": x}, fetch_list=fetch)


def theirs(name: str, kwargs: dict, x: np.ndarray, grad: bool):
    fn, t = getattr(torch.nn.functional, name), torch.from_numpy(x)
    if not grad:
        return lambda: fn(t, **kwargs)
    leaf = t.clone().requires_grad_()
    return lambda: torch.autograd.grad(fn(leaf, **kwargs).sum(), leaf)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    banner(__doc__)
    x = np.random.default_rng(0).standard_normal((256, 4096), dtype=np.float32) * 3
    for threads in (1, 2):
        if torch is not None:
            torch.set_num_threads(threads)
        print(f"\n{threads} thread(s)")
        print(f"{'case':10} {'pass':8} {'ours ms':>9} {'PyTorch ms':>10} {'vs PyTorch':>10}")
        for label, op, attrs, name, kwargs in CASES:
            for grad in (False, True):
                calls = {"ours": ours(op, attrs, x, threads, grad)}
                if torch is not None:
                    calls["torch"] = theirs(name, kwargs, x, grad)
                t = interleaved(calls, args.repeat, warmup_seconds=0.2)
                print(f"{label:10} {'fwd+bwd' if grad else 'fwd':8}" + ours_beside(t))


if __name__ == "__main__":
    main()
