"""paddle-ops-nn's attention_packing pass (paddle_ops_nn/attention_packing.py): in CPU plans a
self-attention's split, transposes and scaled_dot_product_attention become one packed_attention,
and in training its gradient's chain one packed_attention_grad. The outputs, the losses of
training steps with dropout and every parameter's gradient are those of the plan without the
pass; what must not be packed is not (a fetched value of the chain, a cross-attention)."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import pc

pytest.importorskip("paddle_ops_nn.passes", reason="paddle-ops-nn is not installed")
RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 7, 16)).astype(np.float32)
W = RNG.standard_normal((3, 7, 16)).astype(np.float32)
CHAIN = {"split", "transpose", "concat", "scaled_dot_product_attention"}


def encoder(dropout=0.0, causal=False, padding=False):
    """Two Transformer encoder layers (d_model 16, 4 heads) and a loss, with Adam; returns
    (main, startup, test program, out, loss, feed). The loss weighs the output by fixed random
    numbers (a mean square of a layer norm's output would hardly depend on the attention)."""
    main, startup = pc.Program(), pc.Program()
    main.random_seed = startup.random_seed = 3
    feed = {"x": X, "w": W}
    with pc.program_guard(main, startup):
        x = pc.data("x", [None, 7, 16], "float32")
        mask = None
        if padding:
            mask = pc.data("pad", [None, 7], "bool")
            feed["pad"] = np.arange(7) >= np.array([[7], [4], [2]])
        h = x
        for i in range(2):
            h = pc.layers.transformer_encoder_layer(
                h,
                16,
                4,
                32,
                dropout=dropout,
                src_key_padding_mask=mask,
                is_causal=causal,
                name=f"layer{i}",
            )
        loss = pc.layers.mean(pc.ops.mul(h, pc.data("w", [None, 7, 16], "float32")))
        test = main.clone(for_test=True)
        pc.optimizer.Adam(learning_rate=0.01).minimize(loss)
    return main, startup, test, h, loss, feed


def train(main, startup, loss, feed, fetch=()):
    """Three steps from the same initialisation: the losses, then ``fetch`` after the last."""
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0] for _ in range(3)]
    plan = exe.prepare(main, feed, [loss])
    return losses, exe.run(main, feed=feed, fetch_list=list(fetch), scope=scope), plan


@pytest.mark.parametrize(
    "variant", [{}, {"causal": True}, {"padding": True}], ids=["plain", "causal", "padding"]
)
def test_an_inference_plan_packs_each_attention_and_gives_the_same_outputs(variant, without):
    _, startup, test, out, _, feed = encoder(**variant)
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    (got,) = exe.run(test, feed=feed, fetch_list=[out], scope=scope)
    types = exe.prepare(test, feed, [out]).op_types
    assert types.count("packed_attention") == 2 and not CHAIN & set(types)
    without("attention_packing")
    other = pc.Executor()
    (want,) = other.run(test, feed=feed, fetch_list=[out], scope=scope)
    assert "packed_attention" not in other.prepare(test, feed, [out]).op_types
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_training_packs_the_gradient_too_and_trains_alike(dropout, without):
    """Dropout draws the same mask packed or not: the steps agree to rounding."""
    main, startup, _, _, loss, feed = encoder(dropout=dropout)
    grads = [f"{p.name}@GRAD" for p in main.all_parameters()]
    assert len(grads) == 24  # 12 a layer
    losses, got, plan = train(main, startup, loss, feed, grads)
    assert plan.op_types.count("packed_attention_grad") == 2 and not CHAIN & set(plan.op_types)
    without("attention_packing")
    want_losses, want, plan = train(main, startup, loss, feed, grads)
    assert plan.op_types.count("scaled_dot_product_attention_grad") == 2
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for name, g, w in zip(grads, got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6, err_msg=name)


def test_a_fetched_value_of_the_chain_keeps_it_unpacked():
    _, startup, test, out, _, feed = encoder()
    ops = test.global_block().ops
    (q,) = next(op for op in ops if op.type == "scaled_dot_product_attention").input("q")
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    got_out, got_q = exe.run(test, feed=feed, fetch_list=[out, q], scope=scope)
    types = exe.prepare(test, feed, [out, q]).op_types
    assert types.count("packed_attention") == 1  # the other layer's
    assert types.count("scaled_dot_product_attention") == 1
    assert got_q.shape == (3, 4, 7, 4)
    (want_out,) = exe.run(test, feed=feed, fetch_list=[out], scope=scope)  # both packed
    np.testing.assert_allclose(got_out, want_out, rtol=1e-6, atol=1e-6)


def test_a_cross_attention_is_left_alone():
    """Queries from one value, keys and values from another: three projections, no split."""
    main = pc.Program()
    with pc.program_guard(main, pc.Program()):
        x = pc.data("x", [None, 7, 16], "float32")
        memory = pc.data("memory", [None, 5, 16], "float32")
        out = pc.layers.multi_head_attention(x, memory, memory, 16, 4)
    types = pc.Executor().prepare(main, {"x": X, "memory": X[:, :5]}, [out]).op_types
    assert "packed_attention" not in types and "scaled_dot_product_attention" in types
