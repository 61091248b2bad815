"""Convolution speed, ours beside PyTorch CPU in this run, at one and two threads (rounds
alternate between the systems), forward and forward + gradients, float32, N=8, 56x56, for three
cases:
  conv   one conv2d, C=K=64, 3x3, padding 1 (gradients: input and filter)
  stack  four of those convs in a row, one filter: the conversions at the plan's edges spread
         over four convolutions, so the ratio is close to that of the convolutions themselves
  chain  conv 3x3 -> batch norm -> relu -> conv 3x3 -> batch norm -> relu -> max pool 2x2, 64
         channels throughout (batch norm with the batch's statistics, as in training;
         gradients: input, filters, scales and biases)

Ours takes and gives plain NCHW arrays at the edges, and the timing includes converting them.
oneDNN computes in its blocked layout; ours runs twice: with layout propagation (the default:
the blocked layout kept between the ops of the plan, converted at its edges) and without it
(every op converting its input and output), to show what propagation gives. PyTorch runs twice:
on NCHW tensors, and on channels_last ones prepared beforehand (its fastest CPU layout;
conversion not timed). Targets: ours at most 0.7x PyTorch NCHW's time and at most 1.05x its
channels_last time.

PyTorch's NCHW convolution allocates large temporaries at every call: in a fresh process glibc
serves them with fresh mmaps, page-faulted each time, and it takes nearly twice as long. Here
the inputs are made (and large arrays freed) first, which raises glibc's mmap threshold, so
PyTorch is measured at its best (as with MALLOC_MMAP_THRESHOLD_ set high).

    python bench/bench_conv.py [--rounds 15] [--case conv stack chain] [--threads 1 2]
                               [--cpu-time]   (PyTorch: pip install torch==2.13.0)

--cpu-time times with the process's CPU time instead of the wall clock, for a machine others
load (at one thread: at two it counts both threads' time).
"""

from __future__ import annotations

import argparse

import numpy as np
import timing
from timing import interleaved, optional

import paddle_core as pc

N, C, K, HW, KERNEL = 8, 64, 64, 56, 3
STACKED = 4  # convolutions in the stack case
CASES = ["conv", "stack", "chain"]


def inputs(case: str):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, HW, HW)).astype(np.float32)
    w = [(rng.standard_normal((K, C, KERNEL, KERNEL)) * 0.05).astype(np.float32) for _ in range(2)]
    out = HW // 2 if case == "chain" else HW
    g = rng.standard_normal((N, K, out, out)).astype(np.float32)
    return x, w, g


def ours_net(case: str, x):
    """The case's net on x, its weights (fed, for conv and stack; parameters, for chain)."""
    if case in ("conv", "stack"):
        w = pc.data("w0", [K, C, KERNEL, KERNEL])
        h = x
        for _ in range(STACKED if case == "stack" else 1):
            h = pc.ops.conv2d(h, w, paddings=[1, 1])
        return h, [w]
    h = x
    for _ in range(2):
        h = pc.layers.conv2d(h, K, KERNEL, padding=1, bias_attr=False)
        h = pc.layers.batch_norm(h, act="relu")
    out = pc.layers.pool2d(h, 2, pool_stride=2)
    return out, [p for p in pc.default_main_program().all_parameters() if p.trainable]


def ours(case: str, x, w, g, threads: int, backward: bool, propagate: bool):
    import paddle_ops_nn.onednn as onednn

    prog, startup = pc.Program(), pc.Program()
    with pc.program_guard(prog, startup):
        xv = pc.data("x", list(x.shape))
        out, weights = ours_net(case, xv)
        fetch = [out]
        if backward:
            gv = pc.data("g", list(g.shape))
            fetch += pc.gradients([out], [xv, *weights], target_gradients=[gv])
    feed = {"x": x, **({"w0": w[0]} if case != "chain" else {}), **({"g": g} if backward else {})}
    scope, exe = pc.Scope(), pc.Executor(num_threads=threads)
    exe.run(startup, scope=scope)
    previous = onednn.set_layout_propagation(propagate)
    try:
        plan = exe.prepare(prog, feed=feed, fetch_list=fetch)
    finally:
        onednn.set_layout_propagation(previous)
    return lambda: plan.run(feed, scope)


def torch_net(torch, case: str, w, channels_last: bool):
    """The case's net as a callable and its trainable tensors."""
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    F = torch.nn.functional
    tw = [torch.from_numpy(v).contiguous(memory_format=fmt) for v in w]
    if case in ("conv", "stack"):

        def convs(x):
            for _ in range(STACKED if case == "stack" else 1):
                x = F.conv2d(x, tw[0], padding=1)
            return x

        return convs, tw[:1]
    layers = []
    for k in range(2):
        conv = torch.nn.Conv2d(C, K, KERNEL, padding=1, bias=False)
        conv.weight.data = tw[k]
        layers += [conv, torch.nn.BatchNorm2d(K), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers, torch.nn.MaxPool2d(2)).to(memory_format=fmt)
    return net, list(net.parameters())


def torch_run(torch, case: str, x, w, g, threads: int, backward: bool, channels_last: bool):
    torch.set_num_threads(threads)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    net, weights = torch_net(torch, case, w, channels_last)
    tx = torch.from_numpy(x).contiguous(memory_format=fmt).requires_grad_(backward)
    tg = torch.from_numpy(g).contiguous(memory_format=fmt)
    for t in weights:
        t.requires_grad_(backward)

    def forward():
        with torch.no_grad():
            return net(tx)

    def both():
        tx.grad = None
        for t in weights:
            t.grad = None
        net(tx).backward(tg)

    return both if backward else forward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--case", nargs="+", choices=CASES, default=CASES)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--cpu-time", action="store_true", help="time with the CPU time")
    args = parser.parse_args()
    if args.cpu_time:
        timing.use_cpu_time()
    torch = optional("torch")
    print(
        f"{'case':>5} {'pass':>9} {'threads':>7} {'ours ms':>8} {'no propagation':>15}"
        f" {'PyTorch NCHW':>13} {'channels_last':>14} {'ours/NCHW':>10} {'ours/cl':>8}"
    )
    for case in args.case:
        x, w, g = inputs(case)
        for backward in (False, True):
            for threads in args.threads:
                calls = {
                    "ours": ours(case, x, w, g, threads, backward, propagate=True),
                    "off": ours(case, x, w, g, threads, backward, propagate=False),
                }
                if torch is not None:
                    for name, cl in (("nchw", False), ("cl", True)):
                        calls[name] = torch_run(torch, case, x, w, g, threads, backward, cl)
                times = interleaved(calls, args.rounds, warmup_seconds=1)
                ms = {k: v * 1e3 for k, v in times.items()}
                name = "fwd + bwd" if backward else "forward"
                row = f"{case:>5} {name:>9} {threads:7d} {ms['ours']:8.2f} {ms['off']:15.2f}"
                if "nchw" in ms:
                    row += f" {ms['nchw']:13.2f} {ms['cl']:14.2f} {ms['ours'] / ms['nchw']:9.2f}x"
                    row += f" {ms['ours'] / ms['cl']:7.2f}x"
                print(row)
    print("\ntargets: ours/NCHW <= 0.70, ours/channels_last <= 1.05")


if __name__ == "__main__":
    main()
