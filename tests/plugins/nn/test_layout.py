"""oneDNN's blocked layout between ops: reorder_layout against NumPy; conv2d, pool2d and
batch_norm on blocked tensors (channel_block) against their NCHW results; and the layout pass
(paddle_ops_nn/layout.py), networks run with and without it: forward values, fetched inner
activations, gradients and training steps are the same bits, with an op of another kind in the
middle, values fed or fetched inside a chain, a value read twice (its gradient summed), the
Model's expressions, and 16-channel blocks (AVX-512's) on any CPU; and for CPU plans only (a
plan for another device keeps NCHW, its ops falling back to the CPU's kernels included)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from op_helpers import FLOATS, check_grad, pc, run1, run_op

onednn = pytest.importorskip("paddle_ops_nn.onednn", reason="paddle-ops-nn is not installed")
layout = pytest.importorskip("paddle_ops_nn.layout")
needs_onednn = pytest.mark.skipif(
    not onednn.channel_block(), reason="no oneDNN with a blocked layout in this build or CPU"
)
RNG = np.random.default_rng(0)
BLOCKS = [8, 16]


def blocked(x: np.ndarray, b: int) -> np.ndarray:
    """NCHW x in nChw{b}c, as the core holds it: [N, C / b, H, W, b]."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2))


def plain(x: np.ndarray) -> np.ndarray:
    n, blocks, h, w, b = x.shape
    return np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3).reshape(n, blocks * b, h, w))


def channels_last(x: np.ndarray) -> np.ndarray:
    """NCHW x channels last, as the core holds it (channel_block -1): [N, 1, H, W, C]."""
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)[:, None])


@pytest.fixture
def propagation():
    """Sets layout propagation for the plans a test prepares; restored afterwards."""
    previous = onednn.set_layout_propagation(True)
    yield onednn.set_layout_propagation
    onednn.set_layout_propagation(previous)


# -- reorder_layout ------------------------------------------------------------------------------


