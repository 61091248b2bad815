"""pc.onnx.load: models become ordinary Programs through the plugins' mappings; constant
subgraphs fold at import; what no plugin maps is listed at once; the imported program runs,
differentiates, trains, clones and saves like any other."""

from __future__ import annotations

import numpy as np
import pytest
from onnx_models import model, node, tensor, value

import paddle_core as pc

RNG = np.random.default_rng(7)


def conv_net() -> tuple[bytes, dict]:
    """Conv 3x3 (pads 1) -> Relu -> GlobalAveragePool -> Flatten -> Gemm, with its weights."""
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    fc = RNG.standard_normal((5, 4)).astype(np.float32)
    fc_b = RNG.standard_normal(5).astype(np.float32)
    m = model(
        [
            node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            node("Relu", ["c"], ["r"]),
            node("GlobalAveragePool", ["r"], ["p"]),
            node("Flatten", ["p"], ["f"], axis=1),
            node("Gemm", ["f", "fc", "fc_b"], ["y"], transB=1),
        ],
        [value("x", ["N", 3, 8, 8])],
        [value("y", ["N", 5])],
        [tensor("w", w), tensor("b", b), tensor("fc", fc), tensor("fc_b", fc_b)],
    )
    return m.SerializeToString(), {"w": w, "b": b, "fc": fc, "fc_b": fc_b}


def conv_net_numpy(x: np.ndarray, p: dict) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    c = np.einsum("nchwij,ocij->nohw", windows, p["w"]) + p["b"][None, :, None, None]
    pooled = np.maximum(c, 0).mean(axis=(2, 3))
    return pooled @ p["fc"].T + p["fc_b"]


def test_a_conv_net_runs_as_numpy_computes_it():
    data, params = conv_net()
    imported = pc.onnx.load(data)
    assert imported.inputs == ["x"] and imported.outputs == ["y"]
    assert imported.program.global_block().var("x").shape == (None, 3, 8, 8)  # "N": unknown
    for batch in (1, 3):  # a symbolic batch takes any size
        x = RNG.standard_normal((batch, 3, 8, 8)).astype(np.float32)
        (y,) = imported.run({"x": x})
        np.testing.assert_allclose(y, conv_net_numpy(x, params), rtol=1e-4, atol=1e-5)
    fixed = pc.onnx.load(data, batch=2)
    assert fixed.program.global_block().var("x").shape == (2, 3, 8, 8)


def test_initializers_are_trainable_parameters_in_the_scope():
    imported = pc.onnx.load(conv_net()[0])
    params = {p.name: p for p in imported.program.all_parameters()}
    assert set(params) == {"w", "b", "fc", "fc_b"}
    assert all(p.trainable for p in params.values())
    np.testing.assert_array_equal(imported.scope.find_var("w").shape, (4, 3, 3, 3))


