"""paddle-ops-nn's attention_fusion pass (paddle_ops_nn/attention_fusion.py): attention composed
of matmuls and a softmax, in the forms ONNX exporters write, becomes one
scaled_dot_product_attention in CPU plans. Each form gives NumPy's attention and the composed
plan's outputs; what must not be fused is not; a PyTorch encoder exported to ONNX runs fused
and as PyTorch runs it; a long sequence's plan holds no scores."""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest
from op_helpers import pc

pytest.importorskip("paddle_ops_nn.passes", reason="paddle-ops-nn is not installed")
RNG = np.random.default_rng(0)
B, H, L, S, E = 2, 3, 5, 7, 4
FEED = {
    "q": RNG.standard_normal((B, H, L, E)).astype(np.float32),
    "k": RNG.standard_normal((B, H, S, E)).astype(np.float32),
    "v": RNG.standard_normal((B, H, S, E)).astype(np.float32),
    "c": np.array([0.6], np.float32),
    "mask": RNG.standard_normal((L, S)).astype(np.float32),
}


def reference(mask=True):
    """softmax(q kᵀ * 0.6 + mask) v in float64."""
    q, k, v = (FEED[n].astype(np.float64) for n in "qkv")
    s = q @ np.swapaxes(k, -1, -2) * 0.6 + (FEED["mask"] if mask else 0)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def composed(form: str):
    """(program, out, fed names) of one exporter's form of attention."""
    main = pc.Program()
    with pc.program_guard(main):
        q, k, v = (pc.data(n, list(FEED[n].shape)) for n in "qkv")
        c = pc.data("c", [1])
        mask = pc.data("mask", [L, S])
        if form == "transpose_y, mul, mask":  # matmul(q, k, transpose_y) * c + mask
            s = pc.ops.add(pc.ops.mul(pc.ops.matmul(q, k, transpose_y=True), c), mask)
        elif form == "div":  # (q kᵀ) / (1 / c), no mask
            inverse = pc.ops.div(pc.ops.full_like(c, value=1.0), c)
            s = pc.ops.div(pc.ops.matmul(q, pc.ops.transpose(k, perm=[0, 1, 3, 2])), inverse)
        elif form == "torchscript":  # (q √c)(kᵀ √c) + mask
            root = pc.ops.sqrt(c)
            kt = pc.ops.mul(pc.ops.transpose(k, perm=[0, 1, 3, 2]), root)
            s = pc.ops.add(mask, pc.ops.matmul(pc.ops.mul(q, root), kt))
        else:  # dynamo's: kᵀ of k [B * H, S, E], reshaped to [B, H, E, S], then scaled
            flat = pc.ops.reshape(k, shape=[B * H, S, E])
            kt = pc.ops.reshape(pc.ops.transpose(flat, perm=[0, 2, 1]), shape=[B, H, E, S])
            root = pc.ops.sqrt(c)
            s = pc.ops.add(pc.ops.matmul(pc.ops.mul(q, root), pc.ops.mul(root, kt)), mask)
        out = pc.ops.matmul(pc.ops.softmax(s, axis=-1), v)
    return main, out


FORMS = ["transpose_y, mul, mask", "div", "torchscript", "dynamo"]


