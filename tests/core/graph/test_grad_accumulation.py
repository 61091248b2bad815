"""Partial gradients chained through accumulators: an unrolled recurrence (a slice of its
input and a product with its shared weights per step) gets one buffer per gradient, filled in
place step after step, instead of a gradient per step summed by add_n; the gradients are the
finite differences'."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

import paddle_core as pc

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

B, T, E, H = 2, 4, 3, 5
RNG = np.random.default_rng(0)
VALUES = {
    "x": RNG.standard_normal((B, T, E)),
    "w_ih": RNG.standard_normal((E, H)) * 0.5,
    "w_hh": RNG.standard_normal((H, H)) * 0.5,
    "w_out": RNG.standard_normal((H, 1)) * 0.5,
}


def unrolled():
    """loss = sum over steps of (h_t @ w_out), h_t = tanh(x_t @ w_ih + h_{t-1} @ w_hh)."""
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        x = pc.data("x", [B, T, E], "float64")
        params = [block.create_parameter(n, VALUES[n].shape, "float64") for n in list(VALUES)[1:]]
        w_ih, w_hh, w_out = params
        h, outs = None, []
        for t in range(T):
            x_t = pc.ops.reshape(pc.ops.slice(x, axes=[1], starts=[t], ends=[t + 1]), shape=[B, E])
            pre = pc.ops.matmul(x_t, w_ih)
            if h is not None:
                pre = pc.ops.add(pre, pc.ops.matmul(h, w_hh))
            h = pc.ops.tanh(pre)
            outs.append(pc.ops.matmul_2d(h, w_out))
        loss = pc.ops.sum(pc.ops.concat(outs, axis=1))
        grads = pc.gradients([loss], [x, *params])
    return prog, grads


def numpy_loss(x, w_ih, w_hh, w_out):
    h, total = np.zeros((B, H)), 0.0
    for t in range(T):
        h = np.tanh(x[:, t] @ w_ih + h @ w_hh)
        total += (h @ w_out).sum()
    return total


def numeric_grad(name: str, eps: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(VALUES[name])
    for i in np.ndindex(grad.shape):
        plus, minus = dict(VALUES), dict(VALUES)
        plus[name], minus[name] = VALUES[name].copy(), VALUES[name].copy()
        plus[name][i] += eps
        minus[name][i] -= eps
        grad[i] = (numpy_loss(**plus) - numpy_loss(**minus)) / (2 * eps)
    return grad


def run(prog, grads):
    scope = pc.Scope()
    for name in list(VALUES)[1:]:
        scope.set_var(name, VALUES[name].copy())
    exe = pc.Executor()
    feed = {"x": VALUES["x"]}
    got = exe.run(prog, feed=feed, fetch_list=grads, scope=scope)
    return got, exe.prepare(prog, feed, grads)


def test_the_chained_gradients_are_the_finite_differences():
    prog, grads = unrolled()
    got, _ = run(prog, grads)
    for name, g in zip(VALUES, got):
        np.testing.assert_allclose(g, numeric_grad(name), rtol=1e-6, atol=1e-8, err_msg=name)


def test_each_shared_gradient_is_one_chain_not_a_sum_of_copies():
    prog, grads = unrolled()
    ops = prog.global_block().ops
    slices = [op for op in ops if op.type == "slice_grad"]
    assert len(slices) == T
    assert [bool(op.input("x_grad_acc")) for op in slices] == [False] + [True] * (T - 1)
    for before, after in pairwise(slices):  # each adds into the one before
        assert after.input("x_grad_acc") == before.output("x_grad")
    chained = {g.name for g in grads}
    for op in ops:  # no add_n makes x's or any weight's gradient
        if op.type == "add_n":
            assert not chained & set(op.output("out")), op
    w_hh = [op for op in ops if op.type == "matmul_grad" and op.input("y") == ["w_hh"]]
    assert [bool(op.input("y_grad_acc")) for op in w_hh] == [False] + [True] * (T - 2)
    w_out = [op for op in ops if op.type == "matmul_2d_grad"]
    assert [bool(op.input("y_grad_acc")) for op in w_out] == [False] + [True] * (T - 1)


def test_the_memory_plan_gives_each_chain_one_buffer():
    prog, grads = unrolled()
    _, prepared = run(prog, grads)
    runner = prepared._runner

    def address(name):
        return runner.plan.array(runner.index[name]).ctypes.data

    fetched = {g.name for g in grads}
    pairs = 0
    for op in prog.global_block().ops:
        for acc, out in (("x_grad_acc", "x_grad"), ("y_grad_acc", "y_grad")):
            if op.input(acc) and op.output(out)[0] not in fetched:
                assert address(op.input(acc)[0]) == address(op.output(out)[0]), op
                pairs += 1
    assert pairs >= 3 * (T - 2)


def test_an_op_using_one_variable_twice_is_summed_not_chained_into_itself():
    """matmul(w, w): both of its gradients are partials of w; one op cannot add into its own
    output, so they are summed."""
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        w = block.create_parameter("w", [3, 3], "float64")
        (g,) = pc.gradients([pc.ops.sum(pc.ops.matmul(w, w))], [w])
    value = RNG.standard_normal((3, 3))
    scope = pc.Scope()
    scope.set_var("w", value)
    (got,) = pc.Executor().run(prog, fetch_list=[g], scope=scope)
    ones = np.ones((3, 3))
    np.testing.assert_allclose(got, ones @ value.T + value.T @ ones, rtol=1e-12)
    assert [
        op.input("x_grad_acc") for op in prog.global_block().ops if op.type == "matmul_grad"
    ] == [[]]
