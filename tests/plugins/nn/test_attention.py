"""paddle-ops-nn scaled_dot_product_attention against the composed NumPy form in float64
(softmax(q k^T * scale + mask) v): every dtype, bool, float and broadcast masks, causal, L != S,
Ev != E, empty sequences, sizes across the kernels' tiles, long sequences; its gradients by
finite differences and against the composed form's; dropout (the mask, its statistics and
reproducibility, its gradient); its errors; and PyTorch's F.scaled_dot_product_attention where
torch is installed."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import (
    FLOATS,
    assert_matches,
    check_grad,
    cpu_has_avx2_fma,
    on_both_paths,
    pc,
    rand,
    run_op,
)

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

OP = "scaled_dot_product_attention"


# -- the composed form, in float64 ------------------------------------------------------------


def np_scores(q, k, mask=None, is_causal=False, scale=0.0):
    """q k^T * scale + mask, -inf where a bool mask or is_causal hides a pair."""
    q, k = q.astype(np.float64), k.astype(np.float64)
    scale = scale or (1 / np.sqrt(q.shape[-1]) if q.shape[-1] else 1.0)
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = s.shape[-2:]
    if is_causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask.astype(np.float64)
    return s


def np_probabilities(s):
    """softmax along the last axis; rows with no visible key (all -inf) are 0."""
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)
    e = np.exp(s - np.where(np.isfinite(m), m, 0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def np_attention(q, k, v, mask=None, is_causal=False, scale=0.0):
    """(out, logsumexp) in float64."""
    s = np_scores(q, k, mask, is_causal, scale)
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)
    with np.errstate(divide="ignore"):
        lse = np.log(np.exp(s - np.where(np.isfinite(m), m, 0)).sum(axis=-1)) + np.where(
            np.isfinite(m[..., 0]), m[..., 0], 0
        )
    return np_probabilities(s) @ v.astype(np.float64), lse


def np_attention_grad(q, k, v, dout, mask=None, is_causal=False, scale=0.0):
    """(q_grad, k_grad, v_grad) of the composed form, in float64."""
    scale = scale or 1 / np.sqrt(q.shape[-1])
    q, k, v, dout = (a.astype(np.float64) for a in (q, k, v, dout))
    p = np_probabilities(np_scores(q, k, mask, is_causal, scale))
    dp = dout @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    return scale * ds @ k, scale * np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ dout


def qkv(rng, lead, L, S, E, Ev, dtype):
    return (
        rand(rng, (*lead, L, E), dtype, -2, 2),
        rand(rng, (*lead, S, E), dtype, -2, 2),
        rand(rng, (*lead, S, Ev), dtype, -2, 2),
    )


def attend(q, k, v, mask=None, **attrs):
    inputs = {"q": q, "k": k, "v": v}
    if mask is not None:
        inputs["attn_mask"] = mask
    got = run_op(OP, inputs, attrs)
    return got["out"][0], got["logsumexp"][0]


def float32_close(got, want, atol=2e-5):
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-4, atol=atol)


def check(q, k, v, mask=None, **attrs):
    out, lse = attend(q, k, v, mask, **attrs)
    want_out, want_lse = np_attention(q, k, v, mask, **attrs)
    if q.dtype == np.float64:
        assert_matches(out, want_out)
        assert_matches(lse, want_lse)
    else:
        assert out.dtype == lse.dtype == np.float32
        float32_close(out, want_out)
        float32_close(lse, want_lse)


# -- forward ----------------------------------------------------------------------------------

# (leading dimensions, L, S, E, Ev): one tile, several tiles of queries (128) and keys (256)
# with ragged ends, no leading dimensions, L != S both ways, Ev != E.
SHAPES = [
    ((2, 3), 5, 7, 4, 6),
    ((), 9, 9, 8, 8),
    ((1,), 130, 300, 16, 5),
    ((2,), 70, 20, 3, 9),
    ((3, 1, 2), 4, 1, 2, 2),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_matches_the_composed_form(dtype, shape, is_causal):
    lead, L, S, E, Ev = shape
    q, k, v = qkv(np.random.default_rng(0), lead, L, S, E, Ev, dtype)
    check(q, k, v, is_causal=is_causal)


@pytest.mark.parametrize("dtype", FLOATS)
def test_an_explicit_scale(dtype):
    q, k, v = qkv(np.random.default_rng(1), (2,), 6, 10, 4, 3, dtype)
    check(q, k, v, scale=0.3)
    check(q, k, v, scale=-2.0)


# Mask shapes against scores [2, 3, L=140, S=300] (across tiles): full, broadcast over heads, over the batch,
# over the queries (a key padding mask), missing leading dimensions, a single value.
MASK_SHAPES = [
    (2, 3, 140, 300),
    (2, 1, 140, 300),
    (1, 3, 140, 300),
    (2, 1, 1, 300),
    (140, 300),
    (300,),
    (1, 1),
    (3, 140, 1),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mask_shape", MASK_SHAPES, ids=str)
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_masks_broadcast(dtype, mask_shape, kind):
    rng = np.random.default_rng(2)
    q, k, v = qkv(rng, (2, 3), 140, 300, 8, 4, dtype)
    if kind == "bool":
        mask = rng.random(mask_shape) < 0.7
    else:
        mask = rand(rng, mask_shape, dtype, -3, 3)
        mask[rng.random(mask_shape) < 0.2] = -np.inf
    check(q, k, v, mask)


@pytest.mark.parametrize("dtype", FLOATS)
def test_a_fully_masked_row_gives_zeros(dtype):
    """PyTorch gives NaN for a row whose bool mask is all false; this op gives 0 and a
    logsumexp of -inf, for bool and float (-inf) masks alike, and no gradient through it."""
    rng = np.random.default_rng(3)
    q, k, v = qkv(rng, (2,), 3, 4, 2, 3, dtype)
    mask = np.ones((2, 3, 4), bool)
    mask[0, 1] = False
    for m in (mask, np.where(mask, 0.0, -np.inf).astype(dtype)):
        out, lse = attend(q, k, v, m)
        assert np.all(out[0, 1] == 0) and lse[0, 1] == -np.inf
        assert np.all(np.isfinite(np.delete(out.reshape(6, 3), 1, axis=0)))
        check(q, k, v, m)
    grads = run_op(
        OP + "_grad",
        {
            "q": q,
            "k": k,
            "v": v,
            "attn_mask": mask,
            "out": out,
            "logsumexp": lse,
            "out_grad": np.ones_like(out),
        },
    )
    assert np.all(grads["q_grad"][0][0, 1] == 0)


@pytest.mark.parametrize(
    "shape",
    [
        ((2,), 0, 5, 3, 4),
        ((2,), 4, 0, 3, 4),
        ((0, 3), 4, 5, 3, 4),
        ((2,), 4, 5, 3, 0),
        ((2,), 4, 5, 0, 3),
    ],
    ids=str,
)
def test_empty_sizes(shape):
    """S == 0 gives zeros (no key to attend to), as does E == 0 over uniform weights' mean."""
    lead, L, S, E, Ev = shape
    q, k, v = qkv(np.random.default_rng(4), lead, L, S, E, Ev, "float64")
    out, lse = attend(q, k, v)
    assert out.shape == (*lead, L, Ev) and lse.shape == (*lead, L)
    check(q, k, v)
    if S == 0:
        assert np.all(out == 0) and np.all(lse == -np.inf)


