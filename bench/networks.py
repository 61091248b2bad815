"""The real-size networks the model benchmarks share (bench_models, bench_onnx, bench_mobilenet,
bench_transformer), each written twice: with our layers, and in PyTorch.

PyTorch's are the ONNX model tests' (tests/core/onnx/torch_models.py: one definition for the
tests and the benchmarks). Ours are built with ``pc.layers`` under PyTorch's parameter names,
the keys of the PyTorch module's ``state_dict()``, so that ``load_state_dict`` copies its
weights and batch norm statistics into our scope by name and both compute the same function.
``BUILDERS`` maps each PyTorch network's class name to our builder, which takes the input and
the class's keyword arguments.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import warnings
from pathlib import Path

import paddle_core as pc

ROOT = Path(__file__).resolve().parent.parent
CLASSES = 10

# name -> (network: a class of torch_models and a key of BUILDERS, input shape with the batch,
# the network's keyword arguments). No dropout: training steps compute the same on both sides.
CONFIGS = {
    "resnet18_32": ("ResNet18", (32, 3, 32, 32), {}),
    "resnet18_224": ("ResNet18", (1, 3, 224, 224), {}),
    "mobilenet_v2": ("MobileNetV2", (16, 3, 64, 64), {"dropout": 0.0}),
    "transformer": (
        "Encoder",
        (8, 128, 256),
        {"d_model": 256, "heads": 4, "feed_forward": 1024, "dropout": 0.0},
    ),
}


# -- ours, under PyTorch's names ---------------------------------------------------------------


def conv_bn(x, filters: int, size: int, stride: int = 1, groups: int = 1, act="relu", *, name):
    """torch_models.conv_bn: a convolution without bias (``<name>.0``), batch norm
    (``<name>.1``), then ``act`` (None for none)."""
    x = pc.layers.conv2d(
        x, filters, size, stride, size // 2, groups=groups, param_attr=f"{name}.0.weight",
        bias_attr=False,
    )  # fmt: skip
    bn = f"{name}.1"
    return pc.layers.batch_norm(
        x, act=act, param_attr=f"{bn}.weight", bias_attr=f"{bn}.bias", name=bn,
        moving_mean_name=f"{bn}.running_mean", moving_variance_name=f"{bn}.running_var",
    )  # fmt: skip


def basic_block(x, filters: int, stride: int, *, name: str):
    """ResNet's basic block: two 3x3 convolutions, the input added (through a 1x1 convolution
    where the shape changes), relu."""
    h = conv_bn(x, filters, 3, stride, name=f"{name}.conv1")
    h = conv_bn(h, filters, 3, act=None, name=f"{name}.conv2")
    if stride != 1 or x.shape[1] != filters:
        x = conv_bn(x, filters, 1, stride, act=None, name=f"{name}.down")
    return pc.layers.relu(pc.ops.add(h, x))


def resnet18(image, *, classes: int = CLASSES):
    """torchvision's resnet18 (torch_models.ResNet18): a 7x7 stem, max pool, four stages of
    two basic blocks, global average pooling, a linear classifier."""
    x = conv_bn(image, 64, 7, 2, name="stem.0")
    x = pc.layers.pool2d(x, 3, pool_stride=2, pool_padding=1)
    blocks = [(f, s) for f, stride in ((64, 1), (128, 2), (256, 2), (512, 2)) for s in (stride, 1)]
    for k, (filters, stride) in enumerate(blocks):
        x = basic_block(x, filters, stride, name=f"blocks.{k}")
    x = pc.layers.flatten(pc.layers.adaptive_avg_pool2d(x, 1))
    return pc.layers.linear(x, classes, name="fc")


# (expansion t, channels c, blocks n, first stride s), as the MobileNetV2 paper's table 2.
MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1)]
MOBILENET_V2 += [(6, 160, 3, 2), (6, 320, 1, 1)]


def inverted_residuals():
    """(input channels, expansion, output channels, stride) of each MobileNetV2 block."""
    channels = 32
    for t, c, n, s in MOBILENET_V2:
        for k in range(n):
            yield channels, t, c, s if k == 0 else 1
            channels = c


def mobilenet_v2(image, *, classes: int = CLASSES, dropout: float = 0.2, act: str = "relu6"):
    """torchvision's mobilenet_v2, width 1.0 (torch_models.MobileNetV2): a 3x3 stride-2
    convolution to 32 channels, seventeen inverted residual blocks [1x1 expand, batch norm,
    act, 3x3 depthwise, batch norm, act, 1x1 project, batch norm, the input added where shapes
    allow], a 1x1 convolution to 1280 channels, global average pooling, dropout and a linear
    classifier. ``act`` other than relu6 makes a variant PyTorch's class does not have."""
    x = conv_bn(image, 32, 3, 2, act=act, name="features.0")
    blocks = list(inverted_residuals())
    for k, (channels, t, c, s) in enumerate(blocks, start=1):
        hidden = channels * t
        body = [(hidden, 1, 1, 1, act)] if t != 1 else []  # (filters, size, stride, groups, act)
        body += [(hidden, 3, s, hidden, act), (c, 1, 1, 1, None)]
        h = x
        for j, layer in enumerate(body):
            h = conv_bn(h, *layer, name=f"features.{k}.body.{j}")
        x = pc.ops.add(x, h) if s == 1 and channels == c else h
    x = conv_bn(x, 1280, 1, act=act, name=f"features.{len(blocks) + 1}")
    x = pc.layers.flatten(pc.layers.adaptive_avg_pool2d(x, 1))
    if dropout:
        x = pc.layers.dropout(x, dropout, dropout_implementation="upscale_in_train")
    return pc.layers.linear(x, classes, name="classifier.1")


