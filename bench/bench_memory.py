"""Memory of one training step (softmax cross-entropy, SGD), ours beside PyTorch CPU eager,
each in a process of its own, in this run, for three models:
  mlp       784-1024-1024-10, relu, batches of 256
  cnn       3x32x32 -> [conv 3x3 -> batch norm -> relu -> max pool 2x2] x2 (32, 64 filters)
            -> 10, batches of 32
  resnet18  torchvision's ResNet-18 (7x7 stride-2 stem, batch norm, relu, 3x3 max pool, four
            stages of two basic blocks, 64 to 512 filters, global average pool, fc) on 3x32x32,
            10 classes, batches of 32, SGD with momentum 0.9 (PyTorch's momentum buffers made
            before the step, as ours are by the startup program)

For ours, the planned bytes of the step's plan with a buffer per value and in the shared
arena (``PreparedProgram.memory``: the kernels' workspaces, oneDNN's scratchpads and operands
converted to its layouts, are among them), and the steps of the convolutional nets also
without layout propagation (each oneDNN op then converts its activations to oneDNN's layout
and back in its workspace). For both, the peak growth of the process's resident memory over a
step, above what it held before (the high-water mark reset by writing 5 to
/proc/self/clear_refs, then VmHWM read from /proc/self/status): the first step (ours prepares
its plan and its arena; PyTorch allocates as it goes) and a later one (each reuses what it
kept), and what the first step left held. Figures are MB, ratios ours / PyTorch. Linux
updates these counters lazily (per thread, every 64 page faults), so figures below ~0.5 MB
are noise. Then our plan's memory report for the model (``print(plan.memory)``).
PyTorch runs under --torch-python (default: this Python).

    python bench/bench_memory.py [--model mlp|cnn|resnet18|all] [--threads 1]
                                 [--torch-python PATH]
    (Linux only)
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys

import numpy as np
from timing import optional

SIZES = (784, 1024, 1024, 10)  # the MLP's
FILTERS = (32, 64)  # the CNN's
BATCH = {"mlp": 256, "cnn": 32, "resnet18": 32}
IMAGE = {"mlp": (SIZES[0],), "cnn": (3, 32, 32), "resnet18": (3, 32, 32)}
STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))  # ResNet-18's: filters, first stride
MOMENTUM = {"resnet18": 0.9}  # SGD's; plain SGD for the others
MB = 1 << 20


def status(field: str) -> int:
    """A /proc/self/status figure (VmRSS, VmHWM) in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def peak_growth(step) -> tuple[int, int]:
    """(peak resident growth over ``step()``, resident growth left after it), in bytes."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the high-water mark restarts from the current resident size
    before = status("VmRSS")
    step()
    return max(status("VmHWM") - before, 0), status("VmRSS") - before


def batch(model: str):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH[model], *IMAGE[model])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], (BATCH[model], 1)).astype(np.int64)
    return x, y


def ours_resnet18(image):
    import paddle_core as pc

    def conv_bn(x, filters, size, stride=1, act="relu"):
        x = pc.layers.conv2d(x, filters, size, stride, size // 2, bias_attr=False)
        return pc.layers.batch_norm(x, act=act)

    h = pc.layers.pool2d(conv_bn(image, 64, 7, 2), 3, pool_stride=2, pool_padding=1)
    channels = 64
    for filters, stride in STAGES:
        for s in (stride, 1):
            y = conv_bn(conv_bn(h, filters, 3, s), filters, 3, act=None)
            if s != 1 or channels != filters:
                h = conv_bn(h, filters, 1, s, act=None)
            h = pc.layers.relu(pc.ops.add(y, h))
            channels = filters
    return pc.layers.fc(pc.layers.pool2d(h, pool_type="avg", global_pooling=True), SIZES[-1])


def ours_net(model: str, image):
    import paddle_core as pc

    h = image
    if model == "resnet18":
        return ours_resnet18(image)
    if model == "cnn":
        for filters in FILTERS:
            h = pc.layers.conv2d(h, filters, 3, padding=1, bias_attr=False)
            h = pc.layers.pool2d(pc.layers.batch_norm(h, act="relu"), 2, pool_stride=2)
        return pc.layers.fc(h, SIZES[-1])
    for size in SIZES[1:-1]:
        h = pc.layers.fc(h, size, act="relu")
    return pc.layers.fc(h, SIZES[-1])


def torch_resnet18(torch):
    nn = torch.nn

    def conv_bn(cin, cout, size, stride=1, act=True):
        layers = [nn.Conv2d(cin, cout, size, stride, size // 2, bias=False), nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers, *([nn.ReLU()] if act else []))

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(
                conv_bn(cin, cout, 3, stride), conv_bn(cout, cout, 3, 1, False)
            )
            self.down = conv_bn(cin, cout, 1, stride, False) if stride != 1 or cin != cout else None

        def forward(self, x):
            return torch.relu(self.body(x) + (x if self.down is None else self.down(x)))

    blocks, channels = [], 64
    for filters, stride in STAGES:
        blocks += [Block(channels, filters, stride), Block(filters, filters, 1)]
        channels = filters
    stem = [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)]
    head = [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, SIZES[-1])]
    return nn.Sequential(*stem, *blocks, *head)


def torch_net(torch, model: str):
    nn = torch.nn
    layers: list = []
    if model == "resnet18":
        return torch_resnet18(torch)
    if model == "cnn":
        for channels, filters in itertools.pairwise((3, *FILTERS)):
            layers += [nn.Conv2d(channels, filters, 3, padding=1, bias=False)]
            layers += [nn.BatchNorm2d(filters), nn.ReLU(), nn.MaxPool2d(2)]
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(FILTERS[-1] * 8 * 8, SIZES[-1]))
    for n, m in itertools.pairwise(SIZES):
        layers += [nn.Linear(n, m), nn.ReLU()]
    return nn.Sequential(*layers[:-1])  # no relu after the last


def ours(model: str, threads: int, reuse: bool, propagate: bool = True) -> dict:
    import paddle_core as pc

    if not propagate:
        import paddle_ops_nn.onednn as onednn

        onednn.set_layout_propagation(False)

    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", list(IMAGE[model]))
        label = pc.layers.data("label", [1], dtype="int64")
        logits = ours_net(model, image)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        if model in MOMENTUM:
            pc.optimizer.Momentum(0.01, MOMENTUM[model]).minimize(loss)
        else:
            pc.optimizer.SGD(0.01).minimize(loss)
    scope, exe = pc.Scope(), pc.Executor(num_threads=threads, reuse_memory=reuse)
    exe.run(startup, scope=scope)
    x, y = batch(model)
    feed = {image.name: x, label.name: y}

    def step():
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)

    first, held = peak_growth(step)
    for _ in range(3):
        step()
    later, _ = peak_growth(step)
    memory = exe.prepare(main, feed, [loss]).memory
    return {
        "first": first,
        "later": later,
        "held": held,
        "planned": memory.planned_bytes,
        "arena": memory.arena_bytes,
        "buffers": memory.buffers,
        "workspaces": memory.workspace_bytes,
        "report": str(memory),
    }


def torch_step(name: str, threads: int) -> dict | None:
    torch = optional("torch")
    if torch is None:
        return None
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = torch_net(torch, name)
    momentum = MOMENTUM.get(name, 0.0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=momentum)
    if momentum:  # made now, as ours are by the startup program (the step's update is the same)
        for p in model.parameters():
            optimizer.state[p]["momentum_buffer"] = torch.zeros_like(p)
    x, y = batch(name)
    images, labels = torch.from_numpy(x), torch.from_numpy(y[:, 0])

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        loss.item()

    first, held = peak_growth(step)
    for _ in range(3):
        step()
    later, _ = peak_growth(step)
    return {"first": first, "later": later, "held": held}


def worker(python: str, *args: str, script: str = __file__):
    """Run ``script`` (this file) as a worker in a fresh process; its figures, the JSON of its
    last line of output (None: it skipped them, and its messages say why)."""
    out = subprocess.run([python, script, *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"worker {args} failed:\n{out.stderr}")
    *messages, figures = out.stdout.strip().splitlines()
    print(*messages, sep="\n", end="\n" if messages else "")
    return json.loads(figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=[*BATCH, "all"], default="all")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--torch-python", default=sys.executable)
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, model, *rest = args.worker
        if kind == "torch":
            figures = torch_step(model, args.threads)
        else:
            figures = ours(model, args.threads, rest != ["alone"], rest != ["unpropagated"])
        print(json.dumps(figures))
        return
    for model in BATCH if args.model == "all" else [args.model]:
        report(model, args.threads, args.torch_python)


def report(model: str, threads: int, torch_python: str) -> None:
    flags = ["--threads", str(threads), "--worker"]
    reused = worker(sys.executable, *flags, "ours", model, "reuse")
    alone = worker(sys.executable, *flags, "ours", model, "alone")
    unpropagated = None
    if model != "mlp":
        unpropagated = worker(sys.executable, *flags, "ours", model, "unpropagated")
    try:
        torch = worker(torch_python, *flags, "torch", model)
    except SystemExit as e:
        print(f"PyTorch did not run ({e}); pass --torch-python", file=sys.stderr)
        torch = None
    optimizer = f"SGD, momentum {MOMENTUM[model]}" if model in MOMENTUM else "SGD"
    print(
        f"\none training step ({optimizer}) of the {model}, batch {BATCH[model]}, "
        f"{threads} thread(s)"
    )
    print(
        f"ours: {reused['buffers']} planned buffers, {reused['planned'] / MB:.2f} MB with a "
        f"buffer each (kernels' workspaces {reused['workspaces'] / MB:.2f} MB of them), "
        f"{reused['arena'] / MB:.2f} MB in the shared arena "
        f"({reused['arena'] / reused['planned']:.2f}x)"
    )
    header = f"{'peak resident growth (MB)':40}{'first step':>12}{'later step':>12}{'held':>10}"
    print(header)
    rows = [("ours", reused), ("ours, reuse_memory=False", alone)]
    if unpropagated is not None:
        rows.append(("ours, no layout propagation", unpropagated))
    if torch is not None:
        rows.append(("PyTorch eager", torch))
    for name, r in rows:
        print(f"{name:40}{r['first'] / MB:12.2f}{r['later'] / MB:12.2f}{r['held'] / MB:10.2f}")
    if torch is not None:
        for name, r in rows[:-1]:
            ratios = "".join(
                f"{r[k] / torch[k]:11.2f}x" if torch[k] > 0 else f"{'-':>12}"
                for k in ("first", "later")
            )
            print(f"{name + ' / PyTorch':40}{ratios}")
    print(f"\nour plan's memory report (print(plan.memory)):\n{reused['report']}")


if __name__ == "__main__":
    main()