# Planes of 8 * k positions and of a few more (float32's 8x8 transposes and their tail).
PLANES = [(3, 5), (4, 6), (9, 11)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("b", BLOCKS)
@pytest.mark.parametrize("h, w", PLANES)
def test_reorder_layout_matches_numpy(b, dtype, h, w):
    x = RNG.standard_normal((2, 2 * b, h, w)).astype(dtype)
    got = run1("reorder_layout", {"x": x}, {"channel_block": b})
    np.testing.assert_array_equal(got, blocked(x, b))
    np.testing.assert_array_equal(run1("reorder_layout", {"x": got}, {"channel_block": 0}), x)
    empty = np.zeros((0, b, 3, 5), dtype)
    assert run1("reorder_layout", {"x": empty}, {"channel_block": b}).shape == (0, 1, 3, 5, b)


@pytest.mark.parametrize("c", [3, 8, 24])
@pytest.mark.parametrize("h, w", PLANES)
def test_reorder_layout_to_channels_last_matches_numpy(c, h, w):
    x = RNG.standard_normal((2, c, h, w)).astype(np.float32)
    got = run1("reorder_layout", {"x": x}, {"channel_block": -1})
    np.testing.assert_array_equal(got, channels_last(x))
    np.testing.assert_array_equal(run1("reorder_layout", {"x": got}, {"channel_block": 0}), x)
    check_grad("reorder_layout", {"x": x.astype(np.float64)}, {"channel_block": -1})


@pytest.mark.parametrize("b", [0, 8])
def test_reorder_layout_gradient_matches_finite_differences(b):
    x = RNG.standard_normal((1, 8, 2, 3))
    check_grad("reorder_layout", {"x": blocked(x, 8) if b == 0 else x}, {"channel_block": b})


@pytest.mark.parametrize(
    "shape, b, message",
    [
        ((2, 12, 3, 3), 8, "x has 12 channels, which channel_block 8 does not divide"),
        ((2, 8, 3, 3), 0, r"x must be blocked, \[N, C / b, H, W, b\] with b = 8 or 16"),
        ((2, 2, 3, 3, 4), 0, r"x must be blocked, \[N, C / b, H, W, b\] with b = 8 or 16"),
        ((2, 1, 3, 3, 8), 8, r"x must be 4-D \(NCHW\) to block its channels"),
    ],
)
def test_reorder_layout_refuses_what_it_cannot_convert(shape, b, message):
    with pytest.raises(pc.ShapeError, match=message):
        run1("reorder_layout", {"x": np.zeros(shape, np.float32)}, {"channel_block": b})


# -- ops on blocked tensors ----------------------------------------------------------------------


def _blocked_net(op, inputs, attrs, b, x_blocked):
    """op on x converted to nChw{b}c (or left NCHW), its result converted back to NCHW, and the
    gradients of a weighted sum of it: a program with reorder_layout ops at its edges."""
    prog = pc.Program()
    with pc.program_guard(prog):
        vars_ = {k: pc.data(k, list(v.shape)) for k, v in inputs.items()}
        x = vars_["x"]
        if x_blocked:
            x = pc.ops.reorder_layout(x, channel_block=b)
        outs = getattr(pc.ops, op)(**{**vars_, "x": x}, **attrs, channel_block=b)
        out = outs if op != "batch_norm" else outs[0]
        out = pc.ops.reorder_layout(out, channel_block=0) if b else out
        weights = pc.data("weights", list(out.shape))
        loss = pc.ops.sum(pc.ops.mul(out, weights))
        grads = pc.gradients([loss], [vars_[k] for k in inputs if k in ("x", "filter", "scale")])
    return prog, [out, *grads]


def _plain_net(op, inputs, attrs):
    return _blocked_net(op, inputs, attrs, 0, False)


CASES = {
    "conv2d": (
        lambda c: {"x": (2, c, 7, 6), "filter": (2 * c, c, 3, 3)},
        {"paddings": [1, 2], "strides": [1, 2]},
    ),
    "pool2d max": (lambda c: {"x": (2, c, 7, 6)}, {"pooling_type": "max", "ksize": [3, 2]}),
    "pool2d avg": (
        lambda c: {"x": (2, c, 7, 6)},
        {"pooling_type": "avg", "ksize": [2, 2], "paddings": [1, 1], "strides": [2, 2]},
    ),
    "batch_norm": (
        lambda c: {"x": (3, c, 5, 4), "scale": (c,), "bias": (c,), "mean": (c,), "variance": (c,)},
        {},
    ),
}


@pytest.mark.parametrize("x_blocked", [True, False], ids=["blocked x", "NCHW x"])
@pytest.mark.parametrize("b", [*BLOCKS, -1])
@pytest.mark.parametrize("case", CASES)
def test_ops_on_blocked_tensors_give_the_nchw_results(case, b, x_blocked, propagation):
    if case.startswith("conv2d") and not onednn.is_enabled():
        pytest.skip("conv2d computes blocked tensors on oneDNN only")
    if case == "batch_norm" and not x_blocked:
        pytest.skip("batch_norm's x and y share one layout")
    if case == "batch_norm" and b == -1:
        pytest.skip("batch_norm takes channels last with is_test only (its own test)")
    shapes, attrs = CASES[case]
    op = case.split()[0]
    inputs = {
        k: RNG.standard_normal(s).astype(np.float32)
        for k, s in shapes(2 * b if b > 0 else 24).items()
    }
    if op == "batch_norm":
        inputs["variance"] = np.abs(inputs["variance"]) + 0.5
    propagation(False)
    prog, fetch = _plain_net(op, inputs, attrs)
    weights = RNG.standard_normal(fetch[0].shape).astype(np.float32)
    want = pc.Executor().run(prog, feed={**inputs, "weights": weights}, fetch_list=fetch)
    prog, fetch = _blocked_net(op, inputs, attrs, b, x_blocked)
    got = pc.Executor().run(prog, feed={**inputs, "weights": weights}, fetch_list=fetch)
    for g, w in zip(got, want):
        if op == "pool2d":  # oneDNN adds a pooling gradient's overlapping windows in another
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)  # order for blocked tensors
        else:  # the same primitive on the same values (conv2d), the same sums (batch_norm)
            np.testing.assert_array_equal(g, w)


