"""paddle-ops-nn's conv2d, conv2d_transpose, pool2d and the adaptive pools against NumPy
references (and PyTorch's where installed), their gradients by finite differences, and the
errors for shapes that do not fit. float64 runs the im2col + OpenBLAS engine, float32 oneDNN's:
the float32 gradients are checked against the float64 ones, which finite differences check."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import zlib

import numpy as np
import pytest
from op_helpers import FLOATS, assert_matches, check_grad, on_both_paths, pc, run1, run_op

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

RNG = np.random.default_rng(0)
F32 = dict(rtol=1e-4, atol=1e-4)  # oneDNN sums in another order than the reference


@pytest.fixture(autouse=True)
def _data_of_its_own(request: pytest.FixtureRequest) -> None:
    """Each test draws from a generator seeded by its own id, so its data (and whether a
    tolerance holds) does not depend on which tests ran before it in the same worker."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def _pads(paddings):
    return paddings * 2 if len(paddings) == 4 else [paddings[0]] * 2 + [paddings[1]] * 2


def _taps(x, i, j, out_hw, strides, dilations):
    """x[:, :, rows, cols] of the windows' tap (i, j): [N, C, OH, OW]."""
    (oh, ow), (sh, sw), (dh, dw) = out_hw, strides, dilations
    return x[
        :, :, i * dh : i * dh + sh * (oh - 1) + 1 : sh, j * dw : j * dw + sw * (ow - 1) + 1 : sw
    ]


