"""Convolution speed: conv2d forward, and forward + both gradients (input and filter), on
N=8, C=K=64, 56x56, 3x3, padding 1, float32, ours beside PyTorch CPU in this run, at one and
two threads (rounds alternate between the systems).

Ours takes and gives plain NCHW arrays; its kernel (oneDNN, layouts of oneDNN's choosing)
converts at the edges, and the timing includes that. PyTorch runs twice: on NCHW tensors, and
on channels_last ones prepared beforehand (its fastest CPU layout; conversion not timed).
Targets: ours at most 0.7x PyTorch NCHW's time and at most 1.05x its channels_last time.

    python bench/bench_conv.py [--rounds 15]     (PyTorch: pip install torch==2.13.0)
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import interleaved, optional

import paddle_core as pc

N, C, K, HW, KERNEL = 8, 64, 64, 56, 3


def inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, HW, HW)).astype(np.float32)
    w = (rng.standard_normal((K, C, KERNEL, KERNEL)) * 0.05).astype(np.float32)
    g = rng.standard_normal((N, K, HW, HW)).astype(np.float32)
    return x, w, g


def ours(x, w, g, threads: int, backward: bool):
    prog = pc.Program()
    with pc.program_guard(prog):
        xv, wv = pc.data("x", list(x.shape)), pc.data("w", list(w.shape))
        out = pc.ops.conv2d(xv, wv, paddings=[1, 1])
        fetch = [out]
        if backward:
            gv = pc.data("g", list(g.shape))
            fetch += pc.gradients([out], [xv, wv], target_gradients=[gv])
    feed = {"x": x, "w": w, "g": g} if backward else {"x": x, "w": w}
    plan = pc.Executor(num_threads=threads).prepare(prog, feed=feed, fetch_list=fetch)
    scope = pc.Scope()
    return lambda: plan.run(feed, scope)


def torch_conv(torch, x, w, g, threads: int, backward: bool, channels_last: bool):
    torch.set_num_threads(threads)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    tx = torch.from_numpy(x).contiguous(memory_format=fmt).requires_grad_(backward)
    tw = torch.from_numpy(w).contiguous(memory_format=fmt).requires_grad_(backward)
    tg = torch.from_numpy(g).contiguous(memory_format=fmt)
    F = torch.nn.functional

    def forward():
        with torch.no_grad():
            return F.conv2d(tx, tw, padding=1)

    def both():
        tx.grad = tw.grad = None
        F.conv2d(tx, tw, padding=1).backward(tg)

    return both if backward else forward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    x, w, g = inputs()
    torch = optional("torch")
    print(
        f"{'pass':>16} {'threads':>7} {'ours ms':>8} {'PyTorch NCHW':>13} {'channels_last':>14}"
        f" {'ours/NCHW':>10} {'ours/cl':>8}"
    )
    for backward in (False, True):
        for threads in (1, 2):
            calls = {"ours": ours(x, w, g, threads, backward)}
            if torch is not None:
                calls["nchw"] = torch_conv(torch, x, w, g, threads, backward, channels_last=False)
                calls["cl"] = torch_conv(torch, x, w, g, threads, backward, channels_last=True)
            ms = {k: v * 1e3 for k, v in interleaved(calls, args.rounds, warmup_seconds=1).items()}
            name = "fwd + bwd" if backward else "forward"
            row = f"{name:>16} {threads:7d} {ms['ours']:8.2f}"
            if "nchw" in ms:
                row += f" {ms['nchw']:13.2f} {ms['cl']:14.2f} {ms['ours'] / ms['nchw']:9.2f}x"
                row += f" {ms['ours'] / ms['cl']:7.2f}x"
            print(row)
    print("\ntargets: ours/NCHW <= 0.70, ours/channels_last <= 1.05")


if __name__ == "__main__":
    main()