def test_a_constant_subgraph_folds_at_import():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape (the flatten exporters write): all
    but the Reshape is computed at import, which leaves one op."""
    m = model(
        [
            node("Shape", ["x"], ["s"]),
            node("Gather", ["s", "zero"], ["n"], axis=0),
            node("Unsqueeze", ["n", "axes"], ["n1"]),
            node("Concat", ["n1", "minus_one"], ["shape"], axis=0),
            node("Reshape", ["x", "shape"], ["y"]),
        ],
        [value("x", [2, 3, 4])],
        [value("y", [2, 12])],
        [
            tensor("zero", np.array(0, np.int64)),
            tensor("axes", np.array([0], np.int64)),
            tensor("minus_one", np.array([-1], np.int64)),
        ],
    )
    imported = pc.onnx.load(m.SerializeToString())
    assert [op.type for op in imported.program.global_block().ops] == ["reshape"]
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(imported.run({"x": x})[0], x.reshape(2, 12))


def test_every_unmapped_op_is_listed_before_anything_is_built():
    m = model(
        [
            node("Relu", ["x"], ["a"]),
            node("FancyOp", ["a"], ["b"], domain="com.example", name="fancy_1"),
            node("FancyOp", ["b"], ["c"], domain="com.example", name="fancy_2"),
            node("NoSuchOnnxOp", ["c"], ["y"], name="nope"),
        ],
        [value("x", [2])],
        [value("y", [2])],
        domains={"com.example": 1},
    )
    with pytest.raises(pc.OnnxError) as e:
        pc.onnx.load(m.SerializeToString())
    message = str(e.value)
    assert "com.example:FancyOp (opset 1)" in message and "NoSuchOnnxOp (opset 17)" in message
    assert "2 nodes: 'fancy_1', 'fancy_2'" in message and "'nope'" in message
    assert "Relu" not in message


def test_an_opset_older_than_the_mapping_is_named():
    m = model([node("Softmax", ["x"], ["y"])], [value("x", [2, 3])], [value("y", [2, 3])], opset=11)
    with pytest.raises(pc.OnnxError, match=r"Softmax \(opset 11\).*mapped for opsets 13\+"):
        pc.onnx.load(m.SerializeToString())


def test_onnx_semantics_where_ours_differ():
    """Integer Div truncates toward zero in ONNX (ours floors); Mod with fmod = 1 takes the
    sign of x."""
    x = np.array([7, -7, 7, -7, 6], np.int32)
    y = np.array([2, 2, -2, -2, 3], np.int32)
    for op, attrs, want in [
        ("Div", {}, np.array([3, -3, -3, 3, 2], np.int32)),
        ("Mod", {"fmod": 1}, np.fmod(x, y)),
        ("Mod", {}, np.mod(x, y)),
    ]:
        m = model(
            [node(op, ["x", "y"], ["z"], **attrs)],
            [value("x", [5], "int32"), value("y", [5], "int32")],
            [value("z", [5], "int32")],
        )
        (got,) = pc.onnx.load(m.SerializeToString()).run({"x": x, "y": y})
        np.testing.assert_array_equal(got, want, err_msg=op)


def test_an_imported_model_fine_tunes():
    """Gradients reach the initializers; SGD lowers a loss; the program clones and saves."""
    data, _ = conv_net()
    imported = pc.onnx.load(data, batch=4)
    program, startup = imported.program, pc.Program()
    with pc.program_guard(program, startup):
        y = program.global_block().var("y")
        target = pc.data("target", [4, 5], "float32")
        loss = pc.ops.mean(pc.ops.square(pc.ops.sub(y, target)))
        _, pairs = pc.optimizer.SGD(0.05).minimize(loss)
    assert {p.name for p, _ in pairs} == {"w", "b", "fc", "fc_b"}
    exe = pc.Executor("cpu")
    exe.run(startup, scope=imported.scope)  # the optimizer's state (the learning rate)
    x = RNG.standard_normal((4, 3, 8, 8)).astype(np.float32)
    t = RNG.standard_normal((4, 5)).astype(np.float32)
    before = imported.scope.find_var("fc").copy()
    losses = [
        float(
            exe.run(program, feed={"x": x, "target": t}, fetch_list=[loss], scope=imported.scope)[0]
        )
        for _ in range(20)
    ]
    assert losses[-1] < 0.7 * losses[0], losses
    assert not np.array_equal(imported.scope.find_var("fc"), before)
    test_program = program.clone(for_test=True)
    (y_test,) = exe.run(test_program, feed={"x": x}, fetch_list=["y"], scope=imported.scope)
    assert y_test.shape == (4, 5)


def test_an_imported_program_saves_and_loads(tmp_path):
    imported = pc.onnx.load(conv_net()[0])
    path = tmp_path / "model.pb"
    pc.save_program(imported.program, path)
    loaded = pc.load_program(path)
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    (want,) = imported.run({"x": x})
    (got,) = pc.Executor("cpu").run(loaded, feed={"x": x}, fetch_list=["y"], scope=imported.scope)
    np.testing.assert_array_equal(got, want)


def test_a_constant_graph_output_and_a_renamed_output():
    """An output computed at import (a Constant) and one produced under another name both
    come back under the graph's names."""
    m = model(
        [
            node("Constant", [], ["k"], value=np.array([1.0, 2.0], np.float32)),
            node("Identity", ["k"], ["kk"]),
            node("Add", ["x", "kk"], ["y"]),
        ],
        [value("x", [2])],
        [value("y", [2]), value("kk", [2])],
    )
    imported = pc.onnx.load(m.SerializeToString())
    assert imported.outputs == ["y", "kk"]
    y, kk = imported.run({"x": np.ones(2, np.float32)})
    np.testing.assert_array_equal(y, [2.0, 3.0])
    np.testing.assert_array_equal(kk, [1.0, 2.0])


