"""Layers: short compositions of ops that create their parameters, with Paddle fluid 1.x's
signatures.

A layer appends ops to the current program (``program_guard``) and creates its parameters in
its global block, their initializers in the startup program; it has no kernel of its own.
Every layer also takes ``model=`` (keyword-only): given a ``pc.Model``, or called on a model's
Expressions, it builds that model and returns Expressions (``model_method``). The
ops come from plugins: ``fc`` uses paddle-ops-math's ``matmul_2d`` and ``add``, activations and
losses paddle-ops-nn's::

    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", [64])
        label = pc.layers.data("label", [1], dtype="int64")
        hidden = pc.layers.fc(image, 128, act="relu")
        logits = pc.layers.fc(hidden, 10)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        acc = pc.layers.accuracy(pc.layers.softmax(logits), label)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from numbers import Integral
from typing import Any

import numpy as np

from . import initializer as init
from . import ops
from ._src.base.dtypes import FLOATING
from ._src.base.errors import ProgramError
from ._src.graph.block import append_initializer
from ._src.graph.program import data as program_data
from ._src.graph.program import default_main_program, default_startup_program
from ._src.graph.variable import Initializer, Parameter, Variable
from ._src.model.methods import model_method
from .control_flow import While, assign, cond, rnn, while_loop

__all__ = [
    "While",
    "accuracy",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "assign",
    "batch_norm",
    "cond",
    "conv2d",
    "conv2d_transpose",
    "cosine_decay",
    "create_parameter",
    "cross_entropy",
    "data",
    "dropout",
    "elu",
    "embedding",
    "exponential_decay",
    "fc",
    "fill_constant_batch_size_like",
    "flatten",
    "gelu",
    "gru",
    "hardsigmoid",
    "hardswish",
    "layer_norm",
    "leaky_relu",
    "linear",
    "linear_lr_warmup",
    "log_softmax",
    "lstm",
    "mean",
    "multi_head_attention",
    "piecewise_decay",
    "pool2d",
    "relu",
    "relu6",
    "rnn",
    "sigmoid",
    "silu",
    "softmax",
    "softmax_with_cross_entropy",
    "softplus",
    "step_counter",
    "tanh",
    "transformer_encoder_layer",
    "while_loop",
]


@model_method
def data(
    name: str, shape: Sequence[int], dtype: str = "float32", append_batch_size: bool = True
) -> Variable:
    """An input fed at run time; ``append_batch_size`` puts an unknown batch dimension first,
    unless ``shape`` already has an unknown one (None or -1), as Paddle fluid's: ``data("x",
    [None, 3])`` is [None, 3]."""
    if isinstance(shape, np.ndarray):
        shape = shape.tolist()
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise ProgramError(
            f"data {name!r}: shape must be a list of dimensions (None for unknown ones), got "
            f"{shape!r}"
        )
    has_unknown = any(d is None or (isinstance(d, Integral) and d == -1) for d in shape)
    batched = append_batch_size and not has_unknown
    return program_data(name, [None, *shape] if batched else list(shape), dtype)


@model_method
def create_parameter(
    shape: Sequence[int],
    dtype: str = "float32",
    attr: init.ParamAttr | str | None = None,
    default_initializer: Any = None,
    *,
    prefix: str = "param",
) -> Parameter:
    """A parameter of the current program, initialised in the startup program (by ``attr``'s
    initializer, else ``default_initializer``, else Xavier)."""
    if attr is False:  # (ParamAttr.of reads False as "no parameter": not one to make)
        raise ProgramError(
            f"{prefix}: attr False means no such parameter, which only a layer's optional "
            "parameters (a bias) may be; pass a ParamAttr, a name or None"
        )
    attr = init.ParamAttr.of(attr) or init.ParamAttr()
    if attr.trainable and dtype not in FLOATING:  # (the random initializers would refuse it)
        raise ProgramError(
            f"{prefix}: a trainable parameter has a float dtype ({', '.join(sorted(FLOATING))}), "
            f"got {dtype!r}; a layer's parameters take its input's dtype: cast an integer input "
            "first (pc.ops.cast), or make the parameter ParamAttr(trainable=False)"
        )
    program = default_main_program()
    name = attr.name or program.unique_name(prefix)
    initializer = attr.initializer_for(shape, dtype, default_initializer or init.Xavier())
    optimize_attrs = {}
    if attr.regularizer is not None:
        optimize_attrs["l2_decay"] = float(attr.regularizer.coeff)
    return program.global_block().create_parameter(
        name,
        shape,
        dtype,
        trainable=attr.trainable,
        initializer=initializer,
        optimize_attrs=optimize_attrs,
    )


def _activate(x: Variable, act: str | None) -> Variable:
    if act is None:
        return x
    fn = ACTIVATIONS.get(act)
    if fn is None:
        raise ProgramError(f"unknown activation {act!r}; choose one of {', '.join(ACTIVATIONS)}")
    return fn(x)


@model_method
def fc(
    input: Variable,
    size: int,
    num_flatten_dims: int = 1,
    param_attr: init.ParamAttr | str | None = None,
    bias_attr: init.ParamAttr | str | bool | None = None,
    act: str | None = None,
    name: str | None = None,
) -> Variable:
    """A fully connected layer: ``act(input @ w + b)``. ``input`` is flattened to a matrix
    whose rows are its first ``num_flatten_dims`` dimensions; w is [columns, size], b is
    [size] (``bias_attr=False`` for none).

    Porting from PyTorch: ``nn.Linear`` acts on the last axis, so for an input of rank r pass
    ``num_flatten_dims=r - 1`` (the default 1 flattens a [N, T, D] input to [N, T * D] rows,
    Paddle fluid's rule); its weight is [out, in], the transpose of w: copy ``weight.T``."""
    if not 1 <= num_flatten_dims < max(input.ndim, 2):
        raise ProgramError(
            f"fc: num_flatten_dims {num_flatten_dims} must be in [1, {input.ndim}) for an "
            f"input of shape {list(input.shape)}"
        )
    columns = input.shape[num_flatten_dims:]
    if None in columns:
        raise ProgramError(
            f"fc: the dimensions of {input.name!r} after the first {num_flatten_dims} must be "
            f"known, got {list(input.shape)}"
        )
    size = _count(size, "size", "fc")
    prefix = name or "fc"
    w = create_parameter([math.prod(columns), size], input.dtype, param_attr, prefix=f"{prefix}.w")
    out = ops.matmul_2d(input, w, x_num_col_dims=num_flatten_dims)
    b = _bias(bias_attr, size, input.dtype, prefix)
    if b is not None:
        out = ops.add(out, b)
    return _activate(out, act)


@model_method
def linear(
    input: Variable,
    out_features: int,
    bias: bool = True,
    name: str | None = None,
) -> Variable:
    """``input @ weight.T + bias`` over the last axis of ``input`` [..., in], as
    ``torch.nn.Linear``: ``<name>.weight`` is [out, in] and ``<name>.bias`` [out], both
    uniform in [-1 / sqrt(in), 1 / sqrt(in)) at first as PyTorch's, so a Linear's
    ``state_dict()`` loads by name as it is. ``name`` defaults to a unique ``linear_N``."""
    features = input.shape[-1] if input.ndim else None
    if features is None:
        raise ProgramError(
            f"linear: the last dimension of {input.name!r} must be known, got {list(input.shape)}"
        )
    out_features = _count(out_features, "out_features", "linear")
    prefix = name or default_main_program().unique_name("linear")
    bound = 1.0 / math.sqrt(features) if features else 0.0
    uniform = init.Uniform(-bound, bound)
    w = create_parameter(
        [out_features, features], input.dtype, init.ParamAttr(f"{prefix}.weight", uniform)
    )
    out = ops.matmul(input, w, transpose_y=True)
    if bias:
        b = create_parameter([out_features], input.dtype, init.ParamAttr(f"{prefix}.bias", uniform))
        out = ops.add(out, b)
    return out


def _count(value: object, what: str, layer: str) -> int:
    """A layer's size argument (units, filters, rows): an int of at least 1."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ProgramError(f"{layer}: {what} must be an int >= 1, got {value!r}")
    return int(value)


def _bias(attr: init.ParamAttr | str | bool | None, size: int, dtype: str, prefix: str):
    """A layer's [size] bias, zeros at first; None for ``bias_attr=False``."""
    attr = init.ParamAttr.of(attr)
    if attr is None:
        return None
    return create_parameter([size], dtype, attr, init.Constant(0.0), prefix=f"{prefix}.b")


def _pair(value: int | Sequence[int], what: str, layer: str) -> list[int]:
    """An int for both spatial axes, or [height, width]."""
    pair = [value, value] if isinstance(value, Integral) else None
    if pair is None and isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        pair = list(value)
    if pair is None or len(pair) != 2:
        raise ProgramError(f"{layer}: {what} must be an int or [height, width], got {value!r}")
    return [_count(v, what, layer) for v in pair]


def _paddings(value: int | Sequence[int], layer: str) -> list[int]:
    """[top, bottom, left, right] from an int, [height, width] or the four."""
    pads = [value] * 2 if isinstance(value, int) else list(value)
    if len(pads) == 2:
        pads = [pads[0], pads[0], pads[1], pads[1]]
    if len(pads) != 4:
        raise ProgramError(
            f"{layer}: padding must be an int, [height, width] or [top, bottom, left, right], "
            f"got {value!r}"
        )
    return pads


def _nchw_channels(input: Variable, layer: str) -> int:
    if input.ndim != 4 or input.shape[1] is None:
        raise ProgramError(
            f"{layer}: input must be NCHW with known channels, got {list(input.shape)} "
            f"for {input.name!r}"
        )
    return input.shape[1]


@model_method
def conv2d(
    input: Variable,
    num_filters: int,
    filter_size: int | Sequence[int],
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    param_attr: init.ParamAttr | str | None = None,
    bias_attr: init.ParamAttr | str | bool | None = None,
    act: str | None = None,
    name: str | None = None,
) -> Variable:
    """A 2-D convolution of NCHW ``input`` with ``num_filters`` filters, plus a bias per
    filter (``bias_attr=False`` for none), then ``act``. ``padding`` may also be
    [top, bottom, left, right]. Filters start normal with standard deviation
    sqrt(2 / (channels / groups * kh * kw)), as Paddle's."""
    channels = _nchw_channels(input, "conv2d")
    num_filters = _count(num_filters, "num_filters", "conv2d")
    kh, kw = _pair(filter_size, "filter_size", "conv2d")
    if groups < 1 or channels % groups:
        raise ProgramError(
            f"conv2d: input's {channels} channels must be divisible by groups {groups}"
        )
    prefix = name or "conv2d"
    shape = [num_filters, channels // groups, kh, kw]
    std = math.sqrt(2.0 / (shape[1] * kh * kw))
    w = create_parameter(
        shape, input.dtype, param_attr, init.Normal(0.0, std), prefix=f"{prefix}.w"
    )
    b = _bias(bias_attr, num_filters, input.dtype, prefix)
    out = ops.conv2d(
        input,
        w,
        b,
        strides=_pair(stride, "stride", "conv2d"),
        paddings=_paddings(padding, "conv2d"),
        dilations=_pair(dilation, "dilation", "conv2d"),
        groups=groups,
    )
    return _activate(out, act)


@model_method
def conv2d_transpose(
    input: Variable,
    num_filters: int,
    output_size: int | Sequence[int] | None = None,
    filter_size: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    stride: int | Sequence[int] = 1,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    param_attr: init.ParamAttr | str | None = None,
    bias_attr: init.ParamAttr | str | bool | None = None,
    act: str | None = None,
    name: str | None = None,
) -> Variable:
    """A transposed 2-D convolution (upsampling) of NCHW ``input`` to ``num_filters``
    channels, plus a bias per channel, then ``act``. Give ``filter_size``, or ``output_size``
    to have the filter size that produces it computed (as Paddle does)."""
    channels = _nchw_channels(input, "conv2d_transpose")
    strides, dilations = (
        _pair(stride, "stride", "conv2d_transpose"),
        _pair(dilation, "dilation", "conv2d_transpose"),
    )
    paddings = _paddings(padding, "conv2d_transpose")
    size = [] if output_size is None else _pair(output_size, "output_size", "conv2d_transpose")
    if filter_size is None:  # the one that gives output_size (with no extra rows)
        if not size or None in input.shape[2:]:
            raise ProgramError(
                "conv2d_transpose: give filter_size, or output_size with an input of known "
                "height and width"
            )
        cropped = (paddings[0] + paddings[1], paddings[2] + paddings[3])
        kernel = [
            (size[a] + cropped[a] - (input.shape[2 + a] - 1) * strides[a] - 1) // dilations[a] + 1
            for a in range(2)
        ]
    else:
        kernel = _pair(filter_size, "filter_size", "conv2d_transpose")
    num_filters = _count(num_filters, "num_filters", "conv2d_transpose")
    if groups < 1 or channels % groups or num_filters % groups:
        raise ProgramError(
            f"conv2d_transpose: input's {channels} channels and num_filters {num_filters} must be "
            f"divisible by groups {groups}"
        )
    prefix = name or "conv2d_transpose"
    shape = [channels, num_filters // groups, *kernel]
    std = math.sqrt(2.0 / (channels * kernel[0] * kernel[1]))
    w = create_parameter(
        shape, input.dtype, param_attr, init.Normal(0.0, std), prefix=f"{prefix}.w"
    )
    b = _bias(bias_attr, num_filters, input.dtype, prefix)
    out = ops.conv2d_transpose(
        input,
        w,
        b,
        strides=strides,
        paddings=paddings,
        dilations=dilations,
        groups=groups,
        output_size=size,
    )
    return _activate(out, act)


@model_method
def pool2d(
    input: Variable,
    pool_size: int | Sequence[int] = -1,
    pool_type: str = "max",
    pool_stride: int | Sequence[int] = 1,
    pool_padding: int | Sequence[int] = 0,
    global_pooling: bool = False,
    ceil_mode: bool = False,
    exclusive: bool = True,
    name: str | None = None,
) -> Variable:
    """Max or average pooling of NCHW ``input`` over ``pool_size`` windows (the whole plane
    with ``global_pooling``)."""
    if not global_pooling and (pool_size == -1 or pool_size is None):
        raise ProgramError("pool2d: give pool_size (or global_pooling=True)")
    return ops.pool2d(
        input,
        pooling_type=pool_type,
        ksize=[1, 1] if global_pooling else _pair(pool_size, "pool_size", "pool2d"),
        strides=_pair(pool_stride, "pool_stride", "pool2d"),
        paddings=_paddings(pool_padding, "pool2d"),
        global_pooling=global_pooling,
        ceil_mode=ceil_mode,
        exclusive=exclusive,
    )


@model_method
def fill_constant_batch_size_like(
    input: Variable,
    shape: Sequence[int],
    dtype: str = "float32",
    value: float = 0.0,
    input_dim_idx: int = 0,
    output_dim_idx: int = 0,
) -> Variable:
    """A constant of ``shape`` whose dimension ``output_dim_idx`` (write -1 there) is
    ``input``'s dimension ``input_dim_idx`` at run time: a zero initial state for a batch of
    any size (``fill_constant_batch_size_like(x, [-1, hidden])``), as Paddle fluid's."""
    return ops.fill_constant_batch_size_like(
        input,
        shape=list(shape),
        value=float(value),
        dtype=dtype,
        input_dim_idx=input_dim_idx,
        output_dim_idx=output_dim_idx,
    )


@model_method
def adaptive_avg_pool2d(x: Variable, output_size: int | Sequence[int]) -> Variable:
    """Average pooling of NCHW ``x`` into ``output_size`` bins per plane (an int or [height,
    width]), as PyTorch's ``adaptive_avg_pool2d``; 1 is global average pooling."""
    size = _pair(output_size, "output_size", "adaptive_avg_pool2d")
    return ops.adaptive_avg_pool2d(x, output_size=size)


@model_method
def adaptive_max_pool2d(x: Variable, output_size: int | Sequence[int]) -> Variable:
    """Max pooling of NCHW ``x`` into ``output_size`` bins per plane (an int or [height,
    width]), as PyTorch's ``adaptive_max_pool2d``; 1 is global max pooling."""
    size = _pair(output_size, "output_size", "adaptive_max_pool2d")
    return ops.adaptive_max_pool2d(x, output_size=size)


@model_method
def flatten(x: Variable, start_axis: int = 1, stop_axis: int = -1) -> Variable:
    """``x`` with its axes ``start_axis`` to ``stop_axis`` (both included, negative counting
    from the end) merged into one, like ``torch.flatten``: by default everything but the batch
    dimension, the input of an ``fc`` after convolutions."""
    return ops.flatten(x, start_axis=start_axis, stop_axis=stop_axis)


@model_method
def embedding(
    input: Variable,
    size: Sequence[int],
    padding_idx: int | None = None,
    param_attr: init.ParamAttr | str | None = None,
    dtype: str = "float32",
) -> Variable:
    """Rows of a [size[0], size[1]] table picked by the int64 ids ``input``. ``padding_idx``
    (negative counts from the end) gives zeros and no gradient."""
    if isinstance(size, (str, bytes)) or not isinstance(size, Sequence) or len(size) != 2:
        raise ProgramError(f"embedding: size must be [vocabulary, width], got {size!r}")
    vocabulary, width = (
        _count(v, what, "embedding") for v, what in zip(size, ("size[0]", "size[1]"))
    )
    if padding_idx is not None and not -vocabulary <= padding_idx < vocabulary:
        raise ProgramError(
            f"embedding: padding_idx {padding_idx!r} is not a row of the {vocabulary}-row table "
            f"(negative ones count from the end: [-{vocabulary}, {vocabulary - 1}])"
        )
    if padding_idx is not None and padding_idx < 0:
        padding_idx += vocabulary
    table = create_parameter([vocabulary, width], dtype, param_attr, prefix="embedding.w")
    return ops.embedding(input, table, padding_idx=-1 if padding_idx is None else padding_idx)


@model_method
def dropout(
    x: Variable,
    dropout_prob: float,
    is_test: bool = False,
    seed: int | None = None,
    dropout_implementation: str = "downgrade_in_infer",
) -> Variable:
    """Zero each element with probability ``dropout_prob`` while training; ``is_test`` (which
    ``clone(for_test=True)`` sets) draws nothing. ``dropout_implementation``:
    "downgrade_in_infer" (Paddle's default) keeps the kept elements as they are while training
    and scales every element by 1 - dropout_prob at test time; "upscale_in_train" (PyTorch's
    convention) scales the kept elements by 1 / (1 - dropout_prob) while training and passes
    the input through at test time."""
    out, _ = ops.dropout(
        x,
        dropout_prob=dropout_prob,
        is_test=is_test,
        seed=seed or 0,
        dropout_implementation=dropout_implementation,
    )
    return out


@model_method
def batch_norm(
    input: Variable,
    act: str | None = None,
    is_test: bool = False,
    momentum: float = 0.9,
    epsilon: float = 1e-5,
    param_attr: init.ParamAttr | str | bool | None = None,
    bias_attr: init.ParamAttr | str | bool | None = None,
    name: str | None = None,
    moving_mean_name: str | None = None,
    moving_variance_name: str | None = None,
) -> Variable:
    """Batch normalisation of an NCHW-like ``input`` ([N, C, ...]) per channel, then ``act``.

    Creates scale (ones) and bias (zeros) parameters of shape [C] and the running mean (zeros)
    and variance (ones): parameters too, so that ``pc.io.save_params`` keeps them, but not
    trainable and ``stop_gradient``. ``param_attr=False`` / ``bias_attr=False`` keep the
    scale at ones / the bias at zeros, untrained (as PaddlePaddle's BatchNorm). While
    training, each run normalises with the batch's statistics and moves the running ones
    towards them in place (``running = momentum * running + (1 - momentum) * batch``, the
    biased batch variance); with ``is_test``, or in the program's ``clone(for_test=True)``,
    the running statistics normalise and stay as they are. ``moving_mean_name`` and
    ``moving_variance_name`` name the running statistics (as Paddle fluid's; a PyTorch port
    passes ``"bn1.running_mean"``, ...), made unique from ``name`` otherwise.

    ``momentum`` is the fraction of the running statistics kept (Paddle fluid's meaning), the
    opposite of PyTorch's: PyTorch's ``BatchNorm2d(momentum=0.1)`` is ``momentum=0.9`` here.
    PyTorch also moves its running variance towards the unbiased batch variance, so running
    variances drift apart by a factor n / (n - 1) of the batch's count per channel n."""
    if input.ndim < 2 or input.shape[1] is None:
        raise ProgramError(
            f"batch_norm: the input must be [N, C, ...] with a known channel count (axis 1), "
            f"got {input.name!r} of shape {list(input.shape)}"
        )
    channels = [input.shape[1]]
    prefix = name or "batch_norm"
    program = default_main_program()

    def parameter(what: str, attr, value: float, trainable: bool = True) -> Parameter:
        trainable = trainable and attr is not False
        if not trainable:  # (a name given for it is kept)
            attr = init.ParamAttr(name=attr if isinstance(attr, str) else None, trainable=False)
        made = create_parameter(
            channels, input.dtype, attr, init.Constant(value), prefix=f"{prefix}.{what}"
        )
        made.stop_gradient = not trainable
        return made

    scale = parameter("scale", param_attr, 1.0)
    bias = parameter("bias", bias_attr, 0.0)
    mean = parameter("mean", moving_mean_name, 0.0, trainable=False)
    variance = parameter("variance", moving_variance_name, 1.0, trainable=False)
    base = program.unique_name(prefix)
    op = program.current_block().append_op(
        "batch_norm",
        {"x": input, "scale": scale, "bias": bias, "mean": mean, "variance": variance},
        {
            "y": f"{base}.y",
            "mean_out": mean,  # in place: the running statistics are updated where they live
            "variance_out": variance,
            "saved_mean": f"{base}.saved_mean",
            "saved_inv_std": f"{base}.saved_inv_std",
        },
        {"momentum": momentum, "epsilon": epsilon, "is_test": is_test},
    )
    return _activate(program.current_block().var(op.outputs["y"][0]), act)


@model_method
def layer_norm(
    input: Variable,
    scale: bool = True,
    shift: bool = True,
    begin_norm_axis: int = 1,
    epsilon: float = 1e-5,
    param_attr: init.ParamAttr | str | bool | None = None,
    bias_attr: init.ParamAttr | str | bool | None = None,
    act: str | None = None,
    name: str | None = None,
) -> Variable:
    """Layer normalisation: each row of ``input`` (its axes from ``begin_norm_axis`` on)
    normalised to mean 0 and variance 1 (``begin_norm_axis=-1``: over the last axis, as
    PyTorch's ``LayerNorm(d)``), times a learnt ``scale`` (ones at first) plus a learnt
    ``shift`` (zeros), both flat vectors of the row's size; then ``act``. ``param_attr=False``
    is ``scale=False`` and ``bias_attr=False`` is ``shift=False``: no such parameter."""
    given = begin_norm_axis
    if isinstance(given, Integral) and given < 0:
        begin_norm_axis = given + input.ndim  # counted from the end, as the op counts it
    if not 1 <= begin_norm_axis < input.ndim:
        raise ProgramError(
            f"layer_norm: begin_norm_axis {given} must be in [1, {input.ndim}), or in "
            f"[{1 - input.ndim}, 0) counting from the end, for {input.name!r} of shape "
            f"{list(input.shape)}"
        )
    row = input.shape[begin_norm_axis:]
    if None in row:
        raise ProgramError(
            f"layer_norm: the dimensions of {input.name!r} from begin_norm_axis "
            f"{begin_norm_axis} on must be known, got {list(input.shape)}"
        )
    prefix = name or "layer_norm"
    size = [math.prod(row)]
    gamma = beta = None
    if scale and param_attr is not False:
        gamma = create_parameter(
            size, input.dtype, param_attr, init.Constant(1.0), prefix=f"{prefix}.scale"
        )
    if shift and bias_attr is not False:
        beta = create_parameter(
            size, input.dtype, bias_attr, init.Constant(0.0), prefix=f"{prefix}.bias"
        )
    y, _, _ = ops.layer_norm(input, gamma, beta, begin_norm_axis=begin_norm_axis, epsilon=epsilon)
    return _activate(y, act)


# -- recurrent layers: paddle-ops-nn's lstm and gru, with PyTorch's parameters -----------------


@model_method
def lstm(
    x: Variable,
    hidden_size: int,
    num_layers: int = 1,
    bidirectional: bool = False,
    initial_states: tuple[Variable, Variable] | None = None,
    sequence_length: Variable | None = None,
    batch_first: bool = True,
    name: str | None = None,
) -> tuple[Variable, tuple[Variable, Variable]]:
    """A long short-term memory network over whole sequences, as ``torch.nn.LSTM``: returns
    ``(out, (h_n, c_n))``.

    ``x`` is [B, T, I] (``batch_first``, the default) or [T, B, I]; ``out`` is laid out alike,
    with D * H features (D = 2 when ``bidirectional``: the forward and reverse directions side
    by side); ``h_n`` and ``c_n`` are [num_layers * D, B, H], as are the optional
    ``initial_states`` (h0, c0) (zeros when absent). ``sequence_length`` (int32 or int64 [B],
    each in [1, T]) marks each sequence's valid steps: padded steps give zeros in ``out`` and
    leave the states alone, so ``h_n`` and ``c_n`` are those at each sequence's last valid step
    (PyTorch's packed sequences). The parameters are PyTorch's, by name and shape:
    ``<name>.weight_ih_l{k}[_reverse]`` [4 * H, inputs], ``weight_hh_l{k}`` [4 * H, H],
    ``bias_ih_l{k}`` and ``bias_hh_l{k}`` [4 * H], gates in the order i, f, g, o, each
    uniform in [-1 / sqrt(H), 1 / sqrt(H)) at first, so a ``torch.nn.LSTM``'s ``state_dict()``
    loads into the scope as it is. ``name`` defaults to a unique ``lstm_N``."""
    if initial_states is not None and (
        not isinstance(initial_states, (tuple, list)) or len(initial_states) != 2
    ):
        raise ProgramError(
            f"lstm: initial_states must be a pair (h0, c0) of [L * D, B, H] variables, got "
            f"{initial_states!r}"
        )
    h0, c0 = initial_states if initial_states is not None else (None, None)
    out, h_n, c_n, _ = _recurrent(
        "lstm", x, hidden_size, num_layers, bidirectional, [h0, c0], sequence_length,
        batch_first, name,
    )  # fmt: skip
    return out, (h_n, c_n)


@model_method
def gru(
    x: Variable,
    hidden_size: int,
    num_layers: int = 1,
    bidirectional: bool = False,
    initial_states: Variable | None = None,
    sequence_length: Variable | None = None,
    batch_first: bool = True,
    name: str | None = None,
) -> tuple[Variable, Variable]:
    """A gated recurrent unit network over whole sequences, as ``torch.nn.GRU``: returns
    ``(out, h_n)``; ``initial_states`` is h0. As ``lstm`` otherwise, with 3 * H gate rows in the
    order r, z, n and PyTorch's formula n = tanh(W_in x + b_in + r * (W_hn h + b_hn))."""
    out, h_n, _ = _recurrent(
        "gru", x, hidden_size, num_layers, bidirectional, [initial_states], sequence_length,
        batch_first, name,
    )  # fmt: skip
    return out, h_n


RECURRENT_GATES = {"lstm": 4, "gru": 3}


def _recurrent(
    kind: str,
    x: Variable,
    hidden_size: int,
    num_layers: int,
    bidirectional: bool,
    states: list[Variable | None],
    sequence_length: Variable | None,
    batch_first: bool,
    name: str | None,
) -> tuple[Variable, ...]:
    """The op ``kind`` over x (time-major inside: transposed in and out for batch_first), with
    its parameters made; returns the op's outputs."""
    if x.ndim != 3 or x.shape[2] is None:
        layout = "[B, T, I]" if batch_first else "[T, B, I]"
        raise ProgramError(
            f"{kind}: x must be {layout} with a known feature count I, got {x.name!r} of shape "
            f"{list(x.shape)}"
        )
    hidden_size = _count(hidden_size, "hidden_size", kind)
    num_layers = _count(num_layers, "num_layers", kind)
    prefix = name or default_main_program().unique_name(kind)
    params = _recurrent_parameters(
        prefix, RECURRENT_GATES[kind] * hidden_size, x.shape[2], hidden_size, num_layers,
        bidirectional, x.dtype,
    )  # fmt: skip
    if batch_first:
        x = ops.transpose(x, perm=[1, 0, 2])
    attrs = {"hidden_size": hidden_size, "num_layers": num_layers, "bidirectional": bidirectional}
    # Named like the parameters: <prefix>.out, <prefix>.h_n, ...
    outs = getattr(ops, kind)(x, *params, *states, sequence_length, **attrs, name=prefix)
    if batch_first:
        outs = (ops.transpose(outs[0], perm=[1, 0, 2]), *outs[1:])
    return outs


def _recurrent_parameters(
    prefix: str, rows: int, inputs: int, hidden: int, layers: int, bidirectional: bool, dtype: str
) -> list[list[Parameter]]:
    """weight_ih, weight_hh, bias_ih and bias_hh of every layer and direction (layer-major,
    forward first), named and initialised as PyTorch's."""
    bound = 1.0 / math.sqrt(hidden)
    directions = ("", "_reverse") if bidirectional else ("",)
    made: list[list[Parameter]] = [[], [], [], []]
    for layer in range(layers):
        width = inputs if layer == 0 else len(directions) * hidden
        for suffix in directions:
            shapes = ([rows, width], [rows, hidden], [rows], [rows])
            for k, (what, shape) in enumerate(
                zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), shapes)
            ):
                attr = init.ParamAttr(
                    name=f"{prefix}.{what}_l{layer}{suffix}",
                    initializer=init.Uniform(-bound, bound),
                )
                made[k].append(create_parameter(shape, dtype, attr, prefix=f"{prefix}.{what}"))
    return made


@model_method
def cross_entropy(
    input: Variable, label: Variable, soft_label: bool = False, ignore_index: int = -100
) -> Variable:
    """-log of the probability ``input`` gives the label, per row ([..., 1])."""
    return ops.cross_entropy(input, label, soft_label=soft_label, ignore_index=ignore_index)


@model_method
def softmax_with_cross_entropy(
    logits: Variable,
    label: Variable,
    soft_label: bool = False,
    ignore_index: int = -100,
    return_softmax: bool = False,
    axis: int = -1,
) -> Variable | tuple[Variable, Variable]:
    """cross_entropy(softmax(logits), label), fused and numerically stable."""
    probabilities, loss = ops.softmax_with_cross_entropy(
        logits, label, soft_label=soft_label, ignore_index=ignore_index, axis=axis
    )
    return (loss, probabilities) if return_softmax else loss


@model_method
def mean(x: Variable) -> Variable:
    """The mean of all elements (a scalar)."""
    return ops.mean(x)


@model_method
def accuracy(input: Variable, label: Variable, k: int = 1) -> Variable:
    """The fraction of rows whose label is among the ``k`` highest scores of ``input``."""
    acc, _, _ = ops.accuracy(input, label, k=k)
    return acc


@model_method
def relu(x: Variable) -> Variable:
    """max(x, 0)."""
    return ops.relu(x)


@model_method
def relu6(x: Variable, threshold: float = 6.0) -> Variable:
    """min(max(x, 0), threshold): PyTorch's ReLU6 with the default threshold."""
    return ops.relu6(x, threshold=threshold)


@model_method
def hardswish(x: Variable) -> Variable:
    """x * relu6(x + 3) / 6 (MobileNetV3's), PyTorch's Hardswish."""
    return ops.hardswish(x)


@model_method
def hardsigmoid(x: Variable, slope: float = 1 / 6, offset: float = 0.5) -> Variable:
    """min(max(slope * x + offset, 0), 1); the defaults are PyTorch's Hardsigmoid (Paddle
    fluid's hard_sigmoid took slope 0.2)."""
    return ops.hardsigmoid(x, slope=slope, offset=offset)


@model_method
def leaky_relu(x: Variable, alpha: float = 0.02) -> Variable:
    """x where x > 0, else alpha * x."""
    return ops.leaky_relu(x, alpha=alpha)


@model_method
def gelu(x: Variable, approximate: bool = False) -> Variable:
    """x * Phi(x), Phi the standard normal's distribution function (``approximate``: its tanh
    approximation, PyTorch's approximate="tanh")."""
    return ops.gelu(x, approximate=approximate)


@model_method
def elu(x: Variable, alpha: float = 1.0) -> Variable:
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return ops.elu(x, alpha=alpha)


@model_method
def softplus(x: Variable) -> Variable:
    """log(1 + exp(x)) (the op's default beta 1 and threshold 20, as PyTorch's), computed
    without overflow."""
    return ops.softplus(x)


@model_method
def silu(x: Variable) -> Variable:
    """x * sigmoid(x) (swish)."""
    return ops.silu(x)


@model_method
def sigmoid(x: Variable) -> Variable:
    """1 / (1 + exp(-x))."""
    return ops.sigmoid(x)


@model_method
def tanh(x: Variable) -> Variable:
    """The hyperbolic tangent."""
    return ops.tanh(x)


@model_method
def softmax(input: Variable, axis: int = -1) -> Variable:
    """exp(input) / sum(exp(input)) along ``axis`` (computed from input - its maximum)."""
    return ops.softmax(input, axis=axis)


@model_method
def log_softmax(input: Variable, axis: int = -1) -> Variable:
    """log(softmax(input)) along ``axis``, computed as input - max - log(sum(exp(...)))."""
    return ops.log_softmax(input, axis=axis)


ACTIVATIONS = {
    "relu": relu,
    "relu6": relu6,
    "hardswish": hardswish,
    "hardsigmoid": hardsigmoid,
    "leaky_relu": leaky_relu,
    "gelu": gelu,
    "elu": elu,
    "softplus": softplus,
    "silu": silu,
    "sigmoid": sigmoid,
    "tanh": tanh,
    "softmax": softmax,
}


# -- attention: paddle-ops-nn's scaled_dot_product_attention, with PyTorch's parameters -----


@model_method
def multi_head_attention(
    query: Variable,
    key: Variable,
    value: Variable,
    embed_dim: int,
    num_heads: int,
    dropout: float = 0.0,
    bias: bool = True,
    attn_mask: Variable | None = None,
    key_padding_mask: Variable | None = None,
    is_causal: bool = False,
    is_test: bool = False,
    name: str | None = None,
) -> Variable:
    """Multi-head attention as ``torch.nn.MultiheadAttention(embed_dim, num_heads,
    batch_first=True)``: ``query`` [B, L, E], ``key`` and ``value`` [B, S, E]; returns the
    output [B, L, E] (not the attention weights: the op never forms them whole).

    Parameters, by PyTorch's names: ``<name>.in_proj_weight`` [3E, E] (the query's, key's and
    value's projections stacked, in that order), ``<name>.in_proj_bias`` [3E],
    ``<name>.out_proj.weight`` [E, E] and ``<name>.out_proj.bias`` [E]. Masks as PyTorch's:
    ``attn_mask`` [L, S] or [B, num_heads, L, S], bool (True: may not attend) or float (added to
    the scores); ``key_padding_mask`` bool [B, S] (True: a padded key, ignored). ``is_causal``
    hides the keys after each query (no attn_mask then). ``dropout`` drops attention weights
    while training, as PyTorch's (the kept ones scaled by 1 / (1 - dropout)), inside the op:
    none with ``is_test`` (which ``clone(for_test=True)`` sets)."""
    embed_dim = _count(embed_dim, "embed_dim", "multi_head_attention")
    num_heads = _count(num_heads, "num_heads", "multi_head_attention")
    if embed_dim % num_heads:
        raise ProgramError(
            f"multi_head_attention: embed_dim {embed_dim} must be divisible by num_heads "
            f"{num_heads}"
        )
    for what, var in (("query", query), ("key", key), ("value", value)):
        if var.ndim != 3 or var.shape[2] != embed_dim:
            raise ProgramError(
                f"multi_head_attention: {what} must be [B, length, {embed_dim}], got "
                f"{var.name!r} of shape {list(var.shape)}"
            )
    prefix = name or default_main_program().unique_name("multi_head_attention")
    xavier = init.Xavier(uniform=True)
    w_in = create_parameter(
        [3 * embed_dim, embed_dim], query.dtype, init.ParamAttr(f"{prefix}.in_proj_weight", xavier)
    )
    b_in = _named_zeros(f"{prefix}.in_proj_bias", 3 * embed_dim, query.dtype) if bias else None
    q, k, v = _in_projections(query, key, value, w_in, b_in)
    heads = [_split_heads(t, num_heads) for t in (q, k, v)]
    mask = _attention_mask(attn_mask, key_padding_mask, is_causal)
    attended = _attention(*heads, mask, is_causal, dropout, is_test)
    merged = ops.reshape(ops.transpose(attended, perm=[0, 2, 1, 3]), shape=[0, 0, embed_dim])
    return linear(merged, embed_dim, bias=bias, name=f"{prefix}.out_proj")


def _named_zeros(name: str, size: int, dtype: str) -> Parameter:
    return create_parameter([size], dtype, init.ParamAttr(name, init.Constant(0.0)))


def _in_projections(query, key, value, w_in, b_in):
    """q, k, v: one product with the packed weight for self-attention (query is key is
    value), else a product with each third."""
    if query is key and key is value:
        packed = ops.matmul(query, w_in, transpose_y=True)
        if b_in is not None:
            packed = ops.add(packed, b_in)
        return ops.split(packed, num=3, axis=-1)
    weights = ops.split(w_in, num=3, axis=0)
    biases = ops.split(b_in, num=3, axis=0) if b_in is not None else [None] * 3
    projected = []
    for x, w, b in zip((query, key, value), weights, biases, strict=True):
        y = ops.matmul(x, w, transpose_y=True)
        projected.append(y if b is None else ops.add(y, b))
    return projected


def _split_heads(x: Variable, num_heads: int) -> Variable:
    """[B, T, E] -> [B, heads, T, E / heads]."""
    head_dim = x.shape[2] // num_heads
    return ops.transpose(ops.reshape(x, shape=[0, 0, num_heads, head_dim]), perm=[0, 2, 1, 3])


def _attention_mask(attn_mask, key_padding_mask, is_causal):
    """PyTorch's masks (True: may not attend) as the op's (True: takes part), or a float
    mask as it is; the key padding mask [B, S] broadcast as [B, 1, 1, S]."""
    if is_causal and attn_mask is not None:
        raise ProgramError("multi_head_attention: is_causal makes the mask: give no attn_mask")
    mask = None
    if attn_mask is not None:
        mask = ops.logical_not(attn_mask) if attn_mask.dtype == "bool" else attn_mask
    if key_padding_mask is not None:
        if key_padding_mask.dtype != "bool" or key_padding_mask.ndim != 2:
            raise ProgramError(
                f"multi_head_attention: key_padding_mask must be bool [B, S], got "
                f"{key_padding_mask.name!r} {key_padding_mask.dtype}{list(key_padding_mask.shape)}"
            )
        keys = ops.logical_not(ops.unsqueeze(key_padding_mask, axes=[1, 2]))
        if mask is None:
            mask = keys
        elif mask.dtype == "bool":
            mask = ops.logical_and(mask, keys)
        else:  # a float mask: padded keys get -inf added
            zeros = ops.full_like(mask, value=0.0)
            mask = ops.add(mask, ops.where(keys, zeros, ops.full_like(mask, value=-math.inf)))
    return mask


def _attention(q, k, v, mask, is_causal: bool, dropout: float, is_test: bool) -> Variable:
    out, _, _ = ops.scaled_dot_product_attention(
        q, k, v, mask, is_causal=is_causal, dropout_p=dropout, is_test=is_test
    )
    return out


@model_method
def transformer_encoder_layer(
    src: Variable,
    d_model: int,
    nhead: int,
    dim_feedforward: int = 2048,
    dropout: float = 0.1,
    activation: str = "relu",
    layer_norm_eps: float = 1e-5,
    norm_first: bool = False,
    src_mask: Variable | None = None,
    src_key_padding_mask: Variable | None = None,
    is_causal: bool = False,
    is_test: bool = False,
    name: str | None = None,
) -> Variable:
    """One encoder layer as ``torch.nn.TransformerEncoderLayer(d_model, nhead,
    dim_feedforward, dropout, activation, layer_norm_eps, batch_first=True, norm_first)``:
    self-attention then a feed-forward block (``activation``: "relu" or "gelu"), each added to
    its input, with layer normalisation after each (or before, with ``norm_first``). ``src``
    is [B, T, d_model]. Parameters, by PyTorch's names: ``<name>.self_attn.*`` (as
    ``multi_head_attention``'s), ``<name>.linear1.weight`` [dim_feedforward, d_model],
    ``<name>.linear1.bias``, ``<name>.linear2.weight`` [d_model, dim_feedforward],
    ``<name>.linear2.bias``, ``<name>.norm1.weight`` / ``.bias`` and ``<name>.norm2.weight`` /
    ``.bias`` [d_model]. ``dropout`` (PyTorch's scaling while training, off with ``is_test``)
    drops the attention weights, the two branches' outputs and the feed-forward's hidden
    values, as PyTorch's."""
    if activation not in ("relu", "gelu"):
        raise ProgramError(
            f"transformer_encoder_layer: activation must be 'relu' or 'gelu', got {activation!r}"
        )
    prefix = name or default_main_program().unique_name("transformer_encoder_layer")

    def norm(x, which):
        return layer_norm(
            x, begin_norm_axis=-1, epsilon=layer_norm_eps,
            param_attr=f"{prefix}.{which}.weight", bias_attr=f"{prefix}.{which}.bias",
        )  # fmt: skip

    def drop(x):
        if is_test or dropout == 0:
            return x
        out, _ = ops.dropout(x, dropout_prob=dropout, dropout_implementation="upscale_in_train")
        return out

    def attention_block(x):
        y = multi_head_attention(
            x, x, x, d_model, nhead, dropout=dropout, attn_mask=src_mask,
            key_padding_mask=src_key_padding_mask, is_causal=is_causal, is_test=is_test,
            name=f"{prefix}.self_attn",
        )  # fmt: skip
        return drop(y)

    def feed_forward(x):
        h = ACTIVATIONS[activation](linear(x, dim_feedforward, name=f"{prefix}.linear1"))
        return drop(linear(drop(h), d_model, name=f"{prefix}.linear2"))

    x = src
    if norm_first:
        x = ops.add(x, attention_block(norm(x, "norm1")))
        return ops.add(x, feed_forward(norm(x, "norm2")))
    x = norm(ops.add(x, attention_block(x)), "norm1")
    return norm(ops.add(x, feed_forward(x)), "norm2")


# -- learning-rate schedules: ops fed by a step counter -------------------------------------


@model_method
def step_counter(name: str = "@step_counter") -> Variable:
    """A persistable float32 [1] counter of training steps: 0 before the first, incremented at
    the start of every run of the training program (an "optimize" op, so evaluation programs
    leave it alone). One per program; later calls return it."""
    program = default_main_program()
    block = program.global_block()
    counter = block.vars.get(name)
    if counter is not None:
        return counter
    counter = block.create_var(name, [1], "float32", persistable=True)
    _initialize(counter, Initializer("fill_constant", value=-1.0))
    with program.role_guard("optimize"):
        block.prepend_op("scale", {"x": counter}, {"out": counter}, {"bias": 1.0})
    return counter


def _initialize(var: Variable, initializer: Initializer) -> None:
    append_initializer(var, initializer, default_startup_program().global_block())


@model_method
def piecewise_decay(boundaries: Sequence[int], values: Sequence[float]) -> Variable:
    """values[i] from step boundaries[i - 1] on (values[0] before boundaries[0])."""
    if len(values) != len(boundaries) + 1:
        raise ProgramError("piecewise_decay: values must have one more entry than boundaries")
    for b in boundaries:
        if isinstance(b, bool) or not isinstance(b, Integral) or b < 0:
            raise ProgramError(f"piecewise_decay: boundaries are steps (ints >= 0), got {b!r}")
    if any(a >= b for a, b in pairwise(boundaries)):
        raise ProgramError(f"piecewise_decay: boundaries must increase, got {list(boundaries)}")
    step = step_counter()
    lr = ops.fill_constant(shape=[1], value=float(values[0]))
    for boundary, before, after in zip(boundaries, values, values[1:]):
        reached = ops.cast(ops.greater_equal(step, _constant(boundary)), dtype="float32")
        lr = ops.add(lr, ops.scale(reached, scale=float(after - before)))
    return lr


@model_method
def exponential_decay(
    learning_rate: float, decay_steps: int, decay_rate: float, staircase: bool = False
) -> Variable:
    """learning_rate * decay_rate ^ (step / decay_steps) (the exponent floored: staircase)."""
    decay_steps = _count(decay_steps, "decay_steps", "exponential_decay")
    exponent = ops.scale(step_counter(), scale=1.0 / decay_steps)
    if staircase:
        exponent = ops.cast(ops.cast(exponent, dtype="int64"), dtype="float32")
    return ops.scale(ops.pow(_constant(decay_rate), exponent), scale=float(learning_rate))


@model_method
def cosine_decay(learning_rate: float, step_each_epoch: int, epochs: int) -> Variable:
    """learning_rate * (cos(pi * epoch / epochs) + 1) / 2, epoch = floor(step / step_each_epoch)."""
    step_each_epoch = _count(step_each_epoch, "step_each_epoch", "cosine_decay")
    epochs = _count(epochs, "epochs", "cosine_decay")
    epoch = ops.cast(
        ops.cast(ops.scale(step_counter(), scale=1.0 / step_each_epoch), dtype="int64"),
        dtype="float32",
    )
    cosine = ops.cos(ops.scale(epoch, scale=math.pi / epochs))
    return ops.scale(cosine, scale=learning_rate / 2, bias=learning_rate / 2)


@model_method
def linear_lr_warmup(
    learning_rate: float | Variable, warmup_steps: int, start_lr: float, end_lr: float
) -> Variable:
    """From start_lr to end_lr linearly over the first warmup_steps, then ``learning_rate``."""
    warmup_steps = _count(warmup_steps, "warmup_steps", "linear_lr_warmup")
    step = step_counter()
    ramp = ops.scale(step, scale=(end_lr - start_lr) / warmup_steps, bias=start_lr)
    warming = ops.cast(ops.less(step, _constant(warmup_steps)), dtype="float32")
    after = learning_rate if isinstance(learning_rate, Variable) else _constant(learning_rate)
    # warming * ramp + (1 - warming) * after
    return ops.add(ops.mul(warming, ops.sub(ramp, after)), after)


def _constant(value: float) -> Variable:
    return ops.fill_constant(shape=[1], value=float(value))
