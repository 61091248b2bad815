"""Loops over few, large rows: how ours splits them across threads, beside PyTorch.

A kernel's loop over rows (softmax's lanes, a row reduction's outputs, pooling's planes, an
embedding's looked-up rows) has few items when each is large: 32 to 48 rows of 16K to 64K
elements here. Each case is timed at one thread and at two (ours with pc.Executor(num_threads),
PyTorch with torch.set_num_threads, in the same run), and prints ours at two threads over ours
at one (the speedup) and PyTorch's time over ours at two threads (above 1: ours is faster). The
last case is a loop over interleaved columns (cumsum down 60 columns), whose split must stay
aligned to cache lines: it checks that splitting rows finely did not cost columns anything.
Figures are medians over --repeat rounds, each round timing every system once in turn.

    python bench/bench_rows.py [--repeat 25]

PyTorch is optional (`pip install torch==2.13.0`); without it its columns are skipped.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from timing import banner, interleaved, optional

import paddle_core as pc

torch = optional("torch")


def program(build: Callable, feeds: dict[str, np.ndarray]):
    """A one-op program over the feeds, and its output."""
    prog = pc.Program()
    with pc.program_guard(prog):
        args = [pc.data(name, list(x.shape), dtype=str(x.dtype)) for name, x in feeds.items()]
        out = build(*args)
    return prog, out


def ours(build: Callable, feeds: dict[str, np.ndarray], threads: int):
    prog, out = program(build, feeds)
    exe = pc.Executor(num_threads=threads)
    return lambda: exe.run(prog, feed=feeds, fetch_list=[out])[0]


def cases(rng: np.random.Generator):
    """(label, feeds, ours' op, PyTorch's function of the same tensors)."""
    F = torch.nn.functional if torch is not None else None
    x48 = rng.standard_normal((48, 16384), dtype=np.float32)
    x32 = rng.standard_normal((32, 65536), dtype=np.float32)
    ln = rng.standard_normal((32, 32768), dtype=np.float32)
    img = rng.standard_normal((1, 32, 256, 256))  # float64: the plugin's own loops, not oneDNN
    ids = rng.integers(0, 64, 48)
    table = rng.standard_normal((64, 16384), dtype=np.float32)
    cols = rng.standard_normal((65536, 60), dtype=np.float32)
    return [
        ("softmax [48, 16384]", {"x": x48}, pc.ops.softmax, lambda x: torch.softmax(x, -1)),
        ("sum [32, 65536] axis 1", {"x": x32}, lambda x: pc.ops.sum(x, axes=[1]),
         lambda x: torch.sum(x, 1)),
        ("layer_norm [32, 32768]", {"x": ln}, lambda x: pc.ops.layer_norm(x)[0],
         lambda x: F.layer_norm(x, (32768,))),
        ("max pool float64 [1,32,256,256]", {"x": img},
         lambda x: pc.ops.pool2d(x, ksize=[2, 2], strides=[2, 2]),
         lambda x: F.max_pool2d(x, 2)),
        ("embedding 48 rows of 16384", {"ids": ids, "w": table}, pc.ops.embedding,
         lambda i, w: F.embedding(i, w)),
        ("cumsum [65536, 60] axis 0", {"x": cols}, lambda x: pc.ops.cumsum(x, axis=0),
         lambda x: torch.cumsum(x, 0)),
    ]  # fmt: skip


def timed(label, feeds, op, theirs, threads: int, repeat: int) -> dict[str, float]:
    calls = {"ours": ours(op, feeds, threads)}
    if torch is not None:
        torch.set_num_threads(threads)
        tensors = [torch.from_numpy(x) for x in feeds.values()]
        calls["torch"] = lambda: theirs(*tensors)
    return interleaved(calls, repeat, warmup_seconds=0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args()
    banner(__doc__)
    print(
        f"\n{'case':32} {'ours 1t ms':>10} {'ours 2t ms':>10} {'speedup':>8}"
        f" {'PyTorch 2t ms':>13} {'vs PyTorch 2t':>13}"
    )
    for label, feeds, op, theirs in cases(np.random.default_rng(0)):
        one = timed(label, feeds, op, theirs, 1, args.repeat)
        two = timed(label, feeds, op, theirs, 2, args.repeat)
        line = f"{label:32} {one['ours'] * 1e3:10.3f} {two['ours'] * 1e3:10.3f}"
        line += f" {one['ours'] / two['ours']:7.2f}x"
        if "torch" in two:
            line += f" {two['torch'] * 1e3:13.3f} {two['torch'] / two['ours']:12.2f}x"
        print(line)


if __name__ == "__main__":
    main()
