"""Rules the core offers for manifests to name: this module's path is a stable, public contract.

    shape_rule: "paddle_core.rules:unary"        # the output is like the first input
    shape_rule: "paddle_core.rules:elementwise"  # inputs broadcast together (NumPy rules)
    shape_rule: "paddle_core.rules:grad_shapes"  # each <input>_grad is shaped like <input>
    grad_rule: "paddle_core.rules:default_grad"  # op T's gradient is op T_grad, wired by slot names
    grad_rule: "paddle_core.rules:no_grad"       # the outputs are constant in the inputs

A shape rule receives a ``paddle_core.ShapeContext``; a grad rule a ``paddle_core.GradContext``
(docs/writing-op-plugins.md describes both). ``broadcast_shapes`` and ``check_fill_value`` (an
integer fill refuses a value its dtype cannot hold) are for plugins' own shape rules.
"""

from ._src.graph.backward import default_grad, no_grad
from ._src.graph.shape_rules import (
    broadcast_shapes,
    check_fill_value,
    elementwise,
    grad_shapes,
    unary,
)

__all__ = [
    "broadcast_shapes",
    "check_fill_value",
    "default_grad",
    "elementwise",
    "grad_shapes",
    "no_grad",
    "unary",
]
