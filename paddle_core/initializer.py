"""How parameters get their first values, and ``ParamAttr``, as in Paddle fluid 1.x.

An initializer here is a recipe: given a parameter's shape and dtype, it gives the
``paddle_core.Initializer`` (an op and its attrs) that ``create_parameter`` appends to the
startup program. The ops come from plugins (``fill_constant`` from paddle-ops-math, the random
ones from paddle-ops-nn)::

    w = block.create_parameter("w", [784, 128], initializer=pc.initializer.Xavier()([784, 128], "float32"))
    out = pc.layers.fc(x, 128, param_attr=pc.ParamAttr(initializer=pc.initializer.MSRA()))

``Xavier`` (Glorot) and ``MSRA`` (Kaiming, He) scale a uniform or normal distribution by the
parameter's fans: for a matrix [in, out], fan_in = in and fan_out = out; for a convolution
filter [out_channels, in_channels, *kernel], each is multiplied by the kernel's size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._src.base.errors import ProgramError, shown
from ._src.graph.variable import Initializer

__all__ = [
    "MSRA",
    "Constant",
    "Kaiming",
    "Normal",
    "ParamAttr",
    "TruncatedNormal",
    "Uniform",
    "Xavier",
]


class Constant:
    """Every element ``value``."""

    def __init__(self, value: float = 0.0) -> None:
        self.value = float(value)

    def __call__(self, shape: Sequence[int], dtype: str) -> Initializer:
        return Initializer("fill_constant", value=self.value)


class Uniform:
    """Uniformly random in [low, high); ``seed`` nonzero fixes the numbers."""

    def __init__(self, low: float = -1.0, high: float = 1.0, seed: int = 0) -> None:
        self.low, self.high, self.seed = float(low), float(high), int(seed)

    def __call__(self, shape: Sequence[int], dtype: str) -> Initializer:
        return Initializer("uniform_random", min=self.low, max=self.high, seed=self.seed)


class Normal:
    """Normally distributed with mean ``loc`` and standard deviation ``scale``."""

    op = "gaussian_random"

    def __init__(self, loc: float = 0.0, scale: float = 1.0, seed: int = 0) -> None:
        self.loc, self.scale, self.seed = float(loc), float(scale), int(seed)

    def __call__(self, shape: Sequence[int], dtype: str) -> Initializer:
        return Initializer(self.op, mean=self.loc, std=self.scale, seed=self.seed)


class TruncatedNormal(Normal):
    """Like ``Normal``, with values more than 2 standard deviations away drawn again."""

    op = "truncated_gaussian_random"


def fans(shape: Sequence[int]) -> tuple[int, int]:
    """(fan_in, fan_out) of a parameter of ``shape`` (see the module docstring)."""
    if len(shape) < 2:
        n = int(shape[0]) if shape else 1
        return n, n
    if len(shape) == 2:
        return int(shape[0]), int(shape[1])
    receptive = math.prod(shape[2:])
    return int(shape[1]) * receptive, int(shape[0]) * receptive


class Xavier:
    """Glorot & Bengio: uniform in +-sqrt(6 / (fan_in + fan_out)), or normal with standard
    deviation sqrt(2 / (fan_in + fan_out)). The fans default to the parameter's."""

    def __init__(
        self,
        uniform: bool = True,
        fan_in: int | None = None,
        fan_out: int | None = None,
        seed: int = 0,
    ) -> None:
        self.uniform, self.fan_in, self.fan_out, self.seed = uniform, fan_in, fan_out, seed

    def __call__(self, shape: Sequence[int], dtype: str) -> Initializer:
        fan_in, fan_out = fans(shape)
        total = (self.fan_in or fan_in) + (self.fan_out or fan_out)
        if self.uniform:
            limit = math.sqrt(6.0 / total)
            return Uniform(-limit, limit, self.seed)(shape, dtype)
        return Normal(0.0, math.sqrt(2.0 / total), self.seed)(shape, dtype)


class MSRA:
    """He et al. (Kaiming), for ReLU networks: uniform in +-sqrt(6 / fan_in), or normal with
    standard deviation sqrt(2 / fan_in). fan_in defaults to the parameter's."""

    def __init__(self, uniform: bool = True, fan_in: int | None = None, seed: int = 0) -> None:
        self.uniform, self.fan_in, self.seed = uniform, fan_in, seed

    def __call__(self, shape: Sequence[int], dtype: str) -> Initializer:
        fan_in = self.fan_in or fans(shape)[0]
        if self.uniform:
            limit = math.sqrt(6.0 / fan_in)
            return Uniform(-limit, limit, self.seed)(shape, dtype)
        return Normal(0.0, math.sqrt(2.0 / fan_in), self.seed)(shape, dtype)


Kaiming = MSRA


class ParamAttr:
    """How a layer creates one of its parameters: its name (default: made unique), its
    initializer (a recipe above, or a ``paddle_core.Initializer``), an L2 ``regularizer``
    (``pc.optimizer.L2Decay``) applied by the optimizer to this parameter, and whether it is
    ``trainable``."""

    def __init__(
        self,
        name: str | None = None,
        initializer: object = None,
        regularizer: object = None,
        trainable: bool = True,
    ) -> None:
        from .optimizer import L2Decay  # (the optimizer module builds on this one)

        checks = [
            (
                "name",
                name,
                name is None or (isinstance(name, str) and name),
                "a non-empty str or None",
            ),
            (
                "initializer",
                initializer,
                initializer is None
                or isinstance(initializer, Initializer)
                or (callable(initializer) and not isinstance(initializer, type)),
                "an initializer (pc.initializer.Xavier(), Constant(0.5), ...), a "
                "pc.Initializer or None",
            ),
            (
                "regularizer",
                regularizer,
                regularizer is None or isinstance(regularizer, L2Decay),
                "a pc.optimizer.L2Decay or None",
            ),
            ("trainable", trainable, isinstance(trainable, (bool, np.bool_)), "a bool"),
        ]
        for what, value, ok, expected in checks:
            if not ok:
                raise ProgramError(f"ParamAttr: {what} must be {expected}, got {shown(value)}")
        self.name, self.initializer = name, initializer
        self.regularizer, self.trainable = regularizer, bool(trainable)

    @staticmethod
    def of(attr: ParamAttr | str | bool | None) -> ParamAttr | None:
        """A ParamAttr from what layers accept: one, a name, None (defaults), or False (no
        such parameter, e.g. no bias)."""
        if attr is False:
            return None
        if attr is None or attr is True:
            return ParamAttr()
        if isinstance(attr, str):
            return ParamAttr(name=attr)
        if isinstance(attr, ParamAttr):
            return attr
        raise ProgramError(f"expected a ParamAttr, a name, None or False, got {attr!r}")

    def initializer_for(self, shape: Sequence[int], dtype: str, default: object) -> Initializer:
        """The Initializer of a parameter of ``shape`` and ``dtype`` (``default``'s when this
        attr names none)."""
        recipe = self.initializer if self.initializer is not None else default
        return recipe if isinstance(recipe, Initializer) else recipe(shape, dtype)
