"""A grad op's inputs are held to its forward op: out_grad (and out, where the grad op reads it)
must have the shape and dtype the forward op gives, and the forward inputs must fit the forward
op. Kernels index out_grad by the forward shapes, so a grad op called directly, or from a
hand-built or loaded program, with anything else would read memory it does not own.

One case per grad op of both plugins (a test checks none is missing; an op of one input x and
no required attr gets x float32 [3, 4] without being listed): the grad op appended with fitting
inputs works; each out / out_grad input of another shape, or of another dtype, is a ShapeError
naming the grad op."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc
from paddle_core._src.plugins.registry import get_registry

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

F4 = ("float32", [3, 4])
IMG = ("float32", [2, 3, 6, 6])


def rnn_weights(gates: int, inputs: int, hidden: int) -> dict:
    """One layer's weights of lstm (4 gates) or gru (3), one direction."""
    rows = gates * hidden
    shapes = {
        "weight_ih": [rows, inputs],
        "weight_hh": [rows, hidden],
        "bias_ih": [rows],
        "bias_hh": [rows],
    }
    return {slot: ("float32", shape) for slot, shape in shapes.items()}


# forward op -> (its inputs {slot: (dtype, shape)}, attrs), for the ops UNARY does not fit
LISTED = {
    **{op: ({"x": F4, "y": F4}, {}) for op in ("add", "sub", "mul", "div", "pow", "mod")},
    **{op: ({"x": F4, "y": F4}, {}) for op in ("maximum", "minimum")},
    **{op: ({"x": F4}, {"axes": [1]}) for op in ("sum", "mean", "max", "min", "prod")},
    "broadcast_to": ({"x": ("float32", [1, 4])}, {"shape": [3, 4]}),
    "clip": ({"x": F4}, {"min": -0.5, "max": 0.5}),
    "slice": ({"x": F4}, {"axes": [1], "starts": [1], "ends": [3]}),
    "tile": ({"x": F4}, {"repeat_times": [2, 1, 3]}),
    "stack": ({"xs": F4}, {"axis": -1}),
    "gather": ({"x": F4, "index": ("int64", [2, 5])}, {"axis": 1}),
    "gather_nd": ({"x": F4, "index": ("int64", [5, 1])}, {}),
    "scatter": ({"x": F4, "index": ("int64", [2, 4]), "updates": ("float32", [2, 4])}, {}),
    "scatter_nd": (
        {"x": F4, "index": ("int32", [2, 2]), "updates": ("float32", [2])},
        {"reduction": "add"},
    ),
    "pad": ({"x": F4}, {"paddings": [1, 0, 2, 1], "mode": "reflect"}),
    "matmul": ({"x": F4, "y": ("float32", [4, 2])}, {}),
    "matmul_2d": ({"x": F4, "y": ("float32", [4, 2])}, {}),
    "rowwise_add": ({"x": F4, "b": ("float32", [4])}, {}),
    "conv2d": ({"x": IMG, "filter": ("float32", [4, 3, 3, 3])}, {"paddings": [1, 1]}),
    "conv2d_transpose": ({"x": IMG, "filter": ("float32", [3, 2, 3, 3])}, {"strides": [2, 2]}),
    "pool2d": ({"x": IMG}, {"ksize": [2, 2], "strides": [2, 2]}),
    "adaptive_avg_pool2d": ({"x": IMG}, {"output_size": [4, 4]}),
    "adaptive_max_pool2d": ({"x": IMG}, {"output_size": [2, 3]}),
    "batch_norm": (
        {"x": IMG, **{s: ("float32", [3]) for s in ("scale", "bias", "mean", "variance")}},
        {},
    ),
    "layer_norm": ({"x": F4, "scale": ("float32", [4]), "bias": ("float32", [4])}, {}),
    "cross_entropy": ({"x": F4, "label": ("int64", [3, 1])}, {}),
    "softmax_with_cross_entropy": ({"logits": F4, "label": ("int64", [3, 1])}, {}),
    "embedding": ({"ids": ("int64", [3, 1]), "w": ("float32", [5, 2])}, {}),
    "dropout": ({"x": F4}, {"dropout_prob": 0.5}),
    "lstm": (
        {"x": ("float32", [2, 3, 4]), **rnn_weights(4, 4, 2)},
        {"hidden_size": 2},
    ),
    "gru": (
        {"x": ("float32", [2, 3, 4]), **rnn_weights(3, 4, 2)},
        {"hidden_size": 2},
    ),
    "scaled_dot_product_attention": (
        {"q": ("float32", [2, 3, 4]), "k": ("float32", [2, 5, 4]), "v": ("float32", [2, 5, 3])},
        {"is_causal": True},
    ),
    "packed_attention": ({"qkv": ("float32", [2, 3, 3, 2, 4])}, {"is_causal": True}),
}
UNARY = ({"x": F4}, {})  # the case of an op of one input x and no required attr


def _grad_ops() -> list[str]:
    registry = get_registry()
    return sorted(
        t
        for t in registry.op_types()
        if t.endswith("_grad")
        and t.removesuffix("_grad") in registry
        and registry.op(t).plugin.name in ("math", "nn")
    )


def _cases() -> dict[str, tuple[dict, dict]]:
    """LISTED, and UNARY for every other forward op of a grad op that it fits."""
    registry, cases = get_registry(), dict(LISTED)
    for grad in _grad_ops():
        proto = registry.op(grad.removesuffix("_grad")).proto
        required = [a.name for a in proto.attrs if not a.HasField("default")]
        if proto.type not in cases and [s.name for s in proto.inputs] == ["x"] and not required:
            cases[proto.type] = UNARY
    return cases