def test_batch_norm_at_inference_on_channels_last_tensors():
    c = 24
    x = RNG.standard_normal((3, c, 5, 4)).astype(np.float32)
    stats = {k: RNG.standard_normal(c).astype(np.float32) for k in ("scale", "bias", "mean")}
    stats["variance"] = np.abs(RNG.standard_normal(c)).astype(np.float32) + 0.5
    want = run_op("batch_norm", {"x": x, **stats}, {"is_test": True})["y"][0]
    got = run_op(
        "batch_norm", {"x": channels_last(x), **stats}, {"is_test": True, "channel_block": -1}
    )
    np.testing.assert_array_equal(got["y"][0], channels_last(want))
    with pytest.raises(
        pc.KernelError, match=r"channel_block -1 \(channels last\) is for inference"
    ):
        run_op("batch_norm", {"x": channels_last(x), **stats}, {"channel_block": -1})


def test_max_pooling_of_blocked_tensors_keeps_nans(propagation):
    x = RNG.standard_normal((1, 8, 4, 4)).astype(np.float32)
    x[0, 3, 1, 1] = np.nan
    got = plain(run1("pool2d", {"x": blocked(x, 8)}, {"ksize": [2, 2], "channel_block": 8}))
    np.testing.assert_array_equal(got, run1("pool2d", {"x": x}, {"ksize": [2, 2]}))
    assert np.isnan(got[0, 3, :2, :2]).all() and np.isnan(got).sum() == 4


@pytest.mark.parametrize("b", BLOCKS)
def test_a_blocked_convolution_over_no_input_channels_gives_its_bias(b):
    """No engine computes it (an empty convolution): out is the bias in out's blocked layout,
    bias_grad the sums of the blocked out_grad."""
    x, bias = np.zeros((2, 0, 5, 5), np.float32), RNG.standard_normal(b).astype(np.float32)
    inputs = {"x": x, "filter": np.zeros((b, 0, 3, 3), np.float32), "bias": bias}
    want = np.broadcast_to(bias[:, None, None], (2, b, 3, 3))
    np.testing.assert_array_equal(run1("conv2d", inputs, {"channel_block": b}), blocked(want, b))
    g = RNG.standard_normal((2, b, 3, 3)).astype(np.float32)
    grads = run_op("conv2d_grad", {**inputs, "out_grad": blocked(g, b)}, {"channel_block": b})
    plain_grads = run_op("conv2d_grad", {**inputs, "out_grad": g})
    np.testing.assert_array_equal(grads["bias_grad"][0], plain_grads["bias_grad"][0])
    want = g.sum(axis=(0, 2, 3), dtype=np.float64).astype(np.float32)  # summed in double
    np.testing.assert_allclose(grads["bias_grad"][0], want, rtol=1e-6)


@pytest.mark.parametrize("b", BLOCKS)
def test_batch_norm_grad_of_blocked_planes_with_no_elements(b):
    """Their sums are zeros, as for NCHW planes (a division by the plane's size once ended the
    process)."""
    x, v = np.zeros((2, 2 * b, 0, 3), np.float32), np.ones(2 * b, np.float32)
    inputs = {"x": x, "scale": v, "saved_mean": v, "saved_inv_std": v, "y_grad": x}
    want = run_op("batch_norm_grad", inputs)
    blocked_inputs = {**inputs, "x": blocked(x, b), "y_grad": blocked(x, b)}
    got = run_op("batch_norm_grad", blocked_inputs, {"channel_block": b})
    for slot in ("scale_grad", "bias_grad"):
        np.testing.assert_array_equal(got[slot][0], want[slot][0])
        assert not got[slot][0].any()
    assert got["x_grad"][0].shape == (2, 2, 0, 3, b)


def test_blocked_tensors_that_do_not_fit_are_refused():
    x = np.zeros((2, 8, 5, 5), np.float32)
    with pytest.raises(pc.ShapeError, match="out has 12 channels, which channel_block 8 does"):
        run1(
            "conv2d", {"x": x, "filter": np.zeros((12, 8, 3, 3), np.float32)}, {"channel_block": 8}
        )
    with pytest.raises(pc.ShapeError, match=r"x must be blocked with channel_block 8, \[N, C / 8"):
        run1(
            "conv2d",
            {"x": blocked(x, 8)[..., :4].copy(), "filter": x[:, :, :3, :3]},
            {"channel_block": 8},
        )
    with pytest.raises(pc.ShapeError, match=r"channel_block .* needs float32"):
        run1(
            "conv2d",
            {"x": x.astype("float64"), "filter": x[:, :, :3, :3].astype("float64")},
            {"channel_block": 8},
        )
    vector = np.ones(8, np.float32)
    with pytest.raises(pc.ShapeError, match=r"x must be blocked with channel_block 16"):
        run_op(
            "batch_norm",
            {
                "x": blocked(x, 8),
                "scale": vector,
                "bias": vector,
                "mean": vector,
                "variance": vector,
            },
            {"channel_block": 16},
        )


