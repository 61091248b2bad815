"""Shape and grad rules of scaled_dot_product_attention and packed_attention (kernels:
src/attention_cpu.cpp).

q ``[..., L, E]``, k ``[..., S, E]`` and v ``[..., S, Ev]`` share their leading dimensions; the
mask broadcasts to ``[..., L, S]`` by NumPy's rules. packed_attention's qkv ``[B, L, 3, H, E]``
holds q, k and v of each head: its scores are ``[B, H, L, L]``. Everything is checked here,
when the op is appended (and again on the fed shapes); the kernels check it once more at
prepare time.
Unknown dimensions (None) pass and are taken from whichever input knows them. With dropout
(``dropout_p`` > 0 and not ``is_test``) the op also gives ``rng_state`` (int64 [2]), which its
gradient op reads.
"""

from __future__ import annotations

from paddle_core import ProgramError
from paddle_core.rules import default_grad

FLOATS = ("float32", "float64")


def _fmt(shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _same(a, b) -> bool:
    return a is None or b is None or a == b


def _known(a, b):
    return a if a is not None else b


def _qkv(ctx):
    """q, k and v checked against each other; returns (lead, L, S, Ev)."""
    q, k, v = ctx.input("q"), ctx.input("k"), ctx.input("v")
    if q.dtype not in FLOATS:
        ctx.fail(f"q must be float32 or float64, got {q.dtype} (cast it first)")
    if q.ndim < 2:
        ctx.fail(f"q must be at least 2-D ([..., L, E]), got {_fmt(q.shape)}")
    for slot, var in (("k", k), ("v", v)):
        if var.dtype != q.dtype:
            ctx.fail(f"{slot} must have q's dtype {q.dtype}, got {var.dtype}")
        if var.ndim != q.ndim or not all(map(_same, var.shape[:-2], q.shape[:-2])):
            ctx.fail(
                f"{slot} {_fmt(var.shape)} must have q's leading dimensions "
                f"{_fmt(q.shape[:-2])} (broadcasting them is not supported)"
            )
    if not _same(k.shape[-1], q.shape[-1]):
        ctx.fail(f"k {_fmt(k.shape)} must have q's head dimension E={q.shape[-1]}")
    if not _same(v.shape[-2], k.shape[-2]):
        ctx.fail(f"v {_fmt(v.shape)} must have k's sequence length S={k.shape[-2]}")
    lead = tuple(_known(_known(a, b), c) for a, b, c in zip(q.shape, k.shape, v.shape))[:-2]
    S = _known(k.shape[-2], v.shape[-2])
    return lead, q.shape[-2], S, v.shape[-1]


def _mask(ctx, lead, L, S, dtype: str, of: str = "q") -> None:
    mask = ctx.input("attn_mask")
    if mask is None:
        return
    if ctx.attrs["is_causal"]:
        ctx.fail("is_causal=True and an attn_mask cannot be given together (as PyTorch)")
    if mask.dtype not in ("bool", dtype):
        ctx.fail(f"attn_mask must be bool or {of}'s dtype {dtype}, got {mask.dtype}")
    target = (*lead, L, S)
    fits = mask.ndim <= len(target) and all(
        m is None or m == 1 or _same(m, t) for m, t in zip(reversed(mask.shape), reversed(target))
    )
    if not fits:
        ctx.fail(
            f"attn_mask {_fmt(mask.shape)} does not broadcast to the scores' shape "
            f"{_fmt(target)} ([..., L, S])"
        )


def attention_draws(attrs) -> bool:
    """Whether the op drops probabilities: dropout_p > 0 while training (its random_rule: an
    op that draws nothing keeps the run counter still and lets a loop holding it run
    compiled)."""
    return attrs["dropout_p"] > 0 and not attrs["is_test"]


def attention_shape(ctx) -> None:
    """scaled_dot_product_attention: out [..., L, Ev], logsumexp [..., L] and, with dropout,
    rng_state int64 [2]."""
    lead, L, S, Ev = _qkv(ctx)
    dtype = ctx.input("q").dtype
    _mask(ctx, lead, L, S, dtype)
    ctx.set_output("out", (*lead, L, Ev), dtype)
    ctx.set_output("logsumexp", (*lead, L), dtype)
    if attention_draws(ctx.attrs):
        ctx.set_output("rng_state", (2,), "int64")


def attention_grad_shape(ctx) -> None:
    """scaled_dot_product_attention_grad: each gradient like its input."""
    lead, L, S, Ev = _qkv(ctx)
    dtype = ctx.input("q").dtype
    _mask(ctx, lead, L, S, dtype)
    _forward_results(ctx, dtype, (*lead, L, Ev), (*lead, L))
    for slot in ("q", "k", "v"):
        var = ctx.input(slot)
        ctx.set_output(f"{slot}_grad", var.shape, dtype)


def _forward_results(ctx, dtype: str, out, logsumexp) -> None:
    """A gradient op's out, out_grad, logsumexp and rng_state checked against the shapes
    the forward op gave."""
    for slot, want in (("out", out), ("out_grad", out), ("logsumexp", logsumexp)):
        var = ctx.input(slot)
        if var.dtype != dtype or var.ndim != len(want) or not all(map(_same, var.shape, want)):
            ctx.fail(f"{slot} must be {dtype}{_fmt(want)}, got {var.dtype}{_fmt(var.shape)}")
    state = ctx.input("rng_state")
    if attention_draws(ctx.attrs) and state is None:
        ctx.fail(
            f"dropout_p={ctx.attrs['dropout_p']} needs rng_state, the forward op's output that "
            "the dropout mask is drawn again from"
        )
    if state is not None and (
        state.dtype != "int64" or state.ndim != 1 or not _same(state.shape[0], 2)
    ):
        ctx.fail(f"rng_state must be int64[2], got {state.dtype}{_fmt(state.shape)}")


def _packed(ctx):
    """qkv checked; returns its (B, L, H, E)."""
    qkv = ctx.input("qkv")
    if qkv.dtype not in FLOATS:
        ctx.fail(f"qkv must be float32 or float64, got {qkv.dtype} (cast it first)")
    if qkv.ndim != 5 or not _same(qkv.shape[2], 3):
        ctx.fail(
            f"qkv must be [B, L, 3, H, E] (the queries, keys and values of H heads), got "
            f"{_fmt(qkv.shape)}"
        )
    B, L, _, H, E = qkv.shape
    _mask(ctx, (B, H), L, L, qkv.dtype, of="qkv")
    return B, L, H, E


def packed_attention_shape(ctx) -> None:
    """packed_attention: out [B, L, H, E], logsumexp [B, H, L] and, with dropout, rng_state
    int64 [2]."""
    B, L, H, E = _packed(ctx)
    dtype = ctx.input("qkv").dtype
    ctx.set_output("out", (B, L, H, E), dtype)
    ctx.set_output("logsumexp", (B, H, L), dtype)
    if attention_draws(ctx.attrs):
        ctx.set_output("rng_state", (2,), "int64")


def packed_attention_grad_shape(ctx) -> None:
    """packed_attention_grad: qkv_grad like qkv."""
    B, L, H, E = _packed(ctx)
    qkv = ctx.input("qkv")
    _forward_results(ctx, qkv.dtype, (B, L, H, E), (B, H, L))
    ctx.set_output("qkv_grad", qkv.shape, qkv.dtype)


def attention_backward(ctx) -> None:
    """scaled_dot_product_attention_grad for q, k and v (default_grad), never for the mask: a
    float mask that needs a gradient (a learned bias) is refused rather than silently given
    none."""
    mask = ctx.input("attn_mask")
    # Asked only for a float mask: asking reserves a gradient someone must write.
    floating = mask is not None and ctx.block.find_var(mask).dtype != "bool"
    if floating and ctx.input_grad("attn_mask") is not None:
        raise ProgramError(
            f"op {ctx.op.type!r} computes no gradient for its attn_mask {mask!r}, but the "
            "backward needs one; mark the mask stop_gradient (or put it in no_grad_set) if it "
            "is a constant"
        )
    default_grad(ctx)
