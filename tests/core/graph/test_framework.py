"""Program, Block, Variable, Parameter, Operator (the graph layer), and saving programs."""

from __future__ import annotations

import json
import os
import re
import tracemalloc

import numpy as np
import pytest

import paddle_core as pc
from paddle_core.proto import framework_pb2 as pb


@pytest.fixture
def program():
    """A fresh program, current for the duration of the test."""
    with pc.program_guard(pc.Program()) as p:
        yield p


def build_rich_program() -> pc.Program:
    """A program using every slot kind and attr type of the toy plugin, a sub-block and
    parameters with initializers and optimize attrs."""
    p = pc.Program()
    with pc.program_guard(p):
        gb = p.global_block()
        x = pc.data("x", [None, 4])
        w = gb.create_parameter(
            "w",
            [4, 6],
            initializer=pc.Initializer("toy_fill", value=0.5),
            optimize_attrs={"learning_rate": 0.1, "decay": True, "groups": [1, 2], "tag": "fc"},
        )
        b = gb.create_parameter(
            "b", [6], trainable=False, initializer=pc.Initializer("toy_fill", shape=[6], value=0.0)
        )
        h = pc.ops.toy_linear(x, w, b)  # dispensable input given
        pc.ops.toy_linear(x, w)  # ... and left out
        s = pc.ops.toy_scale(h, scale=2.0, bias=-1.0, bias_after_scale=False)  # FLOAT, BOOL
        parts = pc.ops.toy_split(s, num=3, axis=1)  # INT; duplicable output
        c = pc.ops.toy_concat(parts, axis=-1)  # duplicable input
        pc.ops.toy_reduce(c, axes=[0, 1], keepdim=True, reduction="mean")  # INTS, STRING
        pc.ops.toy_dropout(c, p=0.25, seed=2**40)  # LONG; dispensable output produced
        pc.ops.toy_dropout(c, is_test=True)  # ... and not
        f = pc.ops.toy_fill(shape=[2, 6], value=1.5, dtype="float64")
        sub = p.create_block()
        local = sub.create_var("local", [2, 6], "float64", stop_gradient=True)
        pc.ops.toy_add(f, local)
        sub.create_parameter("inner_w", [2], optimize_attrs={"steps": 2**40})
        p.rollback()
        gb.create_var("state", [1], "int64", persistable=True)
    return p


# -- names and blocks -------------------------------------------------------------------------


def test_unique_names_are_per_program():
    p, q = pc.Program(), pc.Program()
    assert [p.unique_name("tmp") for _ in range(3)] == ["tmp_0", "tmp_1", "tmp_2"]
    assert p.unique_name("fc") == "fc_0"
    assert q.unique_name("tmp") == "tmp_0"
    assert p.global_block().create_var(shape=[1]).name == "tmp_3"
    for prog in (p, q):
        with pc.program_guard(prog):
            assert pc.ops.toy_fill(shape=[1]).name == "toy_fill_0.out"


def test_global_block(program):
    gb = program.global_block()
    assert gb is program.blocks[0] is program.block(0) is program.current_block()
    assert (gb.idx, gb.parent_idx, gb.parent, program.num_blocks) == (0, -1, None, 1)
    assert gb.program is program


def test_create_block_and_rollback(program):
    b1 = program.create_block()
    assert (b1.idx, b1.parent_idx, b1.parent) == (1, 0, program.global_block())
    assert program.current_block() is b1
    b2 = program.create_block()
    assert (b2.idx, b2.parent_idx) == (2, 1)
    b3 = program.create_block(parent_idx=0)
    assert (b3.idx, b3.parent_idx) == (3, 0)
    program.rollback()
    assert program.current_block() is program.global_block()
    program.current_block_idx = 2
    program.rollback()
    assert program.current_block() is b1
    program.rollback()
    assert program.current_block_idx == 0
    with pytest.raises(pc.ProgramError, match=re.escape("rollback() called on the global block")):
        program.rollback()
    with pytest.raises(pc.ProgramError, match="no block 7; the program has 4"):
        program.block(7)
    with pytest.raises(pc.ProgramError, match="no block -1"):
        program.create_block(parent_idx=-1)


