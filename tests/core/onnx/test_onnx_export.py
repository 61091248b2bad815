"""pc.onnx.export: programs written through the plugins' mappings pass ONNX's checker and run
in ONNX Runtime with our outputs; they also import back here."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from conftest import ROOT

import paddle_core as pc

onnx = pytest.importorskip("onnx", reason="the checker comes with onnx (the test extra)")
ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is a test dependency")

RNG = np.random.default_rng(3)


def trained(build, feed_shapes: dict) -> tuple[pc.Program, list, pc.Scope]:
    """A program built by ``build`` (inputs -> outputs), its parameters initialised."""
    main, startup, scope = pc.Program(), pc.Program(), pc.Scope()
    with pc.program_guard(main, startup):
        inputs = {n: pc.layers.data(n, shape) for n, shape in feed_shapes.items()}
        outputs = build(**inputs)
    pc.Executor("cpu").run(startup, scope=scope)
    return main, outputs, scope


def ours_and_ort(program, outputs, scope, feed, tmp_path, **kwargs):
    path = tmp_path / "model.onnx"
    model = pc.onnx.export(program, path, feeds=list(feed), fetches=outputs, scope=scope, **kwargs)
    onnx.checker.check_model(str(path), full_check=True)
    ours = pc.Executor("cpu").run(
        program.clone(for_test=True), feed=feed, fetch_list=outputs, scope=scope
    )
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    theirs = session.run(None, feed)
    return model, ours, theirs, path


def digits_nets() -> dict:
    """examples/train_digits.py's networks: name -> (build(image) -> logits, image shape)."""
    pytest.importorskip("sklearn")  # the example loads scikit-learn's digits
    spec = importlib.util.spec_from_file_location(
        "train_digits", ROOT / "examples" / "train_digits.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MODELS


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_the_digits_nets_run_in_onnx_runtime_with_our_outputs(name, tmp_path):
    net, shape = digits_nets()[name]

    def build(image):
        logits = net(image)
        return [logits, pc.layers.softmax(logits)]

    program, outputs, scope = trained(build, {"image": shape})
    feed = {"image": RNG.standard_normal((5, *shape)).astype(np.float32)}
    model, ours, theirs, path = ours_and_ort(program, outputs, scope, feed, tmp_path)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert [i.name for i in model.graph.input] == ["image"]
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    back = pc.onnx.load(path)  # and back: the same numbers here
    for a, b in zip(back.run(feed), ours):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_pooling_and_activations_pick_their_operators(tmp_path):
    def build(x):
        a = pc.layers.pool2d(x, 2, pool_type="avg", pool_stride=2)
        g = pc.layers.pool2d(x, global_pooling=True, pool_type="avg")
        m = pc.ops.gelu(pc.ops.flatten(g, start_axis=1), approximate=True)
        # for test: x * (1 - p) (Paddle's default), and the identity (upscale_in_train)
        down = pc.layers.dropout(m, 0.3)
        up = pc.layers.dropout(m, 0.3, dropout_implementation="upscale_in_train")
        return [a, down, up]

    program, outputs, scope = trained(build, {"x": [3, 6, 6]})
    feed = {"x": RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)}
    with pytest.raises(pc.OnnxError, match=r"Gelu \(opset 20\+\) does not cover opset 18"):
        pc.onnx.export(program, tmp_path / "m.onnx", feeds=["x"], fetches=outputs, scope=scope)
    model, ours, theirs, _ = ours_and_ort(program, outputs, scope, feed, tmp_path, opset=20)
    assert [n.op_type for n in model.graph.node] == [
        "AveragePool",
        "GlobalAveragePool",
        "Flatten",
        "Gelu",
        "Mul",
        "Identity",
    ]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_external_data_beside_the_model(tmp_path):
    program, outputs, scope = trained(digits_nets()["mlp"][0], {"image": [64]})
    feed = {"image": RNG.standard_normal((2, 64)).astype(np.float32)}
    model, ours, theirs, path = ours_and_ort(
        program, outputs, scope, feed, tmp_path, external_data=True
    )
    assert (tmp_path / "model.onnx.data").stat().st_size >= 64 * 128 * 4
    assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(pc.onnx.load(path).run(feed)[0], ours[0], rtol=1e-5, atol=1e-6)


def test_what_cannot_be_written_is_named(tmp_path):
    program = pc.Program()
    with pc.program_guard(program, pc.Program()):
        x = pc.data("x", [4], "int32")
        y = pc.ops.div(x, x)
        z = (
            pc.ops.cumprod(pc.data("f", [4], "float32"), axis=0)
            if hasattr(pc.ops, "cumprod")
            else None
        )
    with pytest.raises(pc.OnnxError, match=r"op 'div' .*integer division floors here"):
        pc.onnx.export(program, tmp_path / "m.onnx", feeds=["x"], fetches=[y])
    with pytest.raises(pc.OnnxError, match="opset 12 is not one export writes"):
        pc.onnx.export(program, tmp_path / "m.onnx", feeds=["x"], fetches=[y], opset=12)
    with pytest.raises(pc.ProgramError, match="no variable 'nope'"):
        pc.onnx.export(program, tmp_path / "m.onnx", feeds=["x"], fetches=["nope"])
    if z is not None:
        with pytest.raises(pc.OnnxError, match="cannot be written as ONNX"):
            pc.onnx.export(program, tmp_path / "m.onnx", feeds=["f"], fetches=[z])


def test_a_parameter_without_a_value_is_named(tmp_path):
    program, outputs, _ = trained(digits_nets()["mlp"][0], {"image": [64]})
    with pytest.raises(pc.OnnxError, match="has no value in the scope"):
        pc.onnx.export(
            program, tmp_path / "m.onnx", feeds=["image"], fetches=outputs, scope=pc.Scope()
        )


def test_an_imported_model_fine_tuned_here_runs_in_onnx_runtime(tmp_path):
    """ONNX in, a few SGD steps here, ONNX out: ONNX Runtime gives the fine-tuned outputs."""
    from test_onnx_import import conv_net

    imported = pc.onnx.load(conv_net()[0], batch=4)
    x = RNG.standard_normal((4, 3, 8, 8)).astype(np.float32)
    t = RNG.standard_normal((4, 5)).astype(np.float32)
    (before,) = imported.run({"x": x})
    program, startup = imported.program, pc.Program()
    with pc.program_guard(program, startup):
        y = program.global_block().var("y")
        target = pc.data("target", [4, 5], "float32")
        loss = pc.ops.mean(pc.ops.square(pc.ops.sub(y, target)))
        pc.optimizer.SGD(0.05).minimize(loss)
    exe = pc.Executor("cpu")
    exe.run(startup, scope=imported.scope)
    for _ in range(5):
        exe.run(program, feed={"x": x, "target": t}, fetch_list=[loss], scope=imported.scope)
    path = tmp_path / "tuned.onnx"
    model = pc.onnx.export(program, path, feeds=["x"], fetches=["y"], scope=imported.scope)
    onnx.checker.check_model(str(path), full_check=True)
    test_program = program.clone(for_test=True)
    (ours,) = exe.run(test_program, feed={"x": x}, fetch_list=["y"], scope=imported.scope)
    assert not np.allclose(ours, before)  # fine-tuned
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": x})[0], ours, rtol=1e-4, atol=1e-5)
    assert "target" not in [i.name for i in model.graph.input]  # pruned to the fetches