CASES = _cases()


def test_every_grad_op_of_both_plugins_has_a_case():
    assert sorted(f"{op}_grad" for op in CASES) == _grad_ops()
    # The ops once listed, each with x float32 [3, 4] (now UNARY's), are all still there.
    unary = {"abs", "cos", "sin", "exp", "log", "neg", "sqrt", "rsqrt", "erf", "sigmoid", "tanh"}
    unary |= {"square", "relu", "silu", "gelu", "elu", "leaky_relu", "softplus", "softmax"}
    assert {op for op, case in CASES.items() if case is UNARY} >= unary | {"log_softmax"}


def _grad_call(forward: str):
    """A program with the forward op appended, and the grad op's fitting inputs: the forward
    inputs, the forward outputs it reads, and data variables like the outputs for their grads."""
    specs, attrs = CASES[forward]
    prog = pc.Program()
    block = prog.global_block()
    fwd_in = {s: block.create_var(s, shape, dtype) for s, (dtype, shape) in specs.items()}
    op = block.append_op(forward, fwd_in, attrs=attrs)
    fwd_out = {s: block.var(names[0]) for s, names in op.outputs.items() if names}
    info = get_registry().op(f"{forward}_grad")
    inputs = {}
    for slot in info.proto.inputs:
        base = slot.name.removesuffix("_grad")
        if slot.name in fwd_in:
            inputs[slot.name] = fwd_in[slot.name]
        elif slot.name in fwd_out:
            inputs[slot.name] = fwd_out[slot.name]
        elif base in fwd_out:
            out = fwd_out[base]
            inputs[slot.name] = block.create_var(slot.name, list(out.shape), out.dtype)
    declared = {a.name for a in info.proto.attrs}
    grad_attrs = {k: v for k, v in op.attrs.items() if k in declared}
    return block, inputs, grad_attrs


def _checked_slots(forward: str) -> list[str]:
    """The out / out_grad inputs, where the grad op has another input to hold them to (neg_grad
    reads out_grad alone: any shape fits)."""
    _, inputs, _ = _grad_call(forward)
    outs = [o.name for o in get_registry().op(forward).proto.outputs]
    checked = [s for s in inputs if s in outs or s.removesuffix("_grad") in outs]
    return checked if len(inputs) > 1 else []


@pytest.mark.parametrize("forward", sorted(CASES))
def test_fitting_inputs_are_accepted(forward):
    block, inputs, attrs = _grad_call(forward)
    block.append_op(f"{forward}_grad", inputs, attrs=attrs)


# dropout_grad reads out_grad and a uint8 mask: nothing ties out_grad's float dtype.
ANY_FLOAT = {("dropout", "out_grad")}


@pytest.mark.parametrize(
    "forward, slot, change",
    [
        (f, s, c)
        for f in sorted(CASES)
        for s in _checked_slots(f)
        for c in ("shape", "dtype")
        if c == "shape" or (f, s) not in ANY_FLOAT
    ],
    ids=str,
)
def test_an_output_or_its_gradient_that_does_not_fit_is_refused(forward, slot, change):
    block, inputs, attrs = _grad_call(forward)
    good = inputs[slot]
    if change == "shape":
        shape = [*good.shape[:-1], good.shape[-1] + 1] if good.shape else [2]
        inputs[slot] = block.create_var("bad", shape, good.dtype)
    else:
        inputs[slot] = block.create_var(
            "bad", list(good.shape), "float64" if good.dtype != "float64" else "float32"
        )
    with pytest.raises(pc.ShapeError, match=rf"op '{forward}_grad'"):
        block.append_op(f"{forward}_grad", inputs, attrs=attrs)


def test_the_forward_inputs_must_fit_the_forward_op():
    """The reported case: matmul_2d_grad with x [4], y [1] and a 0-d out_grad used to return
    memory it did not own."""
    prog = pc.Program()
    with pc.program_guard(prog):
        a = pc.data("a", [4], "float64")
        b = pc.data("b", [1], "float64")
        g = pc.data("g", [], "float64")
        with pytest.raises(
            pc.ShapeError,
            match=r"op 'matmul_2d_grad'.*out_grad 'g' is float64\[\]; 'matmul_2d' gives out as "
            r"float64\[4\]",
        ):
            pc.ops.matmul_2d_grad(a, b, g, x_num_col_dims=1, y_num_col_dims=1)
        with pytest.raises(pc.ShapeError, match=r"op 'matmul_grad'.*'matmul' accepts"):
            pc.ops.matmul_grad(a, pc.data("c", [3, 2], "float64"), g)


def test_fed_shapes_are_held_to_the_forward_op_at_run():
    """Unknown dimensions pass at append; the fed ones are checked when the plan is made."""
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 3])
        g = pc.data("g", [None, 3])
        x_grad, _ = pc.ops.add_grad(x, x, g)
    feed = {"x": np.ones((2, 3), np.float32), "g": np.ones((5, 3), np.float32)}
    with pytest.raises(pc.ShapeError, match=r"op 'add_grad'.*out_grad 'g' is float32\[5, 3\]"):
        pc.Executor().run(prog, feed=feed, fetch_list=[x_grad])
    feed["g"] = np.full((2, 3), 2, np.float32)
    (got,) = pc.Executor().run(prog, feed=feed, fetch_list=[x_grad])
    np.testing.assert_array_equal(got, feed["g"])