def test_create_var(program):
    block = program.global_block()
    v = block.create_var("v", [-1, 3], np.float64, persistable=True, stop_gradient=True)
    assert (v.name, v.shape, v.dtype, v.ndim) == ("v", (None, 3), "float64", 2)
    assert (v.persistable, v.stop_gradient, v.is_data, v.op) == (True, True, False, None)
    assert (v.block, v.program) == (block, program)
    assert block.vars["v"] is v
    assert repr(v) == "Variable('v', shape=[?, 3], dtype='float64')"
    assert block.create_var("s").shape == ()
    assert block.create_var("i", [2], np.dtype("int32")).dtype == "int32"
    with pytest.raises(
        pc.ProgramError, match=r"unsupported dtype 'flaot32'.*did you mean 'float32'"
    ):
        block.create_var("bad", [1], "flaot32")
    with pytest.raises(pc.ProgramError, match=re.escape("dimensions must be ints >= 0, or None")):
        block.create_var("bad", [2, -3])
    for dims in (["a"], [2.5], [True, 2]):  # no silent int(2.5) == 2
        with pytest.raises(pc.ProgramError, match=r"dimensions must be ints >= 0.*got \["):
            block.create_var("bad", dims)
    with pytest.raises(pc.ProgramError, match="shape must be a list of ints or None"):
        block.create_var("bad", np.array(3))
    with pytest.raises(pc.ProgramError, match="65 dimensions; at most 64"):
        block.create_var("bad", [1] * 65)
    with pytest.raises(pc.ProgramError, match=r"\[1099511627776, 1099511627776\] is larger than"):
        block.create_var("bad", [2**40, 2**40])
    assert "bad" not in block.vars
    assert block.create_var("np", np.array([2, 3])).shape == (2, 3)
    assert block.create_var("wide", [1] * 64).ndim == 64


def test_duplicate_variable_names_are_rejected(program):
    gb = program.global_block()
    gb.create_var("a", [1])
    with pytest.raises(pc.ProgramError, match="block 0 already has a variable named 'a'"):
        gb.create_var("a", [2])
    with pytest.raises(pc.ProgramError, match="already has a variable named 'a'"):
        pc.data("a", [1])
    sub = program.create_block()
    with pytest.raises(pc.ProgramError, match="block 0 already has a variable named 'a'"):
        sub.create_parameter("a", [1])
    with pytest.raises(pc.ProgramError, match="block 0 already has a variable named 'a'"):
        sub.create_global_var("a", [1])
    shadow = sub.create_var("a", [3])  # a sub-block may shadow an outer name
    assert sub.find_var("a") is shadow
    assert gb.find_var("a").shape == (1,)


def test_create_global_var_from_a_sub_block(program):
    sub = program.create_block()
    g = sub.create_global_var("g", [2])
    assert g.block is program.global_block()
    assert "g" in program.global_block().vars
    assert "g" not in sub.vars
    d = pc.data("d", [None])  # data always goes to the global block
    assert d.block is program.global_block()
    assert (d.is_data, d.stop_gradient) == (True, True)


def test_create_parameter(program):
    sub = program.create_block()
    init = pc.Initializer("toy_fill", value=0.5)
    opt = {"learning_rate": 0.1}
    w = sub.create_parameter("w", [3, 4], initializer=init, optimize_attrs=opt)
    opt["learning_rate"] = 1.0  # the parameter keeps its own copy
    assert isinstance(w, pc.Parameter)
    assert w.block is program.global_block()
    assert "w" not in sub.vars
    assert (w.shape, w.dtype, w.persistable, w.trainable) == ((3, 4), "float32", True, True)
    assert w.initializer == pc.Initializer("toy_fill", value=0.5)
    assert w.initializer != pc.Initializer("toy_fill", value=0.25)
    assert w.optimize_attrs == {"learning_rate": 0.1}
    frozen = program.global_block().create_parameter(shape=[2], trainable=False, dtype="float64")
    assert (frozen.name, frozen.trainable, frozen.dtype) == ("param_0", False, "float64")
    assert frozen.initializer is None
    assert program.all_parameters() == [w, frozen]
    assert repr(w) == "Parameter('w', shape=[3, 4], dtype='float32')"