@pytest.mark.skipif(not onednn.is_available(), reason="this build has no oneDNN")
def test_a_blocked_conv2d_needs_onednn():
    x = np.zeros((2, 8, 5, 5), np.float32)
    inputs = {"x": blocked(x, 8), "filter": np.zeros((8, 8, 3, 3), np.float32)}
    onednn.set_enabled(False)
    try:
        with pytest.raises(
            pc.KernelError,
            match=r"channel_block 8 .* needs float32 computed by oneDNN, but oneDNN is not enabled",
        ):
            run1("conv2d", inputs, {"channel_block": 8})
    finally:
        onednn.set_enabled(True)


# -- the layout pass -----------------------------------------------------------------------------


def cnn(image, filters=(16, 32), middle=None, classes=10, act="relu"):
    """[conv 3x3 -> batch norm -> act -> max pool 2x2] per filter count, then fc; ``middle``
    (ops of other kinds) after the first batch norm and act. Returns the logits and the
    first act's output."""
    h, inner = image, None
    for k, count in enumerate(filters):
        h = pc.layers.conv2d(h, count, 3, padding=1, bias_attr=False)
        h = pc.layers.batch_norm(h, act=act)
        if k == 0:
            inner = h
            h = middle(h) if middle is not None else h
        h = pc.layers.pool2d(h, 2, pool_stride=2)
    return pc.layers.fc(h, classes), inner


def training(net, image_shape=(3, 16, 16)):
    """A training step (SGD) of ``net``: (main, startup, loss, inner value)."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", list(image_shape))
        label = pc.layers.data("label", [1], dtype="int64")
        logits, inner = net(image)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        pc.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss, inner


def batches(count, image_shape=(3, 16, 16), batch=4):
    rng = np.random.default_rng(1)
    return [
        {
            "image": rng.standard_normal((batch, *image_shape)).astype(np.float32),
            "label": rng.integers(0, 10, (batch, 1)),
        }
        for _ in range(count)
    ]


def train(
    propagate, net=cnn, steps=3, fetch=lambda loss, inner: [loss, inner], feeds=None, device="cpu"
):
    """``steps`` training steps with propagation on or off: (fetched values per step, the
    scope's persistable values, the types and channel blocks of the plan's ops)."""
    previous = onednn.set_layout_propagation(propagate)
    try:
        main, startup, loss, inner = training(net)
        scope, exe = pc.Scope(), pc.Executor(device, num_threads=1)
        exe.run(startup, scope=scope)
        fetch_list = fetch(loss, inner)
        fetched = []
        for feed in feeds or batches(steps):
            fetched.append(exe.run(main, feed=feed, fetch_list=fetch_list, scope=scope))
        plan = exe.prepare(main, feed, fetch_list)
    finally:
        onednn.set_layout_propagation(previous)
    state = {
        name: np.array(scope.find_var(name))
        for name, var in main.global_block().vars.items()
        if var.persistable and scope.find_var(name) is not None
    }
    ops = [(s.op.type, s.op.attrs.get("channel_block", 0), s.op.input_names) for s in plan.steps]
    return fetched, state, ops


def assert_same_bits(a, b):
    (fetched_a, state_a, _), (fetched_b, state_b, _) = a, b
    for step_a, step_b in zip(fetched_a, fetched_b, strict=True):
        for x, y in zip(step_a, step_b, strict=True):
            assert x.shape == y.shape
            np.testing.assert_array_equal(x, y)
    assert state_a.keys() == state_b.keys()
    for name in state_a:
        np.testing.assert_array_equal(state_a[name], state_b[name], err_msg=name)


def blocked_ops(ops):
    return sorted({t for t, b, _ in ops if b and t != "reorder_layout"})


def reorders(ops):
    return [b for t, b, _ in ops if t == "reorder_layout"]


@pytest.fixture(params=BLOCKS, ids=lambda b: f"{b} channels a block")
def block(request, monkeypatch):
    """Layout propagation with this CPU's block and with the other one (the pass then keeps
    a layout oneDNN's primitives convert from and to, which must not change a bit)."""
    if not onednn.channel_block():
        pytest.skip("no oneDNN with a blocked layout in this build or CPU")
    monkeypatch.setattr(onednn, "channel_block", lambda: request.param)
    return request.param


