"""The Winograd engine (paddle_ops_nn.winograd), F(2x2, 3x3) and F(4x4, 3x3): float32 3x3
convolutions of stride 1, forward passes, input gradients and filter and bias gradients, on
channels-last, nChw8c and plain activations. Against NumPy in float64 over odd output sizes,
asymmetric and wide paddings, bias, residual and every fused activation, each time checking
which algorithm computed it; where it must not be chosen, that it is not; a
filter set again between runs of a plan that keeps the transformed filter; a ResNet-like
network's outputs and training gradients with and without it."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import pc, run1, run_op

winograd = pytest.importorskip("paddle_ops_nn.winograd", reason="paddle-ops-nn is not installed")
onednn = pytest.importorskip("paddle_ops_nn.onednn")
RNG = np.random.default_rng(0)


def placed(x: np.ndarray, block: int) -> np.ndarray:
    """NCHW x as the core holds channel_block `block`: channels last [N, 1, H, W, C] (-1),
    nChw8c [N, C / 8, H, W, 8] (8), or as it is (0)."""
    if block == -1:
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1)[:, None])
    if block == 0:
        return x
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


def nchw(x: np.ndarray, block: int) -> np.ndarray:
    if block == -1:
        return np.ascontiguousarray(x[:, 0].transpose(0, 3, 1, 2))
    if block == 0:
        return x
    n, blocks, h, w, b = x.shape
    return np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3).reshape(n, blocks * b, h, w))


def reference(x, w, b, residual, paddings, act, alpha, beta):
    """conv2d in float64: x NCHW, w [K, C, 3, 3], paddings [top, bottom, left, right]."""
    top, bottom, left, right = paddings
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh, ow = padded.shape[2] - 2, padded.shape[3] - 2
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(3):
        for j in range(3):
            window = padded[:, :, i : i + oh, j : j + ow]
            out += np.einsum("nchw,kc->nkhw", window, w[:, :, i, j].astype(np.float64))
    if b is not None:
        out += b[None, :, None, None]
    if residual is not None:
        out += residual
    if act == "relu":
        return np.maximum(out, 0)
    if act == "leaky_relu":
        return np.where(out > 0, out, alpha * out)
    if act == "clip":
        return np.clip(out, alpha, beta)
    return out


def algorithm(step) -> int | None:
    """Which Winograd algorithm (2 or 4 outputs a tile side) computed the kernels ``step()``
    prepared, or None for neither; and step's result."""
    before = [winograd.engines_prepared(n) for n in (2, 4)]
    result = step()
    made = [winograd.engines_prepared(n) - b for n, b in zip((2, 4), before)]
    assert not all(made), "one algorithm per convolution"
    return (2 if made[0] else 4 if made[1] else None), result


def conv(x, w, b=None, residual=None, paddings=(1, 1, 1, 1), act="", alpha=0.0, beta=0.0, block=-1):
    """conv2d of NCHW x in channel_block `block`, its out back in NCHW; and which Winograd
    algorithm computed it."""
    inputs = {"x": placed(x, block), "filter": w}
    if b is not None:
        inputs["bias"] = b
    if residual is not None:
        inputs["residual"] = placed(residual, block)
    attrs = {
        "paddings": list(paddings), "channel_block": block,
        "fuse_activation": act, "fuse_alpha": alpha, "fuse_beta": beta,
    }  # fmt: skip
    chosen, out = algorithm(lambda: run1("conv2d", inputs, attrs))
    return nchw(out, block), chosen


def reference_gradients(x, w, dy, paddings):
    """conv2d's x, filter and bias gradients in float64, given out's gradient dy."""
    top, bottom, left, right = paddings
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh, ow = dy.shape[2:]
    g = dy.astype(np.float64)
    dx, dw = np.zeros_like(padded), np.zeros(w.shape)
    for i in range(3):
        for j in range(3):
            dx[:, :, i : i + oh, j : j + ow] += np.einsum("nkhw,kc->nchw", g, w[:, :, i, j])
            dw[:, :, i, j] = np.einsum("nkhw,nchw->kc", g, padded[:, :, i : i + oh, j : j + ow])
    return dx[:, :, top : top + x.shape[2], left : left + x.shape[3]], dw, g.sum(axis=(0, 2, 3))