@pytest.mark.parametrize("shape", [[None, 4], [-1, 4]])
def test_parameters_need_known_shapes(program, shape):
    with pytest.raises(pc.ProgramError, match="parameter 'w': every dimension must be known"):
        program.global_block().create_parameter("w", shape)
    assert program.all_parameters() == []


def test_find_var_through_parent_blocks(program):
    gb = program.global_block()
    g = gb.create_var("g", [1])
    b1 = program.create_block()
    l1 = b1.create_var("weight", [1])
    b2 = program.create_block()
    program.rollback()
    program.rollback()
    sibling = program.create_block()
    assert b2.find_var("g") is g
    assert b2.find_var("weight") is l1
    assert b2.var("weight") is l1
    assert gb.find_var("weight") is None
    assert sibling.find_var("weight") is None
    with pytest.raises(
        pc.ProgramError, match=re.escape("no variable 'wieght' in block 2 (did you mean 'weight'?)")
    ):
        b2.var("wieght")
    with pytest.raises(pc.ProgramError, match="no variable 'weight' in block 3"):
        sibling.var("weight")


# -- operators --------------------------------------------------------------------------------


def test_append_and_prepend_op(program):
    block = program.global_block()
    x = pc.data("x", [2, 3])
    relu = block.append_op("toy_relu", inputs={"x": x})
    scale = block.prepend_op("toy_scale", inputs={"x": "x"}, attrs={"scale": 2.0})
    last = block.append_op("toy_leaky_relu", inputs={"x": x}, outputs={"out": "y"})
    assert block.ops == [scale, relu, last]
    assert isinstance(scale, pc.Operator)
    assert (scale.type, scale.block) == ("toy_scale", block)
    assert scale.input("x") == ["x"]
    assert scale.output("out") == ["toy_scale_0.out"]
    assert scale.input("nope") == []
    assert scale.attr("scale") == 2.0
    assert (scale.input_names, scale.output_names) == (["x"], ["toy_scale_0.out"])
    with pytest.raises(
        pc.ProgramError,
        match=re.escape("op 'toy_scale' has no attr 'scal' (did you mean 'scale'?)"),
    ):
        scale.attr("scal")
    y = block.var("y")  # a named output is created with the inferred shape
    assert (y.shape, y.dtype, y.op) == ((2, 3), "float32", last)
    assert block.remove_op(0) is scale

    assert block.ops == [relu, last]


def test_insert_op_places_the_op_and_rewrite_op_rebinds_one_in_place(program):
    block = program.global_block()
    x = pc.data("x", [2, 3])
    first = block.append_op("toy_relu", inputs={"x": x}, outputs={"out": "r"})
    last = block.append_op("toy_scale", inputs={"x": "r"}, outputs={"out": "y"})
    between = block.insert_op(1, "toy_scale", {"x": "r"}, {"out": "s"}, {"scale": 3.0})
    assert block.ops == [first, between, last]
    assert block.var("s").shape == (2, 3)
    version = program.version
    same = block.rewrite_op(last, inputs={"x": "s"}, outputs={"out": ["z"]}, attrs={"scale": 5.0})
    assert same is last and block.ops == [first, between, last]  # its place and identity
    assert (last.input("x"), last.output("out"), last.attr("scale")) == (["s"], ["z"], 5.0)
    assert last.attr("bias") == 0.0 and last.role == "forward"  # what was not given stays
    z = block.var("z")
    assert (z.shape, z.op) == ((2, 3), last)
    assert program.version > version
    with pytest.raises(pc.AttrError, match="scale"):
        block.rewrite_op(last, attrs={"scale": "big"})
    with pytest.raises(pc.OpInputError, match="has no input 'y'"):
        block.rewrite_op(last, inputs={"y": "s"})
    assert (last.input("x"), last.attr("scale"), len(block.ops)) == (["s"], 5.0, 3)  # unchanged
    other = pc.Program().global_block()
    with pytest.raises(pc.ProgramError, match="is not an op of block 0"):
        other.rewrite_op(last)


def test_free_name_adds_underscores_until_no_variable_has_it(program):
    block = program.global_block()
    pc.data("x", [2, 3])
    block.create_var("x_", [2, 3])
    assert block.free_name("x") == "x__" and block.free_name("y") == "y"