def test_long_sequences_in_float32():
    """1024 queries and keys, many tiles: float32 against float64's composed form."""
    rng = np.random.default_rng(5)
    q, k, v = qkv(rng, (1, 2), 1024, 1024, 64, 64, "float32")
    for is_causal in (False, True):
        out, lse = attend(q, k, v, is_causal=is_causal)
        want_out, want_lse = np_attention(q, k, v, is_causal=is_causal)
        float32_close(out, want_out, atol=1e-5)
        float32_close(lse, want_lse)


def test_extreme_scores_stay_finite():
    """Scores of ±1e4 (the online softmax rescales by the running max)."""
    q = np.array([[[100.0, 0.0], [-100.0, 0.0]]])
    k = np.array([[[100.0, 0.0], [0.0, 1.0], [-100.0, 0.0]]])
    v = np.arange(6.0).reshape(1, 3, 2)
    for dtype in FLOATS:
        out, _ = attend(q.astype(dtype), k.astype(dtype), v.astype(dtype), scale=1.0)
        assert np.all(np.isfinite(out))
        check(q.astype(dtype), k.astype(dtype), v.astype(dtype), scale=1.0)


# -- gradients --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    ["plain", "causal", "bool mask", "float mask", "L > S causal", "scale"],
)
def test_gradient_by_finite_differences(case):
    rng = np.random.default_rng(6)
    L, S = (5, 3) if case == "L > S causal" else (3, 4)
    q, k, v = qkv(rng, (2,), L, S, 3, 2, "float64")
    inputs, attrs = {"q": q, "k": k, "v": v}, {}
    if case in ("causal", "L > S causal"):
        attrs["is_causal"] = True
    if case == "bool mask":
        mask = rng.random((L, S)) < 0.6
        mask[:, 0] = True
        inputs["attn_mask"] = mask
    if case == "float mask":
        inputs["attn_mask"] = rand(rng, (2, 1, S), "float64")
    if case == "scale":
        attrs["scale"] = 0.7
    check_grad(OP, inputs, attrs, wrt=["q", "k", "v"], output="out")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [((1,), 130, 300, 16, 5), ((5,), 260, 270, 8, 8)], ids=str)
