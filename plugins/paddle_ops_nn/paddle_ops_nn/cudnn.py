"""Whether the CUDA convolution kernels use cuDNN (like PyTorch's ``torch.backends.cudnn``).

cuDNN is loaded at run time, not linked: the system's ``libcudnn.so.9`` first, else the one of
the ``nvidia-cudnn-cu13`` (or ``-cu12``) wheel installed beside this package
(``pip install "paddle-ops-nn[cuda]"``). Where it is missing or switched off, the convolution
kernels compute on kernels of this plugin instead (slower; the same numbers to within rounding).
The choice is made when a kernel is prepared, so a plan keeps the engine it was prepared with::

    import paddle_ops_nn.cudnn
    paddle_ops_nn.cudnn.unavailable_reason()   # None, or why not and what to install
    paddle_ops_nn.cudnn.set_enabled(False)     # plans prepared from now on do without it
"""

from __future__ import annotations

from . import _C, _kernels  # noqa: F401  (_kernels loads oneDNN where _C cannot find it)

__all__ = ["engines_prepared", "is_available", "is_enabled", "set_enabled", "unavailable_reason"]


def unavailable_reason() -> str | None:
    """Why cuDNN cannot be used (what was tried, what to install), or None when it can.

    Loads it on the first call, once per process.
    """
    return _C.cudnn_unavailable_reason()


def is_available() -> bool:
    """Whether cuDNN is loaded and this build has CUDA kernels to use it."""
    return unavailable_reason() is None


def is_enabled() -> bool:
    """Whether convolution kernels prepared now use cuDNN where it is available (the default)."""
    return bool(_C.cudnn_enabled())


def set_enabled(enabled: bool) -> bool:
    """Switch cuDNN on or off for convolution kernels prepared from now on; returns the previous
    setting. Switched on where cuDNN is unavailable, the kernels still do without it."""
    previous = is_enabled()
    _C.set_cudnn_enabled(bool(enabled))
    return previous


def engines_prepared() -> dict[str, int]:
    """How many CUDA convolution kernels prepared in this process computed on each engine:
    ``{"cudnn": n, "own kernels": m}`` (an empty convolution needs none)."""
    cudnn, own = _C.conv_engines_prepared()
    return {"cudnn": cudnn, "own kernels": own}