def test_rewrite_op_with_a_new_type_takes_only_what_is_given(program):
    """A fused op in the place, role and identity of the op it replaces: nothing of the old
    type's slots or attrs carries over."""
    block = program.global_block()
    x = pc.data("x", [2, 3])
    first = block.append_op("toy_relu", inputs={"x": x}, outputs={"out": "r"})
    scale = block.append_op("toy_scale", {"x": "r"}, {"out": "y"}, {"scale": 3.0})
    same = block.rewrite_op(scale, {"x": x}, {"out": "y"}, new_type="toy_relu")
    assert same is scale and block.ops == [first, scale] and scale.role == "forward"
    assert (scale.type, scale.inputs, scale.outputs) == ("toy_relu", {"x": ["x"]}, {"out": ["y"]})
    assert "scale" not in scale.attrs and block.var("y").op is scale
    with pytest.raises(pc.OpInputError, match="toy_scale"):  # x is not given: it is missing
        block.rewrite_op(scale, outputs={"out": "y"}, new_type="toy_scale")
    assert scale.type == "toy_relu"  # unchanged


def test_append_op_into_given_outputs(program):
    block = program.global_block()
    x = pc.data("x", [2, 6])
    target = block.create_var("target", [None, 6], "float32")
    op = block.append_op("toy_relu", inputs={"x": x}, outputs={"out": target})
    assert op.outputs == {"out": ["target"]}
    # Unknown dimensions are filled in from the inferred shape.
    assert (target.shape, target.dtype, target.op) == ((2, 6), "float32", op)
    # A contradicting dtype or dimension is refused, and nothing changes.
    ops_before = len(block.ops)
    for declared, dtype in (([7], "float32"), ([2, 6], "int64"), ([3, 6], "float32")):
        wrong = block.create_var(None, declared, dtype)
        with pytest.raises(pc.ShapeError, match=f"into variable '{wrong.name}', declared"):
            block.append_op("toy_relu", inputs={"x": x}, outputs={"out": wrong})
        assert (wrong.shape, wrong.dtype, wrong.op) == (tuple(declared), dtype, None)
    assert len(block.ops) == ops_before
    parts = block.append_op(
        "toy_split", inputs={"x": x}, outputs={"outs": ["p", "q"]}, attrs={"num": 2}
    )
    assert parts.outputs == {"outs": ["p", "q"]}
    assert block.var("q").shape == (1, 6)
    with pytest.raises(pc.OpInputError, match=re.escape("output 'outs' needs 2 variables")):
        block.append_op("toy_split", inputs={"x": x}, outputs={"outs": ["a", "b", "c"]})
    with pc.program_guard(pc.Program()):
        foreign = pc.data("foreign", [7])
    with pytest.raises(pc.OpInputError, match="output 'out' is variable 'foreign' of another"):
        block.append_op("toy_relu", inputs={"x": x}, outputs={"out": foreign})
    assert (foreign.shape, foreign.op) == ((7,), None)
    with pytest.raises(pc.OpInputError, match="op 'toy_relu' has no output 'output'"):
        block.append_op("toy_relu", inputs={"x": x}, outputs={"output": "o"})
    with pytest.raises(pc.OpInputError, match="op 'toy_relu' has no input 'y'"):
        block.append_op("toy_relu", inputs={"x": x, "y": x})


def test_version_increases_on_every_change(program):
    versions = [program.version]

    def changed():
        versions.append(program.version)
        return versions[-1] > versions[-2]

    block = program.global_block()
    x = pc.data("x", [2])
    assert changed()
    block.create_parameter("w", [2])
    assert changed()
    op = block.append_op("toy_relu", inputs={"x": x})
    assert changed()
    block.prepend_op("toy_relu", inputs={"x": x})
    assert changed()
    block.remove_op(block.ops.index(op))
    assert changed()
    program.create_block()
    assert changed()
    pc.ops.toy_relu(x)
    assert changed()
    program.rollback()
    assert not changed()  # moving between blocks changes nothing