def test_training_steps_are_the_same_bits_with_and_without_propagation(block):
    on, off = train(True), train(False)
    assert_same_bits(on, off)
    ops = on[2]
    assert blocked_ops(ops) == [
        "batch_norm",
        "batch_norm_grad",
        "conv2d",
        "conv2d_grad",
        "pool2d",
        "pool2d_grad",
    ]
    assert {b for _, b, _ in ops} == {0, block}
    # NCHW where values leave the chain: the fetched relu output and the last pool's for fc;
    # blocked where the fc's gradient enters it. Nothing else converts.
    assert sorted(reorders(ops)) == [0, 0, block]
    assert on[0][0][1].shape == (4, 16, 16, 16)  # the inner value fetched, NCHW
    assert blocked_ops(off[2]) == [] and reorders(off[2]) == []


@pytest.mark.parametrize("act", layout.ACTIVATIONS)
def test_every_activation_keeps_the_chain_blocked(block, act):
    """An activation between the convolutions converts nothing (MobileNet's relu6 and
    hardswish as relu), and changes no bit."""
    net = lambda image: cnn(image, act=act)  # noqa: E731
    on, off = train(True, net=net, steps=2), train(False, net=net, steps=2)
    assert_same_bits(on, off)
    assert sorted(reorders(on[2])) == [0, 0, block]


def test_an_op_of_another_kind_in_the_middle_reads_nchw(block):
    on, off = (
        train(True, net=lambda x: cnn(x, middle=pc.ops.tanh)),
        train(False, net=lambda x: cnn(x, middle=pc.ops.tanh)),
    )
    assert_same_bits(on, off)
    ops = [t for t, _, _ in on[2]]
    # tanh reads the first relu's output as NCHW (so does its fetch), and its gradient
    # returns as NCHW to relu_grad, which then reads NCHW (its inputs' layouts differ).
    i = ops.index("tanh")
    assert ops[i - 1] == "reorder_layout" and on[2][i - 1][1] == 0
    assert ("conv2d", block) in [op[:2] for op in on[2][i:]]  # the second block: blocked again


def test_values_fed_inside_a_chain_are_read_as_fed(block):
    """A fed variable keeps the caller's value: the ops after it read it, never a twin
    computed from the ops before it (which are fed too, here)."""
    rng = np.random.default_rng(2)
    feed = {
        "x": rng.standard_normal((2, 16, 8, 8)).astype(np.float32),
        "h": rng.standard_normal((2, 16, 8, 8)).astype(np.float32),
    }
    got = {}
    for propagate in (True, False):
        prog, startup = pc.Program(), pc.Program()
        with pc.program_guard(prog, startup):
            x = pc.data("x", [None, 16, 8, 8])
            h = pc.ops.relu(pc.layers.conv2d(x, 16, 3, padding=1), name="h")
            out = pc.layers.pool2d(pc.ops.relu(pc.layers.conv2d(h, 16, 3, padding=1)), 2)
        previous = onednn.set_layout_propagation(propagate)
        try:
            scope, exe = pc.Scope(), pc.Executor()
            exe.run(startup, scope=scope)
            plan = exe.prepare(prog, feed, [out])
        finally:
            onednn.set_layout_propagation(previous)
        got[propagate] = plan.run(feed, scope)[0]
        ops = [t for t, _ in ((s.op.type, 0) for s in plan.steps)]
        # h's writer does not run; conv2d reads the fed h (and starts a chain, when propagating)
        assert ops[0] == "conv2d" and ops.count("conv2d") == 1
    np.testing.assert_array_equal(got[True], got[False])


def test_a_value_read_twice_sums_its_blocked_gradients(block):
    def net(image):
        h = pc.layers.batch_norm(pc.layers.conv2d(image, 16, 3, padding=1), act="relu")
        a = pc.layers.conv2d(h, 16, 3, padding=1, bias_attr=False)
        b = pc.layers.conv2d(h, 16, 1, bias_attr=False)
        h = pc.ops.relu(pc.ops.add_n([a, b]))
        return pc.layers.fc(pc.layers.pool2d(h, 2, pool_stride=2), 10), a

    on, off = train(True, net=net), train(False, net=net)
    assert_same_bits(on, off)
    # add_n sums blocked tensors as they are: the forward sum, the copies of its gradient for
    # a and b (a one-input add_n each), and the sum of h's two gradients
    add_ns = [names for t, _, names in on[2] if t == "add_n"]
    assert len(add_ns) == 4
    assert all(n.endswith(f"@nChw{block}c") for names in add_ns for n in names)


