"""ONNX mappings that need code (the manifests name these functions; each gets a pc.onnx.Node).

An import rule appends our ops for one node and returns the node's outputs (Variables, or
arrays where the result is known now); an attr rule turns one ONNX attribute into our attrs.
The semantics are ONNX's: where an op of ours differs (integer Div floors here, truncates in
ONNX), the rule composes ONNX's result.
"""

from __future__ import annotations

import numpy as np

import paddle_core as pc


def cast_to(value: int, node) -> dict:
    """Cast's `to` (an ONNX element type) -> our dtype."""
    return {"dtype": pc.onnx.dtype_name(value, node)}


def cast_like(node) -> list:
    return [pc.ops.cast(node.input(0), dtype=node.dtype(1))]


def fill_value(value: np.ndarray, node) -> dict:
    """ConstantOfShape's one-element tensor -> our fill value and dtype."""
    if value.size != 1:
        raise node.error(f"attribute 'value' must hold one element, got {value.size}")
    return {"value": float(value.reshape(-1)[0]), "dtype": str(value.dtype)}


def div(node) -> list:
    """ONNX's Div: integer quotients truncate toward zero (ours floor, as NumPy's)."""
    x, y = node.input(0), node.input(1)
    q = pc.ops.div(x, y)
    if np.dtype(node.dtype(0)).kind not in "iu":
        return [q]
    # floor and truncation differ where the remainder is nonzero and the signs differ
    r = pc.ops.sub(x, pc.ops.mul(q, y))
    zero = pc.ops.fill_constant(shape=[], value=0.0, dtype=node.dtype(0))
    signs = pc.ops.logical_xor(pc.ops.less(x, zero), pc.ops.less(y, zero))
    off = pc.ops.logical_and(pc.ops.not_equal(r, zero), signs)
    return [pc.ops.add(q, pc.ops.cast(off, dtype=node.dtype(0)))]


def mod(node) -> list:
    """ONNX's Mod: fmod = 0 is NumPy's (the sign of y), fmod = 1 C's fmod (the sign of x)."""
    x, y = node.input(0), node.input(1)
    r = pc.ops.mod(x, y)
    if not node.attrs.get("fmod", 0):
        return [r]
    zero = pc.ops.fill_constant(shape=[], value=0.0, dtype=node.dtype(0))
    signs = pc.ops.logical_xor(pc.ops.less(r, zero), pc.ops.less(x, zero))
    off = pc.ops.logical_and(pc.ops.not_equal(r, zero), signs)
    return [pc.ops.where(off, pc.ops.sub(r, y), r)]


def expand(node) -> list:
    """Expand broadcasts both ways (a 1 in shape keeps x's dimension); ours takes the target
    shape: the broadcast of the two, -1 where x's dimension is known only at run time."""
    shape, dims = _ints(node, 1), node.shape(0)
    rank = max(len(shape), len(dims))
    shape, dims = [1] * (rank - len(shape)) + shape, [1] * (rank - len(dims)) + list(dims)
    target = []
    for want, have in zip(shape, dims):
        if want != 1:
            target.append(want)
        else:
            target.append(-1 if have is None else have)
    return [pc.ops.expand(node.input(0), shape=target)]


def expand_out(op) -> None:
    # our -1 keeps x's dimension: ONNX's 1 does (Expand broadcasts both ways)
    shape = op.constant([1 if d == -1 else d for d in op.attrs["shape"]], "int64")
    op.node("Expand", [op.input("x"), shape], [op.output("out")])


def flatten(node) -> list:
    """Flatten: a 2-D [prod(dims[:axis]), prod(dims[axis:])] (ours merges a range of axes)."""
    x, axis = node.input(0), node.attrs.get("axis", 1)
    rank = len(node.shape(0))
    axis = axis + rank if axis < 0 else axis
    if axis == 0:
        return [pc.ops.unsqueeze(pc.ops.flatten(x, start_axis=0), axes=[0])]
    if axis == rank:
        return [pc.ops.unsqueeze(pc.ops.flatten(x, start_axis=0), axes=[1])]
    merged = pc.ops.flatten(x, start_axis=axis) if axis < rank - 1 else x
    return [pc.ops.flatten(merged, start_axis=0, stop_axis=axis - 1) if axis > 1 else merged]


