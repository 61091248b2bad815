"""MobileNetV2 training steps: ours with relu6, with relu, and PyTorch CPU eager's.

At one and two threads, measured in this run (rounds alternate between the systems): relu6
must cost within 5% of relu (it stays inside oneDNN's blocked layout as relu does, where clip standing in
for it made 193 conversions instead of 57).

The network is MobileNetV2 (width 1.0: a 3x3 stride-2 convolution to 32 channels, seventeen
inverted residual blocks [1x1 expand, batch norm, act, 3x3 depthwise, batch norm, act, 1x1
project, batch norm, the input added where shapes allow], a 1x1 convolution to 1280 channels,
global average pooling and a linear classifier), on batches of 8 images of 3x64x64 (small, for
a 2-core machine), softmax cross-entropy, SGD with momentum. PyTorch runs the same network
eagerly.

    python bench/bench_mobilenet.py [--rounds 7] [--threads 1 2] [--batch 8] [--size 64]
    (PyTorch: pip install torch==2.13.0)
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
import timing
from timing import optional

import paddle_core as pc

CLASSES = 10
# (expansion t, channels c, blocks n, first stride s), as the MobileNetV2 paper's table 2.
BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1)]
BLOCKS += [(6, 160, 3, 2), (6, 320, 1, 1)]


def inverted_residuals():
    """(input channels, expansion, output channels, stride) of each block."""
    channels = 32
    for t, c, n, s in BLOCKS:
        for k in range(n):
            yield channels, t, c, s if k == 0 else 1
            channels = c


def ours_net(image, act: str):
    def conv_bn(x, filters, size, stride=1, groups=1, activation=act):
        padding = size // 2
        x = pc.layers.conv2d(x, filters, size, stride, padding, groups=groups, bias_attr=False)
        return pc.layers.batch_norm(x, act=activation)

    x = conv_bn(image, 32, 3, 2)
    for channels, t, c, s in inverted_residuals():
        h = conv_bn(x, channels * t, 1) if t != 1 else x
        h = conv_bn(h, channels * t, 3, s, groups=channels * t)
        h = conv_bn(h, c, 1, activation=None)
        x = pc.ops.add(x, h) if s == 1 and channels == c else h
    x = conv_bn(x, 1280, 1)
    x = pc.layers.flatten(pc.layers.adaptive_avg_pool2d(x, 1))
    return pc.layers.linear(x, CLASSES)


def ours(act: str, batch, threads: int):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", list(batch["image"].shape[1:]))
        label = pc.layers.data("label", [1], dtype="int64")
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(ours_net(image, act), label))
        pc.optimizer.Momentum(0.01, momentum=0.9).minimize(loss)
    scope, exe = pc.Scope(), pc.Executor(num_threads=threads)
    exe.run(startup, scope=scope)
    return lambda: exe.run(main, feed=batch, scope=scope)


def torch_net(torch, act: str):
    nn = torch.nn
    activation = {"relu6": nn.ReLU6, "relu": nn.ReLU}[act]

    def conv_bn(inputs, filters, size, stride=1, groups=1, with_act=True):
        layers = [nn.Conv2d(inputs, filters, size, stride, size // 2, groups=groups, bias=False)]
        return [*layers, nn.BatchNorm2d(filters), *([activation()] if with_act else [])]

    class Block(nn.Module):
        def __init__(self, channels, t, c, s):
            super().__init__()
            hidden = channels * t
            layers = conv_bn(channels, hidden, 1) if t != 1 else []
            layers += conv_bn(hidden, hidden, 3, s, groups=hidden)
            layers += conv_bn(hidden, c, 1, with_act=False)
            self.body, self.residual = nn.Sequential(*layers), s == 1 and channels == c

        def forward(self, x):
            return x + self.body(x) if self.residual else self.body(x)

    layers = conv_bn(3, 32, 3, 2)
    layers += [Block(*b) for b in inverted_residuals()]
    last = BLOCKS[-1][1]
    layers += [*conv_bn(last, 1280, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    return nn.Sequential(*layers, nn.Linear(1280, CLASSES))


def torch_step(torch, act: str, batch, threads: int):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = torch_net(torch, act)
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
        "label": rng.integers(0, CLASSES, (args.batch, 1)),
    }
    torch = optional("torch")
    print(
        f"{'threads':>7} {'relu6 ms':>9} {'relu ms':>8} {'relu6/relu':>11}"
        f" {'PyTorch relu6 ms':>17} {'ours / PyTorch':>15}"
    )
    for threads in args.threads:
        systems = {act: ours(act, batch, threads) for act in ("relu6", "relu")}
        if torch is not None:
            systems["torch"] = torch_step(torch, "relu6", batch, threads)
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
