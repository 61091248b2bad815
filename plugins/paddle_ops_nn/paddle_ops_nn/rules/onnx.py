"""ONNX mappings that need code (the manifests name these functions; each gets a pc.onnx.Node).

An import rule appends our ops for one node and returns the node's outputs; an attr rule turns
one ONNX attribute into our attrs.
"""

from __future__ import annotations

import numpy as np

import paddle_core as pc


def pads(value: list[int], node) -> dict:
    """ONNX's 2-D pads [top, left, bottom, right] -> our paddings [top, bottom, left, right]."""
    if len(value) != 4:
        raise node.error(f"{len(value) // 2}-D pads {value} are not supported (2-D only)")
    return {"paddings": [value[0], value[2], value[1], value[3]]}


def count_include_pad(value: int, node) -> dict:
    return {"exclusive": not value}


def training_mode(value: int, node) -> dict:
    return {"is_test": not value}


def gelu_approximate(value: str, node) -> dict:
    if value not in ("none", "tanh"):
        raise node.error(f"attribute 'approximate' must be 'none' or 'tanh', got {value!r}")
    return {"approximate": value == "tanh"}


def dropout(node) -> list:
    """Dropout: the ratio an attr before opset 12, then input 1; training_mode input 2."""
    ratio = node.attrs.get("ratio", 0.5)
    if node.has_input(1):
        ratio = float(_constant(node, 1).reshape(-1)[0])
    training = bool(_constant(node, 2).reshape(-1)[0]) if node.has_input(2) else False
    out, mask = pc.ops.dropout(
        node.input(0),
        dropout_prob=ratio,
        is_test=not training,
        dropout_implementation="upscale_in_train",
    )
    return [out, pc.ops.cast(mask, dtype="bool")]


def layer_norm(node) -> list:
    """LayerNormalization: ONNX's axis may be negative; ours counts from the front."""
    axis = node.attrs.get("axis", -1)
    rank = len(node.shape(0))
    y, _, _ = pc.ops.layer_norm(
        node.input(0),
        node.input(1),
        node.input(2),
        begin_norm_axis=axis + rank if axis < 0 else axis,
        epsilon=node.attrs.get("epsilon", 1e-5),
    )
    return [y]


def softmax_cross_entropy_loss(node) -> list:
    """ONNX's loss from logits [N, C, ...] and labels [N, ...]: (loss, log_prob)."""
    reduction = node.attrs.get("reduction", "mean")
    ignore_index = node.attrs.get("ignore_index")
    if node.has_input(2):
        raise node.error("class weights (input 2) are not supported")
    if reduction == "mean" and ignore_index is not None:
        raise node.error("ignore_index with reduction 'mean' is not supported")
    x = node.input(0)
    attrs = {} if ignore_index is None else {"ignore_index": ignore_index}
    _, loss = pc.ops.softmax_with_cross_entropy(x, node.input(1), axis=1, **attrs)
    loss = pc.ops.squeeze(loss, axes=[1])
    if reduction == "sum":
        loss = pc.ops.sum(loss)
    elif reduction == "mean":
        loss = pc.ops.mean(loss)
    elif reduction != "none":
        raise node.error(f"reduction {reduction!r} is not one of 'none', 'sum', 'mean'")
    return [loss, pc.ops.log_softmax(x, axis=1)]


def _constant(node, i: int):
    value = node.constant(i)
    if value is None:
        raise node.error(f"input {i} must be a constant (an initializer or computed from them)")
    return value


# ---- export: our attrs -> ONNX attributes, and ops written as ONNX nodes -------------------


def pads_out(attrs: dict) -> list[int]:
    """Our paddings [top, bottom, left, right] (or [h, w]) -> ONNX's [top, left, bottom, right]."""
    p = list(attrs["paddings"])
    if len(p) == 2:
        p = [p[0], p[0], p[1], p[1]]
    return [p[0], p[2], p[1], p[3]]


def count_include_pad_out(attrs: dict) -> int:
    return int(not attrs["exclusive"])


def training_mode_out(attrs: dict) -> None:
    return None  # inference (is_test: the mapping's fixed attr): ONNX's default


def gelu_approximate_out(attrs: dict) -> str:
    return "tanh" if attrs["approximate"] else "none"


def relu6_out(op) -> None:
    """relu6 (threshold t): Clip(x, 0, t), as PyTorch writes it."""
    x = op.input("x")
    dtype = op.dtype(x)
    low, high = op.constant(0.0, dtype), op.constant(op.attrs["threshold"], dtype)
    op.node("Clip", [x, low, high], [op.output("out")])