def test_program_guard(program):
    assert pc.default_main_program() is program
    inner = pc.Program()
    with pytest.raises(RuntimeError), pc.program_guard(inner) as guarded:
        assert guarded is inner and pc.default_main_program() is inner
        raise RuntimeError
    assert pc.default_main_program() is program
    with pytest.raises(pc.ProgramError, match="program_guard expects a Program, got str"):
        with pc.program_guard("main"):
            pass


def test_print_program(capsys):
    print(build_rich_program())
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == [
        "Program (2 blocks)",
        "block 0:",
        "  var x : float32[?, 4]  (data)",
        "  param w : float32[4, 6]  init=toy_fill(value=0.5)",
    ]
    assert "  param b : float32[6]  (frozen)  init=toy_fill(shape=[6], value=0.0)" in lines
    assert "  var state : int64[1]  (persistable)" in lines
    assert "  toy_linear_0.out = toy_linear(x=x, w=w, b=b)" in lines
    assert "  toy_linear_1.out = toy_linear(x=x, w=w)" in lines
    assert (
        "  toy_scale_0.out = toy_scale(x=toy_linear_0.out)  "
        "{scale=2.0, bias=-1.0, bias_after_scale=False}" in lines
    )
    assert (
        "  toy_concat_0.out = "
        "toy_concat(xs=[toy_split_0.outs_0, toy_split_0.outs_1, toy_split_0.outs_2])  {axis=-1}"
        in lines
    )
    assert (
        "  toy_dropout_0.out, toy_dropout_0.mask = toy_dropout(x=toy_concat_0.out)  "
        "{p=0.25, is_test=False, seed=1099511627776}" in lines
    )
    sub = lines.index("block 1 (parent 0):")
    assert lines[sub + 1 :] == [
        "  var local : float64[2, 6]  (no grad)",
        "  var toy_add_0.out : float64[2, 6]",
        "  toy_add_0.out = toy_add(x=toy_fill_0.out, y=local)",
    ]


# -- round trips ------------------------------------------------------------------------------


def test_round_trip_is_exact():
    p = build_rich_program()
    data = p.serialize()
    q = pc.Program.parse(data)
    assert q.serialize() == data
    assert str(q) == str(p)
    assert q.num_blocks == 2
    assert q.blocks[1].parent_idx == 0
    assert [op.attrs for op in q.global_block().ops] == [op.attrs for op in p.global_block().ops]


def test_round_trip_keeps_variables_and_parameters():
    q = pc.Program.parse(build_rich_program().serialize())
    gb = q.global_block()
    w, b, inner = gb.var("w"), gb.var("b"), gb.var("inner_w")
    assert all(isinstance(v, pc.Parameter) for v in (w, b, inner))
    assert w.initializer == pc.Initializer("toy_fill", value=0.5)
    assert b.initializer == pc.Initializer("toy_fill", shape=[6], value=0.0)
    assert w.optimize_attrs == {"learning_rate": 0.1, "decay": True, "groups": [1, 2], "tag": "fc"}
    assert inner.optimize_attrs == {"steps": 2**40}
    assert (w.trainable, b.trainable, w.persistable, w.op) == (True, False, True, None)
    x = gb.var("x")
    assert (x.shape, x.is_data, x.stop_gradient) == ((None, 4), True, True)
    assert gb.var("state").persistable
    assert q.blocks[1].var("local").stop_gradient
    assert gb.var("toy_dropout_0.mask").dtype == "uint8"
    # Outputs know their op again; parameters do not get one.
    concat = gb.var("toy_concat_0.out")
    assert concat.op is gb.ops[4]
    assert concat.op.inputs == {
        "xs": ["toy_split_0.outs_0", "toy_split_0.outs_1", "toy_split_0.outs_2"]
    }
    assert gb.ops[1].inputs == {"x": ["x"], "w": ["w"]}  # the unused dispensable slot is absent
    assert gb.ops[7].outputs == {"out": ["toy_dropout_1.out"]}