@pytest.mark.parametrize("form", FORMS)
def test_each_form_becomes_one_attention_and_computes_the_same(form, without):
    main, out = composed(form)
    exe = pc.Executor()
    (got,) = exe.run(main, feed=FEED, fetch_list=[out])
    types = exe.prepare(main, FEED, [out]).op_types
    assert types.count("scaled_dot_product_attention") == 1 and "softmax" not in types
    np.testing.assert_allclose(got, reference(mask=form != "div"), rtol=1e-5, atol=1e-5)
    without("attention_fusion")
    other = pc.Executor()
    (want,) = other.run(main, feed=FEED, fetch_list=[out])
    assert "scaled_dot_product_attention" not in other.prepare(main, FEED, [out]).op_types
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_fetched_probabilities_are_not_fused_away():
    main, out = composed("torchscript")
    (softmax,) = [op for op in main.global_block().ops if op.type == "softmax"]
    (probabilities,) = softmax.output("out")
    exe = pc.Executor()
    got, p = exe.run(main, feed=FEED, fetch_list=[out, probabilities])
    assert (
        "scaled_dot_product_attention" not in exe.prepare(main, FEED, [out, probabilities]).op_types
    )
    np.testing.assert_allclose(got, reference(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("case", ["softmax over queries", "a mask that widens the scores"])
def test_what_is_not_attention_is_left_alone(case):
    main = pc.Program()
    with pc.program_guard(main):
        q, k, v = (pc.data(n, list(FEED[n].shape)) for n in "qkv")
        s = pc.ops.matmul(q, k, transpose_y=True)
        if case == "softmax over queries":
            p = pc.ops.softmax(s, axis=-2)
        else:  # [4, 1, 1, 1, 1] broadcasts the scores to [4, B, H, L, S]
            p = pc.ops.softmax(pc.ops.add(s, pc.data("wide", [4, 1, 1, 1, 1])))
        out = pc.ops.matmul(p, v)
    feed = {n: FEED[n] for n in "qkv"} | {"wide": np.ones((4, 1, 1, 1, 1), np.float32)}
    feed = {n: a for n, a in feed.items() if main.global_block().find_var(n) is not None}
    exe = pc.Executor()
    (got,) = exe.run(main, feed=feed, fetch_list=[out])
    assert "scaled_dot_product_attention" not in exe.prepare(main, feed, [out]).op_types
    assert got.shape == ((B, H, L, E) if case == "softmax over queries" else (4, B, H, L, E))


def test_a_training_program_keeps_its_composed_attention():
    """The probabilities' gradient reads them: nothing is fused."""
    main = pc.Program()
    with pc.program_guard(main):
        q, k, v = (pc.data(n, list(FEED[n].shape)) for n in "qkv")
        for var in (q, k, v):
            var.stop_gradient = False
        out = pc.ops.matmul(pc.ops.softmax(pc.ops.matmul(q, k, transpose_y=True)), v)
        grads = pc.gradients([pc.ops.sum(out)], [q])
    feed = {n: FEED[n] for n in "qkv"}
    types = pc.Executor().prepare(main, feed, grads).op_types
    assert "scaled_dot_product_attention" not in types and "softmax_grad" in types


def test_a_long_sequences_plan_holds_no_scores(without):
    """[1, 2, 512, 512] scores and probabilities: 2 MB each, gone from the arena."""
    n = 512
    main = pc.Program()
    with pc.program_guard(main):
        q, k, v = (pc.data(name, [1, 2, n, 8]) for name in "qkv")
        out = pc.ops.matmul(pc.ops.softmax(pc.ops.matmul(q, k, transpose_y=True)), v)
    feed = {name: RNG.standard_normal((1, 2, n, 8)).astype(np.float32) for name in "qkv"}
    fused = pc.Executor().prepare(main, feed, [out]).memory.arena_bytes
    without("attention_fusion")
    whole = pc.Executor().prepare(main, feed, [out]).memory.arena_bytes
    assert whole - fused >= 2 * n * n * 4


def test_an_encoder_exported_from_pytorch_runs_fused_as_pytorch_runs_it(tmp_path):
    torch = pytest.importorskip("torch", reason="the test exports with PyTorch")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    x = torch.randn(2, 9, 16)
    path = tmp_path / "encoder.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), dynamo=False)
    imported = pc.onnx.load(path)
    feed = {imported.inputs[0]: x.numpy()}
    exe = pc.Executor()
    (got,) = exe.run(imported.program, feed=feed, fetch_list=imported.outputs, scope=imported.scope)
    types = exe.prepare(imported.program, feed, imported.outputs).op_types
    assert types.count("scaled_dot_product_attention") == 2 and "softmax" not in types
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
