"""ONNX node cases through paddle_core's public API: the adapter table and the runner.

The `onnx` wheel builds its node test cases in memory (`collect_testcases`): a model with one
node, its inputs and its expected outputs. `TABLE` says, for each ONNX op type whose op we
provide, how to express the node with ours: the op, which ONNX inputs are our tensors, which
are folded into our attrs (ours are static: a case's `axes`, `shape`, Clip `min`... inputs are
known when the program is built), and how each ONNX attr translates. An ONNX attr or input the
entry does not name is a gap, never silently dropped.

`run_case` builds a one-op program from data variables of the case's exact shapes and dtypes,
runs it on a shared CPU Executor and compares with ONNX's tolerances and exact dtypes. Outcomes:
pass; wrong (ours differs); gap (we cannot run it; the reason is our error's first line); n/a
(only for a reason written here: `NOT_APPLICABLE` per case, `Op.na` per op type). Where ONNX
asks for more outputs than we give, the ones we give are still compared: wrong beats gap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

import paddle_core as pc

PASS, WRONG, GAP, NA = "pass", "wrong", "gap", "n/a"


class Gap(Exception):
    """The adapter cannot express the node with our ops (an attr or input we lack)."""


# ---- converters: an ONNX attr's value (or a folded input's) -> our attrs, or Gap -----------


def to(name: str, convert: Callable[[Any], Any] = lambda v: v) -> Callable[[Any], dict]:
    """Rename (and convert) one attr."""
    return lambda v: {name: convert(v)}


def only(*accepted: Any) -> Callable[[Any], dict]:
    """An ONNX attr we support only at the given values (its other values are gaps)."""

    def check(v: Any) -> dict:
        if v not in accepted:
            raise Gap(f"{v!r} unsupported (only {', '.join(map(repr, accepted))})")
        return {}

    return check


def ignore(v: Any) -> dict:
    """An ONNX attr implied by the inputs (kernel_shape) or without effect here: no attr."""
    return {}


def ints(v: Any) -> list[int]:
    return [int(i) for i in np.asarray(v).reshape(-1)]


def scalar(v: Any) -> float:
    return float(np.asarray(v).reshape(-1)[0])


def pads(v: list[int]) -> dict:
    """ONNX [top, left, bottom, right] -> our paddings [top, bottom, left, right]."""
    if len(v) != 4:
        raise Gap(f"{len(v) // 2}-D pads unsupported (2-D only)")
    return {"paddings": [v[0], v[2], v[1], v[3]]}


def dtype(v: int) -> str:
    """A TensorProto element type -> our dtype name (NumPy's)."""
    return str(helper.tensor_dtype_to_np_dtype(v))


def fill_value(v: onnx.TensorProto) -> dict:
    value = numpy_helper.to_array(v)
    return {"value": float(value.reshape(-1)[0]), "dtype": str(value.dtype)}


keepdim = to("keepdim", bool)
auto_pad = only("NOTSET", "VALID")


# ---- the table ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """How one ONNX op type is expressed with ours."""

    op: str  # our op (pc.ops.<op>), or the name of a composition in COMPOSED
    inputs: tuple[int, ...] = (0,)  # ONNX input positions passed as our tensors, in our order
    variadic: bool = False  # all ONNX inputs go as one list (concat, add_n)
    attrs: dict[str, Callable[[Any], dict]] = field(default_factory=dict)  # ONNX attr -> ours
    folded: dict[int, Callable[[Any], dict]] = field(default_factory=dict)  # input -> our attrs
    defaults: dict[str, Any] = field(default_factory=dict)  # ONNX defaults that differ from ours
    fixed: dict[str, Any] = field(default_factory=dict)  # our attrs always set
    outputs: tuple[int, ...] = (0,)  # our outputs giving ONNX's, in order (empty: all)
    count_outputs: str = ""  # our attr given the number of ONNX outputs, when no other attr is
    rank_axis: str = ""  # our attr that takes ONNX's negative axis counted from x's rank
    complete: Callable[[dict], dict] | None = None  # our attrs derived from the others (defaults)
    na: str = ""  # why every case of this op type is not applicable (an op we do not provide)


def unary(op: str) -> Op:
    return Op(op)


def binary(op: str) -> Op:
    return Op(op, inputs=(0, 1))


def reduce(op: str) -> Op:
    """ReduceX: axes an attr, or input 1 from opset 13 (ReduceSum) or 18 (the others)."""
    return Op(
        op,
        attrs={
            "axes": to("axes"),
            "keepdims": keepdim,
            "noop_with_empty_axes": to("noop_with_empty_axes", bool),
        },
        folded={1: to("axes", ints)},
        defaults={"keepdims": 1},
    )


def arg(op: str) -> Op:
    return Op(
        op,
        attrs={
            "axis": to("axis"),
            "keepdims": keepdim,
            "select_last_index": to("select_last_index", bool),
        },
        defaults={"axis": 0, "keepdims": 1},
    )


def pool(kind: str) -> Op:
    return Op(
        "pool2d",
        attrs={
            "kernel_shape": to("ksize"),
            "strides": to("strides"),
            "pads": pads,
            "ceil_mode": to("ceil_mode", bool),
            "count_include_pad": lambda v: {"exclusive": not v},
            "auto_pad": auto_pad,
            "dilations": only([1, 1]),
            "storage_order": only(0),
        },
        fixed={"pooling_type": kind},
    )


def conv(op: str) -> Op:
    return Op(
        op,
        inputs=(0, 1, 2),
        attrs={
            "kernel_shape": ignore,
            "strides": to("strides"),
            "pads": pads,
            "dilations": to("dilations"),
            "group": to("groups"),
            "auto_pad": auto_pad,
            "output_shape": to("output_size"),
        },
    )


def softmax(op: str) -> Op:
    return Op(op, attrs={"axis": to("axis")})


# ONNX's Adam and Momentum are its preview training domain (ai.onnx.preview.training: a step
# count T, norm_coefficient, many tensors a node); our adam and momentum are Paddle's optimizer
# steps (beta-power accumulators), which we provide instead of that domain.
TRAINING_OP = "ai.onnx.preview.training: we provide Paddle's optimizer steps, not this domain"

TABLE: dict[str, Op] = {
    "Abs": unary("abs"),
    "Adam": Op("adam", na=TRAINING_OP),
    "Add": binary("add"),
    "And": binary("logical_and"),
    "ArgMax": arg("argmax"),
    "ArgMin": arg("argmin"),
    "AveragePool": pool("avg"),
    "BatchNormalization": Op(
        "batch_norm",
        inputs=(0, 1, 2, 3, 4),
        attrs={
            "epsilon": to("epsilon"),
            "momentum": to("momentum"),
            "training_mode": lambda v: {"is_test": not v},
        },
        fixed={"is_test": True},
        outputs=(0, 1, 2),  # y; in training, the running mean and variance
    ),
    "Cast": Op(
        "cast", attrs={"to": to("dtype", dtype), "saturate": only(1), "round_mode": only("up")}
    ),
    "CastLike": Op(
        "cast",
        folded={1: lambda v: {"dtype": str(v.dtype)}},
        attrs={"saturate": only(1), "round_mode": only("up")},
    ),
    "Ceil": unary("ceil"),
    "Clip": Op("clip", folded={1: to("min", scalar), 2: to("max", scalar)}),
    "Concat": Op("concat", variadic=True, attrs={"axis": to("axis")}),
    "ConstantOfShape": Op(
        "fill_constant", inputs=(), folded={0: to("shape", ints)}, attrs={"value": fill_value}
    ),
    "Conv": conv("conv2d"),
    "ConvTranspose": conv("conv2d_transpose"),
    "Cos": unary("cos"),
    "CumSum": Op(
        "cumsum",
        folded={1: lambda v: {"axis": int(scalar(v))}},
        attrs={"exclusive": to("exclusive", bool), "reverse": to("reverse", bool)},
    ),
    "Div": binary("div"),
    "Dropout": Op(
        "dropout",
        attrs={"seed": ignore, "ratio": to("dropout_prob")},
        folded={1: to("dropout_prob", scalar), 2: lambda v: {"is_test": not bool(v)}},
        fixed={"is_test": True, "dropout_implementation": "upscale_in_train"},
    ),
    "Einsum": Op("einsum", variadic=True, attrs={"equation": to("equation")}),
    "Elu": Op("elu", attrs={"alpha": to("alpha")}),
    "Equal": binary("equal"),
    "Erf": unary("erf"),
    "Exp": unary("exp"),
    "Expand": Op("expand", folded={1: to("shape", ints)}),
    "Floor": unary("floor"),
    "Gather": Op("gather", inputs=(0, 1), attrs={"axis": to("axis")}),
    "GatherND": Op("gather_nd", inputs=(0, 1), attrs={"batch_dims": to("batch_dims")}),
    "Gelu": Op("gelu", attrs={"approximate": lambda v: {"approximate": v == "tanh"}}),
    "Gemm": Op(
        "gemm",
        inputs=(0, 1, 2),
        attrs={
            "alpha": to("alpha"),
            "beta": to("beta"),
            "transA": to("transpose_x", bool),
            "transB": to("transpose_y", bool),
        },
    ),
    "GlobalAveragePool": Op("pool2d", fixed={"pooling_type": "avg", "global_pooling": True}),
    "GlobalMaxPool": Op("pool2d", fixed={"pooling_type": "max", "global_pooling": True}),
    "Greater": binary("greater"),
    "GreaterOrEqual": binary("greater_equal"),
    "Identity": unary("assign"),
    "IsInf": Op("isinf", attrs={"detect_negative": only(1), "detect_positive": only(1)}),
    "IsNaN": unary("isnan"),
    "LayerNormalization": Op(
        "layer_norm",
        inputs=(0, 1, 2),
        attrs={"axis": to("begin_norm_axis"), "epsilon": to("epsilon"), "stash_type": only(1)},
        defaults={"axis": -1},
        rank_axis="begin_norm_axis",
    ),
    "LeakyRelu": Op("leaky_relu", attrs={"alpha": to("alpha")}, defaults={"alpha": 0.01}),
    "Less": binary("less"),
    "LessOrEqual": binary("less_equal"),
    "Log": unary("log"),
    "LogSoftmax": softmax("log_softmax"),
    "MatMul": binary("matmul"),
    "Max": Op("maximum_n", variadic=True),
    "MaxPool": pool("max"),
    "Mean": Op("mean_n", variadic=True),
    "Min": Op("minimum_n", variadic=True),
    "Mod": Op("mod", inputs=(0, 1), attrs={"fmod": only(0)}),  # fmod=1 is C's fmod: a gap
    "Momentum": Op("momentum", na=TRAINING_OP),
    "Mul": binary("mul"),
    "Neg": unary("neg"),
    "Not": unary("logical_not"),
    "Or": binary("logical_or"),
    "Pad": Op(
        "onnx_pad",
        folded={1: to("onnx_pads", ints), 2: to("value", scalar), 3: to("onnx_axes", ints)},
        attrs={"mode": to("mode")},
    ),
    "Pow": binary("pow"),
    "Range": Op(
        "range",
        inputs=(),
        folded={
            0: lambda v: {"start": scalar(v), "dtype": str(np.asarray(v).dtype)},
            1: to("limit", scalar),
            2: to("delta", scalar),
        },
    ),
    "ReduceMax": reduce("max"),
    "ReduceMean": reduce("mean"),
    "ReduceMin": reduce("min"),
    "ReduceProd": reduce("prod"),
    "ReduceSum": reduce("sum"),
    "Relu": unary("relu"),
    "Reshape": Op(
        "reshape", folded={1: to("shape", ints)}, attrs={"allowzero": to("allowzero", bool)}
    ),
    "Round": unary("round"),
    # Scatter is ScatterElements before opset 11 (without reduction).
    "Scatter": Op("scatter", inputs=(0, 1, 2), attrs={"axis": to("axis")}),
    "ScatterElements": Op(
        "scatter", inputs=(0, 1, 2), attrs={"axis": to("axis"), "reduction": to("reduction")}
    ),
    "ScatterND": Op("scatter_nd", inputs=(0, 1, 2), attrs={"reduction": to("reduction")}),
    "Shape": Op("shape", attrs={"start": to("start"), "end": to("end")}),
    "Sigmoid": unary("sigmoid"),
    "Sign": unary("sign"),
    "Sin": unary("sin"),
    "Size": unary("size"),
    "Slice": Op(
        "slice",
        folded={
            1: to("starts", ints),
            2: to("ends", ints),
            3: to("axes", ints),
            4: to("steps", ints),
        },
        attrs={"starts": to("starts"), "ends": to("ends"), "axes": to("axes")},
        complete=lambda a: {} if "axes" in a else {"axes": list(range(len(a["starts"])))},
    ),
    "Softmax": softmax("softmax"),
    "SoftmaxCrossEntropyLoss": Op(
        "softmax_cross_entropy_loss",
        inputs=(0, 1),
        attrs={"reduction": to("reduction"), "ignore_index": to("ignore_index")},
        outputs=(),
    ),
    "Softplus": unary("softplus"),
    "Split": Op(
        "split",
        attrs={
            "axis": to("axis"),
            "split": to("sections"),
            "num_outputs": to("num"),
        },
        folded={1: to("sections", ints)},
        outputs=(),
        count_outputs="num",
    ),
    "Sqrt": unary("sqrt"),
    "Squeeze": Op("squeeze", folded={1: to("axes", ints)}, attrs={"axes": to("axes")}),
    "Sub": binary("sub"),
    "Sum": Op("add_n", variadic=True),
    "Swish": Op("silu", attrs={"alpha": only(1.0)}),
    "Tanh": unary("tanh"),
    "Tile": Op("tile", folded={1: to("repeat_times", ints)}),
    "TopK": Op(
        "topk",
        folded={1: lambda v: {"k": int(scalar(v))}},
        attrs={"axis": to("axis"), "largest": to("largest", bool), "sorted": to("sorted", bool)},
        outputs=(),
    ),
    "Transpose": Op("transpose", attrs={"perm": to("perm")}),
    "Unsqueeze": Op("unsqueeze", folded={1: to("axes", ints)}, attrs={"axes": to("axes")}),
    "Where": Op("where", inputs=(0, 1, 2)),
    "Xor": binary("logical_xor"),
}


# Compositions: ONNX ops that are a few of ours (ONNX's own function bodies, in short).
def _gemm(a, b, c=None, *, alpha=1.0, beta=1.0, transpose_x=False, transpose_y=False):
    out = pc.ops.matmul(a, b, transpose_x=transpose_x, transpose_y=transpose_y)
    out = pc.ops.scale(out, scale=alpha) if alpha != 1.0 else out
    if c is None:
        return out
    return pc.ops.add(out, pc.ops.scale(c, scale=beta) if beta != 1.0 else c)


def _fold(op: str) -> Callable[[list], Any]:
    def run(xs: list) -> Any:
        out = xs[0] if len(xs) > 1 else pc.ops.assign(xs[0])
        for x in xs[1:]:
            out = getattr(pc.ops, op)(out, x)
        return out

    return run


def _softmax_cross_entropy_loss(x, label, *, reduction="mean", ignore_index=None):
    """ONNX's loss from logits [N, C, ...] and labels [N, ...]; (loss, log_prob)."""
    if reduction == "mean" and ignore_index is not None:
        raise Gap("ignore_index with reduction 'mean' (ONNX averages over the kept labels)")
    attrs = {} if ignore_index is None else {"ignore_index": ignore_index}
    _, loss = pc.ops.softmax_with_cross_entropy(x, label, axis=1, **attrs)
    loss = pc.ops.squeeze(loss, axes=[1])
    reduced = {"none": loss, "sum": pc.ops.sum(loss), "mean": pc.ops.mean(loss)}[reduction]
    return reduced, pc.ops.log_softmax(x, axis=1)


def _onnx_pad(x, *, onnx_pads, onnx_axes=None, value=0.0, mode="constant"):
    """ONNX's pads [begin_0, begin_1, ..., end_0, end_1, ...] (over axes, when given) as our
    paddings [before_0, after_0, before_1, after_1, ...] over every axis."""
    axes = [a % x.ndim for a in onnx_axes] if onnx_axes is not None else list(range(x.ndim))
    paddings = [0] * (2 * x.ndim)
    for k, axis in enumerate(axes):
        paddings[2 * axis], paddings[2 * axis + 1] = onnx_pads[k], onnx_pads[k + len(axes)]
    return pc.ops.pad(x, paddings=paddings, value=value, mode=mode)


COMPOSED: dict[str, Callable[..., Any]] = {
    "onnx_pad": _onnx_pad,
    "softmax_cross_entropy_loss": _softmax_cross_entropy_loss,
    "gemm": _gemm,
    "maximum_n": _fold("maximum"),
    "minimum_n": _fold("minimum"),
    "mean_n": lambda xs: pc.ops.scale(pc.ops.add_n(xs), scale=1.0 / len(xs)),
}

# Cases not applicable, each for a reason: a semantic choice of ours or an ONNX feature we
# deliberately do not provide. Keys are case names or name prefixes ending in '*'.
NOT_APPLICABLE: dict[str, str] = {
    "test_cumsum_2d_int32": "cumsum of int32 is int64, as in NumPy and PyTorch (scan.pbtxt)",
    "test_cumsum_1d_int32_exclusive": "cumsum of int32 is int64, as in NumPy and PyTorch",
    # ONNX's Div truncates integer quotients toward 0; ours is NumPy's floor division.
    "test_div_int32_trunc": "div of integers is NumPy's floor division x // y (elementwise.pbtxt)",
    # A variable is one dense tensor (framework.proto's VarDesc: a dtype and a shape).
    "test_identity_sequence": "a sequence value: our variables are tensors",
    "test_identity_opt": "an optional value: our variables are tensors",
    # ONNX's expected output is one draw of NumPy's generator; ours draws its own mask.
    "test_training_dropout": "a random mask: NumPy's draw, not a property of dropout",
    "test_training_dropout_mask": "a random mask: NumPy's draw, not a property of dropout",
    "test_training_dropout_default": "a random mask: NumPy's draw, not a property of dropout",
    "test_training_dropout_default_mask": "a random mask: NumPy's draw, not a property of dropout",
}


# ---- the runner ---------------------------------------------------------------------------


@dataclass
class Outcome:
    case: str  # the ONNX case name (test_...)
    op_type: str  # its ONNX op type
    status: str  # PASS, WRONG, GAP or NA
    reason: str = ""  # why (gap, n/a) or how ours differs (wrong)


def node_cases(cases: list) -> list:
    """The single-node cases of `collect_testcases` whose op type the table covers."""
    return [
        c
        for c in cases
        if c.model is not None
        and len(c.model.graph.node) == 1
        and c.model.graph.node[0].op_type in TABLE
    ]


def matches(key: str, name: str) -> bool:
    """A NOT_APPLICABLE key matches the case name (itself, or a prefix ending in '*')."""
    return name == key or (key.endswith("*") and name.startswith(key[:-1]))


def matches_any(key: str, names: set[str]) -> bool:
    return any(matches(key, name) for name in names)


def _not_applicable(name: str) -> str:
    return next((reason for key, reason in NOT_APPLICABLE.items() if matches(key, name)), "")


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    text = text.split(" (plugin ")[0]  # the plugin's version is no part of the reason
    return f"{type(e).__name__}: {text}"[:160]


def _our_attrs(spec: Op, node: onnx.NodeProto, values: dict[str, Any]) -> dict[str, Any]:
    attrs = dict(spec.defaults)
    attrs.update({a.name: helper.get_attribute_value(a) for a in node.attribute})
    ours = dict(spec.fixed)
    for name, value in attrs.items():
        if name not in spec.attrs:
            raise Gap(f"attr {name} unsupported")
        value = value.decode() if isinstance(value, bytes) else value
        try:
            ours.update(spec.attrs[name](value))
        except Gap as e:
            raise Gap(f"attr {name}: {e}") from None
    for pos, name in enumerate(node.input):
        if name and pos in spec.folded:
            ours.update(spec.folded[pos](values[name]))
        elif name and not spec.variadic and pos not in spec.inputs:
            raise Gap(f"input {pos} ({name}) unsupported")
    return ours


def as_array(value: Any) -> np.ndarray:
    """A case's input or output as an array (TensorProto, NumPy scalar); Gap for a sequence
    or an optional, which our ops do not take."""
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    raise Gap(f"a {type(value).__name__} value, not a tensor")


def build(spec: Op, node: onnx.NodeProto, values: dict[str, Any]) -> tuple[list, dict]:
    """Append the node's ops to the current program: (our output variables, feed)."""
    attrs = _our_attrs(spec, node, values)
    if spec.count_outputs and not ({"num", "sections"} & attrs.keys()):
        attrs[spec.count_outputs] = len(node.output)
    if spec.rank_axis in attrs and attrs[spec.rank_axis] < 0:
        attrs[spec.rank_axis] += values[node.input[0]].ndim
    if spec.complete:
        attrs.update(spec.complete(attrs))
    feed, tensors = {}, []
    for pos, name in enumerate(node.input):
        if name and (spec.variadic or pos in spec.inputs):
            feed[name] = values[name]
    for pos in range(len(node.input)) if spec.variadic else spec.inputs:
        name = node.input[pos] if pos < len(node.input) else ""
        v = values.get(name) if name else None
        tensors.append(None if v is None else pc.data(name, list(v.shape), str(v.dtype)))
    while tensors and tensors[-1] is None:  # trailing optional inputs left out
        tensors.pop()
    args = [tensors] if spec.variadic else tensors
    fn = COMPOSED.get(spec.op) or getattr(pc.ops, spec.op)
    out = fn(*args, **attrs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    picked = outs if not spec.outputs else [outs[i] for i in spec.outputs]
    return picked, feed


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    """'' when got matches want (dtype, shape, values within tolerance), else how it differs."""
    got = np.asarray(got)
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype.kind in "fc" or want.dtype.name == "bfloat16":  # (ml_dtypes': kind "V")
        f64 = np.float64
        ok = np.isclose(got.astype(f64), want.astype(f64), rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = got == want
    if ok.all():
        return ""
    i = np.argwhere(~ok)[0]
    return f"{(~ok).sum()} of {ok.size} differ, e.g. at {i.tolist()}: {got[tuple(i)]!r} vs {want[tuple(i)]!r}"


def run_case(case: Any, exe: pc.Executor) -> Outcome:
    """Run one ONNX node case through the public API."""
    node = case.model.graph.node[0]
    reason = TABLE[node.op_type].na or _not_applicable(case.name)
    if reason:
        return Outcome(case.name, node.op_type, NA, reason)
    inputs, expected = case.data_sets[0]
    names = [i.name for i in case.model.graph.input]
    prog = pc.Program()
    try:
        values = {name: as_array(v) for name, v in zip(names, inputs)}
        expected = [as_array(v) for v in expected]
        with pc.program_guard(prog):
            outs, feed = build(TABLE[node.op_type], node, values)
        got = exe.run(prog, feed=feed, fetch_list=outs)
    except Exception as e:  # every failure to run is a gap, with our error's reason
        return Outcome(case.name, node.op_type, GAP, _first_line(e))
    for i, (g, w) in enumerate(zip(got, expected)):
        diff = compare(g, w, case.rtol, case.atol)
        if diff:
            return Outcome(case.name, node.op_type, WRONG, f"output {i}: {diff}")
    if len(expected) > len(got):  # the outputs we give are right; ONNX asks for more
        missing = f"output {len(got)} ({case.model.graph.output[len(got)].name}) unsupported"
        return Outcome(case.name, node.op_type, GAP, f"Gap: {missing}")
    return Outcome(case.name, node.op_type, PASS)
