"""Shape and grad rules of paddle-ops-math (the manifest's rules_module), one module per op
family; the manifest names them bare, so each family's rules are re-exported here.

Most grad rules are the core's ``paddle_core.rules:default_grad``: each op ``T`` has a
``T_grad`` op, declared beside it in the manifest, with its own kernel.
"""

from .common import compare_shape, logical_shape, predicate_shape, where_grad, where_shape
from .einsum import einsum_cpu, einsum_grad, einsum_shape
from .fill import (
    assign_grad,
    cast_grad,
    cast_shape,
    fill_constant_shape,
    full_like_shape,
    range_shape,
    scale_grad,
)
from .index import (
    gather_nd_shape,
    gather_shape,
    one_hot_shape,
    scatter_nd_shape,
    scatter_shape,
)
from .matmul import matmul_2d_shape, matmul_shape, rowwise_add_shape
from .reduce import argmax_shape, extreme_shape, reduce_shape, sum_shape
from .scan import cumsum_grad, cumsum_shape
from .shape import (
    broadcast_to_grad_shape,
    broadcast_to_shape,
    concat_grad,
    concat_shape,
    expand_grad,
    pad_shape,
    reshape_grad,
    reshape_shape,
    shape_of_shape,
    size_shape,
    slice_shape,
    split_grad,
    split_shape,
    squeeze_grad,
    squeeze_shape,
    tile_shape,
    transpose_grad,
    transpose_shape,
    triangle_grad,
    triangle_shape,
    unsqueeze_grad,
    unsqueeze_shape,
)
from .sort import argsort_shape, sort_grad, sort_shape, topk_grad, topk_shape
from .unary import clip_shape