def gemm(node) -> list:
    """Gemm: alpha * A' B' + beta * C."""
    a = node.attrs
    out = pc.ops.matmul(
        node.input(0),
        node.input(1),
        transpose_x=bool(a.get("transA", 0)),
        transpose_y=bool(a.get("transB", 0)),
    )
    alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
    if alpha != 1.0:
        out = pc.ops.scale(out, scale=alpha)
    c = node.input(2)
    if c is None:
        return [out]
    return [pc.ops.add(out, pc.ops.scale(c, scale=beta) if beta != 1.0 else c)]


def _fold(op: str):
    def rule(node) -> list:
        xs = [node.input(i) for i in range(node.input_count)]
        out = xs[0] if len(xs) > 1 else pc.ops.assign(xs[0])
        for x in xs[1:]:
            out = getattr(pc.ops, op)(out, x)
        return [out]

    return rule


maximum_n = _fold("maximum")
minimum_n = _fold("minimum")


def mean_n(node) -> list:
    xs = [node.input(i) for i in range(node.input_count)]
    return [pc.ops.scale(pc.ops.add_n(xs), scale=1.0 / len(xs))]


def pad(node) -> list:
    """ONNX's pads [begin_0, begin_1, ..., end_0, end_1, ...] (over axes, when given) as our
    paddings [before_0, after_0, before_1, after_1, ...] over every axis."""
    x = node.input(0)
    rank = len(node.shape(0))
    pads = node.attrs.get("pads")
    if node.has_input(1):
        pads = [int(v) for v in _constant(node, 1)]
    value = float(_constant(node, 2).reshape(-1)[0]) if node.has_input(2) else 0.0
    value = float(node.attrs.get("value", value))
    axes = list(range(rank))
    if node.has_input(3):
        axes = [int(a) % rank for a in _constant(node, 3)]
    if pads is None or len(pads) != 2 * len(axes):
        raise node.error(f"pads must hold two values per padded axis, got {pads}")
    paddings = [0] * (2 * rank)
    for k, axis in enumerate(axes):
        paddings[2 * axis], paddings[2 * axis + 1] = pads[k], pads[k + len(axes)]
    mode = node.attrs.get("mode", "constant")
    return [pc.ops.pad(x, paddings=paddings, value=value, mode=mode)]


def range_(node) -> list:
    start, limit, delta = (_constant(node, i) for i in range(3))
    return [
        pc.ops.range(
            start=float(start),
            limit=float(limit),
            delta=float(delta),
            dtype=str(start.dtype),
        )
    ]


def shape(node) -> list:
    """Shape: known now when the input's shape is (then later nodes fold too)."""
    start, end = node.attrs.get("start", 0), node.attrs.get("end")
    dims = node.shape(0)
    if None not in dims:
        return [np.array(dims[start:end], dtype=np.int64)]
    attrs = {"start": start} if end is None else {"start": start, "end": end}
    return [pc.ops.shape(node.input(0), **attrs)]


def slice_(node) -> list:
    a = node.attrs
    if node.has_input(1):  # opset 10 on: inputs (steps and axes optional)
        starts, ends = (_ints(node, i) for i in (1, 2))
        axes = _ints(node, 3) if node.has_input(3) else list(range(len(starts)))
        steps = _ints(node, 4) if node.has_input(4) else []
    else:
        starts, ends = a["starts"], a["ends"]
        axes, steps = a.get("axes", list(range(len(starts)))), []
    return [pc.ops.slice(node.input(0), axes=axes, starts=starts, ends=ends, steps=steps)]


def split(node) -> list:
    a = node.attrs
    sections = _ints(node, 1) if node.has_input(1) else a.get("split")
    attrs = {"axis": a.get("axis", 0)}
    if sections:
        attrs["sections"] = sections
    else:
        attrs["num"] = a.get("num_outputs", len(node.outputs))
    return list(pc.ops.split(node.input(0), **attrs))


def _constant(node, i: int) -> np.ndarray:
    value = node.constant(i)
    if value is None:
        raise node.error(f"input {i} must be a constant (an initializer or computed from them)")
    return value


def _ints(node, i: int) -> list[int]:
    return [int(v) for v in _constant(node, i).reshape(-1)]