def test_attr_types_in_the_desc():
    desc = build_rich_program().to_desc()
    assert desc.version == pc.Program.FORMAT_VERSION
    types = {(op.type, a.name): a.value.type for op in desc.blocks[0].ops for a in op.attrs}
    assert types[("toy_scale", "scale")] == pb.FLOAT
    assert types[("toy_scale", "bias_after_scale")] == pb.BOOL
    assert types[("toy_split", "num")] == pb.INT
    assert types[("toy_reduce", "axes")] == pb.INTS
    assert types[("toy_reduce", "reduction")] == pb.STRING
    assert types[("toy_dropout", "seed")] == pb.LONG
    w = next(v for v in desc.blocks[0].vars if v.name == "w")
    assert list(w.shape) == [4, 6]
    assert {a.name: a.value.type for a in w.parameter.optimize_attrs} == {
        "learning_rate": pb.FLOAT,
        "decay": pb.BOOL,
        "groups": pb.INTS,
        "tag": pb.STRING,
    }
    x = next(v for v in desc.blocks[0].vars if v.name == "x")
    assert list(x.shape) == [-1, 4]
    assert not x.HasField("parameter")


@pytest.mark.parametrize("filename", ["prog.pb", "prog.pbtxt", "prog.json"])
def test_save_and_load(tmp_path, filename):
    p = build_rich_program()
    path = tmp_path / filename
    pc.save_program(p, path)
    raw = path.read_bytes()
    if filename.endswith(".pbtxt"):
        assert raw.startswith(b"blocks {")
    elif filename.endswith(".json"):
        block = json.loads(raw)["blocks"][0]  # protobuf's JSON mapping, with its field names
        assert block["parent_idx"] == -1 and "x" in [v["name"] for v in block["vars"]]
    else:
        assert raw == p.serialize()
    loaded = pc.load_program(str(path))
    assert loaded.serialize() == p.serialize()
    pc.save_program(loaded, path)
    assert path.read_bytes() == raw


