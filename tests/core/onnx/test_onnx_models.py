"""Models people already have: PyTorch networks exported with torch.onnx.export (both of its
exporters, at their default opset, random weights), imported with pc.onnx.load and compared with
PyTorch's outputs and with ONNX Runtime's on the same file. Outputs agree within rtol 1e-4,
atol 1e-5 (float32)."""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest

import paddle_core as pc

torch = pytest.importorskip(
    "torch", reason="the model tests export with PyTorch (the reference extra)"
)
ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is a test dependency")
T = pytest.importorskip("torch_models")

RTOL, ATOL = 1e-4, 1e-5
MODELS = {
    "resnet18": (lambda: T.ResNet18(), (2, 3, 32, 32)),
    "mobilenet_v2": (lambda: T.MobileNetV2(), (2, 3, 64, 64)),
    "mobilenet_v3_small": (lambda: T.MobileNetV3Small(), (2, 3, 64, 64)),
    "efficientnet_b0": (lambda: T.EfficientNetB0(), (2, 3, 64, 64)),
    "squeezenet": (lambda: T.SqueezeNet(), (2, 3, 64, 64)),
    "vit": (lambda: T.ViT(), (2, 3, 32, 32)),
    "transformer_encoder": (lambda: T.Encoder(), (2, 16, 64)),
    "lstm": (lambda: T.Recurrent(torch.nn.LSTM), (2, 5, 16)),
    "lstm_bidirectional": (lambda: T.Recurrent(torch.nn.LSTM, bidirectional=True), (2, 5, 16)),
    "gru": (lambda: T.Recurrent(torch.nn.GRU), (2, 5, 16)),
}


def exported(name: str, dynamo: bool, tmp_path) -> tuple:
    """(path, the PyTorch model, an input) for a model exported by one of the exporters."""
    if dynamo:
        pytest.importorskip("onnxscript", reason="torch.onnx.export's dynamo exporter needs it")
    build, shape = MODELS[name]
    model = T.seeded(build())
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    path = tmp_path / f"{name}.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), dynamo=dynamo)
    return path, model, x


@pytest.mark.slow
@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
@pytest.mark.parametrize("name", list(MODELS))
def test_an_exported_model_runs_as_pytorch_and_onnx_runtime_run_it(name, dynamo, tmp_path):
    path, model, x = exported(name, dynamo, tmp_path)
    imported = pc.onnx.load(path)
    (ours,) = imported.run({imported.inputs[0]: x.numpy()})
    with torch.no_grad():
        want = model(x).numpy()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (theirs,) = session.run(None, {imported.inputs[0]: x.numpy()})
    np.testing.assert_allclose(ours, want, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL)


@pytest.mark.slow
def test_resnet18_fine_tuned_here_then_run_in_onnx_runtime(tmp_path):
    """resnet18 at 32x32 from PyTorch: a few SGD steps here on random data lower its loss; the
    exported result runs in ONNX Runtime with the fine-tuned outputs."""
    path, _, _ = exported("resnet18", False, tmp_path)
    imported = pc.onnx.load(path)  # (the export's batch: 2)
    program, startup = imported.program, pc.Program()
    with pc.program_guard(program, startup):
        logits = program.global_block().var(imported.outputs[0])
        label = pc.data("label", [2, 1], "int64")
        _, loss = pc.ops.softmax_with_cross_entropy(logits, label)
        loss = pc.ops.mean(loss)
        pc.optimizer.SGD(0.01).minimize(loss)
    exe = pc.Executor("cpu")
    exe.run(startup, scope=imported.scope)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, (2, 1))
    feed = {imported.inputs[0]: x, "label": y}
    losses = [
        float(exe.run(program, feed=feed, fetch_list=[loss], scope=imported.scope)[0])
        for _ in range(6)
    ]
    assert losses == sorted(losses, reverse=True), losses  # every step lowers it
    tuned = tmp_path / "tuned.onnx"
    pc.onnx.export(
        program, tuned, feeds=imported.inputs, fetches=imported.outputs, scope=imported.scope
    )
    test_program = program.clone(for_test=True)
    (ours,) = exe.run(
        test_program,
        feed={imported.inputs[0]: x},
        fetch_list=imported.outputs,
        scope=imported.scope,
    )
    session = ort.InferenceSession(str(tuned), providers=["CPUExecutionProvider"])
    (theirs,) = session.run(None, {imported.inputs[0]: x})
    np.testing.assert_allclose(theirs, ours, rtol=RTOL, atol=ATOL)


@pytest.mark.slow
def test_an_imported_resnet18_is_drawn(tmp_path):
    """One box per op naming its type, the initializers drawn as parameters, by name."""
    import xml.etree.ElementTree as ET

    path, _, _ = exported("resnet18", False, tmp_path)
    program = pc.onnx.load(path).program
    svg = ET.fromstring(pc.render_program(program, "svg"))
    ns = "{http://www.w3.org/2000/svg}"
    boxes: dict[str, list] = {"op": [], "param": []}
    for g in svg.iter(f"{ns}g"):
        classes = g.get("class", "").split()
        for kind in boxes:
            if "node" in classes and kind in classes:
                boxes[kind].append(g.findtext(f"{ns}text"))
    ops = program.global_block().ops
    assert sorted(boxes["op"]) == sorted(op.type for op in ops)
    assert boxes["op"].count("conv2d") == 20 and boxes["op"].count("add") == 8 + 1
    assert sorted(boxes["param"]) == sorted(p.name for p in program.all_parameters())
