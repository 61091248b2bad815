"""ONNX's If and Loop import as cond_block and while_block; their graphs read outer values."""

from __future__ import annotations

import numpy as np
import pytest
from onnx_models import graph, model, node, tensor, value

import paddle_core as pc


def if_model(condition_constant: bool | None = None):
    then = graph([node("Mul", ["x", "two"], ["t"])], [], [value("t", [3])], "then")
    other = graph([node("Neg", ["x"], ["e"])], [], [value("e", [3])], "else")
    nodes = [node("If", ["c"], ["y"], then_branch=then, else_branch=other)]
    initializers = [tensor("two", np.float32(2.0))]
    if condition_constant is None:
        nodes[:0] = [
            node("ReduceSum", ["x"], ["s"], keepdims=0),
            node("Greater", ["s", "zero"], ["c"]),
        ]
        initializers.append(tensor("zero", np.float32(0.0)))
    else:
        initializers.append(tensor("c", np.array(condition_constant)))
    return model(nodes, [value("x", [3])], [value("y", [3])], initializers).SerializeToString()


def test_if_runs_the_branch_its_condition_picks():
    imported = pc.onnx.load(if_model())
    assert "cond_block" in [op.type for op in imported.program.global_block().ops]
    x = np.array([1.0, 2.0, -0.5], np.float32)
    np.testing.assert_array_equal(imported.run({"x": x})[0], 2 * x)
    np.testing.assert_array_equal(imported.run({"x": -x})[0], x)


def test_if_with_a_constant_condition_is_one_branch():
    imported = pc.onnx.load(if_model(condition_constant=False))
    types = [op.type for op in imported.program.global_block().ops]
    assert "neg" in types and "mul" not in types and "cond_block" not in types
    np.testing.assert_array_equal(imported.run({"x": np.ones(3, np.float32)})[0], -np.ones(3))


def loop_model(scan: bool = False):
    body_outputs = [value("c_out", [], "bool"), value("v_out", [3])]
    body_nodes = [node("Identity", ["c_in"], ["c_out"]), node("Add", ["v_in", "x"], ["v_out"])]
    if scan:
        body_outputs.append(value("s_out", [3]))
        body_nodes.append(node("Identity", ["v_in"], ["s_out"]))
    body = graph(
        body_nodes,
        [value("i", [], "int64"), value("c_in", [], "bool"), value("v_in", [3])],
        body_outputs,
    )
    outputs = ["v_final", "scanned"] if scan else ["v_final"]
    m = model(
        [node("Loop", ["n", "go", "v0"], outputs, body=body)],
        [value("x", [3]), value("n", [], "int64"), value("v0", [3])],
        [value(name, [3]) for name in outputs],
        [tensor("go", np.array(True))],
    )
    return m.SerializeToString()


def test_loop_carries_its_values_for_the_trip_count_it_is_fed():
    imported = pc.onnx.load(loop_model())
    assert "while_block" in [op.type for op in imported.program.global_block().ops]
    x, v0 = np.array([1.0, 2.0, 3.0], np.float32), np.full(3, 10.0, np.float32)
    for trips in (0, 1, 4):
        (v,) = imported.run({"x": x, "n": np.array(trips, np.int64), "v0": v0})
        np.testing.assert_array_equal(v, v0 + trips * x)


def test_loop_scan_outputs_are_refused_by_name():
    with pytest.raises(pc.OnnxError, match=r"node 'Loop_v_final' \(Loop\): 1 scan output"):
        pc.onnx.load(loop_model(scan=True))