def test_inference_and_model_expressions_are_the_same_with_and_without_propagation(block):
    results = {}
    for propagate in (True, False):
        previous = onednn.set_layout_propagation(propagate)
        try:
            model = pc.Model()
            with pc.program_guard(model.main_program, model.startup_program):
                image = pc.layers.data("image", [3, 16, 16], model=model)
                logits, inner = cnn(image)
            feed = {image: batches(1)[0]["image"]}
            results[propagate] = [logits.value(feed=feed), inner.value()]
            test = model.main_program.clone(for_test=True)
            scope = model.root_scope
            results[propagate] += pc.Executor().run(
                test, feed={"image": feed[image]}, fetch_list=[logits.name()], scope=scope
            )
        finally:
            onednn.set_layout_propagation(previous)
    for a, b in zip(results[True], results[False], strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_switches_turn_propagation_off(propagation):
    assert onednn.propagates_layouts() == bool(onednn.channel_block())
    assert propagation(False) is True
    assert not onednn.propagates_layouts()
    assert blocked_ops(train(False, steps=1)[2]) == []
    propagation(True)
    if onednn.is_available():
        onednn.set_enabled(False)
        try:
            assert onednn.channel_block() == 0 and not onednn.propagates_layouts()
            _, _, ops = train(True, steps=1)
        finally:
            onednn.set_enabled(True)
        assert blocked_ops(ops) == [] and reorders(ops) == []


def test_a_value_rewritten_between_two_readers_is_converted_for_each(block):
    """x is read by two conv2d, and rewritten in place between them: each reads its own value
    (one conversion for both would hand the second the old one)."""
    rng = np.random.default_rng(3)
    feed = {"x": rng.standard_normal((2, 16, 6, 6)).astype(np.float32)}
    got = {}
    for propagate in (True, False):
        prog, startup = pc.Program(), pc.Program()
        with pc.program_guard(prog, startup):
            x = pc.data("x", [None, 16, 6, 6])
            h = pc.ops.scale(x, scale=1.0)
            a = pc.ops.relu(pc.layers.conv2d(h, 16, 3, bias_attr=False))
            prog.global_block().append_op("scale", {"x": h}, {"out": h}, {"scale": -2.0})
            b = pc.ops.relu(pc.layers.conv2d(h, 16, 3, bias_attr=False))
        previous = onednn.set_layout_propagation(propagate)
        try:
            scope, exe = pc.Scope(), pc.Executor()
            exe.run(startup, scope=scope)
            got[propagate] = exe.run(prog, feed=feed, fetch_list=[a, b], scope=scope)
        finally:
            onednn.set_layout_propagation(previous)
    for x, y in zip(got[True], got[False], strict=True):
        np.testing.assert_array_equal(x, y)


class HostOnly(pc.CPU):
    """The host under another name, with no kernels of its own: every op of its plans falls
    back to the CPU's kernels, as the ops of a CUDA plan without CUDA kernels do."""

    type = "host_only"
    kernel_device_type = 64  # PC_DEVICE_FIRST_PLUGIN
    fallback = "cpu"
    __str__ = pc.Device.__str__


class HostOnlyPlugin:
    @pc.hookimpl
    def paddle_core_device_types(self):
        return [HostOnly]


def test_the_pass_runs_for_cpu_plans_only(block, propagation):
    """A plan for another device keeps NCHW even where its ops fall back to the CPU's kernels
    (so a CUDA plan never holds a reorder_layout, nor a channel_block its kernels refuse)."""
    pc.register_plugin(HostOnlyPlugin(), name="host_only")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # each op: "running it on CPU"
        other = train(True, device="host_only")
    assert blocked_ops(other[2]) == [] and reorders(other[2]) == []
    assert_same_bits(other, train(False))
    main = training(cnn)[0]
    assert layout.wants(main, pc.get_device("cpu"))
    for device in (pc.get_device("host_only"), pc.CUDA):  # CUDA: its type, without a GPU
        assert not layout.wants(main, device)