def transformer_encoder(
    x, *, d_model: int, heads: int, feed_forward: int, dropout: float = 0.1, layers: int = 2
):
    """torch_models.Encoder: ``layers`` post-norm encoder layers (relu) over [B, T, d_model]."""
    for k in range(layers):
        x = pc.layers.transformer_encoder_layer(
            x, d_model, heads, feed_forward, dropout=dropout, name=f"encoder.layers.{k}"
        )
    return x


BUILDERS = {"ResNet18": resnet18, "MobileNetV2": mobilenet_v2, "Encoder": transformer_encoder}


def load_state_dict(scope: pc.Scope, program: pc.Program, module) -> None:
    """Copy a PyTorch ``module``'s state_dict into ``scope``: every parameter of ``program``
    (batch norm statistics included) from the entry of its name, of the same shape."""
    state = {
        name: tensor.detach().numpy().copy()
        for name, tensor in module.state_dict().items()
        if not name.endswith("num_batches_tracked")  # (counts steps: no part of the function)
    }
    shapes = {p.name: tuple(p.shape) for p in program.all_parameters()}
    missing, unused = sorted(shapes.keys() - state.keys()), sorted(state.keys() - shapes.keys())
    wrong = [
        f"{n}: ours {list(shapes[n])}, PyTorch's {list(state[n].shape)}"
        for n in sorted(shapes.keys() & state.keys())
        if shapes[n] != state[n].shape
    ]
    if missing or unused or wrong:
        raise SystemExit(
            f"{type(module).__name__}'s state_dict does not fit our program: parameters it lacks "
            f"{missing or 'none'}; entries we lack {unused or 'none'}; shapes that differ "
            f"{wrong or 'none'}"
        )
    for name, value in state.items():
        scope.set_var(name, value)


# -- PyTorch's, exported for ONNX Runtime ------------------------------------------------------


@functools.cache
def torch_models():
    """tests/core/onnx/torch_models.py, imported (it imports torch: call it where torch is)."""
    path = ROOT / "tests" / "core" / "onnx" / "torch_models.py"
    spec = importlib.util.spec_from_file_location("torch_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def torch_network(torch, name: str):
    """(the PyTorch module of configuration ``name``, with random weights and batch norm
    statistics, the same every run, in eval mode; a random input of its shape)."""
    models = torch_models()
    network, shape, kwargs = CONFIGS[name]
    torch.manual_seed(0)  # (the same weights every run)
    module = models.seeded(getattr(models, network)(**kwargs))
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    return module, x


def export_onnx(torch, module, x, path: Path) -> None:
    """``module`` on input ``x`` as an ONNX file (torch.onnx.export's TorchScript exporter)."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), str(path), dynamo=False)


def ort_session(ort, path: Path, threads: int):
    """An ONNX Runtime CPU session on ``path``: default optimisations, ``threads`` threads
    within an op, one between ops."""
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
