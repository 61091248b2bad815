"""Attribute validation (the spec layer), through the generated API and append_op."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import paddle_core as pc
from paddle_core._src.spec.opdoc import expectation
from paddle_core.proto import framework_pb2 as pb

# An in-process op whose attrs cover the types and bounds the toy plugin lacks, and whose attr
# names shadow BaseModel methods and attributes.
ODD_MANIFEST = """
ops {
  proto {
    type: "odd"
    comment: "Attrs named like BaseModel members, and the attr types toy lacks."
    inputs { name: "x" comment: "Input." }
    outputs { name: "out" comment: "x, unchanged." }
    attrs { name: "copy" type: BOOL default { b: false } }
    attrs { name: "schema" type: STRING default { s: "nchw" } }
    attrs { name: "dict" type: INT default { i: 1 } }
    attrs { name: "model_config" type: FLOAT default { f: 0.5 } }
    attrs { name: "validate" type: INTS default { ints: [1] } }
    attrs { name: "gain" type: FLOAT default { f: 1.0 } min { value: 0 exclusive: true } }
    attrs { name: "cap" type: FLOAT default { f: 1.0 } min { value: 0 } max { value: inf } }
    attrs { name: "weights" type: FLOATS default { floats: [] } }
    attrs { name: "mask" type: BOOLS default { bools: [] } }
    attrs {
      name: "layouts" type: STRINGS default { strings: [] }
      choices { strings: ["nchw", "nhwc"] }
    }
    attrs { name: "ratio" type: FLOAT default { f: 0.5 } choices { floats: [0.5, 1.0] } }
  }
  kernels { device: "cpu" dtypes: [FLOAT32] python: "odd_cpu" }
  shape_rule: "paddle_core.rules:unary"
}
"""


class OddOps:
    """An in-process plugin: bare names in its manifest resolve to its attributes."""

    def paddle_core_manifest(self):
        return ODD_MANIFEST

    def odd_cpu(self, x, **attrs):
        return x


@pytest.fixture
def x():
    """A float32 [?, 4] data variable in a fresh program that is current during the test."""
    with pc.program_guard(pc.Program()):
        yield pc.data("x", [None, 4])


@pytest.fixture
def odd():
    pc.register_plugin(OddOps(), name="odd")


def apply(via: str, op: str, x, **attrs):
    """Append ``op`` through the generated function or through Block.append_op."""
    inputs = {} if op == "toy_fill" else {"x": x}
    if via == "api":
        return getattr(pc.ops, op)(*inputs.values(), **attrs)
    return x.program.current_block().append_op(op, inputs=inputs, attrs=attrs)


def op_of(result) -> pc.Operator:
    """The Operator appended by ``apply``: append_op returns it, the API its output(s)."""
    if isinstance(result, pc.Operator):
        return result
    return (result[0] if isinstance(result, (list, tuple)) else result).op


def assert_attr_error(err: pc.AttrError, op: str, attr: str, *parts: str) -> None:
    message = str(err)
    assert err.op == op
    assert err.attr == attr
    assert f"op '{op}'" in message
    assert f"attr '{attr}'" in message
    for part in parts:
        assert part in message


VIA = pytest.mark.parametrize("via", ["api", "append_op"])


# -- types ------------------------------------------------------------------------------------


@VIA
@pytest.mark.parametrize(
    ("op", "attr", "value", "expected", "got"),
    [
        ("toy_scale", "scale", "abc", "expected a float", "got str 'abc'"),
        ("toy_scale", "scale", True, "expected a float", "got bool True"),
        ("toy_scale", "bias", None, "expected a float", "got NoneType None"),
        ("toy_split", "num", 2.0, "expected an int (32-bit) in [1, inf)", "got float 2.0"),
        ("toy_split", "num", True, "expected an int (32-bit) in [1, inf)", "got bool True"),
        ("toy_split", "axis", np.float32(1), "expected an int (32-bit)", "got float32"),
        ("toy_dropout", "seed", 1.0, "expected an int (64-bit)", "got float 1.0"),
        ("toy_matmul", "transpose_x", "yes", "expected a bool", "got str 'yes'"),
        ("toy_matmul", "transpose_x", 1, "expected a bool", "got int 1"),
        ("toy_reduce", "reduction", 3, "expected one of 'sum', 'mean', 'max'", "got int 3"),
        ("toy_reduce", "axes", [0, 1.5], "expected a list of ints", "(item 1: float 1.5)"),
    ],
)
def test_wrong_type_is_rejected(x, via, op, attr, value, expected, got):
    with pytest.raises(pc.AttrError) as info:
        apply(via, op, x, **{attr: value})
    assert_attr_error(info.value, op, attr, expected, got)
    assert str(info.value).startswith(f"op '{op}', attr '{attr}': {expected}, got ")
    assert isinstance(info.value, ValueError)  # generic handlers catch it too


def test_int_is_accepted_for_float(x):
    op = pc.ops.toy_scale(x, scale=3).op
    assert op.attrs["scale"] == 3.0
    assert type(op.attrs["scale"]) is float
    assert pc.ops.toy_scale(x, scale=-(2**63)).op.attrs["scale"] == -(2.0**63)


@pytest.mark.parametrize("value", [2**53 + 1, np.int64(2**62 + 1), np.uint64(2**64 - 1)])
def test_an_int_no_double_holds_is_refused_not_rounded(value):
    """An int64 fill takes its value from a double attr: 2**53 + 1 would become 2**53."""
    with pytest.raises(pc.AttrError) as info:
        pc.ops.toy_fill(shape=[2], value=value, dtype="int64")
    nearest = float(value)
    assert_attr_error(
        info.value,
        "toy_fill",
        "value",
        "expected a float",
        f"which no double holds exactly (the nearest is {nearest!r})",
    )


@VIA
def test_numpy_scalars_are_accepted_as_python_values(x, via):
    results = [
        apply(via, "toy_scale", x, scale=np.float32(2.5), bias_after_scale=np.bool_(False)),
        apply(via, "toy_split", x, num=np.int64(2), axis=np.int32(1)),
        apply(via, "toy_dropout", x, seed=np.int64(2**40), is_test=np.True_),
        apply(via, "toy_reduce", x, axes=[np.int64(0), np.int32(1)], keepdim=np.bool_(True)),
    ]
    attrs = [op_of(r).attrs for r in results]
    assert attrs == [
        {"scale": 2.5, "bias": 0.0, "bias_after_scale": False},
        {"num": 2, "axis": 1},
        {"p": 0.5, "is_test": True, "seed": 2**40},
        {"axes": [0, 1], "keepdim": True, "reduction": "sum"},
    ]
    # Stored as plain Python values, so they serialise and print like any other.
    stored = [attrs[0]["scale"], attrs[0]["bias_after_scale"], attrs[1]["num"], attrs[2]["seed"]]
    stored += [attrs[2]["is_test"], *attrs[3]["axes"], attrs[3]["keepdim"]]
    assert [type(v) for v in stored] == [float, bool, int, int, bool, int, int, bool]
    loaded = pc.Program.parse(x.program.serialize())
    assert [op.attrs for op in loaded.global_block().ops] == attrs


def test_integer_width_is_enforced(x):
    with pytest.raises(pc.AttrError) as info:
        pc.ops.toy_split(x, axis=np.int64(2**31))
    assert_attr_error(
        info.value,
        "toy_split",
        "axis",
        "expected an int (32-bit)",
        "got int64",
        "outside the 32-bit range [-2147483648, 2147483647]",
    )
    pc.ops.toy_dropout(x, seed=-(2**63))  # LONG: the whole signed 64-bit range
    with pytest.raises(pc.AttrError) as info:
        pc.ops.toy_dropout(x, seed=2**63)
    assert_attr_error(
        info.value,
        "toy_dropout",
        "seed",
        "expected an int (64-bit)",
        "got int 9223372036854775808, outside the 64-bit range "
        "[-9223372036854775808, 9223372036854775807]",
    )


# An op with the 64-bit list type, LONGS: bounds and choices apply to each element.
LONGS_MANIFEST = """
ops {
  proto {
    type: "wide"
    comment: "x, unchanged; attrs of the 64-bit list type."
    inputs { name: "x" comment: "Input." }
    outputs { name: "out" comment: "x." }
    attrs { name: "ends" type: LONGS comment: "Any 64-bit ints." default { longs: [9223372036854775807] } }
    attrs { name: "sizes" type: LONGS comment: "Sizes." default {} min { value: 0 } }
    attrs { name: "steps" type: LONGS comment: "Steps." default { longs: [1] } choices { longs: [1, 4294967296] } }
    attrs { name: "axes" type: INTS comment: "32-bit ints." default {} }
  }
  kernels { device: "cpu" dtypes: [FLOAT32] python: "wide_cpu" }
  shape_rule: "paddle_core.rules:unary"
}
"""


class WideOps:
    def paddle_core_manifest(self):
        return LONGS_MANIFEST

    def wide_cpu(self, x, **attrs):
        return x


@pytest.fixture
def wide():
    pc.register_plugin(WideOps(), name="wide")


def test_longs_hold_the_signed_64_bit_range_and_round_trip(x, wide):
    extremes = [-(2**63), -1, 2**31, 2**63 - 1]
    op = pc.ops.wide(x, ends=np.array(extremes, np.int64), sizes=[2**40]).op
    assert op.attrs["ends"] == extremes and op.attrs["sizes"] == [2**40]
    assert op.attrs["steps"] == [1]
    assert [type(v) for v in op.attrs["ends"]] == [int] * 4
    loaded = pc.Program.parse(x.program.serialize())
    assert loaded.global_block().ops[0].attrs == op.attrs
    assert pc.ops.wide(x).op.attrs["ends"] == [2**63 - 1]


@pytest.mark.parametrize(
    ("attr", "value", "expected", "got"),
    [
        (
            "ends",
            [0, 2**63],
            "expected a list of ints (64-bit)",
            "(item 1: int 9223372036854775808), outside the 64-bit range "
            "[-9223372036854775808, 9223372036854775807]",
        ),
        (
            "ends",
            [-(2**63) - 1],
            "expected a list of ints (64-bit)",
            "outside the 64-bit range [-9223372036854775808, 9223372036854775807]",
        ),
        (
            "axes",
            [2**31],
            "expected a list of ints",
            "(item 0: int 2147483648), outside the 32-bit range [-2147483648, 2147483647]",
        ),
        ("sizes", [3, -1], "expected a list of ints (64-bit) each in [0, inf)", "(item 1: int -1)"),
        ("steps", [2], "each one of 1, 4294967296", "(item 0: int 2)"),
        ("ends", [1.0], "expected a list of ints (64-bit)", "(item 0: float 1.0)"),
    ],
)
def test_longs_out_of_range_name_the_value_and_the_range(x, wide, attr, value, expected, got):
    with pytest.raises(pc.AttrError) as info:
        pc.ops.wide(x, **{attr: value})
    assert_attr_error(info.value, "wide", attr, expected, got)
    assert pc.ops.wide(x, steps=[4294967296, 1]).op.attrs["steps"] == [4294967296, 1]


# -- ranges -----------------------------------------------------------------------------------


@VIA
@pytest.mark.parametrize(
    ("op", "attr", "value", "expected"),
    [
        ("toy_leaky_relu", "alpha", -0.01, "expected a float in [0, 1)"),
        ("toy_leaky_relu", "alpha", 1.0, "expected a float in [0, 1)"),  # exclusive max
        ("toy_leaky_relu", "alpha", float("nan"), "expected a float in [0, 1)"),
        ("toy_dropout", "p", 1.0, "expected a float in [0, 1)"),
        ("toy_split", "num", 0, "expected an int (32-bit) in [1, inf)"),
    ],
)
def test_out_of_range_is_rejected(x, via, op, attr, value, expected):
    with pytest.raises(pc.AttrError) as info:
        apply(via, op, x, **{attr: value})
    assert_attr_error(info.value, op, attr, expected, f"got {type(value).__name__} {value!r}")


def test_bounds_themselves(x):
    """An inclusive bound is allowed; values just inside an exclusive one are too."""
    assert pc.ops.toy_leaky_relu(x, alpha=0.0).op.attrs["alpha"] == 0.0
    assert pc.ops.toy_leaky_relu(x, alpha=0.999).op.attrs["alpha"] == 0.999
    assert pc.ops.toy_dropout(x, p=0.0)[0].op.attrs["p"] == 0.0
    assert pc.ops.toy_split(x, num=1)[0].op.attrs["num"] == 1


def test_exclusive_min(x, odd):
    with pytest.raises(pc.AttrError) as info:
        pc.ops.odd(x, gain=0.0)
    assert_attr_error(info.value, "odd", "gain", "expected a float in (0, inf)", "got float 0.0")
    assert pc.ops.odd(x, gain=1e-9).op.attrs["gain"] == 1e-9


def test_a_ranges_open_side_ends_before_infinity(x, odd):
    """(0, inf) refuses inf, as [0, inf] (an inclusive infinite bound, declared) accepts it."""
    for value in (math.inf, math.nan):
        with pytest.raises(pc.AttrError) as info:
            pc.ops.odd(x, gain=value)
        assert_attr_error(info.value, "odd", "gain", "expected a float in (0, inf)")
    assert pc.ops.odd(x, cap=math.inf).op.attrs["cap"] == math.inf
    with pytest.raises(pc.AttrError, match="attr 'cap'"):
        pc.ops.odd(x, cap=-math.inf)


@VIA
def test_list_range_applies_to_each_element(x, via):
    with pytest.raises(pc.AttrError) as info:
        apply(via, "toy_fill", x, shape=[2, 3, -1])
    assert_attr_error(
        info.value,
        "toy_fill",
        "shape",
        "expected a list of ints each in [0, inf)",
        "got list [2, 3, -1] (item 2: int -1)",
    )
    apply(via, "toy_fill", x, shape=[0, 3])  # 0 is within the inclusive bound


# -- choices ----------------------------------------------------------------------------------


@VIA
def test_not_in_choices_suggests_the_closest(x, via):
    with pytest.raises(pc.AttrError) as info:
        apply(via, "toy_reduce", x, reduction="mena")
    assert_attr_error(
        info.value,
        "toy_reduce",
        "reduction",
        "expected one of 'sum', 'mean', 'max'",
        "got str 'mena'",
        "(did you mean 'mean'?)",
    )
    with pytest.raises(pc.AttrError) as info:
        apply(via, "toy_fill", x, shape=[1], dtype="flaot32")
    assert_attr_error(
        info.value, "toy_fill", "dtype", "got str 'flaot32'", "did you mean 'float32'"
    )


def test_not_in_choices_without_a_close_match(x):
    with pytest.raises(pc.AttrError) as info:
        pc.ops.toy_reduce(x, reduction="product")
    assert_attr_error(info.value, "toy_reduce", "reduction", "expected one of 'sum', 'mean', 'max'")
    assert "did you mean" not in str(info.value)


def test_choices_of_floats_and_of_lists(x, odd):
    assert pc.ops.odd(x, ratio=1.0, layouts=["nhwc", "nchw"]).op.attrs["layouts"] == [
        "nhwc",
        "nchw",
    ]
    with pytest.raises(pc.AttrError) as info:
        pc.ops.odd(x, ratio=0.75)
    assert_attr_error(info.value, "odd", "ratio", "expected one of 0.5, 1.0", "got float 0.75")
    with pytest.raises(pc.AttrError) as info:
        pc.ops.odd(x, layouts=["nchw", "ncwh"])
    assert_attr_error(
        info.value,
        "odd",
        "layouts",
        "expected a list of str, each one of 'nchw', 'nhwc'",
        "(item 1: str 'ncwh')",
    )


# -- names ------------------------------------------------------------------------------------


def test_unknown_attr_keyword_of_the_generated_function(x):
    with pytest.raises(pc.AttrError) as info:
        pc.ops.toy_scale(x, scael=2.0)
    err = info.value
    assert (err.op, err.attr) == ("toy_scale", "scael")
    assert str(err) == (
        "op 'toy_scale' has no attr 'scael' (did you mean 'scale'?); "
        "its attrs are: scale, bias, bias_after_scale"
    )


def test_unknown_attr_in_append_op(x):
    with pytest.raises(pc.AttrError) as info:
        x.block.append_op("toy_reduce", inputs={"x": x}, attrs={"keepdims": True})
    err = info.value
    assert (err.op, err.attr) == ("toy_reduce", "keepdims")
    assert "op 'toy_reduce' has no attr 'keepdims' (did you mean 'keepdim'?)" in str(err)
    assert "its attrs are: axes, keepdim, reduction" in str(err)


@VIA
def test_unknown_attr_without_a_close_match(x, via):
    with pytest.raises(pc.AttrError) as info:
        apply(via, "toy_relu", x, bogus=1)
    assert (info.value.op, info.value.attr) == ("toy_relu", "bogus")
    assert str(info.value) == "op 'toy_relu' has no attr 'bogus'; its attrs are: none"


@VIA
def test_required_attr_missing(x, via):
    with pytest.raises(pc.AttrError) as info:
        apply(via, "toy_fill", x, value=1.0)
    assert_attr_error(
        info.value, "toy_fill", "shape", "a value is required", "a list of ints each in [0, inf)"
    )


def test_defaults_are_filled_in_declaration_order(x):
    op = x.block.append_op("toy_fill", attrs={"dtype": "int64", "shape": [2]})
    assert list(op.attrs.items()) == [("shape", [2]), ("value", 0.0), ("dtype", "int64")]


def test_attrs_given_out_of_order_are_stored_in_declaration_order(x):
    op = x.block.append_op("toy_fill", attrs={"dtype": "int64", "value": 2.0, "shape": [2]})
    assert list(op.attrs.items()) == [("shape", [2]), ("value", 2.0), ("dtype", "int64")]


@VIA
def test_ops_never_share_a_list_default(x, odd, via):
    first, second = (op_of(apply(via, "odd", x)) for _ in range(2))
    assert first.attrs["validate"] == second.attrs["validate"] == [1]
    assert first.attrs["validate"] is not second.attrs["validate"]
    assert first.attrs["weights"] is not second.attrs["weights"]


# -- the same attrs again (validated once, kept per op type) ------------------------------------


def test_ops_given_the_same_attrs_hold_equal_attrs_of_their_own(x):
    first, second = (pc.ops.toy_scale(x, scale=2.0, bias=0.5).op for _ in range(2))
    assert first.attrs == second.attrs == {"scale": 2.0, "bias": 0.5, "bias_after_scale": True}
    first.set_attr("scale", 3.0)
    assert second.attrs["scale"] == 2.0
    assert pc.ops.toy_scale(x, scale=2.0, bias=0.5).op.attrs["scale"] == 2.0


def test_a_value_equal_to_one_validated_before_is_validated_as_itself(x):
    # 0.0 == -0.0, True == 1 == np.True_: none takes another's validated attrs.
    for zero in (0.0, -0.0, 0.0):
        scale = pc.ops.toy_scale(x, scale=zero).op.attrs["scale"]
        assert math.copysign(1.0, scale) == math.copysign(1.0, zero)
    assert pc.ops.toy_matmul(x, x, transpose_y=True).op.attrs["transpose_y"] is True
    with pytest.raises(pc.AttrError, match="got int 1"):
        pc.ops.toy_matmul(x, x, transpose_y=1)
    assert pc.ops.toy_matmul(x, x, transpose_y=np.True_).op.attrs["transpose_y"] is True


# -- lists ------------------------------------------------------------------------------------


@VIA
def test_list_attrs_accept_tuples_and_arrays(x, via):
    for axes in [(0, 1), np.array([0, 1]), range(2)]:
        op = op_of(apply(via, "toy_reduce", x, axes=axes, keepdim=True))
        assert op.attrs["axes"] == [0, 1]
        assert type(op.attrs["axes"]) is list
    filled = pc.ops.toy_fill(shape=(2, 3))
    assert filled.shape == (2, 3)


@VIA
@pytest.mark.parametrize("value", ["23", b"23", 5, {"a": 1}])
def test_list_attr_rejects_non_lists(x, via, value):
    with pytest.raises(pc.AttrError) as info:
        apply(via, "toy_fill", x, shape=value)
    assert_attr_error(
        info.value,
        "toy_fill",
        "shape",
        "expected a list of ints each in [0, inf)",
        f"got {type(value).__name__} {value!r}",
    )


def test_bad_item_of_an_iterator_is_reported(x):
    """The item is named even when the given value cannot be indexed."""
    with pytest.raises(pc.AttrError) as info:
        pc.ops.toy_reduce(x, axes=(a for a in [0, 1.5]))
    assert_attr_error(info.value, "toy_reduce", "axes", "got generator", "(item 1: float 1.5)")


def test_list_element_types(x, odd):
    op = pc.ops.odd(x, weights=[1, 2.5, np.float32(0.5)], mask=[True, np.bool_(False)]).op
    assert op.attrs["weights"] == [1.0, 2.5, 0.5]
    assert op.attrs["mask"] == [True, False]
    assert [type(v) for v in op.attrs["mask"]] == [bool, bool]
    with pytest.raises(pc.AttrError) as info:
        pc.ops.odd(x, weights=[1.0, "2"])
    assert_attr_error(info.value, "odd", "weights", "a list of floats", "(item 1: str '2')")
    with pytest.raises(pc.AttrError) as info:
        pc.ops.odd(x, mask=[True, 0])
    assert_attr_error(info.value, "odd", "mask", "a list of bools", "(item 1: int 0)")


# -- a failed append changes nothing ------------------------------------------------------------


@VIA
@pytest.mark.parametrize(
    ("op", "attrs", "error"),
    [
        ("toy_scale", {"scale": "abc"}, pc.AttrError),
        ("toy_fill", {}, pc.AttrError),
        ("toy_reduce", {"reductoin": "sum"}, pc.AttrError),
        ("toy_split", {"num": 3, "axis": 1}, pc.ShapeError),  # 4 does not split into 3
    ],
)
def test_failed_append_leaves_the_block_unchanged(via, op, attrs, error):
    program = pc.Program()
    with pc.program_guard(program):
        x = pc.data("x", [2, 4])
        y = pc.ops.toy_relu(x)
        block = program.global_block()
        before = (dict(block.vars), list(block.ops), program.version)
        with pytest.raises(error):
            apply(via, op, x, **attrs)
        assert (dict(block.vars), list(block.ops), program.version) == before
        assert y.op is block.ops[-1]
        # The names a failed append would have used are still free.
        assert pc.ops.toy_relu(x).name == "toy_relu_1.out"


def test_output_name_taken_creates_no_output(x):
    """With one of two output names taken, neither output is created."""
    block = x.block
    block.create_var("d.mask", [1])
    names = list(block.vars)
    with pytest.raises(
        pc.OpInputError, match=re.escape("a variable named 'd.mask' already exists")
    ):
        pc.ops.toy_dropout(x, name="d")
    assert list(block.vars) == names
    assert block.ops == []


# -- attrs named like BaseModel members ---------------------------------------------------------


@VIA
def test_attrs_named_like_basemodel_members(x, odd, via):
    op = op_of(
        apply(via, "odd", x, copy=True, schema="nhwc", dict=7, model_config=0.25, validate=(3, 4))
    )
    assert op.type == "odd"
    assert {k: op.attrs[k] for k in ("copy", "schema", "dict", "model_config", "validate")} == {
        "copy": True,
        "schema": "nhwc",
        "dict": 7,
        "model_config": 0.25,
        "validate": [3, 4],
    }
    op = op_of(apply(via, "odd", x))
    assert op.attrs["copy"] is False
    assert op.attrs["schema"] == "nchw"
    assert op.attrs["validate"] == [1]
    with pytest.raises(pc.AttrError) as info:
        apply(via, "odd", x, copy="yes")
    assert_attr_error(info.value, "odd", "copy", "expected a bool", "got str 'yes'")
    with pytest.raises(pc.AttrError) as info:
        apply(via, "odd", x, schemas="nchw")
    assert (info.value.attr, "did you mean 'schema'" in str(info.value)) == ("schemas", True)


# -- expectation wording ----------------------------------------------------------------------


def _ap(attr_type, *, lo=None, hi=None, lo_excl=False, hi_excl=False, choices=None):
    ap = pb.AttrProto(name="a", type=attr_type)
    if lo is not None:
        ap.min.CopyFrom(pb.Bound(value=lo, exclusive=lo_excl))
    if hi is not None:
        ap.max.CopyFrom(pb.Bound(value=hi, exclusive=hi_excl))
    if choices is not None:
        field, list_type = {
            str: ("strings", pb.STRINGS),
            int: ("ints", pb.INTS),
            float: ("floats", pb.FLOATS),
        }[type(choices[0])]
        ap.choices.CopyFrom(pb.AttrValue(type=list_type, **{field: choices}))
    return ap


@pytest.mark.parametrize(
    ("ap", "text"),
    [
        (_ap(pb.FLOAT), "a float"),
        (_ap(pb.BOOL), "a bool"),
        (_ap(pb.INT), "an int (32-bit)"),
        (_ap(pb.FLOAT, lo=0, hi=1, hi_excl=True), "a float in [0, 1)"),
        (_ap(pb.FLOAT, lo=0, lo_excl=True), "a float in (0, inf)"),
        (_ap(pb.LONG, hi=10), "an int (64-bit) in (-inf, 10]"),
        (_ap(pb.FLOAT, lo=-0.5, hi=2.5), "a float in [-0.5, 2.5]"),
        (_ap(pb.INTS, lo=0), "a list of ints each in [0, inf)"),
        (_ap(pb.LONGS), "a list of ints (64-bit)"),
        (_ap(pb.LONGS, lo=-1), "a list of ints (64-bit) each in [-1, inf)"),
        (_ap(pb.STRINGS), "a list of str"),
        (_ap(pb.STRING, choices=["sum", "mean"]), "one of 'sum', 'mean'"),
        (_ap(pb.INT, choices=[1, 2, 4]), "one of 1, 2, 4"),
        (_ap(pb.FLOAT, choices=[0.5, 1.0]), "one of 0.5, 1.0"),
        (_ap(pb.STRINGS, choices=["a", "b"]), "a list of str, each one of 'a', 'b'"),
    ],
)
def test_expectation_wording(ap, text):
    assert expectation(ap) == text


def test_sets_are_not_lists_because_they_have_no_order():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [2, 3])
        with pytest.raises(pc.AttrError, match=r"attr 'axes': expected a list of ints, got set"):
            pc.ops.toy_reduce(x, axes={0, 1})
        assert pc.ops.toy_reduce(x, axes=(i for i in [1])).shape == (2,)