@pytest.mark.parametrize("variant", ["full", "causal", "mask"])
def test_gradient_across_tiles_matches_the_composed_form(dtype, shape, variant):
    """Sizes that cross the query (128) and key (256) tiles, batches fewer and more than the
    threads (q_grad summed over shares of the keys, or not)."""
    lead, L, S, E, Ev = shape
    rng = np.random.default_rng(7)
    q, k, v = qkv(rng, lead, L, S, E, Ev, dtype)
    dout = rand(rng, (*lead, L, Ev), dtype)
    mask = rng.random((L, S)) < 0.8 if variant == "mask" else None
    attrs = {"is_causal": variant == "causal"}
    out, lse = attend(q, k, v, mask, **attrs)
    inputs = {"q": q, "k": k, "v": v, "out": out, "logsumexp": lse, "out_grad": dout}
    if mask is not None:
        inputs["attn_mask"] = mask
    got = run_op(OP + "_grad", inputs, attrs)
    want = np_attention_grad(q, k, v, dout, mask, attrs["is_causal"])
    for slot, w in zip(("q_grad", "k_grad", "v_grad"), want):
        if dtype == "float64":
            np.testing.assert_allclose(got[slot][0], w, rtol=1e-10, atol=1e-12, err_msg=slot)
        else:
            np.testing.assert_allclose(got[slot][0], w, rtol=1e-3, atol=1e-4, err_msg=slot)


def test_gradients_through_a_program():
    """pc.ops and pc.gradients: only the gradients asked for are computed."""
    rng = np.random.default_rng(8)
    q, k, v = qkv(rng, (2, 2), 6, 9, 4, 3, "float64")
    prog = pc.Program()
    with pc.program_guard(prog):
        vs = [pc.data(n, list(a.shape), "float64") for n, a in zip("qkv", (q, k, v))]
        out, lse, _ = pc.ops.scaled_dot_product_attention(*vs, is_causal=True)
        assert tuple(out.shape) == (2, 2, 6, 3) and tuple(lse.shape) == (2, 2, 6)
        loss = pc.ops.sum(pc.ops.square(out))
        (gk,) = pc.gradients([loss], [vs[1]])
    got_out, got_gk = pc.Executor().run(
        prog, feed=dict(zip("qkv", (q, k, v))), fetch_list=[out, gk]
    )
    want_out, _ = np_attention(q, k, v, is_causal=True)
    assert_matches(got_out, want_out)
    _, want_gk, _ = np_attention_grad(q, k, v, 2 * want_out, is_causal=True)
    np.testing.assert_allclose(got_gk, want_gk, rtol=1e-10, atol=1e-12)
    grad_ops = [op for op in prog.global_block().ops if op.type == OP + "_grad"]
    assert [sorted(op.outputs) for op in grad_ops] == [["k_grad"]]


def test_a_mask_that_needs_a_gradient_is_refused():
    prog = pc.Program()
    with pc.program_guard(prog):
        q = pc.data("q", [2, 3, 4], "float64")
        bias = pc.data("bias", [3, 3], "float64")
        mask = pc.ops.scale(bias, scale=2.0)
        out, _, _ = pc.ops.scaled_dot_product_attention(q, q, q, mask)
        with pytest.raises(pc.ProgramError, match=f"op '{OP}'.*attn_mask.*stop_gradient"):
            pc.gradients([pc.ops.sum(out)], [bias])


# -- dropout ----------------------------------------------------------------------------------
# The op keeps pair (i, j) of batch entry b where dropout, drawing for a [..., L, S] tensor from
# the same stream, keeps element (b, i, j): with a seed, the mask of dropout(seed=...).


def dropout_keep(shape, p, seed):
    """The keep mask dropout draws for a tensor of ``shape`` with ``seed`` (bool)."""
    x = np.ones(shape, np.float32)
    (mask,) = run_op("dropout", {"x": x}, {"dropout_prob": p, "seed": seed})["mask"]
    return mask.astype(bool)


def np_dropped(q, k, v, keep, p, mask=None, is_causal=False, scale=0.0):
    """(out, logsumexp) of the composed form with the probabilities times keep / (1 - p)."""
    _, lse = np_attention(q, k, v, mask, is_causal, scale)
    probs = np_probabilities(np_scores(q, k, mask, is_causal, scale))
    return (probs * keep / (1 - p)) @ v.astype(np.float64), lse


