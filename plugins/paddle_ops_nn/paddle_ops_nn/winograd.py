"""Whether 3x3 convolutions run on the Winograd engine.

A float32 3x3 convolution of stride 1 with at least 64 input and output channels and enough
outputs computes its forward pass and its input gradient a tile of outputs at a time from
transformed inputs and filter (its filter gradient stays oneDNN's or OpenBLAS's): F(4x4, 3x3),
4x fewer multiplications than the direct convolution, where its 4x4 tiles are at least as many
as the filters; F(2x2, 3x3), 2.25x fewer, elsewhere (conv2d_transpose, a convolution's input
gradient, included). Inference plans keep the transformed
filter between runs; training plans transform it at each step. Its results differ from the
direct convolution's by float32 rounding (the transforms scale, add and subtract inputs before
multiplying: F(4x4)'s 5-15x F(2x2)'s). The choice is made when a kernel is prepared, so
a plan keeps the engine it was prepared with::

    import paddle_ops_nn.winograd
    paddle_ops_nn.winograd.set_enabled(False)   # plans prepared from now on compute directly
"""

from __future__ import annotations

from . import _C, _kernels  # noqa: F401  (_kernels loads oneDNN where _C cannot find it)

__all__ = ["engines_prepared", "is_enabled", "set_enabled"]


def is_enabled() -> bool:
    """Whether kernels prepared now may use the Winograd engine (on by default)."""
    return bool(_C.winograd_enabled())


def set_enabled(enabled: bool) -> bool:
    """Switch the Winograd engine on or off for kernels prepared from now on; returns the
    previous setting."""
    previous = is_enabled()
    _C.set_winograd_enabled(bool(enabled))
    return previous


def engines_prepared(outputs: int | None = None) -> int:
    """How many convolution kernels prepared in this process compute on the Winograd engine:
    with F(outputs x outputs, 3x3), 2 or 4, or with either (None)."""
    if outputs not in (None, 2, 4):
        raise ValueError(f"outputs must be 2, 4 or None (either), got {outputs!r}")
    return int(_C.winograd_engines_made(outputs or 0))
