"""Tests of example_cos, through the installed package (src/ layout: `pip install .` first).

check_op, paddle-core's testing kit, checks the op the way the core's own ops are checked: its
manifest, its shape rule against what the kernels return, every device and dtype against the
NumPy reference, gradients against finite differences, save and load of a program using it,
and that attr values outside the declared range are refused.
"""

import numpy as np
import pytest

import paddle_core as pc
from paddle_core.testing import check_op


def reference(x, scale=1.0):
    """What example_cos computes, in NumPy."""
    return scale * np.cos(x)


@pytest.mark.parametrize("shape", [(3, 4), (7,), (), (0, 5)])
def test_example_cos(shape):
    x = np.random.default_rng(0).uniform(-3, 3, shape)
    check_op("example_cos", {"x": x}, {"scale": 2.5}, reference=reference)


def test_example_cos_default_scale():
    check_op("example_cos", {"x": np.linspace(-3, 3, 10)}, reference=reference)


def test_example_cos_in_a_program():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 2], dtype="float32")
        y = pc.ops.example_cos(x, scale=3.0)
    feed = {"x": np.array([[0.0, np.pi]], np.float32)}
    (out,) = pc.Executor("cpu").run(prog, feed=feed, fetch_list=[y])
    np.testing.assert_allclose(out, [[3.0, -3.0]], atol=1e-6)


def test_scale_must_be_positive():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", shape=[2], dtype="float32")
        with pytest.raises(pc.AttrError, match="scale"):
            pc.ops.example_cos(x, scale=0.0)


def test_example_cos_onnx_both_ways(tmp_path):
    """Written as this package's ONNX operator, read back as example_cos (the manifest's mapping)."""
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 2], dtype="float32")
        y = pc.ops.example_cos(x, scale=3.0)
    path = tmp_path / "example_cos.onnx"
    model = pc.onnx.export(prog, path, feeds=["x"], fetches=[y], scope=pc.Scope())
    nodes = [(n.domain, n.op_type) for n in model.graph.node]
    assert nodes == [("paddle_ops_example", "ScaledCos")]
    imported = pc.onnx.load(path)
    assert [op.type for op in imported.program.global_block().ops] == ["example_cos"]
    (out,) = imported.run({"x": np.array([[0.0, np.pi]], np.float32)})
    np.testing.assert_allclose(out, [[3.0, -3.0]], atol=1e-6)
