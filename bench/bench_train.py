"""Training speed: one epoch (softmax cross-entropy, Adam, batches of 32) on the 8x8 digits'
1437 training images, ours beside PyTorch CPU eager, at one and two threads, measured in this
run (rounds alternate between the systems). Two models, as examples/train_digits.py's:
  mlp  64 -> 128 (relu) -> 10
  cnn  1x8x8 -> [conv 3x3 -> batch norm -> relu -> max pool 2x2] x2 (16, 32 filters) -> 10

Ours is one prepared plan per step run by the compiled loop (forward, gradients and in-place
Adam updates); the CNN's also without layout propagation (paddle_ops_nn.onednn), to show what
keeping oneDNN's blocked layout between its ops gives on images this small. PyTorch runs the
same models eagerly (nn.Linear, nn.Conv2d, nn.BatchNorm2d, F.max_pool2d, F.cross_entropy,
optim.Adam(foreach)). Targets: our epoch in at most 0.5x
PyTorch's time for the MLP, 0.8x for the CNN.

    python bench/bench_train.py [--rounds 9] [--model mlp|cnn] [--threads 1 2] [--cpu-time]
    (PyTorch: pip install torch==2.13.0; --cpu-time: the process's CPU time, not the wall clock)
"""

from __future__ import annotations

import argparse
import math
import statistics

import numpy as np
import timing
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


def ours(model: str, x, y, threads: int, propagate: bool = True):
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
    if not propagate:  # the plan every step runs, prepared without layout propagation
        import paddle_ops_nn.onednn as onednn

        previous = onednn.set_layout_propagation(False)
        exe.prepare(main, batches[0], [])
        onednn.set_layout_propagation(previous)

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
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--cpu-time", action="store_true", help="time with the CPU time")
    args = parser.parse_args()
    if args.cpu_time:
        timing.use_cpu_time()
    digits = data()
    if digits is None:
        return  # nothing to train on
    for model in SHAPES if args.model == "both" else [args.model]:
        run(model, digits, args.rounds, args.threads)
    print(
        "\ntargets: ours / PyTorch <= 0.50 (mlp), <= 0.80 (cnn); one epoch: 44 steps of 32 images"
    )


def run(model: str, digits, rounds: int, threads_list: list[int]) -> None:
    x, y = digits
    x = x.reshape(-1, *SHAPES[model])
    torch = optional("torch")
    cnn = model == "cnn"  # also without layout propagation (no ops to propagate in the MLP)
    print(
        f"{model}:\n{'threads':>7} {'paddle-core ms':>15} {'PyTorch ms':>11} {'ours / PyTorch':>15}"
        + (f" {'no propagation ms':>18} {'/ PyTorch':>10}" if cnn else "")
    )
    for threads in threads_list:
        systems = {"ours": ours(model, x, y, threads)}
        if cnn:
            systems["unpropagated"] = ours(model, x, y, threads, propagate=False)
        if torch is not None:
            systems["torch"] = torch_epoch(torch, model, x, y, threads)
        times: dict[str, list[float]] = {name: [] for name in systems}
        for epoch in systems.values():
            epoch()  # warm up: plans, allocations, lazy initialisation
        for _ in range(rounds):
            for name, epoch in systems.items():
                start = timing.clock()
                epoch()
                times[name].append(timing.clock() - start)
        ms = {name: statistics.median(t) * 1e3 for name, t in times.items()}
        torch_ms = ms.get("torch", math.nan)
        row = f"{threads:7d} {ms['ours']:15.2f} {torch_ms:11.2f} {ms['ours'] / torch_ms:14.2f}x"
        if cnn:
            off = ms["unpropagated"]
            row += f" {off:18.2f} {off / torch_ms:9.2f}x"
        print(row)


if __name__ == "__main__":
    main()