def test_a_path_loads_like_bytes(tmp_path):
    data, params = conv_net()
    path = tmp_path / "net.onnx"
    path.write_bytes(data)
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    (y,) = pc.onnx.load(path).run({"x": x})
    np.testing.assert_allclose(y, conv_net_numpy(x, params), rtol=1e-4, atol=1e-5)


class CustomOps:
    """A third party's op and its ONNX mapping in a domain of its own, registered in process;
    a second mapping's rule has a bug."""

    def paddle_core_manifest(self):
        return """
            ops {
              proto {
                type: "ex_cube" comment: "x ** 3, times scale."
                inputs { name: "x" comment: "Input." }
                outputs { name: "out" comment: "Output." }
                attrs { name: "scale" type: FLOAT comment: "A factor." default { f: 1.0 } }
              }
              kernels { device: "cpu" dtypes: [FLOAT32] python: "cube_cpu" }
              shape_rule: "paddle_core.rules:unary"
              onnx { domain: "com.example" op_type: "Cube" since_version: 1
                     attrs { name: "factor" attr: "scale" } }
              onnx { domain: "com.example" op_type: "BuggyCube" since_version: 1
                     attrs { name: "factor" } import_rule: "buggy" }
            }
        """

    def cube_cpu(self, x, scale):
        return (x**3 * scale).astype(x.dtype)

    def buggy(self, node):
        return [node.attrs["missing"]]


def custom_model(op_type: str) -> bytes:
    m = model(
        [node(op_type, ["x"], ["y"], domain="com.example", factor=2.0)],
        [value("x", [3])],
        [value("y", [3])],
        domains={"com.example": 1},
    )
    return m.SerializeToString()


def test_a_third_party_op_maps_its_own_domain():
    pc.register_plugin(CustomOps(), name="custom")
    x = np.array([1.0, -2.0, 3.0], np.float32)
    (y,) = pc.onnx.load(custom_model("Cube")).run({"x": x})
    np.testing.assert_array_equal(y, 2 * x**3)
    with pytest.raises(pc.OnnxError) as e:  # the plugin's bug is named, not a raw KeyError
        pc.onnx.load(custom_model("BuggyCube"))
    assert "node 'BuggyCube_y' (com.example:BuggyCube): the ONNX import rule of op 'ex_cube'" in (
        str(e.value)
    )
    assert "plugin 'custom'" in str(e.value) and "KeyError: 'missing'" in str(e.value)


def test_a_constant_made_a_parameter_still_folds():
    """k is a parameter of the program once Add reads it; Mul(k, k) still folds, in a program
    of its own."""
    m = model(
        [
            node("Add", ["x", "k"], ["a"]),
            node("Mul", ["k", "k"], ["kk"]),
            node("Add", ["a", "kk"], ["y"]),
        ],
        [value("x", [2])],
        [value("y", [2])],
        [tensor("k", np.array([2.0, 3.0], np.float32))],
    )
    imported = pc.onnx.load(m.SerializeToString())
    assert [op.type for op in imported.program.global_block().ops] == ["add", "add"]
    (y,) = imported.run({"x": np.ones(2, np.float32)})
    np.testing.assert_array_equal(y, [1 + 2 + 4, 1 + 3 + 9])


def test_an_unmapped_op_names_the_first_party_package_that_maps_it(monkeypatch):
    from paddle_core._src.plugins import catalog

    monkeypatch.setitem(catalog.ONNX_OPS, "paddle-ops-fancy", ("Softsign",))
    m = model([node("Softsign", ["x"], ["y"])], [value("x", [2])], [value("y", [2])])
    with pytest.raises(pc.OnnxError, match=r"mapped by paddle-ops-fancy, not installed: pip"):
        pc.onnx.load(m.SerializeToString())