def np_dropped_grad(q, k, v, dout, keep, p, mask=None, is_causal=False):
    """(q_grad, k_grad, v_grad) of np_dropped, in float64."""
    scale = 1 / np.sqrt(q.shape[-1])
    q, k, v, dout = (a.astype(np.float64) for a in (q, k, v, dout))
    probs = np_probabilities(np_scores(q, k, mask, is_causal))
    z = keep / (1 - p)
    dp = dout @ np.swapaxes(v, -1, -2) * z
    ds = probs * (dp - (dp * probs).sum(axis=-1, keepdims=True))
    dv = np.swapaxes(probs * z, -1, -2) @ dout
    return scale * ds @ k, scale * np.swapaxes(ds, -1, -2) @ q, dv


def dropout_case(variant, rng, lead, L, S, dtype):
    """(mask, attrs) of a variant: "plain", "causal", "bool mask" or "float mask"."""
    mask, attrs = None, {"is_causal": variant == "causal"}
    if variant == "bool mask":
        mask = rng.random((L, S)) < 0.7
        mask[:, 0] = True
    if variant == "float mask":
        mask = rand(rng, (*lead[-1:], 1, S), dtype)
    return mask, attrs


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [((2, 3), 5, 7, 4, 6), ((2,), 130, 300, 16, 5)], ids=str)
@pytest.mark.parametrize("variant", ["plain", "causal", "bool mask", "float mask"])
def test_dropout_matches_the_composed_form_with_dropouts_mask(dtype, shape, variant):
    """Across the tiles (128 queries, 256 keys), with each kind of mask; logsumexp is that of
    the probabilities before dropout."""
    lead, L, S, E, Ev = shape
    rng = np.random.default_rng(10)
    q, k, v = qkv(rng, lead, L, S, E, Ev, dtype)
    mask, attrs = dropout_case(variant, rng, lead, L, S, dtype)
    attrs |= {"dropout_p": 0.3, "seed": 7}
    out, lse = attend(q, k, v, mask, **attrs)
    keep = dropout_keep((*lead, L, S), 0.3, seed=7)
    want_out, want_lse = np_dropped(q, k, v, keep, 0.3, mask, attrs["is_causal"])
    if dtype == "float64":
        assert_matches(out, want_out)
        assert_matches(lse, want_lse)
    else:
        float32_close(out, want_out)
        float32_close(lse, want_lse)


@pytest.mark.parametrize("variant", ["plain", "causal", "bool mask"])
def test_the_kernels_mask_read_through_identity_values(variant):
    """v = identity (S keys, Ev = S): out[i, j] = P_ij Z_ij, so the pairs the kernel dropped
    are where out is 0 and P is not; the same whatever hides other pairs."""
    rng = np.random.default_rng(11)
    lead, L, S = (2, 2), 140, 260
    q, k, _ = qkv(rng, lead, L, S, 8, 1, "float64")
    v = np.broadcast_to(np.eye(S), (*lead, S, S)).copy()
    mask, attrs = dropout_case(variant, rng, lead, L, S, "float64")
    out, _ = attend(q, k, v, mask, dropout_p=0.25, seed=3, **attrs)
    visible = np_probabilities(np_scores(q, k, mask, attrs["is_causal"])) > 0
    keep = dropout_keep((*lead, L, S), 0.25, seed=3)
    np.testing.assert_array_equal(out[visible] != 0, keep[visible])
    assert np.all(out[~visible] == 0)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_the_dropped_fraction_is_p(p):
    """Over 2 x 256 x 256 pairs: within 5 standard deviations of p, and the kept
    probabilities scaled by 1 / (1 - p) (the rows' mean is the undropped mean's)."""
    rng = np.random.default_rng(12)
    q, k, _ = qkv(rng, (2,), 256, 256, 4, 1, "float64")
    v = np.broadcast_to(np.eye(256), (2, 256, 256)).copy()
    out, _ = attend(q, k, v, dropout_p=p)
    n = out.size
    assert abs(np.mean(out == 0) - p) < 5 * np.sqrt(p * (1 - p) / n)
    assert abs(out.sum(axis=-1).mean() - 1) < 0.02


DRAWS = """
import sys
import numpy as np
import paddle_core as pc

inputs = np.load(sys.argv[1])
prog = pc.Program()
with pc.program_guard(prog):
    vs = [pc.data(n, list(inputs[n].shape), "float64") for n in "qkv"]
    for var in vs:
        var.stop_gradient = False
    out, _, _ = pc.ops.scaled_dot_product_attention(*vs, dropout_p=0.3, seed=4)
    grads = pc.gradients([pc.ops.sum(out)], vs)
got = pc.Executor().run(prog, feed=dict(inputs), fetch_list=[out, *grads])
np.savez(sys.argv[2], **dict(zip(["out", "q", "k", "v"], got)))
"""


