"""paddle-ops-nn packed_attention: scaled_dot_product_attention of a self-attention's packed
projection qkv [B, L, 3, H, E], out [B, L, H, E]. Against the composed NumPy form of q, k and v
unpacked, in both dtypes, across the kernels' tiles, causal and masked; its gradient against
the composed form's and by finite differences; dropout drawing scaled_dot_product_attention's
mask; its errors, from the rule and from the kernel."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import FLOATS, assert_matches, check_grad, pc, rand, run_op
from test_attention import np_attention, np_attention_grad

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

OP = "packed_attention"


def unpack(qkv):
    """q, k, v [B, H, L, E] of qkv [B, L, 3, H, E]."""
    return tuple(np.ascontiguousarray(qkv[:, :, i].transpose(0, 2, 1, 3)) for i in range(3))


def pack(q_grad, k_grad, v_grad):
    """qkv_grad [B, L, 3, H, E] of the three [B, H, L, E] gradients."""
    return np.stack([g.transpose(0, 2, 1, 3) for g in (q_grad, k_grad, v_grad)], axis=2)


def heads_last(out):
    """[B, H, L, E] -> [B, L, H, E]."""
    return out.transpose(0, 2, 1, 3)


def attend(qkv, mask=None, **attrs):
    inputs = {"qkv": qkv} | ({} if mask is None else {"attn_mask": mask})
    got = run_op(OP, inputs, attrs)
    return got["out"][0], got["logsumexp"][0]


def close(got, want, dtype):
    if dtype == "float64":
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-3, atol=1e-4)


# (B, L, H, E): one tile; ragged query (128) and key (256) tiles; one head; E of 3.
SHAPES = [(2, 5, 3, 4), (1, 130, 2, 16), (2, 300, 1, 8), (3, 7, 2, 3)]


def masks(rng, variant, B, H, L):
    """A key padding mask [B, 1, 1, L] (bool), a float mask [H, L, L], or none."""
    if variant == "padding":
        keep = rng.random((B, 1, 1, L)) < 0.8
        keep[..., 0] = True
        return keep
    if variant == "float":
        return rand(rng, (H, L, L), "float64")
    return None


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("variant", ["full", "causal", "padding", "float"])
def test_matches_the_composed_form_of_q_k_v_unpacked(dtype, shape, variant):
    B, L, H, E = shape
    rng = np.random.default_rng(1)
    qkv = rand(rng, (B, L, 3, H, E), dtype, -2, 2)
    mask = masks(rng, variant, B, H, L)
    if mask is not None and mask.dtype != bool:
        mask = mask.astype(dtype)
    attrs = {"is_causal": variant == "causal"}
    out, lse = attend(qkv, mask, **attrs)
    want_out, want_lse = np_attention(*unpack(qkv), mask, **attrs)
    assert out.shape == (B, L, H, E) and lse.shape == (B, H, L)
    assert out.dtype == lse.dtype == np.dtype(dtype)
    close(out, heads_last(want_out), dtype)
    close(lse, want_lse, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("variant", ["full", "causal", "padding"])
def test_the_gradient_matches_the_composed_forms(dtype, shape, variant):
    """One head of one sequence over two key tiles is fewer batch entries than threads: q's
    gradient is summed over shares of the keys."""
    B, L, H, E = shape
    rng = np.random.default_rng(2)
    qkv = rand(rng, (B, L, 3, H, E), dtype, -2, 2)
    dout = rand(rng, (B, L, H, E), dtype)
    mask = masks(rng, variant, B, H, L)
    attrs = {"is_causal": variant == "causal"}
    out, lse = attend(qkv, mask, **attrs)
    inputs = {"qkv": qkv, "out": out, "logsumexp": lse, "out_grad": dout}
    if mask is not None:
        inputs["attn_mask"] = mask
    (got,) = run_op(OP + "_grad", inputs, attrs)["qkv_grad"]
    want = np_attention_grad(*unpack(qkv), heads_last(dout), mask, **attrs)
    assert got.shape == qkv.shape
    close(got, pack(*want), dtype)


@pytest.mark.parametrize("case", ["plain", "causal", "padding", "scale"])
def test_gradient_by_finite_differences(case):
    rng = np.random.default_rng(3)
    inputs = {"qkv": rand(rng, (2, 3, 3, 2, 2), "float64")}
    attrs = {"is_causal": case == "causal", "scale": 0.7 if case == "scale" else 0.0}
    if case == "padding":
        inputs["attn_mask"] = masks(rng, "padding", 2, 2, 3)
    check_grad(OP, inputs, attrs, wrt=["qkv"], output="out")


def test_dropout_drops_what_scaled_dot_product_attention_drops():
    """The same seed draws the same mask for head h of sequence n as for batch entry n * H + h
    of q [B, H, L, E]: outputs and gradients agree."""
    rng = np.random.default_rng(4)
    B, L, H, E = 2, 130, 2, 8
    qkv = rand(rng, (B, L, 3, H, E), "float64")
    dout = rand(rng, (B, L, H, E), "float64")
    attrs = {"dropout_p": 0.3, "seed": 7}
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("qkv", list(qkv.shape), "float64")
        g = pc.data("g", list(dout.shape), "float64")
        packed, _, _ = pc.ops.packed_attention(x, **attrs)
        q, k, v = (
            pc.ops.transpose(pc.ops.squeeze(t, axes=[2]), perm=[0, 2, 1, 3])
            for t in pc.ops.split(x, num=3, axis=2)
        )
        separate, _, _ = pc.ops.scaled_dot_product_attention(q, k, v, **attrs)
        separate = pc.ops.transpose(separate, perm=[0, 2, 1, 3])
        losses = [pc.ops.sum(pc.ops.mul(out, g)) for out in (packed, separate)]
        grads = [pc.gradients([loss], [x])[0] for loss in losses]
    feed = {"qkv": qkv, "g": dout}
    got = pc.Executor().run(main, feed=feed, fetch_list=[packed, separate, *grads])
    assert_matches(got[0], got[1])
    assert_matches(got[2], got[3])
    undropped, _ = np_attention(*unpack(qkv))
    assert not np.allclose(got[0], heads_last(undropped))  # something was dropped


def test_a_program_differentiates_it():
    """pc.ops.packed_attention and pc.gradients: qkv's gradient is the op's."""
    rng = np.random.default_rng(5)
    qkv = rand(rng, (2, 6, 3, 2, 4), "float64")
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("qkv", list(qkv.shape), "float64")
        out, lse, _ = pc.ops.packed_attention(x, is_causal=True)
        assert tuple(out.shape) == (2, 6, 2, 4) and tuple(lse.shape) == (2, 2, 6)
        (grad,) = pc.gradients([pc.ops.sum(pc.ops.square(out))], [x])
    got_out, got_grad = pc.Executor().run(main, feed={"qkv": qkv}, fetch_list=[out, grad])
    want_out, _ = np_attention(*unpack(qkv), is_causal=True)
    assert_matches(got_out, heads_last(want_out))
    want = np_attention_grad(*unpack(qkv), 2 * want_out, is_causal=True)
    np.testing.assert_allclose(got_grad, pack(*want), rtol=1e-10, atol=1e-12)


# -- errors -----------------------------------------------------------------------------------


def append(shape, dtype="float32", mask=None, **attrs):
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("qkv", list(shape), dtype)
        m = None if mask is None else pc.data("m", list(mask[0]), mask[1])
        return pc.ops.packed_attention(x, m, **attrs)


@pytest.mark.parametrize(
    ("shape", "dtype", "mask", "attrs", "message"),
    [
        ((2, 5, 3, 4), "float32", None, {}, r"qkv must be \[B, L, 3, H, E\]"),
        ((2, 5, 2, 1, 4), "float32", None, {}, r"qkv must be \[B, L, 3, H, E\]"),
        ((2, 5, 3, 1, 4), "int64", None, {}, "qkv must be float32 or float64"),
        ((2, 5, 3, 2, 4), "float32", ((5, 4), "bool"), {}, "does not broadcast"),
        ((2, 5, 3, 2, 4), "float32", ((5, 5), "int32"), {}, "bool or qkv's dtype"),
        ((2, 5, 3, 2, 4), "float32", ((5, 5), "bool"), {"is_causal": True}, "is_causal"),
    ],
)
def test_inputs_that_do_not_fit_are_refused(shape, dtype, mask, attrs, message):
    with pytest.raises(pc.ShapeError, match=f"op '{OP}'.*{message}"):
        append(shape, dtype, mask, **attrs)


def test_the_kernel_checks_the_fed_shapes():
    """A qkv of unknown sizes is checked again against what is fed, before a kernel runs."""
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("qkv", [None, None, None, None, None])
        out, _, _ = pc.ops.packed_attention(x)
    feed = {"qkv": np.zeros((2, 5, 2, 1, 4), np.float32)}
    with pytest.raises(
        pc.PaddleCoreError, match=r"qkv must be \[B, L, 3, H, E\].*got \[2, 5, 2, 1, 4\]"
    ):
        pc.Executor().run(main, feed=feed, fetch_list=[out])
