"""paddle-ops-nn's passes for plans without gradients (paddle_ops_nn/passes.py): channels last
between oneDNN ops, a convolution's residual add and activation fused into it, its filter
converted once per change (fingerprint, folded by the core). Every pass, and constant folding,
switched off one at a time leaves the outputs of residual and MobileNet-like networks as they
were; the fused conv2d against NumPy on oneDNN and on the built-in engine; the fingerprint op."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import pc, run1

onednn = pytest.importorskip("paddle_ops_nn.onednn", reason="paddle-ops-nn is not installed")
passes = pytest.importorskip("paddle_ops_nn.passes")
needs_onednn = pytest.mark.skipif(not onednn.is_enabled(), reason="oneDNN is not enabled")
RNG = np.random.default_rng(0)


def residual_net(image):
    """A stem and two residual blocks (ResNet's), relu6, clip and leaky_relu after convolutions
    (MobileNet's), a projection with a residual but no activation, then fc."""
    h = pc.ops.relu(pc.layers.conv2d(image, 16, 3, padding=1))
    for act in (pc.ops.relu, lambda v: pc.ops.relu6(v)):
        a = act(pc.layers.conv2d(h, 16, 3, padding=1))
        h = pc.ops.relu(pc.ops.add(pc.layers.conv2d(a, 16, 3, padding=1), h))
    h = pc.ops.clip(pc.layers.conv2d(h, 24, 1), min=-1.0, max=2.0)
    h = pc.ops.leaky_relu(pc.layers.conv2d(h, 24, 3, padding=1, groups=24), alpha=0.1)
    h = pc.ops.add(h, pc.layers.conv2d(h, 24, 1))  # a residual after the conv2d it is added to
    return pc.layers.fc(pc.layers.pool2d(h, 2, pool_stride=2), 10)


def inference(net=residual_net):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", [3, 12, 12])
        out = net(image)
    scope = pc.Scope()
    pc.Executor().run(startup, scope=scope)
    return main, out, scope


FEED = {"image": RNG.standard_normal((2, 3, 12, 12)).astype(np.float32)}


def run(main, out, scope, **executor):
    exe = pc.Executor(**executor)
    (got,) = exe.run(main, feed=FEED, fetch_list=[out], scope=scope)
    return got, exe.prepare(main, FEED, [out])


@needs_onednn
def test_the_passes_fuse_block_and_fold_an_inference_plan():
    main, out, scope = inference()
    _, plan = run(main, out, scope)
    types = plan.op_types
    assert "relu" not in types and "relu6" not in types and "clip" not in types
    assert "leaky_relu" not in types and types.count("add") == 1  # (fc's bias)
    convs = [s.op for s in plan.steps if s.op.type == "conv2d"]
    assert [c.attrs["fuse_activation"] for c in convs] == [
        "relu", "relu", "relu", "clip", "relu", "clip", "leaky_relu", "",
    ]  # fmt: skip
    assert sum(bool(c.input("residual")) for c in convs) == 3
    assert {c.attrs["channel_block"] for c in convs} == {onednn.inference_block()}
    assert plan.folded_ops == ["fingerprint"] * len(convs)


@needs_onednn
@pytest.mark.parametrize(
    "off", ["onednn_layout", "onednn_fusion", "onednn_filter_cache", "fold_constants", "all"]
)
def test_each_pass_leaves_the_outputs_as_they_were(off, without):
    main, out, scope = inference()
    want, plan = run(main, out, scope)
    names = list(passes.PASSES) if off == "all" else [off]
    for name in names:
        if name in passes.PASSES:
            without(name)
    got, other = run(main, out, scope, fold_constants=off not in ("fold_constants", "all"))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert other.op_types != plan.op_types or other.folded_ops != plan.folded_ops


@needs_onednn
def test_a_filter_set_again_is_converted_again():
    main, out, scope = inference()
    exe = pc.Executor()
    exe.run(main, feed=FEED, fetch_list=[out], scope=scope)
    name = next(op.input("filter")[0] for op in main.global_block().ops if op.type == "conv2d")
    scope.set_var(name, RNG.standard_normal(scope.get(name).shape).astype(np.float32))
    (got,) = exe.run(main, feed=FEED, fetch_list=[out], scope=scope)
    (want,) = pc.Executor().run(main, feed=FEED, fetch_list=[out], scope=scope)  # a new plan
    np.testing.assert_array_equal(got, want)


def bn_net(image):
    """conv -> batch norm -> relu twice (the second convolution with a bias), then fc."""
    h = pc.layers.batch_norm(pc.layers.conv2d(image, 16, 3, padding=1, bias_attr=False), act="relu")
    h = pc.layers.batch_norm(pc.layers.conv2d(h, 16, 3, padding=1), act="relu")
    return pc.layers.fc(h, 10)


def evaluation(net):
    """The evaluation clone of a training program of ``net``, running statistics set at random."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        out = net(pc.layers.data("image", [3, 12, 12]))
        pc.optimizer.SGD(0.1).minimize(pc.ops.mean(out))
    test = main.clone(for_test=True)
    scope = pc.Scope()
    pc.Executor().run(startup, scope=scope)
    for name, var in test.global_block().vars.items():
        if var.persistable and "batch_norm" in name and name.endswith(("mean", "variance")):
            value = RNG.standard_normal(var.shape).astype(np.float32)
            scope.set_var(name, np.abs(value) + 0.5 if name.endswith("variance") else value)
    return test, out, scope


@pytest.mark.parametrize("off", [None, "fold_batch_norm"])
def test_batch_norm_folds_into_the_convolution(off, without):
    test, out, scope = evaluation(bn_net)
    if off:
        without(off)
    got, plan = run(test, out, scope)
    want, _ = run(test, out, scope, fold_constants=False)
    for name in passes.PASSES:
        without(name)
    plain, unpassed = run(test, out, scope)
    assert "batch_norm" in unpassed.op_types
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(want, plain, rtol=1e-5, atol=1e-5)
    if off:
        assert "batch_norm" in plan.op_types
        return
    assert "batch_norm" not in plan.op_types and "relu" not in plan.op_types
    assert {"rsqrt", "reshape", "mul", "sub", "fingerprint"} <= set(plan.folded_ops)
    if onednn.is_enabled():
        fused = [s.op.attrs["fuse_activation"] for s in plan.steps if s.op.type == "conv2d"]
        assert fused == ["relu", "relu"]


def test_a_training_program_is_neither_fused_nor_cached():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", [3, 12, 12])
        loss = pc.ops.mean(residual_net(image))
        pc.optimizer.SGD(0.1).minimize(loss)
    scope = pc.Scope()
    exe = pc.Executor()
    exe.run(startup, scope=scope)
    plan = exe.prepare(main, FEED, [loss])
    assert "fingerprint" not in plan.op_types and plan.folded_ops == []
    assert not any(s.op.attrs.get("fuse_activation") for s in plan.steps)


def test_unknown_pass_names_are_refused():
    with pytest.raises(pc.ConfigError, match="paddle-ops-nn has no pass 'layout'; its passes"):
        passes.set_pass_enabled("layout", False)


# -- the fused conv2d --------------------------------------------------------------------------


def reference(x, w, residual, act, alpha, beta):
    n, _, h, wd = x.shape
    k = w.shape[0]
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, k, h, wd))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,kc->nkhw", padded[:, :, i : i + h, j : j + wd], w[:, :, i, j])
    out += residual
    if act == "relu":
        return np.maximum(out, 0)
    if act == "leaky_relu":
        return np.where(out > 0, out, alpha * out)
    return np.clip(out, alpha, beta)


@pytest.mark.parametrize("engine", ["onednn", "built-in", "float64"])
@pytest.mark.parametrize(
    "act, alpha, beta", [("relu", 0, 0), ("leaky_relu", 0.2, 0), ("clip", -0.5, 0.75)]
)
def test_the_fused_conv2d_matches_numpy(act, alpha, beta, engine):
    if engine == "onednn" and not onednn.is_enabled():
        pytest.skip("oneDNN is not enabled")
    dtype = np.float64 if engine == "float64" else np.float32
    x = RNG.standard_normal((2, 4, 5, 6)).astype(dtype)
    w = RNG.standard_normal((8, 4, 3, 3)).astype(dtype)
    residual = RNG.standard_normal((2, 8, 5, 6)).astype(dtype)
    attrs = {"paddings": [1, 1], "fuse_activation": act, "fuse_alpha": alpha, "fuse_beta": beta}
    previous = onednn.set_enabled(False) if engine == "built-in" else None
    try:
        got = run1("conv2d", {"x": x, "filter": w, "residual": residual}, attrs)
    finally:
        if previous is not None:
            onednn.set_enabled(previous)
    want = reference(x.astype(np.float64), w.astype(np.float64), residual, act, alpha, beta)
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-5)


def test_the_fused_conv2d_refuses_what_does_not_fit():
    x, w = np.zeros((1, 2, 4, 4), np.float32), np.zeros((3, 2, 1, 1), np.float32)
    with pytest.raises(pc.ShapeError, match=r"residual must be out's float32\[1, 3, 4, 4\]"):
        run1("conv2d", {"x": x, "filter": w, "residual": np.zeros((1, 2, 4, 4), np.float32)})
    with pytest.raises(pc.ShapeError, match=r"clip's bounds fuse_alpha 1\.0 and fuse_beta 0\.0"):
        run1("conv2d", {"x": x, "filter": w}, {"fuse_activation": "clip", "fuse_alpha": 1.0})
    with pytest.raises(pc.AttrError, match="fuse_activation"):
        run1("conv2d", {"x": x, "filter": w}, {"fuse_activation": "tanh"})


# -- fingerprint -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fingerprints_tell_tensors_apart(dtype):
    x = RNG.standard_normal((5, 7, 3)).astype(dtype)
    first = run1("fingerprint", {"x": x})
    assert first.shape == (1,) and first.dtype == np.int64
    np.testing.assert_array_equal(run1("fingerprint", {"x": x.copy()}), first)
    seen = {int(first[0])}
    for index in [(0, 0, 0), (4, 6, 2), (2, 3, 1)]:  # one bit of one element, anywhere
        y = x.copy()
        y.reshape(-1).view(np.uint8)[np.ravel_multi_index(index, x.shape) * x.itemsize] ^= 1
        seen.add(int(run1("fingerprint", {"x": y})[0]))
    seen.add(int(run1("fingerprint", {"x": x[:4].copy()})[0]))  # a prefix of the bytes
    assert len(seen) == 5
