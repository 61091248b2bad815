"""Training speed: one epoch (softmax cross-entropy, Adam, batches of 32) on the 8x8 digits'
1437 training images, ours beside PyTorch CPU eager, at one and two threads, measured in this
run (rounds alternate between the systems). Two models, as examples/train_digits.py's:
  mlp  64 -> 128 (relu) -> 10
  cnn  1x8x8 -> [conv 3x3 -> batch norm -> relu -> max pool 2x2] x2 (16, 32 filters) -> 10

Ours is one prepared plan per step run by the compiled loop (forward, gradients and in-place
Adam updates). PyTorch runs the same models eagerly (nn.Linear, nn.Conv2d, nn.BatchNorm2d,
F.max_pool2d, F.cross_entropy, optim.Adam(foreach)). Targets: our epoch in at most 0.5x
PyTorch's time for the MLP, 0.8x for the CNN.

    python bench/bench_train.py [--rounds 9] [--model mlp|cnn]   (PyTorch: pip install torch==2.13.0)
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from timing import optional

import paddle_core as pc

BATCH, HIDDEN, CLASSES = 32, 128, 10


def data():
    """scikit-learn's 8x8 digits, or None without scikit-learn."""
    datasets = optional("sklearn.datasets")
    if datasets is None:
        return None
    digits = datasets.load_digits()
    x = (digits.data[:1437] / 16.0).astype(np.float32)
    y = digits.target[:1437].astype(np.int64)
    return x, y


SHAPES = {"mlp": [64], "cnn": [1, 8, 8]}


def ours_net(model: str, image):
    if model == "mlp":
        return pc.layers.fc(pc.layers.fc(image, HIDDEN, act="relu"), CLASSES)
    x = image
    for filters in (16, 32):
        x = pc.layers.conv2d(x, filters, 3, padding=1, bias_attr=False)
        x = pc.layers.pool2d(pc.layers.batch_norm(x, act="relu"), 2, pool_stride=2)
    return pc.layers.fc(x, CLASSES)


def ours(model: str, x, y, threads: int):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", SHAPES[model])
        label = pc.layers.data("label", [1], dtype="int64")
        logits = ours_net(model, image)
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


def torch_net(torch, model: str):
    nn = torch.nn

    if model == "mlp":
        return nn.Sequential(nn.Linear(64, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES))
    layers = []
    for channels, filters in ((1, 16), (16, 32)):
        layers += [nn.Conv2d(channels, filters, 3, padding=1, bias=False), nn.BatchNorm2d(filters)]
        layers += [nn.ReLU(), nn.MaxPool2d(2)]
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(32 * 2 * 2, CLASSES))


def torch_epoch(torch, name: str, x, y, threads: int):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = torch_net(torch, name)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    batches = [
        (torch.from_numpy(x[i : i + BATCH]), torch.from_numpy(y[i : i + BATCH]))
        for i in range(0, len(x) - BATCH + 1, BATCH)
    ]

    def epoch():
        for images, labels in batches:
            optimizer.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()

    return epoch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--model", choices=[*SHAPES, "both"], default="both")
    args = parser.parse_args()
    digits = data()
    if digits is None:
        return  # nothing to train on
    for model in SHAPES if args.model == "both" else [args.model]:
        run(model, digits, args.rounds)
    print(
        "\ntargets: ours / PyTorch <= 0.50 (mlp), <= 0.80 (cnn); one epoch: 44 steps of 32 images"
    )


def run(model: str, digits, rounds: int) -> None:
    x, y = digits
    x = x.reshape(-1, *SHAPES[model])
    torch = optional("torch")
    print(
        f"{model}:\n{'threads':>7} {'paddle-core ms':>15} {'PyTorch ms':>11} {'ours / PyTorch':>15}"
    )
    for threads in (1, 2):
        systems = {"ours": ours(model, x, y, threads)}
        if torch is not None:
            systems["torch"] = torch_epoch(torch, model, x, y, threads)
        times: dict[str, list[float]] = {name: [] for name in systems}
        for epoch in systems.values():
            epoch()  # warm up: plans, allocations, lazy initialisation
        for _ in range(rounds):
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


if __name__ == "__main__":
    main()
