"""Sub-blocks that ops hold: BLOCK attrs are checked against the program's blocks, variable
lookup walks parent blocks, parameters land in the global block, and programs with sub-blocks
save and load exactly."""

from __future__ import annotations

import pytest

import paddle_core as pc
from paddle_core import ops
from paddle_core.proto import framework_pb2


def build_loop():
    """A program whose while_block op holds block 1 (which reads a parameter)."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.data("x", [3], "float32")

        def body(i, s):
            w = pc.layers.create_parameter([3], "float32", attr="w")
            one = ops.fill_constant(shape=[1], dtype="int64", value=1)
            return ops.add(i, one), ops.add(s, ops.mul(x, w))

        i = ops.fill_constant(shape=[1], dtype="int64", value=0)
        s = ops.fill_constant(shape=[3], dtype="float32", value=0.0)
        n = ops.fill_constant(shape=[1], dtype="int64", value=3)
        out = pc.layers.while_loop(lambda i, s: ops.less(i, n), body, [i, s])
    return main, startup, out


def test_lookup_walks_parent_blocks():
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [2], "float32")
        sub = main.create_block()
        y = ops.scale(x, scale=2.0)  # reads the parent's x from the sub-block
        main.rollback()
    assert sub.find_var("x") is x and y.block is sub
    assert main.global_block().find_var(y.name) is None  # not visible from outside
    assert sub.parent is main.global_block()


def test_parameters_created_in_a_sub_block_land_in_the_global_block():
    main, _, _ = build_loop()
    assert "w" in main.global_block().vars
    assert "w" not in main.block(1).vars
    assert [p.name for p in main.all_parameters()] == ["w"]


def test_block_attr_holds_the_block_index():
    main, _, _ = build_loop()
    op = next(op for op in main.global_block().ops if op.type == "while_block")
    assert op.attrs["sub_block"] == 1
    assert op.attr_types["sub_block"] == framework_pb2.BLOCK


def _append_cond(block, true_block, false_block):
    pred = block.create_var("pred", [1], "bool")
    return block.append_op(
        "cond_block",
        {"condition": pred},
        None,
        {
            "true_block": true_block,
            "false_block": false_block,
            "true_outs": [],
            "false_outs": [],
        },
    )


def test_block_index_that_does_not_exist_is_refused():
    main = pc.Program()
    block = main.global_block()
    with pytest.raises(
        pc.AttrError,
        match=r"op 'cond_block' in block 0, attr 'true_block'.*"
        r"block 5 does not exist",
    ):
        _append_cond(block, 5, 5)


def test_own_block_is_refused():
    main = pc.Program()
    block = main.global_block()
    sub = main.create_block()
    main.rollback()
    with pytest.raises(pc.AttrError, match="cannot hold its own block 0"):
        _append_cond(block, 0, sub)


def test_block_of_another_parent_is_refused():
    main = pc.Program()
    first = main.create_block()
    second = main.create_block()  # a child of block 1
    main.rollback()
    main.rollback()
    with pytest.raises(pc.AttrError, match="block 2 is a child of block 1, not of block 0"):
        _append_cond(main.global_block(), first, second)


def test_set_attr_checks_the_block_too():
    main = pc.Program()
    t, f = main.create_block(), None
    main.rollback()
    f = main.create_block()
    main.rollback()
    op = _append_cond(main.global_block(), t, f)
    with pytest.raises(pc.AttrError, match="does not exist"):
        op.set_attr("false_block", 9)
    assert op.attrs["false_block"] == f.idx


def test_save_load_round_trips_exactly(tmp_path):
    main, _, _ = build_loop()
    data = main.serialize()
    loaded = pc.Program.parse(data)
    assert loaded.serialize() == data
    assert loaded.num_blocks == main.num_blocks == 2
    assert str(loaded) == str(main)
    assert loaded.block(1).parent_idx == 0


def test_loading_refuses_a_block_attr_pointing_nowhere():
    main, _, _ = build_loop()
    desc = main.to_desc()
    for op in desc.blocks[0].ops:
        for attr in op.attrs:
            if attr.name == "sub_block":
                attr.value.block_idx = 7
    with pytest.raises(pc.AttrError, match="block 7 does not exist"):
        pc.Program.from_desc(desc)
