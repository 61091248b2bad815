"""The generated Python API (paddle_core/ops.py): signatures, docs, inputs, outputs, shapes."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import paddle_core as pc

TOY_OPS = [
    "toy_add",
    "toy_concat",
    "toy_dropout",
    "toy_fill",
    "toy_leaky_relu",
    "toy_linear",
    "toy_matmul",
    "toy_reduce",
    "toy_relu",
]
TOY_OPS += ["toy_scale", "toy_split"]


@pytest.fixture
def program():
    """A fresh program, current for the duration of the test."""
    with pc.program_guard(pc.Program()) as p:
        yield p


# -- signatures and docstrings ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "signature"),
    [
        ("toy_scale", "(x, *, scale=1.0, bias=0.0, bias_after_scale=True, name=None)"),
        ("toy_linear", "(x, w, b=None, *, name=None)"),
        ("toy_concat", "(xs, *, axis=0, name=None)"),
        ("toy_fill", "(*, shape, value=0.0, dtype='float32', name=None)"),
        ("toy_reduce", "(x, *, axes=[], keepdim=False, reduction='sum', name=None)"),
        ("toy_dropout", "(x, *, p=0.5, is_test=False, seed=0, name=None)"),
    ],
)
def test_signature(op, signature):
    fn = getattr(pc.ops, op)
    assert str(inspect.signature(fn)) == signature
    assert (fn.__name__, fn.__qualname__, fn.__module__) == (op, op, "paddle_core.ops")


def test_docstring_of_scale():
    doc = pc.ops.toy_scale.__doc__
    assert doc.startswith("Multiply by a scalar and add a bias: out = scale * x + bias")
    assert "    x (Variable): Input tensor." in doc
    assert "    scale (float, default 1.0): Multiplier." in doc
    assert "    bias_after_scale (bool, default True): Add the bias after multiplying." in doc
    assert "    name (str, optional): Name of the output variable" in doc
    assert "Returns:\n    out (Variable): Result, with the shape and dtype of x." in doc
    assert "Kernels: cpu (float32, float64, int32, int64)." in doc
    assert doc.endswith("Provided by plugin 'toy' (paddle-ops-toy 0.1.0).")


def test_docstrings_show_ranges_choices_and_optional_slots():
    dropout = pc.ops.toy_dropout.__doc__
    assert "p (float in [0, 1), default 0.5): Probability of dropping an element." in dropout
    assert "seed (int (64-bit), default 0): Random seed (64-bit)." in dropout
    assert "mask (Variable, or None): 1 where kept, 0 where dropped" in dropout
    assert "Kernels: cpu (float32, float64)." in dropout
    reduce = pc.ops.toy_reduce.__doc__
    assert "reduction (one of 'sum', 'mean', 'max', default 'sum'): How to combine" in reduce
    assert "axes (list of ints, default []): Axes to reduce; empty reduces all." in reduce
    fill = pc.ops.toy_fill.__doc__
    assert "shape (list of ints each in [0, inf), required): Dimensions of the result." in fill
    assert "b (Variable, optional): Bias, [out_features]." in pc.ops.toy_linear.__doc__
    concat = pc.ops.toy_concat.__doc__
    assert "xs (list of Variable): Tensors of one dtype, equal except along axis." in concat
    assert "outs (list of Variable): The parts, in order." in pc.ops.toy_split.__doc__
    assert all(len(line) <= 100 for line in fill.splitlines())


def test_dir_lists_the_ops():
    listed = dir(pc.ops)
    assert set(TOY_OPS) <= set(listed)
    assert listed == sorted(listed)
    for op in TOY_OPS:
        assert callable(getattr(pc.ops, op))
    assert pc.ops.toy_scale is pc.ops.toy_scale  # generated once


def test_unknown_op():
    with pytest.raises(pc.OpNotFoundError) as info:
        pc.ops.nope  # noqa: B018
    assert info.value.op == "nope"
    assert str(info.value).startswith("unknown op 'nope'")
    assert "did you mean" not in str(info.value)
    assert isinstance(info.value, AttributeError)
    assert not hasattr(pc.ops, "nope")


def test_unknown_op_near_miss(program):
    # The closest name comes first; other toy ops share the prefix and may follow it.
    closest = re.escape("unknown op 'toy_sacle' (did you mean 'toy_scale'")
    with pytest.raises(pc.OpNotFoundError, match=closest):
        pc.ops.toy_sacle  # noqa: B018
    with pytest.raises(pc.OpNotFoundError, match=re.escape("unknown op 'toy_matmull'")) as info:
        program.global_block().append_op("toy_matmull")
    assert "did you mean 'toy_matmul'" in str(info.value)


# -- inputs -----------------------------------------------------------------------------------


def test_missing_required_input(program):
    a = pc.data("a", [2, 2])
    with pytest.raises(pc.OpInputError) as info:
        pc.ops.toy_matmul(a)
    assert info.value.op == "toy_matmul"
    assert str(info.value) == "op 'toy_matmul' requires input 'y' (Right operand, at least 2-D)"
    with pytest.raises(pc.OpInputError, match="op 'toy_scale' requires input 'x'"):
        pc.ops.toy_scale(scale=2.0)
    assert program.global_block().ops == []


def test_too_many_positional_arguments(program):
    x = pc.data("x", [2])
    with pytest.raises(pc.OpInputError) as info:
        pc.ops.toy_scale(x, 2.0)
    assert info.value.op == "toy_scale"
    assert str(info.value) == (
        "op 'toy_scale' takes 1 positional input(s) (x); attrs are keyword-only, "
        "got 2 positional arguments"
    )
    with pytest.raises(pc.OpInputError, match=re.escape("takes 0 positional input(s) (none)")):
        pc.ops.toy_fill([2, 3])


def test_list_for_a_single_input(program):
    x = pc.data("x", [2])
    with pytest.raises(pc.OpInputError) as info:
        pc.ops.toy_add([x, x], x)
    assert info.value.op == "toy_add"
    assert str(info.value) == "op 'toy_add': input 'x' takes one variable, got a list of 2"


def test_non_variable_input(program):
    x = pc.data("x", [3])
    with pytest.raises(pc.OpInputError) as info:
        pc.ops.toy_add(x, np.ones(3, np.float32))
    assert str(info.value) == (
        "op 'toy_add': input 'y' must be a Variable (or a variable name), got ndarray"
    )
    with pytest.raises(pc.OpInputError, match="input 'xs' must be a Variable"):
        pc.ops.toy_concat([x, 1.0])


def test_inputs_by_keyword_and_by_name(program):
    a = pc.data("a", [2, 3])
    b = pc.data("b", [3, 4])
    out = pc.ops.toy_matmul(y=b, x=a)
    assert out.op.inputs == {"x": ["a"], "y": ["b"]}
    assert pc.ops.toy_relu("a").op.inputs == {"x": ["a"]}


def test_variables_of_another_program_are_rejected(program):
    with pc.program_guard(pc.Program()):
        other = pc.data("x", [2, 2])
    mine = pc.data("x", [2, 2])
    with pytest.raises(pc.OpInputError) as info:
        pc.ops.toy_add(mine, other)
    assert info.value.op == "toy_add"
    assert "input 'y' is variable 'x' of another program" in str(info.value)
    with pytest.raises(pc.OpInputError, match="input 'xs' is variable 'x' of another program"):
        pc.ops.toy_concat([mine, other])
    assert program.global_block().ops == []


def test_variables_of_a_sibling_block_are_rejected(program):
    program.create_block()
    inner = program.current_block().create_var("inner", [2])
    program.rollback()
    with pytest.raises(pc.OpInputError, match="input 'x' is variable 'inner'"):
        pc.ops.toy_relu(inner)


def test_ops_go_to_the_current_block(program):
    x = pc.data("x", [2])
    block = program.create_block()
    y = pc.ops.toy_relu(x)
    assert y.block is block
    assert block.ops == [y.op]
    assert program.global_block().ops == []
    program.rollback()
    z = pc.ops.toy_relu(x)
    assert z.block is program.global_block()


# -- duplicable and dispensable slots -------------------------------------------------------------


def test_duplicable_input(program):
    a = pc.data("a", [2, 3])
    b = pc.data("b", [2, 5])
    out = pc.ops.toy_concat([a, b], axis=1)
    assert (out.shape, out.dtype) == ((2, 8), "float32")
    assert out.op.inputs == {"xs": ["a", "b"]}
    assert pc.ops.toy_concat((a, a)).shape == (4, 3)
    single = pc.ops.toy_concat(a)
    assert single.op.inputs == {"xs": ["a"]}
    with pytest.raises(pc.OpInputError, match="input 'xs' needs at least one variable"):
        pc.ops.toy_concat([])


def test_duplicable_output(program):
    x = pc.data("x", [None, 6])
    parts = pc.ops.toy_split(x, num=3, axis=1)
    assert isinstance(parts, list)
    assert [v.name for v in parts] == [
        "toy_split_0.outs_0",
        "toy_split_0.outs_1",
        "toy_split_0.outs_2",
    ]
    assert all(isinstance(v, pc.Variable) for v in parts)
    assert [(v.shape, v.dtype) for v in parts] == [((None, 2), "float32")] * 3
    op = parts[0].op
    assert all(v.op is op for v in parts)
    assert op.outputs == {"outs": [v.name for v in parts]}
    named = pc.ops.toy_split(x, name="halves", axis=1)
    assert [v.name for v in named] == ["halves.outs_0", "halves.outs_1"]


def test_dispensable_input(program):
    x = pc.data("x", [None, 4])
    w = pc.data("w", [4, 3])
    b = pc.data("b", [3])
    without = pc.ops.toy_linear(x, w)
    assert without.op.inputs == {"x": ["x"], "w": ["w"]}
    assert (without.shape, without.dtype) == ((None, 3), "float32")
    with_b = pc.ops.toy_linear(x, w, b)
    assert with_b.op.inputs == {"x": ["x"], "w": ["w"], "b": ["b"]}
    assert pc.ops.toy_linear(x, w, b=None).op.inputs == without.op.inputs


def test_dispensable_output(program):
    x = pc.data("x", [2, 3], dtype="float64")
    out, mask = pc.ops.toy_dropout(x, is_test=True)
    assert mask is None
    assert (out.shape, out.dtype) == ((2, 3), "float64")
    assert out.op.outputs == {"out": [out.name]}
    out, mask = pc.ops.toy_dropout(x, is_test=False)
    assert isinstance(mask, pc.Variable)
    assert (mask.shape, mask.dtype) == ((2, 3), "uint8")
    assert mask.op is out.op
    assert out.op.outputs == {"out": ["toy_dropout_1.out"], "mask": ["toy_dropout_1.mask"]}


def test_name_names_the_output(program):
    x = pc.data("x", [2])
    y = pc.ops.toy_scale(x, scale=3.0, name="tripled")
    assert y.name == "tripled"
    assert program.global_block().var("tripled") is y
    with pytest.raises(pc.OpInputError, match="a variable named 'tripled' already exists"):
        pc.ops.toy_scale(x, name="tripled")
    out, mask = pc.ops.toy_dropout(x, name="drop")
    assert (out.name, mask.name) == ("drop.out", "drop.mask")


def test_output_op_is_set(program):
    x = pc.data("x", [2, 2])
    assert x.op is None
    y = pc.ops.toy_relu(x)
    z = pc.ops.toy_add(y, x)
    assert y.op is program.global_block().ops[0]
    assert z.op is program.global_block().ops[1]
    assert z.op.type == "toy_add"
    assert (z.op.inputs, z.op.outputs) == ({"x": [y.name], "y": ["x"]}, {"out": [z.name]})


# -- shapes and dtypes ------------------------------------------------------------------------


def test_output_shapes_and_dtypes(program):
    a = pc.data("a", [None, 4], dtype="float64")
    w = pc.data("w", [4, 3], dtype="float64")
    assert (pc.ops.toy_matmul(a, w).shape, pc.ops.toy_matmul(a, w).dtype) == ((None, 3), "float64")
    assert pc.ops.toy_matmul(w, a, transpose_x=True, transpose_y=True).shape == (3, None)
    batch = pc.data("batch", [5, 1, 2, 4], dtype="float64")
    assert pc.ops.toy_matmul(batch, w).shape == (5, 1, 2, 3)
    u = pc.data("u", [None, 1, 4], dtype="int64")
    v = pc.data("v", [3, 1], dtype="int64")
    added = pc.ops.toy_add(u, v)
    assert (added.shape, added.dtype) == ((None, 3, 4), "int64")
    assert pc.ops.toy_add(v, pc.data("s", [], dtype="int64")).shape == (3, 1)
    assert pc.ops.toy_reduce(a, axes=[1]).shape == (None,)
    assert pc.ops.toy_reduce(a, axes=[-1], keepdim=True).shape == (None, 1)
    assert pc.ops.toy_reduce(a).shape == ()
    filled = pc.ops.toy_fill(shape=[2, 0, 3], dtype="int32")
    assert (filled.shape, filled.dtype) == ((2, 0, 3), "int32")
    assert pc.ops.toy_leaky_relu(a).shape == (None, 4)
    assert pc.ops.toy_concat([a, a], axis=0).shape == (None, 4)


def _concat_last(*xs):
    return np.concatenate(xs, axis=-1)


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "reference"),
    [
        ("toy_matmul", [(5, 1, 2, 4), (3, 4, 6)], {}, np.matmul),
        (
            "toy_matmul",
            [(4, 2), (3, 4)],
            {"transpose_x": True, "transpose_y": True},
            lambda a, b: a.T @ b.T,
        ),
        ("toy_add", [(2, 1, 4), (3, 1)], {}, np.add),
        ("toy_add", [(3,), ()], {}, np.add),
        ("toy_concat", [[(2, 3), (2, 5), (2, 1)]], {"axis": -1}, _concat_last),
        (
            "toy_reduce",
            [(2, 3, 4)],
            {"axes": [0, 2], "keepdim": True},
            lambda x: x.sum(axis=(0, 2), keepdims=True),
        ),
        ("toy_reduce", [(2, 3, 4)], {"axes": [-1]}, lambda x: x.sum(axis=-1)),
        ("toy_split", [(6, 4)], {"num": 3}, lambda x: np.split(x, 3)),
        ("toy_linear", [(5, 4), (4, 3), (3,)], {}, lambda x, w, b: x @ w + b),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inferred_shapes_match_numpy(program, op, inputs, attrs, reference, dtype):
    """Known shapes and dtypes are inferred exactly as NumPy computes them."""
    rng = np.random.default_rng(0)
    args, arrays = [], []
    for spec in inputs:
        shapes = spec if isinstance(spec, list) else [spec]
        vs = [pc.data(program.unique_name("in"), s, dtype=dtype) for s in shapes]
        xs = [rng.standard_normal(s).astype(dtype) for s in shapes]
        args.append(vs if isinstance(spec, list) else vs[0])
        arrays += xs
    out = getattr(pc.ops, op)(*args, **attrs)
    expected = reference(*arrays)
    outs = out if isinstance(out, list) else [out]
    expected = expected if isinstance(expected, list) else [expected]
    assert [(v.shape, v.dtype) for v in outs] == [(e.shape, str(e.dtype)) for e in expected]


def test_matmul_inner_dimensions_mismatch(program):
    a = pc.data("a", [None, 4])
    b = pc.data("b", [3, 5])
    with pytest.raises(pc.ShapeError) as info:
        pc.ops.toy_matmul(a, b)
    assert info.value.op == "toy_matmul"
    assert str(info.value) == (
        "op 'toy_matmul' (x='a' float32[?, 4], y='b' float32[3, 5]): "
        "inner dimensions differ: 4 (x) vs 3 (y)"
    )


def test_add_broadcast_failure(program):
    a = pc.data("a", [3, 5])
    b = pc.data("b", [2, 5])
    with pytest.raises(pc.ShapeError) as info:
        pc.ops.toy_add(a, b)
    message = str(info.value)
    assert info.value.op == "toy_add"
    assert message.startswith("op 'toy_add' (x='a' float32[3, 5], y='b' float32[2, 5]): ")
    assert "cannot be broadcast together (axis -2: 3 vs 2)" in message
    with pytest.raises(pc.ShapeError, match="inputs must share one dtype"):
        pc.ops.toy_add(a, pc.data("c", [3, 5], dtype="float64"))


def test_concat_mismatch(program):
    a = pc.data("a", [2, 3])
    b = pc.data("b", [4, 3])
    with pytest.raises(pc.ShapeError) as info:
        pc.ops.toy_concat([a, b], axis=1)
    assert info.value.op == "toy_concat"
    assert "(xs='a' float32[2, 3], xs='b' float32[4, 3])" in str(info.value)
    assert "inputs differ on axis 0 (4 vs 2)" in str(info.value)
    with pytest.raises(pc.ShapeError, match="axis 2 is out of range for rank 2"):
        pc.ops.toy_concat([a, b], axis=2)


# -- shape rules that misbehave ---------------------------------------------------------------

FAULTY_OP = """
ops {{
  proto {{ type: "{op}" comment: "{comment}" inputs {{ name: "x" }} outputs {{ name: "out" }} }}
  kernels {{ device: "cpu" dtypes: [FLOAT32] python: "identity_cpu" }}
  shape_rule: "{rule}"
}}
"""
FAULTY_MANIFEST = 'comment: "Ops whose shape rules misbehave."\n' + "".join(
    FAULTY_OP.format(op=op, comment=comment, rule=rule)
    for op, comment, rule in [
        ("raises", "Rule raises ValueError.", "raises_shape"),
        ("bad_dtype", "Rule gives an unknown dtype.", "bad_dtype_shape"),
        ("bad_dim", "Rule gives a negative dimension.", "bad_dim_shape"),
        ("no_output", "Rule sets nothing.", "no_output_shape"),
        ("missing_rule", "Rule does not exist.", "no_such_rule"),
    ]
)


class FaultyOps:
    """An in-process plugin; bare names in its manifest resolve to these methods."""

    def paddle_core_manifest(self):
        return FAULTY_MANIFEST

    def identity_cpu(self, x):
        return x

    def raises_shape(self, ctx):
        raise ValueError("rank must be 3")

    def bad_dtype_shape(self, ctx):
        ctx.set_output("out", ctx.input("x").shape, "float")

    def bad_dim_shape(self, ctx):
        ctx.set_output("out", (-2,), "float32")

    def no_output_shape(self, ctx):
        pass


@pytest.fixture
def faulty():
    pc.register_plugin(FaultyOps(), name="faulty")


def test_shape_rule_exception_becomes_shape_error(program, faulty):
    x = pc.data("x", [None, 4])
    with pytest.raises(pc.ShapeError) as info:
        pc.ops.raises(x)
    assert info.value.op == "raises"
    assert str(info.value) == (
        "op 'raises' (x='x' float32[?, 4]): its shape rule raised ValueError: rank must be 3"
    )
    assert isinstance(info.value.__cause__, ValueError)
    assert program.global_block().ops == []
    assert list(program.global_block().vars) == ["x"]


@pytest.mark.parametrize(
    ("op", "detail"),
    [
        ("bad_dtype", "gave output 'out' shape (None, 4) and dtype 'float'"),
        ("bad_dim", "gave output 'out' shape (-2,) and dtype 'float32'"),
        ("no_output", "did not set required output 'out'"),
    ],
)
def test_shape_rule_returning_nonsense_names_the_plugin(program, faulty, op, detail):
    x = pc.data("x", [None, 4])
    with pytest.raises(pc.ShapeError) as info:
        getattr(pc.ops, op)(x)
    assert info.value.op == op
    message = str(info.value)
    assert message.startswith(f"op '{op}': ")
    assert detail in message
    assert message.endswith("(a bug in plugin 'faulty')")
    assert program.global_block().ops == []


def test_missing_shape_rule_is_a_shape_error(program, faulty):
    x = pc.data("x", [2])
    with pytest.raises(pc.ShapeError) as info:
        pc.ops.missing_rule(x)
    message = str(info.value)
    assert message.startswith("op 'missing_rule' cannot infer shapes: ")
    assert "plugin 'faulty'" in message
    assert "'no_such_rule'" in message


def test_in_process_ops_come_and_go(faulty):
    assert "raises" in dir(pc.ops)
    assert "Provided by plugin 'faulty'." in pc.ops.raises.__doc__
    pc.unregister_plugin("faulty")
    assert "raises" not in dir(pc.ops)
    assert not hasattr(pc.ops, "raises")


def test_dir_lists_the_ops_only():
    names = dir(pc.ops)
    assert {"toy_scale", "toy_matmul", "toy_split"} <= set(names)
    assert "make_function" not in names and "Any" not in names


def test_the_public_names_are_one_list_seen_by_type_checkers_alike():
    """paddle_core's public names are its lazy map (_EXPORTS, _SUBMODULES), from which __all__
    is made; the imports type checkers read under TYPE_CHECKING name the same objects from the
    same modules, so the two cannot drift apart."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(pc))
    (block,) = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    imported: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        for alias in node.names:
            imported[alias.asname or alias.name] = (node.module or "") if node.level else "?"
    exports = {name: module.lstrip(".") for name, module in pc._EXPORTS.items()}
    assert {n: m for n, m in imported.items() if m} == exports
    assert {n for n, m in imported.items() if not m} == pc._SUBMODULES
    assert set(pc.__all__) == {*pc._EXPORTS, *pc._SUBMODULES, "__version__"}
    for name in pc.__all__:
        assert getattr(pc, name) is not None