@pytest.mark.skipif(not cpu_has_avx2_fma(), reason="this CPU has no AVX2+FMA")
def test_the_avx2_draws_are_the_portable_ones(tmp_path):
    """Rows of draws from the AVX2 Philox (random_avx2.cpp) and from the portable one give the
    same mask: float64 results equal bit for bit (a row starts anywhere in a block of four)."""
    rng = np.random.default_rng(19)
    q, k, v = qkv(rng, (2,), 130, 263, 4, 3, "float64")
    avx2, portable = on_both_paths(
        tmp_path, DRAWS, {"q": q, "k": k, "v": v}, "PADDLE_OPS_NN_DISABLE_AVX2"
    )
    for key in ("out", "q", "k", "v"):
        np.testing.assert_array_equal(avx2[key], portable[key], err_msg=key)


def dropout_program(seed=0, random_seed=0, **attrs):
    """A program of the op with dropout and the gradients of sum(out * w); returns it and
    its fetches (out, q_grad, k_grad, v_grad)."""
    prog = pc.Program()
    prog.random_seed = random_seed
    with pc.program_guard(prog):
        vs = [pc.data(n, [2, 3, 70, 6], "float64") for n in "qkv"]
        for var in vs:
            var.stop_gradient = False
        w = pc.data("w", [2, 3, 70, 6], "float64")
        out, _, state = pc.ops.scaled_dot_product_attention(*vs, dropout_p=0.4, seed=seed, **attrs)
        assert tuple(state.shape) == (2,) and state.dtype == "int64"
        grads = pc.gradients([pc.ops.sum(pc.ops.mul(out, w))], vs)
    return prog, [out, *grads]


DROPOUT_FEED = {n: np.random.default_rng(13).standard_normal((2, 3, 70, 6)) for n in "qkvw"}


def run_dropout(prog, fetches, *, runs=1, threads=2, scope=None):
    exe, scope = pc.Executor(num_threads=threads), scope or pc.Scope()
    return [exe.run(prog, feed=DROPOUT_FEED, fetch_list=fetches, scope=scope) for _ in range(runs)]


def test_dropout_with_a_seed_is_the_same_every_run():
    first, second = run_dropout(*dropout_program(seed=5), runs=2)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_dropout_without_a_seed_differs_run_to_run_and_reproduces():
    """The program's random_seed and the run's counter, as dropout's: successive runs draw
    other masks, a fresh scope draws the same ones again, another random_seed others."""
    prog, fetches = dropout_program(random_seed=1)
    first = run_dropout(prog, fetches, runs=2)
    assert not np.array_equal(first[0][0], first[1][0])
    again = run_dropout(prog, fetches, runs=2)
    for a, b in zip(first, again):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    other = run_dropout(*dropout_program(random_seed=2))
    assert not np.array_equal(first[0][0], other[0][0])


@pytest.mark.parametrize("variant", [{}, {"is_causal": True}])
def test_dropout_does_not_depend_on_the_thread_count(variant):
    """Forward and gradients, 1 thread against 2 (the backward's shares of the keys differ)."""
    prog, fetches = dropout_program(random_seed=3, **variant)
    (one,) = run_dropout(prog, fetches, threads=1)
    (two,) = run_dropout(prog, fetches, threads=2)
    for a, b in zip(one, two):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)
    assert np.array_equal(one[0], two[0])


def test_dropout_is_off_with_is_test_and_in_the_test_program():
    rng = np.random.default_rng(14)
    q, k, v = qkv(rng, (2,), 9, 11, 4, 3, "float64")
    out, _ = attend(q, k, v, dropout_p=0.5, is_test=True)
    assert_matches(out, np_attention(q, k, v)[0])
    prog, (out_var, *_) = dropout_program(random_seed=4)
    test = prog.clone(for_test=True)
    (op,) = [op for op in test.global_block().ops if op.type == OP]
    assert op.attrs["is_test"] and "rng_state" not in op.outputs
    (got,) = pc.Executor().run(test, feed=DROPOUT_FEED, fetch_list=[out_var.name])
    want, _ = np_attention(*(DROPOUT_FEED[n] for n in "qkv"))
    assert_matches(got, want)


def test_dropout_p_0_draws_nothing_and_gives_no_rng_state():
    rng = np.random.default_rng(15)
    q, k, v = qkv(rng, (2,), 9, 11, 4, 3, "float64")
    got = run_op(OP, {"q": q, "k": k, "v": v}, {"dropout_p": 0.0, "seed": 3})
    assert "rng_state" not in got or not got["rng_state"]
    assert_matches(got["out"][0], np_attention(q, k, v)[0])


