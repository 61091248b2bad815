"""Shape and grad rules of paddle-ops-nn (the manifest's rules_module), one module per op
family; the manifest names them bare, so each family's rules are re-exported here.

Most grad rules are the core's ``paddle_core.rules:default_grad``: each op ``T`` has a ``T_grad``
op, declared beside it in the manifest, with its own kernel.
"""

from .conv import conv2d_shape, conv2d_transpose_shape, pool2d_shape
from .embedding import embedding_shape
from .layout import reorder_layout_backward, reorder_layout_shape
from .norm import (
    batch_norm_backward,
    batch_norm_grad_shape,
    batch_norm_shape,
    layer_norm_backward,
    layer_norm_grad_shape,
    layer_norm_shape,
)
from .optimizer import optimizer_shape
from .random import dropout_grad_shape, dropout_shape, random_shape
from .softmax import (
    accuracy_shape,
    cross_entropy_backward,
    cross_entropy_shape,
    softmax_shape,
    softmax_with_cross_entropy_backward,
    softmax_with_cross_entropy_grad_shape,
    softmax_with_cross_entropy_shape,
)
