"""The networks of the ONNX model tests, in PyTorch: torchvision's architectures (written here:
torchvision's wheels need a CUDA build of torch) and torch.nn's sequence models, with random
weights. Imported only where torch is installed."""

from __future__ import annotations

import torch
from torch import nn


def conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act=nn.ReLU):
    layers = [
        nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]
    return nn.Sequential(*layers, act()) if act else nn.Sequential(*layers)


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = conv_bn(cin, cout, 3, stride)
        self.conv2 = conv_bn(cout, cout, 3, act=None)
        self.down = conv_bn(cin, cout, 1, stride, act=None) if stride != 1 or cin != cout else None

    def forward(self, x):
        identity = x if self.down is None else self.down(x)
        return torch.relu(self.conv2(self.conv1(x)) + identity)


class ResNet18(nn.Module):
    """torchvision's resnet18: a 7x7 stem, max pool, four stages of two basic blocks."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers = [conv_bn(cin, hidden, 1, act=nn.ReLU6)] if expand != 1 else []
        layers += [
            conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6),
            conv_bn(hidden, cout, 1, act=None),
        ]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    """torchvision's mobilenet_v2 (width 1.0): relu6, depthwise convolutions, residuals;
    ``dropout`` before the classifier."""

    SETTINGS = (
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    )

    def __init__(self, classes: int = 10, dropout: float = 0.2):
        super().__init__()
        layers, cin = [conv_bn(3, 32, 3, 2, act=nn.ReLU6)], 32
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, 1280, 1, act=nn.ReLU6))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(1280, classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, squeezed: int, act=nn.ReLU, gate=nn.Hardsigmoid):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(channels, squeezed, 1), nn.Conv2d(squeezed, channels, 1)
        self.act, self.gate = act(), gate()

    def forward(self, x):
        s = nn.functional.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(self.act(self.fc1(s))))


class MobileBlock(nn.Module):
    """MobileNetV3's and EfficientNet's inverted residual: expand, depthwise, squeeze-excite,
    project."""

    def __init__(self, cin, k, hidden, cout, se: int, act, stride, gate=nn.Hardsigmoid):
        super().__init__()
        layers = [conv_bn(cin, hidden, 1, act=act)] if hidden != cin else []
        layers.append(conv_bn(hidden, hidden, k, stride, groups=hidden, act=act))
        if se:
            layers.append(
                SqueezeExcite(hidden, se, nn.ReLU if gate is nn.Hardsigmoid else act, gate)
            )
        layers.append(conv_bn(hidden, cout, 1, act=None))
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV3Small(nn.Module):
    """torchvision's mobilenet_v3_small: hardswish, squeeze-excite with hardsigmoid."""

    # (kernel, expanded, out, squeeze channels (0: none), activation, stride)
    SETTINGS = (
        (3, 16, 16, 8, nn.ReLU, 2),
        (3, 72, 24, 0, nn.ReLU, 2),
        (3, 88, 24, 0, nn.ReLU, 1),
        (5, 96, 40, 24, nn.Hardswish, 2),
        (5, 240, 40, 64, nn.Hardswish, 1),
        (5, 240, 40, 64, nn.Hardswish, 1),
        (5, 120, 48, 32, nn.Hardswish, 1),
        (5, 144, 48, 40, nn.Hardswish, 1),
        (5, 288, 96, 72, nn.Hardswish, 2),
        (5, 576, 96, 144, nn.Hardswish, 1),
        (5, 576, 96, 144, nn.Hardswish, 1),
    )

    def __init__(self, classes: int = 10):
        super().__init__()
        layers, cin = [conv_bn(3, 16, 3, 2, act=nn.Hardswish)], 16
        for k, hidden, cout, se, act, stride in self.SETTINGS:
            layers.append(MobileBlock(cin, k, hidden, cout, se, act, stride))
            cin = cout
        layers.append(conv_bn(cin, 576, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(1024, classes)
        )

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


class EfficientNetB0(nn.Module):
    """torchvision's efficientnet_b0: SiLU, squeeze-excite with a sigmoid gate, MBConv stages."""

    # (expand ratio, kernel, stride, out, repeats)
    STAGES = (
        (1, 3, 1, 16, 1),
        (6, 3, 2, 24, 2),
        (6, 5, 2, 40, 2),
        (6, 3, 2, 80, 3),
        (6, 5, 1, 112, 3),
        (6, 5, 2, 192, 4),
        (6, 3, 1, 320, 1),
    )

    def __init__(self, classes: int = 10):
        super().__init__()
        layers, cin = [conv_bn(3, 32, 3, 2, act=nn.SiLU)], 32
        for t, k, s, c, n in self.STAGES:
            for i in range(n):
                hidden = cin * t
                se = max(1, cin // 4)
                layers.append(
                    MobileBlock(cin, k, hidden, c, se, nn.SiLU, s if i == 0 else 1, nn.Sigmoid)
                )
                cin = c
        layers.append(conv_bn(cin, 1280, 1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


class Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, expand: int):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.e1, self.e3 = nn.Conv2d(squeeze, expand, 1), nn.Conv2d(squeeze, expand, 3, padding=1)

    def forward(self, x):
        s = torch.relu(self.squeeze(x))
        return torch.cat([torch.relu(self.e1(s)), torch.relu(self.e3(s))], 1)


class SqueezeNet(nn.Module):
    """torchvision's squeezenet1_0: fire modules, max pools with ceil_mode, a conv classifier."""

    def __init__(self, classes: int = 10):
        super().__init__()
        pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)  # noqa: E731
        self.features = nn.Sequential(
            nn.Conv2d(3, 96, 7, 2),
            nn.ReLU(),
            pool(),
            Fire(96, 16, 64),
            Fire(128, 16, 64),
            Fire(128, 32, 128),
            pool(),
            Fire(256, 32, 128),
            Fire(256, 48, 192),
            Fire(384, 48, 192),
            Fire(384, 64, 256),
            pool(),
            Fire(512, 64, 256),
        )
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(512, classes, 1), nn.ReLU())

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.classifier(self.features(x)), 1)
        return torch.flatten(x, 1)


class ViT(nn.Module):
    """torchvision's VisionTransformer, small: a patch convolution, a class token, position
    embeddings, pre-norm encoder layers with GELU, a head on the class token."""

    def __init__(
        self, image: int = 32, patch: int = 8, dim: int = 64, layers: int = 2, classes: int = 10
    ):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(
            dim, 4, 2 * dim, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


class Encoder(nn.Module):
    """torch.nn.TransformerEncoder: 2 layers (d_model 64, 4 heads by default), batch first."""

    def __init__(
        self, d_model: int = 64, heads: int = 4, feed_forward: int = 128, dropout: float = 0.1
    ):
        super().__init__()
        layer = nn.TransformerEncoderLayer(
            d_model, heads, feed_forward, dropout=dropout, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


class Recurrent(nn.Module):
    """torch.nn.LSTM or GRU (2 layers, batch first, one or both directions) and a Linear on
    its outputs."""

    def __init__(self, cell: type, bidirectional: bool = False):
        super().__init__()
        self.rnn = cell(16, 32, num_layers=2, batch_first=True, bidirectional=bidirectional)
        self.head = nn.Linear(64 if bidirectional else 32, 4)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)


def seeded(model: nn.Module, seed: int = 0) -> nn.Module:
    """The model with random weights and batch norm statistics (not 0 and 1), for inference."""
    torch.manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):  # (uniform_ draws from the seeded generator)
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    return model.eval()