def test_only_an_attention_that_drops_moves_the_run_counter():
    """The op is random only when it draws (its random_rule): at dropout_p 0, or in the test
    program, a run leaves the scope's counter of random runs where it is."""
    prog, fetches = dropout_program(random_seed=6)
    plain = pc.Program()
    with pc.program_guard(plain):
        vs = [pc.data(n, [2, 3, 70, 6], "float64") for n in "qkv"]
        out, _, _ = pc.ops.scaled_dot_product_attention(*vs)
    for program, fetch, moves in [
        (prog, fetches, 2),
        (prog.clone(for_test=True), [fetches[0].name], 0),
        (plain, [out], 0),
    ]:
        scope, exe = pc.Scope(), pc.Executor()
        feed = {
            n: v for n, v in DROPOUT_FEED.items() if program.global_block().find_var(n) is not None
        }
        for _ in range(2):
            exe.run(program, feed=feed, fetch_list=fetch, scope=scope)
        assert scope.random_runs == moves


@pytest.mark.parametrize(("dropout_p", "compiled"), [(0.0, True), (0.3, False)])
def test_a_recurrent_step_holding_attention_runs_compiled_unless_it_drops(dropout_p, compiled):
    """pc.layers.rnn runs its step as a compiled scan unless the step draws random numbers:
    attention without dropout draws none."""
    batch, steps, width = 2, 5, 4
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [batch, steps, width], "float32")
        h0 = pc.data("h0", [batch, width], "float32")

        def cell(x_t, h):
            q = pc.ops.reshape(x_t, shape=[batch, 1, 1, width])
            kv = pc.ops.reshape(pc.ops.stack([x_t, h], axis=1), shape=[batch, 1, 2, width])
            seen, _, _ = pc.ops.scaled_dot_product_attention(q, kv, kv, dropout_p=dropout_p)
            h = pc.layers.tanh(pc.ops.add(pc.ops.reshape(seen, shape=[batch, width]), h))
            return h, h

        out, _ = pc.layers.rnn(cell, x, h0)
    exe = pc.Executor()
    shapes = {"x": ([batch, steps, width], "float32"), "h0": ([batch, width], "float32")}
    (step,) = [s for s in exe.prepare(main, shapes, [out]).steps if s.op.type == "recurrent_block"]
    assert (step.fn.block.scan_runner is not None) == compiled
    feed = {
        "x": np.ones((batch, steps, width), np.float32),
        "h0": np.zeros((batch, width), np.float32),
    }
    (got,) = exe.run(main, feed=feed, fetch_list=[out])
    assert got.shape == (batch, steps, width) and np.isfinite(got).all()
    if dropout_p == 0:  # every key holds ones or the previous h: a closed form
        h, want = np.zeros((batch, width)), []
        for _ in range(steps):
            scores = np.stack([np.ones(batch) * width, h.sum(1)], 1) / np.sqrt(width)
            p = np.exp(scores - scores.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            h = np.tanh(p[:, :1] * 1.0 + p[:, 1:] * h + h)
            want.append(h)
        np.testing.assert_allclose(got, np.stack(want, 1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["plain", "causal", "bool mask", "float mask"])
def test_dropout_gradient_by_finite_differences(case):
    """The mask is fixed by the stream (each run of the check on a fresh scope), so the op is
    a function of q, k and v."""
    rng = np.random.default_rng(16)
    q, k, v = qkv(rng, (2,), 4, 6, 3, 2, "float64")
    mask, attrs = dropout_case(case, rng, (2,), 4, 6, "float64")
    inputs = {"q": q, "k": k, "v": v}
    if mask is not None:
        inputs["attn_mask"] = mask
    check_grad(OP, inputs, {**attrs, "dropout_p": 0.3}, wrt=["q", "k", "v"], output="out")
    check_grad(OP, inputs, {**attrs, "dropout_p": 0.6, "seed": 9}, wrt=["q", "k", "v"])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("variant", ["plain", "causal", "bool mask"])
def test_dropout_gradient_across_tiles_matches_the_composed_form(dtype, variant):
    lead, L, S, E, Ev = (3,), 260, 270, 8, 8
    rng = np.random.default_rng(17)
    q, k, v = qkv(rng, lead, L, S, E, Ev, dtype)
    dout = rand(rng, (*lead, L, Ev), dtype)
    mask, attrs = dropout_case(variant, rng, lead, L, S, dtype)
    attrs |= {"dropout_p": 0.2}
    inputs = {"q": q, "k": k, "v": v}
    if mask is not None:
        inputs["attn_mask"] = mask
    fwd = run_op(OP, inputs, {**attrs, "seed": 21})
    (state,) = fwd["rng_state"]
    grad_inputs = {
        **inputs,
        "out": fwd["out"][0],
        "logsumexp": fwd["logsumexp"][0],
        "out_grad": dout,
        "rng_state": state,
    }
    got = run_op(OP + "_grad", grad_inputs, attrs)
    keep = dropout_keep((*lead, L, S), 0.2, seed=21)
    want = np_dropped_grad(q, k, v, dout, keep, 0.2, mask, attrs["is_causal"])
    for slot, w in zip(("q_grad", "k_grad", "v_grad"), want):
        if dtype == "float64":
            np.testing.assert_allclose(got[slot][0], w, rtol=1e-10, atol=1e-12, err_msg=slot)
        else:
            np.testing.assert_allclose(got[slot][0], w, rtol=1e-3, atol=1e-4, err_msg=slot)


def test_the_dropout_gradient_needs_rng_state():
    q = np.ones((1, 2, 2))
    inputs = {"q": q, "k": q, "v": q, "out": q, "logsumexp": np.zeros((1, 2)), "out_grad": q}
    with pytest.raises(pc.ShapeError, match=f"op '{OP}_grad'.*needs rng_state"):
        run_op(OP + "_grad", inputs, {"dropout_p": 0.5})


# -- layers: multi_head_attention and transformer_encoder_layer drop attention weights ---------


def encoder(dropout: float, layer: str, random_seed: int = 1):
    """A training program of one layer with ``dropout`` (SGD on the mean square of its
    output); returns (main, startup, test program, loss)."""
    main, startup = pc.Program(), pc.Program()
    main.random_seed = startup.random_seed = random_seed
    with pc.program_guard(main, startup):
        x = pc.data("x", [2, 6, 16], "float32")
        if layer == "mha":
            y = pc.layers.multi_head_attention(x, x, x, 16, 4, dropout=dropout, name="mha")
        else:
            y = pc.layers.transformer_encoder_layer(
                x, 16, 4, dim_feedforward=32, dropout=dropout, name="enc"
            )
        loss = pc.layers.mean(pc.ops.square(y))
        test = main.clone(for_test=True)
        pc.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup, test, loss


ENCODER_X = np.random.default_rng(18).standard_normal((2, 6, 16)).astype(np.float32)


def train_losses(dropout: float, layer: str, random_seed: int = 1) -> list[float]:
    """The losses of three steps of ``encoder``'s training from its initialisation."""
    main, startup, _, loss = encoder(dropout, layer, random_seed)
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    return [
        float(exe.run(main, feed={"x": ENCODER_X}, fetch_list=[loss], scope=scope)[0])
        for _ in range(3)
    ]


@pytest.mark.parametrize("layer", ["mha", "encoder"])
def test_layers_train_with_attention_dropout_reproducibly(layer):
    main, *_ = encoder(0.3, layer)
    (op,) = [op for op in main.global_block().ops if op.type == OP]
    assert op.attrs["dropout_p"] == pytest.approx(0.3) and not op.attrs["is_test"]
    assert [o.type for o in main.global_block().ops].count(OP + "_grad") == 1
    losses = train_losses(0.3, layer)
    assert all(np.isfinite(losses))
    assert losses == train_losses(0.3, layer)  # a fixed random_seed: the same masks
    assert losses != train_losses(0.3, layer, random_seed=2)
    assert losses[0] != train_losses(0.0, layer)[0]


@pytest.mark.parametrize("layer", ["mha", "encoder"])
def test_layers_drop_nothing_in_the_test_program(layer):
    """The test program (is_test set) gives what the layer without dropout gives."""
    results = []
    for dropout in (0.3, 0.0):
        _, startup, test, loss = encoder(dropout, layer)
        scope, exe = pc.Scope(), pc.Executor()
        exe.run(startup, scope=scope)
        results.append(exe.run(test, feed={"x": ENCODER_X}, fetch_list=[loss.name], scope=scope))
    np.testing.assert_array_equal(results[0][0], results[1][0])


# -- errors -----------------------------------------------------------------------------------


def append(shapes: dict, dtypes: dict | None = None, **attrs):
    dtypes = dtypes or {}
    prog = pc.Program()
    with pc.program_guard(prog):
        vs = {n: pc.data(n, list(s), dtypes.get(n, "float32")) for n, s in shapes.items()}
        return pc.ops.scaled_dot_product_attention(
            vs["q"], vs["k"], vs["v"], vs.get("attn_mask"), **attrs
        )


QKV = {"q": (2, 4, 8), "k": (2, 6, 8), "v": (2, 6, 5)}


@pytest.mark.parametrize(
    "change,message",
    [
        ({"k": (2, 6, 7)}, r"k \[2, 6, 7\] must have q's head dimension E=8"),
        ({"v": (2, 5, 5)}, r"v \[2, 5, 5\] must have k's sequence length S=6"),
        ({"k": (3, 6, 8)}, r"k \[3, 6, 8\] must have q's leading dimensions \[2\]"),
        ({"v": (1, 2, 6, 5)}, r"v \[1, 2, 6, 5\] must have q's leading dimensions"),
        ({"q": (8,)}, r"q must be at least 2-D"),
        ({"attn_mask": (4, 5)}, r"attn_mask \[4, 5\] does not broadcast to .*\[2, 4, 6\]"),
        ({"attn_mask": (3, 4, 6)}, r"attn_mask \[3, 4, 6\] does not broadcast"),
        ({"attn_mask": (1, 2, 4, 6)}, r"attn_mask \[1, 2, 4, 6\] does not broadcast"),
    ],
    ids=str,
)
def test_shapes_that_do_not_fit_are_refused(change, message):
    with pytest.raises(pc.ShapeError, match=f"op '{OP}'.*{message}"):
        append({**QKV, **change}, {"attn_mask": "bool"})


def test_dtypes_that_do_not_fit_are_refused():
    with pytest.raises(pc.ShapeError, match="k must have q's dtype float32, got float64"):
        append(QKV, {"k": "float64"})
    with pytest.raises(pc.ShapeError, match="q must be float32 or float64, got int32"):
        append(QKV, {"q": "int32", "k": "int32", "v": "int32"})
    with pytest.raises(pc.ShapeError, match="attn_mask must be bool or q's dtype float32"):
        append({**QKV, "attn_mask": (4, 6)}, {"attn_mask": "float64"})


def test_is_causal_with_a_mask_is_refused():
    with pytest.raises(pc.ShapeError, match="is_causal=True and an attn_mask cannot be given"):
        append({**QKV, "attn_mask": (4, 6)}, {"attn_mask": "bool"}, is_causal=True)


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5])
def test_a_dropout_p_outside_0_1_is_refused(p):
    with pytest.raises(pc.AttrError, match=rf"op '{OP}', attr 'dropout_p': .*{p}"):
        append(QKV, dropout_p=p)