def data(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


needs_avx2_onednn = pytest.mark.skipif(
    onednn.inference_block() != -1, reason="no channels-last inference layout on this CPU"
)
needs_8_channel_blocks = pytest.mark.skipif(
    onednn.channel_block() != 8, reason="oneDNN's training layout here is not nChw8c"
)


def skip_where_plain_is_not_winograds(block: int) -> None:
    """Plain NCHW convolutions run on the Winograd engine only where oneDNN blocks by 8
    (AVX2): where it blocks by 16 (AVX-512), its kernels compute them."""
    if block == 0 and onednn.channel_block() == 16:
        pytest.skip("plain convolutions are oneDNN's on this CPU")


# (n, c, k, h, w, paddings, the algorithm: F(4x4, 3x3) where its tiles are at least as many
# as the filters)
SHAPES = [
    (2, 64, 64, 8, 8, (1, 1, 1, 1), 2),  # whole tiles
    (2, 64, 72, 9, 12, (1, 1, 1, 1), 2),  # odd rows: the last tiles half outside
    (2, 72, 64, 10, 13, (0, 1, 1, 0), 2),  # asymmetric padding: out 9 x 12
    (1, 64, 64, 14, 14, (2, 2, 2, 2), 2),  # wider padding: out 16 x 16, some tiles all zeros
    (3, 64, 64, 6, 11, (0, 0, 1, 1), 2),  # no padding in height: out 4 x 11
    (2, 64, 64, 32, 32, (1, 1, 1, 1), 4),
    (2, 64, 72, 31, 29, (1, 1, 1, 1), 4),  # the last tiles 3 x 4 and 4 x 1 inside
    (1, 72, 64, 34, 35, (0, 1, 1, 0), 4),  # out 33 x 34
    (1, 64, 64, 30, 30, (2, 2, 2, 2), 4),
    (2, 64, 64, 26, 31, (0, 0, 1, 1), 4),  # out 24 x 31
    (1, 64, 64, 12, 12, (3, 3, 3, 3), 2),  # the input gradient's padding -1: inputs skipped
    (1, 64, 64, 30, 30, (3, 3, 3, 3), 4),
]
BLOCKS = [-1, 8, 0]  # channels last, nChw8c, plain NCHW (staged in nChw8c)
# F(4x4, 3x3) multiplies the inputs by up to 5 and the filter by 1/24 before its products, and
# adds up to 8 of them after: its float32 rounding is 5-15x F(2x2, 3x3)'s (at most about
# 2.5e-5 here, for outputs of about 1).
TOLERANCE = {2: dict(rtol=1e-4, atol=1e-5), 4: dict(rtol=1e-4, atol=5e-5)}


@needs_avx2_onednn
@pytest.mark.parametrize("n, c, k, h, w, paddings, outputs", SHAPES)
@pytest.mark.parametrize("bias, residual", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("block", BLOCKS)
def test_winograd_matches_numpy(n, c, k, h, w, paddings, outputs, bias, residual, block):
    x, f = data(n, c, h, w), data(k, c, 3, 3) / np.float32(np.sqrt(9 * c))
    top, bottom, left, right = paddings
    out_shape = (n, k, h + top + bottom - 2, w + left + right - 2)
    b = data(k) if bias else None
    r = data(*out_shape) if residual else None
    skip_where_plain_is_not_winograds(block)
    got, chosen = conv(x, f, b, r, paddings, block=block)
    assert chosen == outputs
    assert got.shape == out_shape
    want = reference(x, f, b, r, paddings, "", 0, 0)
    np.testing.assert_allclose(got, want, **TOLERANCE[outputs])


@needs_avx2_onednn
@pytest.mark.parametrize("n, c, k, h, w, paddings, outputs", SHAPES)
@pytest.mark.parametrize("block", BLOCKS)
def test_winograd_input_gradient_matches_numpy(n, c, k, h, w, paddings, outputs, block):
    """x_grad from the mirrored filter (the wide and the missing paddings are its missing and
    wide ones); filter_grad from the forward pass's transforms' adjoint, bias_grad a sum."""
    x, f = data(n, c, h, w), data(k, c, 3, 3) / np.float32(np.sqrt(9 * k))
    top, bottom, left, right = paddings
    dy = data(n, k, h + top + bottom - 2, w + left + right - 2)
    inputs = {"x": placed(x, block), "filter": f, "bias": data(k), "out_grad": placed(dy, block)}
    attrs = {"paddings": list(paddings), "channel_block": block}
    skip_where_plain_is_not_winograds(block)
    chosen, got = algorithm(lambda: run_op("conv2d_grad", inputs, attrs))
    assert chosen == outputs
    dx, dw, db = reference_gradients(x, f, dy, paddings)
    np.testing.assert_allclose(nchw(got["x_grad"][0], block), dx, **TOLERANCE[outputs])
    # (sums of up to 2048 products: held to float32 rounding of the largest)
    np.testing.assert_allclose(got["filter_grad"][0], dw, rtol=1e-4, atol=1e-5 * np.abs(dw).max())
    np.testing.assert_allclose(got["bias_grad"][0], db, rtol=1e-5, atol=1e-4)


@needs_avx2_onednn
@pytest.mark.parametrize(
    "act, alpha, beta", [("relu", 0, 0), ("leaky_relu", 0.2, 0), ("clip", -0.5, 0.75)]
)
def test_winograd_fuses_the_activation(act, alpha, beta):
    x, f, r = data(2, 64, 8, 10), data(64, 64, 3, 3) / np.float32(24), data(2, 64, 8, 10)
    for block in BLOCKS[: 2 if onednn.channel_block() == 16 else 3]:  # (plain: the residual
        got, chosen = conv(x, f, None, r, act=act, alpha=alpha, beta=beta, block=block)
        assert chosen == 2
        want = reference(x, f, None, r, (1, 1, 1, 1), act, alpha, beta)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@needs_avx2_onednn
def test_nan_goes_through_the_fused_activation():
    x, f = data(2, 64, 8, 8), data(64, 64, 3, 3)
    x[1, 5, 4, 4] = np.nan
    for act, alpha, beta in [("relu", 0, 0), ("clip", 0, 6)]:
        got, chosen = conv(x, f, act=act, alpha=alpha, beta=beta)
        assert chosen == 2
        # The outputs whose window holds it, and no farther than the 2x2 tiles reading it:
        # rows and columns 2-5 of the second image (the transforms mix a tile's inputs).
        assert np.isnan(got[1, :, 3:6, 3:6]).all()
        assert not np.isnan(got[0]).any() and not np.isnan(got[1, :, [0, 1, 6, 7]]).any()
        assert not np.isnan(got[1, :, :, [0, 1, 6, 7]]).any()


@needs_avx2_onednn
def test_nan_stays_in_the_4x4_tiles_reading_it():
    """F(4x4, 3x3): input (13, 13) lies in the inputs (11-16) of the tile of outputs 12-15 only,
    so those 4 x 4 outputs of every channel are NaN, and nothing else."""
    x, f = data(2, 64, 32, 32), data(64, 64, 3, 3)
    x[1, 5, 13, 13] = np.nan
    got, chosen = conv(x, f, act="relu")
    assert chosen == 4
    assert np.isnan(got[1, :, 12:16, 12:16]).all() and np.isnan(got).sum() == 64 * 16


@needs_avx2_onednn
@pytest.mark.parametrize(
    "n, c, k, h, w, why",
    [
        (32, 64, 64, 1, 1, "1x1 outputs: 16 products per tile against 9"),
        (1, 512, 512, 7, 7, "16 tiles"),
        (4, 32, 64, 8, 8, "32 channels in"),
        (4, 64, 60, 8, 8, "60 filters, no multiple of 8"),
    ],
)
def test_winograd_is_not_chosen_where_it_is_slower_or_cannot(n, c, k, h, w, why):
    x, f = data(n, c, h, w), data(k, c, 3, 3) / np.float32(np.sqrt(9 * c))
    got, chosen = conv(x, f)
    assert not chosen, why
    np.testing.assert_allclose(
        got, reference(x, f, None, None, (1,) * 4, "", 0, 0), rtol=1e-4, atol=1e-5
    )


@needs_avx2_onednn
def test_switched_off_the_direct_engine_computes():
    x, f = data(2, 64, 8, 8), data(64, 64, 3, 3) / np.float32(24)
    previous = winograd.set_enabled(False)
    try:
        assert not winograd.is_enabled()
        got, chosen = conv(x, f)
    finally:
        winograd.set_enabled(previous)
    assert previous and winograd.is_enabled() and not chosen
    np.testing.assert_allclose(
        got, reference(x, f, None, None, (1,) * 4, "", 0, 0), rtol=1e-4, atol=1e-5
    )


def resnet_like(image):
    """A 64-channel stem and a residual block at 8x8, then a stride-2 3x3 (never Winograd)."""
    h = pc.layers.batch_norm(pc.layers.conv2d(image, 64, 3, padding=1), act="relu")
    a = pc.layers.batch_norm(pc.layers.conv2d(h, 64, 3, padding=1), act="relu")
    h = pc.ops.relu(pc.ops.add(pc.layers.conv2d(a, 64, 3, padding=1), h))
    h = pc.ops.relu(pc.layers.conv2d(h, 64, 3, padding=1, stride=2))
    return pc.layers.fc(h, 10)


def evaluation():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        out = resnet_like(pc.layers.data("image", [3, 8, 8]))
        pc.optimizer.SGD(0.1).minimize(pc.ops.mean(out))
    scope = pc.Scope()
    pc.Executor().run(startup, scope=scope)
    return main, main.clone(for_test=True), out, scope


FEED = {"image": data(4, 3, 8, 8)}


@needs_avx2_onednn
def test_a_network_gives_the_direct_engines_outputs():
    _, test, out, scope = evaluation()
    before = winograd.engines_prepared()
    (got,) = pc.Executor().run(test, feed=FEED, fetch_list=[out], scope=scope)
    assert winograd.engines_prepared() - before == 2  # the block's two 64 -> 64 convolutions
    previous = winograd.set_enabled(False)
    try:
        (want,) = pc.Executor().run(test, feed=FEED, fetch_list=[out], scope=scope)
    finally:
        winograd.set_enabled(previous)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@needs_avx2_onednn
@needs_8_channel_blocks
def test_a_training_plan_gives_the_direct_engines_gradients():
    """The two 64 -> 64 convolutions' forward passes and input gradients (their filter
    gradients from oneDNN), on the layout pass's nChw8c."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", [3, 8, 8])
        image.stop_gradient = False
        loss = pc.ops.mean(resnet_like(image))
        wrt = [image, *(p for p in main.all_parameters() if p.trainable)]
        grads = pc.gradients([loss], wrt)
    scope = pc.Scope()
    pc.Executor().run(startup, scope=scope)
    before = winograd.engines_prepared()
    got = pc.Executor().run(main, feed=FEED, fetch_list=[loss, *grads], scope=scope)
    assert winograd.engines_prepared() - before == 4  # two conv2d, two conv2d_grad
    previous = winograd.set_enabled(False)
    try:
        want = pc.Executor().run(main, feed=FEED, fetch_list=[loss, *grads], scope=scope)
    finally:
        winograd.set_enabled(previous)
    assert winograd.engines_prepared() - before == 4
    for name, g, w in zip(["loss", *(v.name for v in wrt)], got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=name)


@needs_avx2_onednn
def test_a_filter_set_again_is_transformed_again():
    _, test, out, scope = evaluation()
    exe = pc.Executor()
    exe.run(test, feed=FEED, fetch_list=[out], scope=scope)
    convs = [op for op in test.global_block().ops if op.type == "conv2d"]
    name = convs[2].input("filter")[0]  # the residual block's second
    scope.set_var(name, data(*scope.get(name).shape))
    (got,) = exe.run(test, feed=FEED, fetch_list=[out], scope=scope)
    (want,) = pc.Executor().run(test, feed=FEED, fetch_list=[out], scope=scope)  # a new plan
    np.testing.assert_array_equal(got, want)


@needs_avx2_onednn
@pytest.mark.parametrize("padding, outputs", [(0, 4), (1, 4), (3, 2)])
def test_conv2d_transpose_and_its_gradient_run_on_it(padding, outputs):
    """conv2d_transpose is a convolution's input gradient: a 3x3 one of stride 1 runs on the
    engine (padding 3: the inner convolution's -1), and its gradient's x_grad is a forward
    pass; against NumPy, and the gradients against the direct engines'."""
    skip_where_plain_is_not_winograds(0)
    n, h = 2, 30 if outputs == 4 else 10
    x, f = data(n, 64, h, h), data(64, 64, 3, 3) / np.float32(24)
    attrs = {"paddings": [padding, padding]}
    chosen, got = algorithm(lambda: run1("conv2d_transpose", {"x": x, "filter": f}, attrs))
    assert chosen == outputs
    size = h + 2 - 2 * padding
    # conv2d_transpose(x) is the input gradient of conv2d(., f) given out_grad x
    want = reference_gradients(np.zeros((n, 64, size, size)), f, x, (padding,) * 4)[0]
    np.testing.assert_allclose(got, want, **TOLERANCE[outputs])
    inputs = {"x": x, "filter": f, "out_grad": data(n, 64, size, size)}
    chosen, grads = algorithm(lambda: run_op("conv2d_transpose_grad", inputs, attrs))
    assert chosen == outputs
    previous = winograd.set_enabled(False)
    try:
        direct = run_op("conv2d_transpose_grad", inputs, attrs)
    finally:
        winograd.set_enabled(previous)
    np.testing.assert_allclose(grads["x_grad"][0], direct["x_grad"][0], rtol=1e-4, atol=1e-4)
    dw = direct["filter_grad"][0]  # (sums of 1800 products: to float32 rounding of the largest)
    np.testing.assert_allclose(grads["filter_grad"][0], dw, rtol=1e-4, atol=1e-5 * abs(dw).max())


@needs_avx2_onednn
def test_many_blocks_of_tiles_on_two_threads():
    """512 tiles of 4x4 where a block holds 455: the tiles in two blocks, each block's
    transforms and GEMMs divided between two threads; the forward pass, x_grad and the filter
    gradient (summed over both blocks) of a training plan against NumPy."""
    skip_where_plain_is_not_winograds(0)
    x, f, g = data(2, 64, 64, 64), data(64, 64, 3, 3) / np.float32(24), data(2, 64, 64, 64)
    prog = pc.Program()
    with pc.program_guard(prog):
        xv, fv, gv = (
            pc.data("x", list(x.shape)),
            pc.data("f", list(f.shape)),
            pc.data("g", list(g.shape)),
        )
        xv.stop_gradient = fv.stop_gradient = False
        y = pc.ops.conv2d(xv, fv, paddings=[1, 1])
        dx, df = pc.gradients([y], [xv, fv], target_gradients=[gv])
    before = winograd.engines_prepared(4)
    feed = {"x": x, "f": f, "g": g}
    got, got_dx, got_df = pc.Executor(num_threads=2).run(prog, feed=feed, fetch_list=[y, dx, df])
    assert winograd.engines_prepared(4) - before == 2
    np.testing.assert_allclose(got, reference(x, f, None, None, (1,) * 4, "", 0, 0), **TOLERANCE[4])
    want_dx, want_df, _ = reference_gradients(x, f, g, (1,) * 4)
    np.testing.assert_allclose(got_dx, want_dx, **TOLERANCE[4])
    np.testing.assert_allclose(got_df, want_df, rtol=1e-4, atol=1e-5 * np.abs(want_df).max())


@needs_avx2_onednn
def test_a_filter_gradient_alone_runs_on_it():
    """conv2d_grad asked for the filter's gradient only (x fed, as for a first layer): the
    engine is made for that pass alone, and its result matches NumPy's."""
    skip_where_plain_is_not_winograds(0)
    x, f, g = data(2, 64, 20, 20), data(64, 64, 3, 3) / np.float32(24), data(2, 64, 20, 20)
    prog = pc.Program()
    with pc.program_guard(prog):
        xv, fv, gv = (pc.data(n, list(v.shape)) for n, v in (("x", x), ("f", f), ("g", g)))
        fv.stop_gradient = False
        y = pc.ops.conv2d(xv, fv, paddings=[1, 1])
        (df,) = pc.gradients([y], [fv], target_gradients=[gv])
    before = winograd.engines_prepared(2)
    _, got = pc.Executor().run(prog, feed={"x": x, "f": f, "g": g}, fetch_list=[y, df])
    assert winograd.engines_prepared(2) - before == 2  # conv2d's and conv2d_grad's
    want = reference_gradients(x, f, g, (1,) * 4)[1]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
