"""A survey: ops of both plugins on a float32 [256, 4096] tensor, ours beside PyTorch CPU.

One row per op (forward only): the elementwise ops other benchmarks leave out, reductions,
transpose, sort, clip, layer_norm, dropout, cumsum, where, pad, argmax, topk and a random
initialiser, so that an op far behind shows. Ours runs a prepared one-op program through
pc.Executor (num_threads 1, then 2), PyTorch the same op on the same buffer
(torch.set_num_threads alike). x is standard normal times 3; log and sqrt take |x| +
0.5, mod and pow a second tensor around 2. Medians over --repeat rounds, each round timing
both in turn; ratios above 1 mean ours is faster.

    python bench/bench_ops.py [--repeat 9] [--threads 1 2] [--ops clip transpose ...]

PyTorch is optional (`pip install torch==2.13.0`); without it only our figures print.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import banner, interleaved, optional, ours_beside

import paddle_core as pc

torch = optional("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((256, 4096)).astype(np.float32) * 3
Y = RNG.standard_normal((256, 4096)).astype(np.float32) * 0.5 + 2.0
POSITIVE = np.abs(X) + 0.5

# (op, its inputs, its attrs, PyTorch's call on the same inputs as tensors)
CASES = [
    ("abs", [X], {}, lambda x: torch.abs(x)),
    ("neg", [X], {}, lambda x: torch.neg(x)),
    ("square", [X], {}, lambda x: torch.square(x)),
    ("sqrt", [POSITIVE], {}, lambda x: torch.sqrt(x)),
    ("sign", [X], {}, lambda x: torch.sign(x)),
    ("floor", [X], {}, lambda x: torch.floor(x)),
    ("ceil", [X], {}, lambda x: torch.ceil(x)),
    ("round", [X], {}, lambda x: torch.round(x)),
    ("erf", [X], {}, lambda x: torch.erf(x)),
    ("clip", [X], {"min": -1.0, "max": 1.0}, lambda x: torch.clamp(x, -1.0, 1.0)),
    ("mod", [X, Y], {}, lambda x, y: torch.remainder(x, y)),
    ("pow", [POSITIVE, Y], {}, lambda x, y: torch.pow(x, y)),
    ("maximum", [X, Y], {}, lambda x, y: torch.maximum(x, y)),
    ("sum", [X], {}, lambda x: torch.sum(x)),
    ("mean", [X], {}, lambda x: torch.mean(x)),
    ("max", [X], {}, lambda x: torch.max(x)),
    ("min", [X], {}, lambda x: torch.min(x)),
    ("transpose", [X], {"perm": [1, 0]}, lambda x: x.t().contiguous()),
    ("sort", [X], {}, lambda x: torch.sort(x)),
    ("layer_norm", [X], {}, lambda x: torch.nn.functional.layer_norm(x, (4096,))),
    ("dropout", [X], {"dropout_prob": 0.5}, lambda x: torch.nn.functional.dropout(x, 0.5)),
    ("cumsum", [X], {"axis": 1}, lambda x: torch.cumsum(x, 1)),
    ("where", [X > 0, X, Y], {}, lambda c, x, y: torch.where(c, x, y)),
    ("pad", [X], {"paddings": [0, 0, 2, 2]}, lambda x: torch.nn.functional.pad(x, (2, 2))),
    ("argmax", [X], {"axis": 1}, lambda x: torch.argmax(x, 1)),
    ("topk", [X], {"k": 10, "axis": 1}, lambda x: torch.topk(x, 10, 1)),
    ("gaussian_random", [], {"shape": [256, 4096]}, lambda: torch.randn(256, 4096)),
]


def ours(op: str, inputs: list[np.ndarray], attrs: dict, threads: int):
    prog = pc.Program()
    with pc.program_guard(prog):
        slots = [pc.data(f"x{k}", list(a.shape), a.dtype) for k, a in enumerate(inputs)]
        out = getattr(pc.ops, op)(*slots, **attrs)
        if isinstance(out, (tuple, list)):  # layer_norm: y, mean, variance
            out = out[0]
    exe = pc.Executor(num_threads=threads)
    feed = {f"x{k}": a for k, a in enumerate(inputs)}
    return lambda: exe.run(prog, feed=feed, fetch_list=[out])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--ops", nargs="+", help="only these (default: every case)")
    args = parser.parse_args()
    banner(__doc__)
    cases = [c for c in CASES if not args.ops or c[0] in args.ops]
    for threads in args.threads:
        if torch is not None:
            torch.set_num_threads(threads)
        print(f"\n{threads} thread(s)")
        print(f"{'op':16} {'ours ms':>9} {'PyTorch ms':>10} {'vs PyTorch':>10}")
        for op, inputs, attrs, theirs in cases:
            calls = {"ours": ours(op, inputs, attrs, threads)}
            if torch is not None:
                tensors = [torch.from_numpy(a) for a in inputs]
                calls["torch"] = lambda theirs=theirs, tensors=tensors: theirs(*tensors)
            t = interleaved(calls, args.repeat, warmup_seconds=0.1)
            print(f"{op:16}" + ours_beside(t))


if __name__ == "__main__":
    main()
