"""paddle-ops-nn's program passes (the manifest's hooks_module), run in this order by the
planner on its private copy of a program:

- ``fold_batch_norm`` (batch_norm_folding.py): an inference's batch norm folded into the
  convolution before it;
- ``onednn_layout`` (layout.py): oneDNN's blocked or channels-last layout between the ops that
  compute on it;
- ``onednn_fusion`` (fusion.py): a convolution's residual add and activation computed as part
  of it, in plans without gradients;
- ``onednn_filter_cache`` (filter_cache.py): convolution filters converted once per change,
  not per run;
- ``attention_fusion`` (attention_fusion.py): attention composed of matmuls and a softmax, as
  ONNX models hold it, as one scaled_dot_product_attention;
- ``attention_packing`` (attention_packing.py): a self-attention's attention reading q, k and
  v where the projection wrote them, without the split and transposes around it.

``set_pass_enabled(name, False)`` switches one off for the plans prepared from then on (a
prepared plan keeps what it was prepared with), to debug a pass or to compare results with
and without it.
"""

from __future__ import annotations

from typing import Any

from paddle_core import ConfigError, hookimpl

from . import (
    attention_fusion,
    attention_packing,
    batch_norm_folding,
    filter_cache,
    fusion,
    layout,
)

PASSES = {
    module.NAME: module
    for module in (
        batch_norm_folding,
        layout,
        fusion,
        filter_cache,
        attention_fusion,
        attention_packing,
    )
}
_disabled: set[str] = set()


def set_pass_enabled(name: str, enabled: bool) -> bool:
    """Switch pass ``name`` on or off; returns whether it was on."""
    if name not in PASSES:
        raise ConfigError(f"paddle-ops-nn has no pass {name!r}; its passes are {', '.join(PASSES)}")
    was = name not in _disabled
    (_disabled.discard if enabled else _disabled.add)(name)
    return was


def _enabled() -> list[Any]:
    return [p for name, p in PASSES.items() if name not in _disabled]


@hookimpl
def paddle_core_wants_transform(program: Any, device: Any) -> bool:
    """Whether a pass would rewrite ``program`` (the planner copies a program for passes only
    then)."""
    return any(p.wants(program, device) for p in _enabled())


@hookimpl
def paddle_core_transform_program(program: Any, device: Any, feed_names: list, fetch_names: list):
    for p in _enabled():  # (each does nothing where it has nothing to do: no wants() again)
        p.transform(program, device, feed_names, fetch_names)