def test_the_kernel_checks_the_fed_shapes():
    """Unknown dimensions pass the shape rule; the kernel refuses what does not fit when it
    is prepared, before it touches memory."""
    prog = pc.Program()
    with pc.program_guard(prog):
        q = pc.data("q", [2, None, 8], "float32")
        k = pc.data("k", [2, None, None], "float32")
        out, _, _ = pc.ops.scaled_dot_product_attention(q, k, k)
    feed = {"q": np.ones((2, 3, 8), np.float32), "k": np.ones((2, 5, 7), np.float32)}
    with pytest.raises(pc.PaddleCoreError, match="head dimension"):
        pc.Executor().run(prog, feed=feed, fetch_list=[out])


# -- PyTorch ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("variant", ["plain", "causal", "bool mask", "float mask", "scale"])
def test_pytorch_gives_the_same_results(dtype, variant):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(9)
    q, k, v = qkv(rng, (2, 3), 70, 150, 16, 8, dtype)
    dout = rand(rng, (2, 3, 70, 8), dtype)
    mask, attrs = None, {}
    if variant == "causal":
        attrs["is_causal"] = True
    if variant == "bool mask":
        mask = rng.random((2, 1, 70, 150)) < 0.7
    if variant == "float mask":
        mask = rand(rng, (70, 150), dtype)
    if variant == "scale":
        attrs["scale"] = 0.25
    t = {n: torch.from_numpy(a).requires_grad_() for n, a in zip("qkv", (q, k, v))}
    tmask = None if mask is None else torch.from_numpy(mask)
    want = F.scaled_dot_product_attention(t["q"], t["k"], t["v"], attn_mask=tmask, **attrs)
    want.backward(torch.from_numpy(dout))
    out, lse = attend(q, k, v, mask, **attrs)
    inputs = {"q": q, "k": k, "v": v, "out": out, "logsumexp": lse, "out_grad": dout}
    if mask is not None:
        inputs["attn_mask"] = mask
    grads = run_op(OP + "_grad", inputs, attrs)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(out, want.detach().numpy(), **tol)
    for n in "qkv":
        np.testing.assert_allclose(grads[f"{n}_grad"][0], t[n].grad.numpy(), err_msg=n, **tol)
