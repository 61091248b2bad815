"""MobileNetV2 training steps: ours with relu6, with relu, and PyTorch CPU eager's.

At one and two threads, measured in this run (rounds alternate between the systems): relu6
must cost within 5% of relu (it stays inside oneDNN's blocked layout as relu does, where clip standing in
for it made 193 conversions instead of 57).

The network is MobileNetV2 (bench/networks.py's, width 1.0, no dropout), on batches of 8
images of 3x64x64 (small, for a 2-core machine), softmax cross-entropy, SGD with momentum.
PyTorch runs the same network (with relu6) eagerly.

    python bench/bench_mobilenet.py [--rounds 7] [--threads 1 2] [--batch 8] [--size 64]
    (PyTorch: pip install torch==2.13.0)
"""

from __future__ import annotations

import argparse
import statistics

import networks
import numpy as np
import timing
from timing import optional

import paddle_core as pc


def ours(act: str, batch, threads: int):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", list(batch["image"].shape[1:]))
        label = pc.layers.data("label", [1], dtype="int64")
        logits = networks.mobilenet_v2(image, dropout=0.0, act=act)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        pc.optimizer.Momentum(0.01, momentum=0.9).minimize(loss)
    scope, exe = pc.Scope(), pc.Executor(num_threads=threads)
    exe.run(startup, scope=scope)
    return lambda: exe.run(main, feed=batch, scope=scope)


def torch_step(torch, batch, threads: int):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = networks.torch_models().MobileNetV2(dropout=0.0)  # relu6
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images, labels = torch.from_numpy(batch["image"]), torch.from_numpy(batch["label"][:, 0])

    def step():
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=64)
    args = parser.parse_args()
    timing.banner(__doc__)
    rng = np.random.default_rng(0)
    batch = {
        "image": rng.standard_normal((args.batch, 3, args.size, args.size)).astype(np.float32),
        "label": rng.integers(0, networks.CLASSES, (args.batch, 1)),
    }
    torch = optional("torch")
    print(
        f"{'threads':>7} {'relu6 ms':>9} {'relu ms':>8} {'relu6/relu':>11}"
        f" {'PyTorch relu6 ms':>17} {'ours / PyTorch':>15}"
    )
    for threads in args.threads:
        systems = {act: ours(act, batch, threads) for act in ("relu6", "relu")}
        if torch is not None:
            systems["torch"] = torch_step(torch, batch, threads)
        times: dict[str, list[float]] = {name: [] for name in systems}
        for step in systems.values():
            step()  # warm up: plans, allocations, oneDNN's primitives
        for _ in range(args.rounds):
            for name, step in systems.items():
                start = timing.clock()
                step()
                times[name].append(timing.clock() - start)
        ms = {name: statistics.median(t) * 1e3 for name, t in times.items()}
        torch_ms = ms.get("torch", float("nan"))
        print(
            f"{threads:7d} {ms['relu6']:9.1f} {ms['relu']:8.1f} {ms['relu6'] / ms['relu']:10.3f}x"
            f" {torch_ms:17.1f} {ms['relu6'] / torch_ms:14.2f}x"
        )
    print("\ntarget: relu6 / relu <= 1.05")


if __name__ == "__main__":
    main()
