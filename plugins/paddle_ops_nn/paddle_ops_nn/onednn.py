"""Whether float32 convolution, pooling and the per-step products of lstm and gru run on oneDNN
(like PyTorch's ``torch.backends.mkldnn``).

oneDNN computes them where the build found it (its wheels exist for Linux x86-64 only) and it is
enabled, which it is by default; otherwise the built-in engines do: im2col + OpenBLAS for
convolution, loops for pooling, OpenBLAS for the recurrences. The choice is made when a kernel is
prepared, so a plan keeps the engines it was prepared with::

    import paddle_ops_nn.onednn
    paddle_ops_nn.onednn.set_enabled(False)   # plans prepared from now on use the built-in engines

Where oneDNN computes, the layout pass (``paddle_ops_nn.layout``) keeps its blocked layout
between the conv2d, batch_norm, activation and pool2d ops of a plan, converting at the plan's
edges and wherever another op reads a value; ``set_layout_propagation(False)`` switches that off
for plans prepared from then on (every op then converts at each call, as without the pass).
"""

from __future__ import annotations

from paddle_core import PluginError

from . import _C, _kernels  # noqa: F401  (_kernels loads oneDNN where _C cannot find it)

__all__ = [
    "channel_block",
    "inference_block",
    "is_available",
    "is_enabled",
    "propagates_layouts",
    "set_enabled",
    "set_layout_propagation",
]

_propagation = True


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


def propagates_layouts() -> bool:
    """Whether plans prepared now keep oneDNN's blocked layout between ops (where oneDNN is
    enabled and this CPU has a blocked layout it prefers: ``channel_block``)."""
    return _propagation and channel_block() > 0


def set_layout_propagation(enabled: bool) -> bool:
    """Switch layout propagation between oneDNN ops on or off for plans prepared from now on;
    returns the previous setting (of the switch, whether or not oneDNN is enabled)."""
    global _propagation
    previous, _propagation = _propagation, bool(enabled)
    return previous


def channel_block() -> int:
    """The block b of the blocked layout nChw{b}c that oneDNN's convolutions choose on this CPU
    (8 with AVX2, 16 with AVX-512), which layout propagation keeps; 0 where oneDNN is not
    enabled or chooses another layout."""
    return int(_C.onednn_channel_block()) if is_enabled() else 0


def inference_block() -> int:
    """The layout oneDNN's inference convolutions choose on this CPU, which layout propagation
    keeps in plans without gradients: -1 for channels last (NHWC, where oneDNN has brgemm
    convolutions: AVX2 and later), else a block b as ``channel_block``; 0 where oneDNN is not
    enabled or chooses another layout."""
    return int(_C.onednn_inference_block()) if is_enabled() else 0