# ---- export: our attrs -> ONNX attributes, and ops written as ONNX nodes -------------------


def cast_to_out(attrs: dict) -> int:
    return pc.onnx.element_type(attrs["dtype"])


def div_out(op) -> None:
    """Our div floors integer quotients; ONNX's Div truncates: floats only."""
    x, y = op.input("x"), op.input("y")
    if np.dtype(op.dtype(x)).kind in "iu":
        raise op.error("integer division floors here and truncates in ONNX: not exported yet")
    op.node("Div", [x, y], [op.output("out")])


def _binary_out(onnx_op: str):
    def rule(op) -> None:
        op.node(onnx_op, [op.input("x"), op.input("y")], [op.output("out")])

    return rule


maximum_out = _binary_out("Max")
minimum_out = _binary_out("Min")


def flatten_out(op) -> None:
    """flatten(start_axis, stop_axis): ONNX's Flatten where it is one (axis 1 to the end of a
    tensor), else a Reshape to the output's shape."""
    x, out = op.input("x"), op.output("out")
    rank = len(op.shape(x))
    start, stop = op.attrs["start_axis"] % max(rank, 1), op.attrs["stop_axis"] % max(rank, 1)
    if start == 1 and stop == rank - 1:
        op.node("Flatten", [x], [out], axis=1)
        return
    _reshape_to(op, x, out)


def _reshape_to(op, x: str, out: str) -> None:
    shape = [-1 if d is None else d for d in op.shape(out)]
    if shape.count(-1) > 1:
        raise op.error(f"the output's shape {op.shape(out)} has more than one unknown dimension")
    op.node("Reshape", [x, op.constant(shape, "int64")], [out])


def matmul_out(op) -> None:
    """matmul: MatMul, its transposes a Transpose of the last two axes first, then Add for a
    bias."""
    operands = []
    for slot in ("x", "y"):
        name = op.input(slot)
        rank = len(op.shape(name))
        if op.attrs[f"transpose_{slot}"] and rank >= 2:
            perm = [*range(rank - 2), rank - 1, rank - 2]
            transposed = op.fresh(f"{name}_t")
            op.node("Transpose", [name], [transposed], perm=perm)
            name = transposed
        operands.append(name)
    bias, out = op.input("bias"), op.output("out")
    if not bias:
        op.node("MatMul", operands, [out])
        return
    product = op.fresh(f"{out}_product")
    op.node("MatMul", operands, [product])
    op.node("Add", [product, bias], [out])


def matmul_2d_out(op) -> None:
    """matmul_2d (x and y flattened to 2-D): Flatten or Reshape, MatMul, Reshape back."""
    x, y, out = op.input("x"), op.input("y"), op.output("out")
    xn, yn = op.attrs["x_num_col_dims"], op.attrs["y_num_col_dims"]
    x_shape, y_shape = op.shape(x), op.shape(y)
    if len(x_shape) != 2 or xn != 1:
        flat = op.fresh(f"{x}_2d")
        op.node("Flatten", [x], [flat], axis=xn)
        x = flat
    if len(y_shape) != 2 or yn != 1:
        if None in y_shape:
            raise op.error(f"y's shape {y_shape} must be known")
        rows = int(np.prod(y_shape[:yn]))
        flat = op.fresh(f"{y}_2d")
        op.node("Reshape", [y, op.constant([rows, -1], "int64")], [flat])
        y = flat
    if len(op.shape(out)) == 2:
        op.node("MatMul", [x, y], [out])
        return
    product = op.fresh(f"{out}_2d")
    op.node("MatMul", [x, y], [product])
    _reshape_to(op, product, out)


def slice_out(op) -> None:
    a = op.attrs
    inputs = [op.input("x")] + [op.constant(a[k], "int64") for k in ("starts", "ends", "axes")]
    if a.get("steps"):
        inputs.append(op.constant(a["steps"], "int64"))
    op.node("Slice", inputs, [op.output("out")])


def split_out(op) -> None:
    a = op.attrs
    outs = op.outputs["outs"]
    if a["sections"]:
        op.node("Split", [op.input("x"), op.constant(a["sections"], "int64")], outs, axis=a["axis"])
    else:
        op.node("Split", [op.input("x")], outs, axis=a["axis"], num_outputs=a["num"])