def conv2d_ref(x, w, b=None, strides=(1, 1), paddings=(0, 0), dilations=(1, 1), groups=1):
    t, bot, left, right = _pads(list(paddings)) if len(paddings) == 2 else paddings
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (t, bot), (left, right)))
    k, cg, kh, kw = w.shape
    oh = (xp.shape[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (xp.shape[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((x.shape[0], k, oh, ow))
    kg = k // groups
    for i in range(kh):
        for j in range(kw):
            patch = _taps(xp, i, j, (oh, ow), strides, dilations)
            for g in range(groups):
                out[:, g * kg : (g + 1) * kg] += np.einsum(
                    "nchw,kc->nkhw",
                    patch[:, g * cg : (g + 1) * cg],
                    w[g * kg : (g + 1) * kg, :, i, j],
                )
    if b is not None:
        out += b[None, :, None, None]
    return out.astype(x.dtype)


def conv2d_transpose_ref(
    x, w, b=None, strides=(1, 1), paddings=(0, 0), dilations=(1, 1), groups=1, output_size=()
):
    t, bot, left, right = _pads(list(paddings)) if len(paddings) == 2 else paddings
    n, c, h, wd = x.shape
    _, kg, kh, kw = w.shape
    cg = c // groups
    full = [
        (h - 1) * strides[0] + dilations[0] * (kh - 1) + 1,
        (wd - 1) * strides[1] + dilations[1] * (kw - 1) + 1,
    ]
    size = list(output_size) or [full[0] - t - bot, full[1] - left - right]
    out = np.zeros((n, kg * groups, max(full[0], t + size[0]), max(full[1], left + size[1])))
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dilations[0], i * dilations[0] + strides[0] * (h - 1) + 1, strides[0])
            cols = slice(j * dilations[1], j * dilations[1] + strides[1] * (wd - 1) + 1, strides[1])
            for g in range(groups):
                out[:, g * kg : (g + 1) * kg, rows, cols] += np.einsum(
                    "nchw,ck->nkhw", x[:, g * cg : (g + 1) * cg], w[g * cg : (g + 1) * cg, :, i, j]
                )
    out = out[:, :, t : t + size[0], left : left + size[1]]
    if b is not None:
        out = out + b[None, :, None, None]
    return out.astype(x.dtype)


def pool2d_ref(
    x,
    ksize,
    strides=(1, 1),
    paddings=(0, 0),
    pooling_type="max",
    ceil_mode=False,
    exclusive=True,
    global_pooling=False,
):
    if global_pooling:
        fn = np.max if pooling_type == "max" else np.mean
        return fn(x, axis=(2, 3), keepdims=True)
    t, bot, left, right = _pads(list(paddings)) if len(paddings) == 2 else paddings
    sizes = []
    for size, k, s, before, after in (
        (x.shape[2], ksize[0], strides[0], t, bot),
        (x.shape[3], ksize[1], strides[1], left, right),
    ):
        room = size + before + after - k
        count = room // s + 1
        if ceil_mode and room % s:
            count += count * s < size + before
        sizes.append(count)
    out = np.zeros((*x.shape[:2], *sizes), x.dtype)
    for oh in range(sizes[0]):
        for ow in range(sizes[1]):
            h0, w0 = oh * strides[0] - t, ow * strides[1] - left
            window = x[:, :, max(h0, 0) : h0 + ksize[0], max(w0, 0) : w0 + ksize[1]]
            if pooling_type == "max":
                out[:, :, oh, ow] = window.max(axis=(2, 3))
            else:
                count = window.shape[2] * window.shape[3] if exclusive else ksize[0] * ksize[1]
                out[:, :, oh, ow] = window.sum(axis=(2, 3)) / count
    return out


CONV_CASES = {
    "plain": dict(shape=(2, 3, 7, 6), filters=4, kernel=(3, 3), attrs={}),
    "padded": dict(shape=(2, 3, 5, 5), filters=2, kernel=(3, 3), attrs={"paddings": [1, 1]}),
    "stride > kernel": dict(
        shape=(1, 2, 9, 8), filters=3, kernel=(2, 2), attrs={"strides": [3, 3]}
    ),
    "dilation": dict(
        shape=(2, 2, 9, 9),
        filters=2,
        kernel=(3, 2),
        attrs={"dilations": [2, 3], "paddings": [1, 2]},
    ),
    "groups": dict(
        shape=(2, 4, 6, 6), filters=6, kernel=(3, 3), attrs={"groups": 2, "paddings": [1, 1]}
    ),
    "depthwise": dict(
        shape=(2, 3, 6, 5), filters=3, kernel=(3, 3), attrs={"groups": 3, "strides": [2, 1]}
    ),
    "padding > kernel / 2": dict(
        shape=(1, 2, 6, 7), filters=2, kernel=(3, 3), attrs={"paddings": [2, 3]}
    ),
    "asymmetric padding": dict(
        shape=(1, 2, 5, 6),
        filters=2,
        kernel=(3, 3),
        attrs={"paddings": [0, 2, 1, 0], "strides": [2, 2]},
    ),
    "1x1": dict(shape=(2, 5, 4, 3), filters=3, kernel=(1, 1), attrs={}),
    # ResNet's last stage on 32x32 images: oneDNN has no weights kernel of its own for these
    # (the built-in engine's one product over the batch computes filter_grad)
    "1x1 images": dict(shape=(4, 16, 1, 1), filters=8, kernel=(3, 3), attrs={"paddings": [1, 1]}),
    "2x2 images, stride 2": dict(
        shape=(4, 8, 2, 2), filters=16, kernel=(3, 3), attrs={"paddings": [1, 1], "strides": [2, 2]}
    ),
    # Filter gradients large enough for the built-in engine's OpenBLAS products in float32
    # (conv_gemm.cpp's gemm_filter_gradient_pays): one image, and images of over 2048 outputs
    "288 taps, one image": dict(
        shape=(1, 32, 7, 9),
        filters=64,
        kernel=(3, 3),
        attrs={"paddings": [1, 2], "strides": [2, 1], "dilations": [1, 2]},
    ),
    "288 taps, 78x78 images": dict(
        shape=(2, 32, 78, 78), filters=64, kernel=(3, 3), attrs={"paddings": [1, 1]}
    ),
}


def _conv_inputs(case, dtype, transpose=False, bias=True):
    n, c, h, w = case["shape"]
    groups = case["attrs"].get("groups", 1)
    x = RNG.standard_normal((n, c, h, w)).astype(dtype)
    if transpose:
        f = RNG.standard_normal((c, case["filters"] // groups, *case["kernel"])).astype(dtype)
    else:
        f = RNG.standard_normal((case["filters"], c // groups, *case["kernel"])).astype(dtype)
    inputs = {"x": x, "filter": f}
    if bias:
        inputs["bias"] = RNG.standard_normal(case["filters"]).astype(dtype)
    return inputs


def _ref_attrs(attrs):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items()}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv2d_matches_numpy(case, bias, dtype):
    case = CONV_CASES[case]
    inputs = _conv_inputs(case, dtype, bias=bias)
    want = conv2d_ref(
        inputs["x"], inputs["filter"], inputs.get("bias"), **_ref_attrs(case["attrs"])
    )
    tol = F32 if dtype == "float32" else {}
    assert_matches(run1("conv2d", inputs, case["attrs"]), want, **tol)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv2d_transpose_matches_numpy(case, dtype):
    case = CONV_CASES[case]
    inputs = _conv_inputs(case, dtype, transpose=True)
    want = conv2d_transpose_ref(
        inputs["x"], inputs["filter"], inputs["bias"], **_ref_attrs(case["attrs"])
    )
    tol = F32 if dtype == "float32" else {}
    assert_matches(run1("conv2d_transpose", inputs, case["attrs"]), want, **tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_conv2d_transpose_output_size_picks_among_the_sizes_a_stride_allows(dtype):
    x = RNG.standard_normal((2, 3, 4, 4)).astype(dtype)
    f = RNG.standard_normal((3, 2, 3, 3)).astype(dtype)
    attrs = {"strides": [2, 2], "paddings": [1, 1]}
    for size in ([7, 7], [8, 7], [8, 8]):
        got = run1("conv2d_transpose", {"x": x, "filter": f}, {**attrs, "output_size": size})
        want = conv2d_transpose_ref(x, f, strides=(2, 2), paddings=(1, 1), output_size=size)
        assert_matches(got, want, **(F32 if dtype == "float32" else {}))
    with pytest.raises(
        pc.ShapeError, match=r"output_size \[9, 7\]: its height must be in \[7, 9\)"
    ):
        run1("conv2d_transpose", {"x": x, "filter": f}, {**attrs, "output_size": [9, 7]})


GRAD_CASES = ["plain", "padded", "stride > kernel", "dilation", "groups", "asymmetric padding"]


@pytest.mark.parametrize("op", ["conv2d", "conv2d_transpose"])
@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradients_match_finite_differences(op, case):
    case = dict(CONV_CASES[case])
    n, c, h, w = case["shape"]
    case["shape"] = (min(n, 2), c, min(h, 6), min(w, 6))
    inputs = _conv_inputs(case, "float64", transpose=op == "conv2d_transpose")
    check_grad(op, inputs, case["attrs"], rtol=1e-6, atol=1e-8)


def _analytic_grads(op, inputs, attrs, weights):
    prog = pc.Program()
    with pc.program_guard(prog):
        vars_ = {k: pc.data(k, list(v.shape), str(v.dtype)) for k, v in inputs.items()}
        out = getattr(pc.ops, op)(**vars_, **attrs)
        w = pc.data("w", list(weights.shape), str(weights.dtype))
        loss = pc.ops.sum(pc.ops.mul(out, w))
        grads = pc.gradients([loss], list(vars_.values()))
    return pc.Executor().run(prog, feed={**inputs, "w": weights}, fetch_list=grads)


@pytest.mark.parametrize("op", ["conv2d", "conv2d_transpose"])
@pytest.mark.parametrize(
    "case",
    ["padded", "dilation", "groups", "stride > kernel", "1x1 images", "2x2 images, stride 2"],
    ids=str,
)
def test_float32_gradients_agree_with_float64(op, case):
    case = CONV_CASES[case]
    inputs = _conv_inputs(case, "float64", transpose=op == "conv2d_transpose")
    ref = {"conv2d": conv2d_ref, "conv2d_transpose": conv2d_transpose_ref}[op]
    out = ref(inputs["x"], inputs["filter"], inputs["bias"], **_ref_attrs(case["attrs"]))
    weights = RNG.standard_normal(out.shape)
    want = _analytic_grads(op, inputs, case["attrs"], weights)
    single = {k: v.astype("float32") for k, v in inputs.items()}
    got = _analytic_grads(op, single, case["attrs"], weights.astype("float32"))
    for g, w in zip(got, want):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def _filter_grad_ref(x, out_grad, kernel, strides, paddings, dilations):
    """d sum(conv2d(x, f) * out_grad) / d f, tap by tap: out_grad against the input window
    that tap reads (NumPy, float64)."""
    (sh, sw), (ph, pw), (dh, dw) = strides, paddings, dilations
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    _, _, oh, ow = out_grad.shape
    grad = np.zeros((out_grad.shape[1], x.shape[1], *kernel))
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            window = padded[
                :,
                :,
                i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                j * dw : j * dw + sw * (ow - 1) + 1 : sw,
            ]
            grad[:, :, i, j] = np.einsum("nkhw,nchw->kc", out_grad, window)
    return grad


@pytest.mark.parametrize("case", ["288 taps, one image", "288 taps, 78x78 images"], ids=str)
def test_large_float32_filter_gradients_match_numpy(case):
    """The filter gradients OpenBLAS's products compute in float32, split among the threads
    (sums of up to 12168 terms: held to float32 rounding of the largest)."""
    case = CONV_CASES[case]
    attrs = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], **case["attrs"]}
    inputs = _conv_inputs(case, "float32")
    out = conv2d_ref(inputs["x"], inputs["filter"], inputs["bias"], **_ref_attrs(case["attrs"]))
    weights = RNG.standard_normal(out.shape).astype("float32")
    _, got, _ = _analytic_grads("conv2d", inputs, case["attrs"], weights)
    want = _filter_grad_ref(
        inputs["x"].astype(np.float64),
        weights.astype(np.float64),
        case["kernel"],
        attrs["strides"],
        attrs["paddings"],
        attrs["dilations"],
    )
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("threads", [1, 2])
def test_built_in_products_split_among_threads_match_numpy(threads):
    """float64 (the built-in engine's): 3 channels to 4 filters over 24x24, so few taps and
    filters that each product is split by its 576 columns among the threads (conv_gemm.cpp's
    in_parts): out, x_grad and filter_grad against NumPy."""
    x, f = RNG.standard_normal((2, 3, 24, 24)), RNG.standard_normal((4, 3, 3, 3))
    g = RNG.standard_normal((2, 4, 24, 24))
    prog = pc.Program()
    with pc.program_guard(prog):
        xv, fv, gv = (pc.data(k, list(v.shape), "float64") for k, v in zip("xfg", (x, f, g)))
        xv.stop_gradient = False
        y = pc.ops.conv2d(xv, fv, paddings=[1, 1])
        grads = pc.gradients([y], [xv, fv], target_gradients=[gv])
    feed = {"x": x, "f": f, "g": g}
    out, dx, df = pc.Executor(num_threads=threads).run(prog, feed=feed, fetch_list=[y, *grads])
    np.testing.assert_allclose(out, conv2d_ref(x, f, paddings=(1, 1)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        dx, conv2d_transpose_ref(g, f, paddings=(1, 1)), rtol=1e-10, atol=1e-12
    )
    want = _filter_grad_ref(x, g, (3, 3), (1, 1), (1, 1), (1, 1))
    np.testing.assert_allclose(df, want, rtol=1e-10, atol=1e-12)


def test_only_the_gradients_asked_for_are_computed():
    inputs = _conv_inputs(CONV_CASES["padded"], "float32")
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", list(inputs["x"].shape))
        f = pc.data("filter", list(inputs["filter"].shape))
        b = pc.data("bias", list(inputs["bias"].shape))
        loss = pc.ops.sum(pc.ops.conv2d(x, f, b, paddings=[1, 1]))
        (db,) = pc.gradients([loss], [b])
    (got,) = pc.Executor().run(prog, feed=inputs, fetch_list=[db])
    n, _, h, w = inputs["x"].shape
    np.testing.assert_allclose(got, np.full(2, n * h * w, np.float32))
    grad_op = prog.global_block().ops[-1]
    assert grad_op.type == "conv2d_grad" and list(grad_op.outputs) == ["bias_grad"]


POOL_CASES = {
    "2x2": dict(shape=(2, 3, 6, 6), attrs={"ksize": [2, 2], "strides": [2, 2]}),
    "overlapping": dict(shape=(2, 2, 7, 5), attrs={"ksize": [3, 3], "strides": [2, 1]}),
    "padded": dict(
        shape=(1, 2, 5, 5), attrs={"ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]}
    ),
    "ceil_mode": dict(
        shape=(2, 2, 6, 7), attrs={"ksize": [3, 2], "strides": [2, 2], "ceil_mode": True}
    ),
    "ceil_mode padded": dict(
        shape=(1, 3, 5, 5),
        attrs={"ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1], "ceil_mode": True},
    ),
    "stride > kernel": dict(shape=(1, 2, 9, 9), attrs={"ksize": [2, 2], "strides": [3, 4]}),
    "asymmetric padding": dict(
        shape=(1, 2, 6, 5), attrs={"ksize": [3, 2], "strides": [2, 2], "paddings": [0, 2, 1, 0]}
    ),
    "global": dict(shape=(2, 3, 5, 4), attrs={"global_pooling": True}),
}


def _distinct(shape, dtype):
    """Values 0.1 apart in random order: no ties for max, none close enough for a finite
    difference to change which element is a window's maximum."""
    return (RNG.permutation(int(np.prod(shape))).reshape(shape) * 0.1 - 1).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("exclusive", [True, False])
@pytest.mark.parametrize("pooling_type", ["max", "avg"])
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_pool2d_matches_numpy(case, pooling_type, exclusive, dtype):
    case = POOL_CASES[case]
    attrs = {**case["attrs"], "pooling_type": pooling_type, "exclusive": exclusive}
    x = RNG.standard_normal(case["shape"]).astype(dtype)
    want = pool2d_ref(x, **_ref_attrs({"ksize": [1, 1], **attrs}))
    assert_matches(run1("pool2d", {"x": x}, attrs), want, **(F32 if dtype == "float32" else {}))


@pytest.mark.parametrize("pooling_type", ["max", "avg"])
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_pool2d_gradient_matches_finite_differences(case, pooling_type):
    case = POOL_CASES[case]
    attrs = {
        **case["attrs"],
        "pooling_type": pooling_type,
        "exclusive": case is not POOL_CASES["padded"],
    }
    check_grad("pool2d", {"x": _distinct(case["shape"], "float64")}, attrs, rtol=1e-6)


@pytest.mark.parametrize("nan", [np.nan, -np.nan], ids=["nan", "negative nan"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_max_pooling_propagates_nan(dtype, nan):
    x = np.arange(16, dtype=dtype).reshape(1, 1, 4, 4)
    x[0, 0, 1, 1] = nan
    got = run1("pool2d", {"x": x}, {"ksize": [2, 2], "strides": [2, 2]})
    assert np.isnan(got[0, 0, 0, 0]) and got[0, 0, 1, 1] == 15
    grads = run_op(
        "pool2d_grad",
        {"x": x, "out_grad": np.ones((1, 1, 2, 2), dtype)},
        {"ksize": [2, 2], "strides": [2, 2]},
    )
    (grad,) = grads["x_grad"]
    assert grad[0, 0, 1, 1] == 1 and grad.sum() == 4  # the NaN is its window's maximum


MAX_POOLING = """
import sys
import numpy as np
from paddle_core.testing import run_op

inputs = dict(np.load(sys.argv[1]))
attrs = {"ksize": [1, 2], "strides": [1, 2]}
np.savez(sys.argv[2], **{k: run_op("pool2d", {"x": x}, attrs)["out"][0] for k, x in inputs.items()})
"""


def test_max_pooling_finds_a_nan_anywhere(tmp_path):
    """oneDNN's max pooling drops NaNs, so a float32 input is scanned for one first: 16
    elements at a time and then a tail with the AVX2 scan (40 elements here), a word at a time
    with the portable one. Both scans, each in a process of its own."""
    inputs = {}
    for at in (0, 17, 35, 39):
        x = np.arange(40, dtype=np.float32).reshape(1, 1, 5, 8)
        x.flat[at] = np.nan
        x.flat[(at + 8) % 40] = np.inf  # an infinity is no NaN
        inputs[f"NaN at {at}"] = x
    avx2, portable = on_both_paths(tmp_path, MAX_POOLING, inputs, "PADDLE_OPS_NN_DISABLE_AVX2")
    for name, x in inputs.items():
        want = np.maximum(x[..., 0::2], x[..., 1::2])  # (NumPy's maximum keeps NaN)
        for got in (avx2[name], portable[name]):
            np.testing.assert_array_equal(got, want, err_msg=name)
            assert np.isnan(got).sum() == 1, name


def test_pytorch_gives_the_same_results():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, w, b = (RNG.standard_normal(s).astype("float32") for s in ((2, 4, 9, 9), (6, 2, 3, 3), (6,)))
    t = {k: torch.from_numpy(v) for k, v in dict(x=x, w=w, b=b).items()}
    attrs = {"strides": [2, 2], "paddings": [1, 1], "dilations": [1, 2], "groups": 2}
    got = run1("conv2d", {"x": x, "filter": w, "bias": b}, attrs)
    want = F.conv2d(t["x"], t["w"], t["b"], stride=2, padding=1, dilation=(1, 2), groups=2)
    np.testing.assert_allclose(got, want.numpy(), **F32)
    wt = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
    got = run1("conv2d_transpose", {"x": x, "filter": wt}, {"strides": [2, 2], "paddings": [1, 1]})
    want = F.conv_transpose2d(t["x"], torch.from_numpy(wt), stride=2, padding=1)
    np.testing.assert_allclose(got, want.numpy(), **F32)
    for kind, fn in (("max", F.max_pool2d), ("avg", F.avg_pool2d)):
        got = run1(
            "pool2d",
            {"x": x},
            {"pooling_type": kind, "ksize": [3, 3], "strides": [2, 2], "ceil_mode": True},
        )
        np.testing.assert_allclose(got, fn(t["x"], 3, 2, ceil_mode=True).numpy(), **F32)


@pytest.mark.parametrize(
    "op, inputs, attrs, message",
    [
        (
            "conv2d",
            {"x": (1, 3, 5, 5), "filter": (4, 3, 3, 3)},
            {"groups": 2},
            r"x's channels \(3\) must be divisible by groups \(2\)",
        ),
        (
            "conv2d",
            {"x": (1, 4, 5, 5), "filter": (4, 4, 3, 3)},
            {"groups": 2},
            r"must have x's channels / groups = 2 input channels",
        ),
        (
            "conv2d",
            {"x": (1, 3, 2, 5), "filter": (4, 3, 3, 3)},
            {},
            r"the height window \(3, with dilation\) is larger than the padded input \(2 \+ padding 0\)",
        ),
        (
            "conv2d",
            {"x": (1, 3, 5, 5), "filter": (4, 3, 3, 3)},
            {"dilations": [3, 1]},
            r"the height window \(7, with dilation\)",
        ),
        (
            "conv2d",
            {"x": (1, 3, 5, 5), "filter": (4, 3, 3, 3), "bias": (3,)},
            {},
            r"bias must be \[4\]",
        ),
        (
            "conv2d",
            {"x": (3, 5, 5), "filter": (4, 3, 3, 3)},
            {},
            r"x must be 4-D \(NCHW\), got \[3, 5, 5\]",
        ),
        (
            "conv2d",
            {"x": (1, 3, 5, 5), "filter": (4, 3, 3, 3)},
            {"paddings": [1, 1, 1]},
            r"'paddings' must have 2 values .* or 4",
        ),
        (
            "conv2d_transpose",
            {"x": (1, 3, 5, 5), "filter": (2, 3, 3, 3)},
            {},
            r"filter \[2, 3, 3, 3\] must have x's 3 channels first",
        ),
        (
            "conv2d_transpose",
            {"x": (1, 3, 2, 2), "filter": (3, 3, 3, 3)},
            {"paddings": [3, 3]},
            r"the padding crops the whole height",
        ),
        (
            "pool2d",
            {"x": (1, 3, 5, 5)},
            {"ksize": [2, 2], "paddings": [2, 2]},
            r"the height padding \[2, 2\] must be smaller than the window \(2\)",
        ),
        (
            "pool2d",
            {"x": (1, 3, 1, 5)},
            {"ksize": [2, 2]},
            r"the height window \(2, with dilation\) is larger",
        ),
    ],
)
def test_shapes_that_do_not_fit_are_refused_naming_the_value(op, inputs, attrs, message):
    prog = pc.Program()
    with pc.program_guard(prog):
        vars_ = {k: pc.data(k, list(v)) for k, v in inputs.items()}
        with pytest.raises(pc.ShapeError, match=message) as e:
            getattr(pc.ops, op)(**vars_, **attrs)
    assert f"op {op!r}" in str(e.value)


def test_bad_attrs_are_refused_naming_them():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [1, 3, 5, 5])
        with pytest.raises(
            pc.AttrError, match="attr 'pooling_type': expected one of 'max', 'avg', got str 'sum'"
        ):
            pc.ops.pool2d(x, pooling_type="sum")
        with pytest.raises(pc.AttrError, match="attr 'strides'"):
            pc.ops.conv2d(x, pc.data("f", [2, 3, 3, 3]), strides=[0, 1])
        with pytest.raises(pc.AttrError, match="attr 'groups'"):
            pc.ops.conv2d(x, pc.data("f2", [2, 3, 3, 3]), groups=0)


@pytest.mark.parametrize("op", ["conv2d_grad", "pool2d_grad"])
def test_grad_ops_refuse_an_out_grad_of_another_shape(op):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [1, 2, 5, 5])
        inputs = {"x": x, "out_grad": pc.data("g", [1, 2, 4, 4])}
        if op == "conv2d_grad":
            inputs["filter"] = pc.data("f", [2, 2, 3, 3])
        with pytest.raises(
            pc.ShapeError,
            match=r"out_grad 'g' is float32\[1, 2, 4, 4\]; '(conv|pool)2d' gives out as float32\[1, 2, 3, 3\]",
        ):
            getattr(pc.ops, op)(**inputs, **({"ksize": [3, 3]} if op == "pool2d_grad" else {}))


@pytest.mark.parametrize("dtype", FLOATS)
def test_empty_batches_give_empty_results_and_zero_filter_gradients(dtype):
    inputs = _conv_inputs(dict(shape=(0, 2, 5, 5), filters=3, kernel=(3, 3), attrs={}), dtype)
    assert run1("conv2d", inputs).shape == (0, 3, 3, 3)
    check = run_op("conv2d_grad", {**inputs, "out_grad": np.zeros((0, 3, 3, 3), dtype)})
    assert not check["filter_grad"][0].any() and not check["bias_grad"][0].any()


@pytest.mark.parametrize("dtype", FLOATS)
def test_a_convolution_over_no_input_channels_gives_its_bias(dtype):
    """x [N, 0, H, W]: out is the bias (an empty sum plus the bias), and bias_grad the sums of
    out_grad over N, H and W; x_grad and filter_grad are empty."""
    x, bias = np.zeros((2, 0, 5, 5), dtype), RNG.standard_normal(3).astype(dtype)
    for op, filter_shape in (("conv2d", (3, 0, 3, 3)), ("conv2d_transpose", (0, 3, 3, 3))):
        inputs = {"x": x, "filter": np.zeros(filter_shape, dtype), "bias": bias}
        out = run1(op, inputs)
        assert out.shape == ((2, 3, 3, 3) if op == "conv2d" else (2, 3, 7, 7))
        np.testing.assert_array_equal(out, np.broadcast_to(bias[:, None, None], out.shape))
        g = RNG.standard_normal(out.shape).astype(dtype)
        grads = run_op(f"{op}_grad", {**inputs, "out_grad": g})
        assert_matches(grads["bias_grad"][0], g.sum(axis=(0, 2, 3), dtype=np.float64).astype(dtype))
        assert grads["x_grad"][0].shape == x.shape
        assert grads["filter_grad"][0].shape == filter_shape
    without_bias = {"x": x, "filter": np.zeros((3, 0, 3, 3), dtype)}
    np.testing.assert_array_equal(run1("conv2d", without_bias), np.zeros((2, 3, 3, 3), dtype))


def test_results_do_not_depend_on_the_thread_count():
    inputs = _conv_inputs(CONV_CASES["groups"], "float32")
    prog = pc.Program()
    with pc.program_guard(prog):
        vars_ = {k: pc.data(k, list(v.shape)) for k, v in inputs.items()}
        out = pc.ops.conv2d(**vars_, paddings=[1, 1], groups=2)
        pooled = pc.ops.pool2d(out, ksize=[3, 3], strides=[2, 2], ceil_mode=True)
        grads = pc.gradients([pooled], [vars_["x"]])
    results = [
        pc.Executor(num_threads=n).run(prog, feed=inputs, fetch_list=[out, pooled, *grads])
        for n in (1, 2)
    ]
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)


# The built-in engines (im2col + OpenBLAS, loops) compute float32 where oneDNN is not built or
# switched off: they give what oneDNN gives.


@pytest.fixture
def builtin_engines():
    onednn = pytest.importorskip("paddle_ops_nn.onednn")
    previous = onednn.set_enabled(False)
    yield
    if previous:
        onednn.set_enabled(True)


@pytest.mark.parametrize("op", ["conv2d", "conv2d_transpose"])
@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_builtin_float32_engine_matches_onednn(op, case, request):
    case = CONV_CASES[case]
    inputs = _conv_inputs(case, "float32", transpose=op == "conv2d_transpose")
    ref = {"conv2d": conv2d_ref, "conv2d_transpose": conv2d_transpose_ref}[op]
    out = ref(inputs["x"], inputs["filter"], inputs["bias"], **_ref_attrs(case["attrs"]))
    weights = RNG.standard_normal(out.shape).astype("float32")
    onednn = _analytic_grads(op, inputs, case["attrs"], weights)
    request.getfixturevalue("builtin_engines")
    assert_matches(run1(op, inputs, case["attrs"]), out, **F32)
    for got, want in zip(_analytic_grads(op, inputs, case["attrs"], weights), onednn):
        np.testing.assert_allclose(got, want, **F32)


@pytest.mark.parametrize("pooling_type", ["max", "avg"])
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_builtin_float32_pooling_matches_onednn(case, pooling_type, request):
    case = POOL_CASES[case]
    attrs = {**case["attrs"], "pooling_type": pooling_type}
    x = _distinct(case["shape"], "float32")
    out = pool2d_ref(x, **_ref_attrs({"ksize": [1, 1], **attrs}))
    weights = RNG.standard_normal(out.shape).astype("float32")
    onednn = _analytic_grads("pool2d", {"x": x}, attrs, weights)
    request.getfixturevalue("builtin_engines")
    assert_matches(run1("pool2d", {"x": x}, attrs), out, **F32)
    (got,) = _analytic_grads("pool2d", {"x": x}, attrs, weights)
    np.testing.assert_allclose(got, onednn[0], **F32)


def _onednn_trace(script: str, tmp_path) -> list[list[str]]:
    """The fields of each primitive oneDNN ran (its ONEDNN_VERBOSE trace) while ``script``
    ran in a fresh process, in ``tmp_path`` (not the checkout, whose source tree would shadow
    the installed core): [3] is the primitive, [4] the implementation, [5] the pass."""
    trace = subprocess.run(
        [sys.executable, "-P", "-c", script],
        env={**os.environ, "ONEDNN_VERBOSE": "1"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split(",") for line in trace.splitlines() if ",exec,cpu," in line]


_PRIMITIVES_RUN = """
import numpy as np, paddle_core as pc, paddle_ops_nn.onednn as onednn
onednn.set_enabled({enabled})
prog = pc.Program()
with pc.program_guard(prog):
    x, f = pc.data("x", [1, 2, 4, 4]), pc.data("f", [2, 2, 3, 3])
    y = pc.ops.pool2d(pc.ops.conv2d(x, f), ksize=[2, 2], pooling_type="max")
feed = {{"x": np.ones((1, 2, 4, 4), np.float32), "f": np.ones((2, 2, 3, 3), np.float32)}}
pc.Executor().run(prog, feed=feed, fetch_list=[y])
"""


@pytest.mark.parametrize("enabled", [True, False])
def test_the_switch_decides_which_library_runs(enabled, tmp_path):
    """oneDNN's own trace (ONEDNN_VERBOSE) shows its primitives run only when enabled."""
    onednn = pytest.importorskip("paddle_ops_nn.onednn")
    if not onednn.is_available():
        pytest.skip("this build of paddle-ops-nn has no oneDNN")
    executed = {f[3] for f in _onednn_trace(_PRIMITIVES_RUN.format(enabled=enabled), tmp_path)}
    assert executed == ({"convolution", "pooling", "reorder"} if enabled else set())


_MOBILENET_BLOCK = """
import numpy as np
import paddle_core as pc
main, startup = pc.Program(), pc.Program()
with pc.program_guard(main, startup):
    x = pc.layers.data("x", [32, 8, 8])
    h = pc.ops.relu6(pc.layers.conv2d(x, 96, 1))
    h = pc.ops.relu6(pc.layers.conv2d(h, 96, 3, padding=1, groups=96))
    y = pc.layers.conv2d(h, 32, 1)
scope = pc.Scope()
pc.Executor().run(startup, scope=scope)
x = np.random.default_rng(0).standard_normal((4, 32, 8, 8)).astype(np.float32)
pc.Executor().run(main, feed={"x": x}, fetch_list=[y], scope=scope)
"""


def test_inference_on_channels_last_runs_the_jit_kernels_of_1x1_and_depthwise(tmp_path):
    """On AVX2, oneDNN first offers its brgemm kernels for 1x1 and depthwise inferences on
    channels last; the engine takes its jit kernels for them, which measured faster
    (conv_dnnl.cpp). Other CPUs get oneDNN's own first choice."""
    onednn = pytest.importorskip("paddle_ops_nn.onednn")
    if not onednn.is_available() or onednn.inference_block() != -1:
        pytest.skip("oneDNN does not compute inferences on channels last here")
    trace = _onednn_trace(_MOBILENET_BLOCK, tmp_path)
    kernels = [f[4] for f in trace if f[3] == "convolution"]
    if not all(k.endswith(":avx2") for k in kernels):
        pytest.skip(f"not an AVX2 CPU for oneDNN: {kernels}")
    assert kernels == ["jit_1x1:avx2", "jit_dw:avx2", "jit_1x1:avx2"]


_FILTER_GRADIENTS = """
import numpy as np
import paddle_core as pc
main, startup = pc.Program(), pc.Program()
with pc.program_guard(main, startup):
    x = pc.layers.data("x", [16, 8, 8])
    h = pc.layers.conv2d(x, 64, 3, padding=1, bias_attr=False)  # 144 taps: oneDNN's
    y = pc.layers.conv2d(h, 64, 3, padding=1, bias_attr=False)  # 576 taps: OpenBLAS's
    pc.optimizer.SGD(0.1).minimize(pc.layers.mean(y))
scope = pc.Scope()
pc.Executor().run(startup, scope=scope)
x = np.random.default_rng(0).standard_normal((1, 16, 8, 8)).astype(np.float32)
pc.Executor().run(main, feed={"x": x}, scope=scope)
"""


def test_large_filter_gradients_come_from_openblas_products(tmp_path):
    """On AVX2, oneDNN's jit kernel computes a filter gradient at about half OpenBLAS's speed:
    where the product is large (576 taps, 64 filters, one image) the built-in engine computes
    it (conv_dnnl.cpp); a thin one (144 taps) stays oneDNN's."""
    onednn = pytest.importorskip("paddle_ops_nn.onednn")
    if not onednn.is_available():
        pytest.skip("this build of paddle-ops-nn has no oneDNN")
    weights = [
        f
        for f in _onednn_trace(_FILTER_GRADIENTS, tmp_path)
        if f[3] == "convolution" and f[5] == "backward_weights"
    ]
    kernels = [f[4] for f in weights]
    if not kernels or not all(k in ("jit:avx2", "jit_1x1:avx2") for k in kernels):
        pytest.skip(f"oneDNN's filter gradient kernels here are not its AVX2 jit ones: {kernels}")
    assert len(weights) == 1, kernels  # the first convolution's; the second's is OpenBLAS's
    assert "ic16oc64" in ",".join(weights[0])


_LARGE_FILTER_FORWARD = """
import numpy as np
import paddle_core as pc
main, startup = pc.Program(), pc.Program()
with pc.program_guard(main, startup):
    x = pc.layers.data("x", [128, 7, 7])
    y = pc.layers.conv2d(x, 64, 3, padding=1)  # 1152 taps over 7x7 outputs
    loss = pc.layers.mean(pc.ops.relu(y))
    test = main.clone(for_test=True)
    pc.optimizer.SGD(0.1).minimize(loss)
scope = pc.Scope()
pc.Executor().run(startup, scope=scope)
w, b = (scope.get(p.name).copy() for p in main.all_parameters())  # (before the step's update)
x = np.random.default_rng(0).standard_normal((1, 128, 7, 7)).astype(np.float32)
(got,) = pc.Executor().run({program}, feed={{"x": x}}, fetch_list=[y], scope=scope)
np.save("out.npy", got), np.save("x.npy", x), np.save("w.npy", w), np.save("b.npy", b)
"""


@pytest.mark.parametrize("program", ["main", "test"])
def test_a_training_steps_large_filter_over_small_maps_comes_from_openblas(program, tmp_path):
    """oneDNN converts a filter to its layout at every call of a training step, which for
    1152 taps over 7x7 maps costs more than the product: the built-in engine's OpenBLAS product
    computes that forward pass (conv_gemm.cpp's gemm_forward_pays); an inference, which keeps
    the converted filter, stays oneDNN's. Both against NumPy."""
    onednn = pytest.importorskip("paddle_ops_nn.onednn")
    if not onednn.is_available():
        pytest.skip("this build of paddle-ops-nn has no oneDNN")
    trace = _onednn_trace(_LARGE_FILTER_FORWARD.format(program=program), tmp_path)
    kernels = [f[4] for f in trace if f[3] == "convolution" and f[5].startswith("forward")]
    if not all(k.endswith(":avx2") for k in kernels):
        pytest.skip(f"not an AVX2 CPU for oneDNN: {kernels}")
    assert len(kernels) == (0 if program == "main" else 1), kernels
    x, w, b = (np.load(tmp_path / f"{name}.npy") for name in ("x", "w", "b"))
    want = conv2d_ref(x, w, b, paddings=(1, 1))
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-4, atol=1e-5)


def test_the_default_build_has_onednn_where_its_wheels_exist():
    """The build goes on without oneDNN when it cannot find it: this catches a lookup that
    broke, which would otherwise only show as slower convolutions."""
    onednn = pytest.importorskip("paddle_ops_nn.onednn")
    assert onednn.is_available() == (sys.platform == "linux" and platform.machine() == "x86_64")


def test_the_switch_reports_and_refuses():
    onednn = pytest.importorskip("paddle_ops_nn.onednn")
    assert onednn.set_enabled(False) is onednn.is_available()
    assert not onednn.is_enabled()
    if onednn.is_available():
        assert onednn.set_enabled(True) is False and onednn.is_enabled()
    else:
        with pytest.raises(pc.PluginError, match="built without oneDNN"):
            onednn.set_enabled(True)


# -- adaptive pools -----------------------------------------------------------------------------

ADAPTIVE = ["adaptive_avg_pool2d", "adaptive_max_pool2d"]
ADAPTIVE_CASES = {  # x shape, output_size
    "overlapping bins": ((2, 3, 7, 5), [3, 2]),
    "one value for both": ((1, 2, 6, 9), [4]),
    "global": ((2, 3, 5, 4), [1]),
    "global, long planes": ((2, 2, 33, 31), [1, 1]),  # the CPU's sum in eight lanes, a tail
    "disjoint bins": ((2, 3, 8, 6), [4, 3]),
    "more bins than rows": ((1, 2, 3, 2), [5, 4]),
    "the identity": ((1, 2, 3, 4), [3, 4]),
    "empty batch": ((0, 3, 4, 4), [2, 2]),
}


def adaptive_pool_ref(x, output_size, op):
    """PyTorch's adaptive pooling in NumPy: bin i of OH over H rows covers rows
    floor(i * H / OH) to ceil((i + 1) * H / OH)."""
    oh, ow = output_size * 2 if len(output_size) == 1 else output_size
    h, w = x.shape[2:]
    fn = np.mean if op == "adaptive_avg_pool2d" else np.max
    out = np.empty((*x.shape[:2], oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = slice(i * h // oh, -(-(i + 1) * h // oh))
            cols = slice(j * w // ow, -(-(j + 1) * w // ow))
            out[:, :, i, j] = fn(x[:, :, rows, cols], axis=(2, 3)) if x.size else 0
    return out.astype(x.dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ADAPTIVE)
@pytest.mark.parametrize("case", ADAPTIVE_CASES, ids=str)
def test_adaptive_pools_match_numpy(case, op, dtype):
    shape, size = ADAPTIVE_CASES[case]
    x = RNG.standard_normal(shape).astype(dtype)
    assert_matches(run1(op, {"x": x}, {"output_size": size}), adaptive_pool_ref(x, size, op))


@pytest.mark.parametrize("op", ADAPTIVE)
@pytest.mark.parametrize("case", [c for c in ADAPTIVE_CASES if c != "empty batch"], ids=str)
def test_adaptive_pool_gradients_match_finite_differences(case, op):
    shape, size = ADAPTIVE_CASES[case]
    # atol: the finite differences of a sum of 1023 values up to 100 in size are good to about
    # 1e-8, the order of a global average's gradient error tolerated otherwise (one count off
    # in 1023 would still be 1e-6 off).
    check_grad(op, {"x": _distinct(shape, "float64")}, {"output_size": size}, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", FLOATS)
def test_adaptive_max_pool_routes_ties_to_the_first_maximum(dtype):
    """Equal values: the bin's first one gets the gradient, as in PyTorch; a shared element
    that is the maximum of two bins gets both their gradients."""
    x = np.zeros((1, 1, 4, 3), dtype)
    g = np.arange(1, 5, dtype=dtype).reshape(1, 1, 2, 2)
    (grad,) = run_op("adaptive_max_pool2d_grad", {"x": x, "out_grad": g}, {"output_size": [2, 2]})[
        "x_grad"
    ]
    want = np.zeros((1, 1, 4, 3), dtype)
    want[0, 0, 0, 0], want[0, 0, 0, 1], want[0, 0, 2, 0], want[0, 0, 2, 1] = 1, 2, 3, 4
    assert_matches(grad, want)  # column 1 is in both columns of bins: the first of each
    x[0, 0, 1, 1] = 5  # the maximum of the top two bins
    (grad,) = run_op("adaptive_max_pool2d_grad", {"x": x, "out_grad": g}, {"output_size": [2, 2]})[
        "x_grad"
    ]
    assert grad[0, 0, 1, 1] == 3 and grad.sum() == 10


@pytest.mark.parametrize("op", ADAPTIVE)
@pytest.mark.parametrize(
    ("shape", "dtype", "attrs", "error", "message"),
    [
        ((1, 2, 4, 4), "float32", {"output_size": [0, 2]}, pc.AttrError, "attr 'output_size'"),
        ((1, 2, 4, 4), "float32", {"output_size": [-1]}, pc.AttrError, "attr 'output_size'"),
        ((1, 2, 4, 4), "float32", {}, pc.AttrError, "attr 'output_size': a value is required"),
        ((1, 2, 4, 4), "float32", {"output_size": []}, pc.ShapeError, "have 1 value"),
        ((1, 2, 4, 4), "float32", {"output_size": [1, 2, 3]}, pc.ShapeError, "got \\[1, 2, 3\\]"),
        ((2, 4, 4), "float32", {"output_size": [2]}, pc.ShapeError, "x must be 4-D"),
        ((1, 2, 4, 4), "int32", {"output_size": [2]}, pc.ShapeError, "float32 or float64"),
        ((1, 2, 0, 4), "float32", {"output_size": [2]}, pc.ShapeError, "height is 0"),
        ((1, 2, 4, 0), "float32", {"output_size": [2]}, pc.ShapeError, "width is 0"),
    ],
)
def test_adaptive_pools_refuse_what_does_not_fit_by_name(op, shape, dtype, attrs, error, message):
    with pc.program_guard(pc.Program()):
        x = pc.data("x", shape, dtype)
        with pytest.raises(error, match=rf"op '{op}'.*{message}") as info:
            getattr(pc.ops, op)(x, **attrs)
    assert info.value.op == op


def test_adaptive_pools_keep_unknown_dimensions():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [None, 3, None, None])
        assert pc.ops.adaptive_avg_pool2d(x, output_size=[2, 5]).shape == (None, 3, 2, 5)
        assert pc.ops.adaptive_max_pool2d(x, output_size=[7]).shape == (None, 3, 7, 7)


def test_adaptive_pool_layers():
    prog = pc.Program()
    with pc.program_guard(prog):
        image = pc.layers.data("image", [3, 7, 6])
        whole = pc.layers.adaptive_avg_pool2d(image, 1)
        grid = pc.layers.adaptive_max_pool2d(image, [2, 4])
        with pytest.raises(pc.ProgramError, match="adaptive_avg_pool2d: output_size must be"):
            pc.layers.adaptive_avg_pool2d(image, 0)
        with pytest.raises(pc.ProgramError, match="adaptive_max_pool2d: output_size must be"):
            pc.layers.adaptive_max_pool2d(image, [1, 2, 3])
    assert whole.shape == (None, 3, 1, 1) and grid.shape == (None, 3, 2, 4)
    x = RNG.standard_normal((2, 3, 7, 6)).astype("float32")
    got, got_grid = pc.Executor().run(prog, feed={"image": x}, fetch_list=[whole, grid])
    assert_matches(got, x.mean(axis=(2, 3), keepdims=True))
    assert_matches(got_grid, adaptive_pool_ref(x, [2, 4], "adaptive_max_pool2d"))


def test_adaptive_pools_and_their_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    fns = {
        "adaptive_avg_pool2d": F.adaptive_avg_pool2d,
        "adaptive_max_pool2d": F.adaptive_max_pool2d,
    }
    x = RNG.standard_normal((2, 3, 9, 7))
    x[0, 0, :3, :3] = 1.5  # ties in a max bin
    for op, fn in fns.items():
        for size in ([1, 1], [4, 3], [2, 5], [11, 9]):
            g = RNG.standard_normal((2, 3, *size))
            t = torch.from_numpy(x).requires_grad_()
            want = fn(t, size)
            want.backward(torch.from_numpy(g))
            assert_matches(run1(op, {"x": x}, {"output_size": size}), want.detach().numpy())
            (grad,) = run_op(op + "_grad", {"x": x, "out_grad": g}, {"output_size": size})["x_grad"]
            assert_matches(grad, t.grad.numpy())