def test_loading_reads_the_file_as_it_is(tmp_path, monkeypatch):
    """Memory for the file's bytes only (a read of the most a program may hold allocated 2 GiB
    per load); a file whose size moves while it is read is refused, not half read."""
    path = tmp_path / "prog.pb"
    pc.save_program(build_rich_program(), path)
    tracemalloc.start()
    try:
        pc.load_program(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**24, peak
    size = path.stat().st_size
    with open(path, "ab") as f:  # grows after the size was taken: stat reports the old one
        f.write(b"\0")
    stat = os.stat

    def stale(p, *args, **kwargs):
        info = stat(p, *args, **kwargs)
        if str(p) != str(path):
            return info
        return os.stat_result((*info[:6], size, *info[7:]))

    monkeypatch.setattr(os, "stat", stale)
    with pytest.raises(pc.ProgramError, match=rf"changed while it was read \({size} bytes, then"):
        pc.load_program(str(path))


def test_clone_is_independent():
    p = build_rich_program()
    before = p.serialize()
    c = p.clone()
    assert c.serialize() == before
    assert c.global_block().var("x") is not p.global_block().var("x")
    with pc.program_guard(c):
        pc.ops.toy_relu(c.global_block().var("x"))
    c.global_block().var("w").optimize_attrs["learning_rate"] = 9.0
    c.global_block().var("x").shape = (1, 4)
    assert p.serialize() == before
    assert len(c.global_block().ops) == len(p.global_block().ops) + 1


# -- loading what no plugin provides, and broken input ------------------------------------------


def _desc_with_unknown_op() -> pb.ProgramDesc:
    desc = pb.ProgramDesc(version=1)
    block = desc.blocks.add(idx=0, parent_idx=-1)
    block.vars.add(name="a", dtype=pb.VarType.FLOAT32, shape=[-1, 3], is_data=True)
    block.vars.add(name="b", dtype=pb.VarType.INT64, shape=[3])
    op = block.ops.add(type="mystery_op")
    op.provider.plugin, op.provider.distribution, op.provider.version = "mystery", "", ""
    op.inputs.add(name="src", vars=["a"])
    op.outputs.add(name="dst", vars=["b"])
    op.attrs.add(name="k", value=pb.AttrValue(type=pb.INT, i=3))
    op.attrs.add(name="names", value=pb.AttrValue(type=pb.STRINGS, strings=["p", "q"]))
    return desc


MYSTERY_MANIFEST = """
ops {
  proto {
    type: "mystery_op"
    comment: "Whatever a program saved elsewhere needs."
    inputs { name: "src" comment: "Inputs." duplicable: true }
    outputs { name: "dst" comment: "Output." }
    attrs { name: "k" type: INT comment: "A number." }
    attrs { name: "names" type: STRINGS comment: "Some names." }
  }
  kernels { device: "cpu" dtypes: [FLOAT32] python: "mystery_cpu" }
  shape_rule: "paddle_core.rules:unary"
}
"""


class MysteryOps:
    """An in-process plugin providing mystery_op, so that a desc using it loads."""

    def paddle_core_manifest(self):
        return MYSTERY_MANIFEST

    def mystery_cpu(self, src, **attrs):
        return src[0]


@pytest.fixture
def mystery():
    pc.register_plugin(MysteryOps(), name="mystery")


def test_loading_an_op_no_plugin_provides():
    """Refused at load, naming the op (see test_provenance.py for the package to install)."""
    with pytest.raises(
        pc.OpNotFoundError, match="uses op 'mystery_op', which no loaded plugin provides"
    ):
        pc.Program.from_desc(_desc_with_unknown_op())


def test_loading_an_op_that_records_no_provider_is_refused(mystery):
    desc = _desc_with_unknown_op()
    desc.blocks[0].ops[0].ClearField("provider")
    with pytest.raises(
        pc.ProgramError,
        match=r"op 'mystery_op' \(#0 in block 0\) records no provider \(the plugin, "
        r"distribution and version that provided it\)",
    ):
        pc.Program.from_desc(desc)


def test_loading_keeps_what_the_desc_holds(program, mystery):
    desc = _desc_with_unknown_op()
    q = pc.Program.from_desc(desc)
    (op,) = q.global_block().ops
    assert (op.type, op.inputs, op.outputs) == ("mystery_op", {"src": ["a"]}, {"dst": ["b"]})
    assert op.attrs == {"k": 3, "names": ["p", "q"]}
    b = q.global_block().var("b")
    assert (b.shape, b.dtype, b.op) == ((3,), "int64", op)
    assert q.global_block().var("a").shape == (None, 3)
    assert q.serialize() == desc.SerializeToString()
    with pc.program_guard(q):  # known ops can still be appended
        assert pc.ops.toy_relu(q.global_block().var("a")).shape == (None, 3)


def test_corrupt_bytes():
    with pytest.raises(pc.ProgramError, match="is not a serialized ProgramDesc"):
        pc.Program.parse(b"\xff\xff\xff\xff")
    with pytest.raises(pc.ProgramError, match=r"is bytes.*got str \(text format: pc.load_prog"):
        pc.Program.parse("blocks { idx: 0 }")
    with pytest.raises(
        pc.ProgramError, match=r"is bytes, as Program.serialize\(\) returns; got int$"
    ):
        pc.Program.parse(3)


def test_corrupt_files(tmp_path):
    binary = tmp_path / "bad.pb"
    binary.write_bytes(b"\xff\xff\xff\xff")
    with pytest.raises(pc.ProgramError, match=re.escape(f"{str(binary)!r} is not a serialized")):
        pc.load_program(binary)
    text = tmp_path / "bad.pbtxt"
    text.write_text("blocks { idx: zero }")
    with pytest.raises(pc.ProgramError, match=re.escape(f"{str(text)!r} is not a program in text")):
        pc.load_program(text)
    for bad in (b'{"blocks": [{"idx": "zero"}]}', b'{"block": []}', b"[" * 100_000, b"{\xff}"):
        path = tmp_path / "bad.json"
        path.write_bytes(bad)
        with pytest.raises(
            pc.ProgramError, match=re.escape(f"{str(path)!r} is not a program in JSON")
        ):
            pc.load_program(path)


def test_missing_file(tmp_path):
    path = tmp_path / "missing.pb"
    with pytest.raises(pc.ProgramError) as info:
        pc.load_program(path)
    assert str(info.value) == f"cannot load a program from {str(path)!r}: No such file or directory"
    with pytest.raises(
        pc.ProgramError,
        match=re.escape(f"cannot save the program to {str(tmp_path / 'no' / 'p.pb')!r}"),
    ):
        pc.save_program(pc.Program(), tmp_path / "no" / "p.pb")


def test_undeclared_variable():
    desc = _desc_with_unknown_op()
    desc.blocks[0].ops[0].inputs[0].vars.append("ghost")
    with pytest.raises(pc.ProgramError) as info:
        pc.Program.from_desc(desc)
    assert str(info.value) == (
        "op 'mystery_op' (#0 in block 0) uses variable 'ghost', which no enclosing block declares"
    )


def test_sub_block_sees_only_enclosing_variables(mystery):
    desc = _desc_with_unknown_op()
    sub = desc.blocks.add(idx=1, parent_idx=0)
    sub.vars.add(name="local", dtype=pb.VarType.FLOAT32)
    mystery = desc.blocks[0].ops[0].provider
    sub.ops.add(type="mystery_op", provider=mystery).inputs.add(name="src", vars=["a", "local"])
    assert pc.Program.from_desc(desc).blocks[1].ops[0].input("src") == ["a", "local"]
    desc.blocks[0].ops.add(type="mystery_op", provider=mystery).inputs.add(
        name="src", vars=["local"]
    )
    with pytest.raises(pc.ProgramError, match="uses variable 'local', which no enclosing block"):
        pc.Program.from_desc(desc)


def test_newer_format_version():
    desc = _desc_with_unknown_op()
    desc.version = pc.Program.FORMAT_VERSION + 1
    with pytest.raises(pc.ProgramError) as info:
        pc.Program.parse(desc.SerializeToString())
    assert "format version 2" in str(info.value)
    assert "reads up to 1 (upgrade paddle-core)" in str(info.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.ClearField("blocks"), "the ProgramDesc has no blocks"),
        (lambda d: setattr(d.blocks[0], "parent_idx", 0), "block 0 has idx 0 and parent 0"),
        (lambda d: d.blocks.add(idx=1, parent_idx=1), "block 1 has idx 1 and parent 1"),
        (lambda d: d.blocks.add(idx=2, parent_idx=0), "block 1 has idx 2 and parent 0"),
        (lambda d: d.blocks[0].vars.add(name="a", dtype=1), "block 0 declares variable 'a' twice"),
        (lambda d: d.blocks[0].vars.add(name="c"), "variable 'c' in block 0: unknown dtype enum"),
        (
            lambda d: d.blocks[0].ops[0].attrs.add(name="j"),
            "op 'mystery_op' in block 0: attr 'j' has no valid type (0)",
        ),
        (
            lambda d: (
                d.blocks[0]
                .vars[1]
                .parameter.optimize_attrs.add(name="lr", value=pb.AttrValue(type=99))
            ),
            "parameter 'b': attr 'lr' has no valid type (99)",
        ),
    ],
)
def test_malformed_desc(change, message, tmp_path):
    desc = _desc_with_unknown_op()
    change(desc)
    with pytest.raises(pc.ProgramError, match=re.escape(message)):
        pc.Program.from_desc(desc)
    path = tmp_path / "main.pb"  # from a file, the error names it
    path.write_bytes(desc.SerializeToString())
    with pytest.raises(pc.ProgramError, match=re.escape(f"{str(path)!r} holds no valid program")):
        pc.load_program(path)


def test_appending_after_loading_does_not_collide():
    p = build_rich_program()
    with pc.program_guard(p):
        p.global_block().create_var(shape=[1])  # tmp_0
        p.global_block().create_parameter(shape=[1])  # param_0
    q = pc.Program.parse(p.serialize())
    gb = q.global_block()
    x = gb.var("x")
    with pc.program_guard(q):
        assert pc.ops.toy_scale(x).name == "toy_scale_1.out"
        assert [v.name for v in pc.ops.toy_split(x)] == ["toy_split_1.outs_0", "toy_split_1.outs_1"]
        assert pc.ops.toy_dropout(x)[1].name == "toy_dropout_2.mask"
        assert pc.ops.toy_add(x, x).name == "toy_add_1.out"  # toy_add_0 is in block 1
    assert gb.create_var(shape=[1]).name == "tmp_1"
    assert gb.create_parameter(shape=[1]).name == "param_1"


def test_an_empty_variable_name_is_an_error(program):
    with pytest.raises(pc.ProgramError, match="non-empty strings"):
        program.global_block().create_var("")
