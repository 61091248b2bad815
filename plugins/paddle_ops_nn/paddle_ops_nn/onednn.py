"""Whether float32 convolution and pooling run on oneDNN (like PyTorch's ``torch.backends.mkldnn``).

oneDNN computes them where the build found it (its wheels exist for Linux x86-64 only) and it is
enabled, which it is by default; otherwise the built-in engines do: im2col + OpenBLAS for
convolution, loops for pooling. The choice is made when a kernel is prepared, so a plan keeps
the engines it was prepared with::

    import paddle_ops_nn.onednn
    paddle_ops_nn.onednn.set_enabled(False)   # plans prepared from now on use the built-in engines
"""

from __future__ import annotations

from paddle_core import PluginError

from . import _C, _kernels  # noqa: F401  (_kernels loads oneDNN where _C cannot find it)

__all__ = ["is_available", "is_enabled", "set_enabled"]


def is_available() -> bool:
    """Whether this build of paddle-ops-nn has oneDNN."""
    return bool(_C.ONEDNN_BUILT)


def is_enabled() -> bool:
    """Whether kernels prepared now use oneDNN (available and not switched off)."""
    return bool(_C.onednn_enabled())


def set_enabled(enabled: bool) -> bool:
    """Switch oneDNN on or off for kernels prepared from now on; returns the previous setting.

    Raises PluginError when asked to switch on a oneDNN this build does not have.
    """
    if enabled and not is_available():
        raise PluginError(
            "paddle-ops-nn was built without oneDNN, so it cannot be enabled; its wheels exist "
            "for Linux x86-64 only (pip install onednn-devel-cpu-gomp==2023.2.0, then rebuild)",
            plugin="nn",
        )
    previous = is_enabled()
    _C.set_onednn_enabled(bool(enabled))
    return previous
