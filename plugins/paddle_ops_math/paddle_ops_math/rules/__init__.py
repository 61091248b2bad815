"""Shape rules of paddle-ops-math (the manifest's rules_module), one module per op family.

Grad rules are mostly the core's ``paddle_core.backward:default_grad``: each op ``T`` has a
``T_grad`` op, declared beside it in the manifest, with its own kernel.
"""

from .common import compare_shape, grad_shapes
from .fill import assign_grad, cast_grad, cast_shape, fill_constant_shape, no_grad, scale_grad
from .matmul import matmul_2d_shape, matmul_shape, rowwise_add_shape
from .reduce import argmax_shape, extreme_shape, reduce_shape, sum_shape

__all__ = [
    "argmax_shape",
    "assign_grad",
    "cast_grad",
    "cast_shape",
    "compare_shape",
    "extreme_shape",
    "fill_constant_shape",
    "grad_shapes",
    "matmul_2d_shape",
    "matmul_shape",
    "no_grad",
    "reduce_shape",
    "rowwise_add_shape",
    "scale_grad",
    "sum_shape",
]