def dropout_out(op) -> None:
    """Dropout at inference is the identity (upscale_in_train); training dropout is not
    written (export clones the program for test)."""
    if not op.attrs["is_test"]:
        raise op.error("a training dropout is not exported (clone the program for test)")
    if op.attrs.get("dropout_implementation") != "upscale_in_train":
        scale = 1.0 - op.attrs["dropout_prob"]  # downgrade_in_infer: x * (1 - p)
        factor = op.constant(scale, op.dtype(op.input("x")))
        op.node("Mul", [op.input("x"), factor], [op.output("out")])
        return
    op.node("Identity", [op.input("x")], [op.output("out")])


def layer_norm_out(op) -> None:
    op.node(
        "LayerNormalization",
        [op.input("x"), op.input("scale"), op.input("bias")],
        [op.output("y")],
        axis=op.attrs["begin_norm_axis"],
        epsilon=op.attrs["epsilon"],
    )


# ---- recurrent networks: ONNX's LSTM and GRU, one layer a node ----------------------------

# ONNX's gate blocks, in the order of ours (PyTorch's): LSTM i, o, f, c -> i, f, c, o; GRU
# z, r, h -> r, z, h.
_GATES = {"LSTM": [0, 2, 3, 1], "GRU": [1, 0, 2]}


def lstm(node) -> list:
    return _recurrent(node, pc.ops.lstm, states=2)


def gru(node) -> list:
    if not node.attrs.get("linear_before_reset", 0):
        raise node.error("linear_before_reset = 0 is not supported (ours is PyTorch's GRU: 1)")
    return _recurrent(node, pc.ops.gru, states=1)


def _recurrent(node, op, states: int) -> list:
    """One ONNX LSTM or GRU node: its weights reordered into ours (kept trainable), the
    sequences time-major, Y as ONNX lays it out: [T, D, B, H] ([B, T, D, H] with layout 1)."""
    a = node.attrs
    direction = a.get("direction", "forward")
    if direction not in ("forward", "bidirectional"):
        raise node.error(f"direction {direction!r} is not supported (forward, bidirectional)")
    if node.has_input(7 if states == 2 else 6):
        raise node.error("peepholes (input P) are not supported")
    default = ["Sigmoid", "Tanh", "Tanh"] if states == 2 else ["Sigmoid", "Tanh"]
    if (
        a.get("activations", default * (2 if direction == "bidirectional" else 1))[: len(default)]
        != default
    ):
        raise node.error(f"activations {a['activations']} are not supported (only {default})")
    if "clip" in a or a.get("input_forget", 0):
        raise node.error("clip and input_forget are not supported")
    hidden, layout = a["hidden_size"], a.get("layout", 0)
    gates = _GATES[node.op_type]
    w, r = _constant(node, 1), _constant(node, 2)
    dirs = w.shape[0]
    b = (
        _constant(node, 3)
        if node.has_input(3)
        else np.zeros((dirs, 2 * len(gates) * hidden), w.dtype)
    )

    def ours(array, name: str):
        parts = np.split(array, len(gates))  # along the first axis: one block a gate
        return node.parameter(np.concatenate([parts[g] for g in gates]), name)

    weights = {"weight_ih": [], "weight_hh": [], "bias_ih": [], "bias_hh": []}
    for d in range(dirs):
        b_ih, b_hh = np.split(b[d], 2)
        for slot, value in (
            ("weight_ih", w[d]),
            ("weight_hh", r[d]),
            ("bias_ih", b_ih),
            ("bias_hh", b_hh),
        ):
            weights[slot].append(ours(value, f"{slot}_{d}"))
    x = node.input(0)
    if layout:  # [B, T, I] -> time-major
        x = pc.ops.transpose(x, perm=[1, 0, 2])
    initial = {}
    for i, name in enumerate(["h0", "c0"][:states]):
        position = 5 + i
        if node.has_input(position):
            h = node.input(position)
            initial[name] = pc.ops.transpose(h, perm=[1, 0, 2]) if layout else h
    if node.has_input(4):
        initial["sequence_length"] = node.input(4)
    results = op(
        x,
        weights["weight_ih"],
        weights["weight_hh"],
        weights["bias_ih"],
        weights["bias_hh"],
        hidden_size=hidden,
        bidirectional=direction == "bidirectional",
        **initial,
    )
    out, finals = results[0], list(results[1 : 1 + states])
    y = None
    if node.outputs and node.outputs[0]:
        steps = pc.ops.reshape(out, shape=[0, 0, dirs, hidden])  # [T, B, D, H]
        y = pc.ops.transpose(steps, perm=[1, 0, 2, 3] if layout else [0, 2, 1, 3])
    if layout:
        finals = [pc.ops.transpose(f, perm=[1, 0, 2]) for f in finals]
    return [y, *finals]
