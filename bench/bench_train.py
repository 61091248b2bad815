"""Training speed: one epoch of an MLP (64-128-10, relu, softmax cross-entropy, Adam, batches
of 32) on the 8x8 digits' 1437 training images, ours beside PyTorch CPU eager, at one and two
threads, measured in this run (rounds alternate between the systems).

Ours is one prepared plan per step run by the compiled loop: 2 matmuls, the bias adds, relu,
the fused softmax cross-entropy and mean, their gradients, and 4 in-place Adam updates.
PyTorch runs the same model eagerly (nn.Linear, F.cross_entropy, optim.Adam(foreach)).
Target: our epoch in at most 0.5x PyTorch's time.

    python bench/bench_train.py [--rounds 9]     (PyTorch: pip install torch==2.13.0)
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import paddle_core as pc

BATCH, HIDDEN, CLASSES = 32, 128, 10


def data():
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data[:1437] / 16.0).astype(np.float32)
    y = digits.target[:1437].astype(np.int64)
    return x, y


def ours(x, y, threads: int):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", [64])
        label = pc.layers.data("label", [1], dtype="int64")
        hidden = pc.layers.fc(image, HIDDEN, act="relu")
        logits = pc.layers.fc(hidden, CLASSES)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        pc.optimizer.Adam(0.001).minimize(loss)
    scope, exe = pc.Scope(), pc.Executor(num_threads=threads)
    exe.run(startup, scope=scope)
    batches = [
        {"image": x[i : i + BATCH], "label": y[i : i + BATCH, None]}
        for i in range(0, len(x) - BATCH + 1, BATCH)
    ]

    def epoch():
        for feed in batches:
            exe.run(main, feed=feed, scope=scope)

    return epoch


def torch_epoch(x, y, threads: int):
    import torch
    from torch import nn

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    batches = [
        (torch.from_numpy(x[i : i + BATCH]), torch.from_numpy(y[i : i + BATCH]))
        for i in range(0, len(x) - BATCH + 1, BATCH)
    ]

    def epoch():
        for images, labels in batches:
            optimizer.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()

    return epoch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    x, y = data()
    print(f"{'threads':>7} {'paddle-core ms':>15} {'PyTorch ms':>11} {'ours / PyTorch':>15}")
    for threads in (1, 2):
        systems = {"ours": ours(x, y, threads)}
        try:
            systems["torch"] = torch_epoch(x, y, threads)
        except ImportError:
            print("PyTorch: skipped (pip install torch==2.13.0)")
        times: dict[str, list[float]] = {name: [] for name in systems}
        for epoch in systems.values():
            epoch()  # warm up: plans, allocations, lazy initialisation
        for _ in range(args.rounds):
            for name, epoch in systems.items():
                start = time.perf_counter()
                epoch()
                times[name].append(time.perf_counter() - start)
        ours_ms = statistics.median(times["ours"]) * 1e3
        if "torch" in times:
            torch_ms = statistics.median(times["torch"]) * 1e3
            print(f"{threads:7d} {ours_ms:15.2f} {torch_ms:11.2f} {ours_ms / torch_ms:14.2f}x")
        else:
            print(f"{threads:7d} {ours_ms:15.2f}")
    print("\ntarget: ours / PyTorch <= 0.50 (one epoch: 44 steps of 32 images)")


if __name__ == "__main__":
    main()
