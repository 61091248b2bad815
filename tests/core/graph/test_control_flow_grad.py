"""Gradients through cond_block, checked against finite differences of the forward program."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import numeric

import paddle_core as pc
from paddle_core import ops


def build():
    """loss = sum(p ? x * w + x : exp(x) * w), with x fed and w a parameter."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.data("x", [3], "float64")
        x.stop_gradient = False
        p = pc.data("p", [1], "bool")
        w = pc.layers.create_parameter([3], "float64", attr="w")
        y = pc.layers.cond(p, lambda: ops.add(ops.mul(x, w), x), lambda: ops.mul(ops.exp(x), w))
        loss = ops.sum(y)
        gx, gw = pc.gradients([loss], [x, w])
    return main, loss, gx, gw


@pytest.mark.parametrize("flag", [True, False])
def test_gradients_through_cond(flag):
    main, loss, gx, gw = build()
    scope = pc.Scope()
    w = np.array([0.5, -1.5, 2.0])
    scope.set_var("w", w.copy())
    x = np.array([0.3, -0.7, 1.1])
    feed = {"x": x, "p": np.array([flag])}
    got_x, got_w = pc.Executor().run(main, feed=feed, fetch_list=[gx, gw], scope=scope)
    want_x = (w + 1) if flag else np.exp(x) * w
    want_w = x if flag else np.exp(x)
    np.testing.assert_allclose(got_x, want_x, rtol=1e-10)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-10)
    forward = main.clone(for_test=True)
    np.testing.assert_allclose(numeric(forward, loss.name, feed, scope, "x"), got_x, rtol=1e-5)
    np.testing.assert_allclose(numeric(forward, loss.name, feed, scope, "w"), got_w, rtol=1e-5)


def test_a_branch_not_reaching_an_input_gives_zeros():
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [2], "float64")
        x.stop_gradient = False
        p = pc.data("p", [1], "bool")
        y = pc.layers.cond(
            p,
            lambda: ops.square(x),
            lambda: ops.fill_constant(shape=[2], dtype="float64", value=1.0),
        )
        (gx,) = pc.gradients([ops.sum(y)], [x])
    exe = pc.Executor()
    x = np.array([1.5, -2.0])
    assert exe.run(main, feed={"x": x, "p": np.array([True])}, fetch_list=[gx])[0].tolist() == [
        3.0,
        -4.0,
    ]
    assert exe.run(main, feed={"x": x, "p": np.array([False])}, fetch_list=[gx])[0].tolist() == [
        0.0,
        0.0,
    ]


def build_recurrence():
    """s = s0; repeat n times: s = tanh(s * w + x); loss = sum(s * s)"""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.data("x", [3], "float64")
        s0 = pc.data("s0", [3], "float64")
        n = pc.data("n", [1], "int64")
        x.stop_gradient = s0.stop_gradient = False
        w = pc.layers.create_parameter([3], "float64", attr="w")
        i = ops.fill_constant(shape=[1], dtype="int64", value=0)
        one = ops.fill_constant(shape=[1], dtype="int64", value=1)
        _, s = pc.layers.while_loop(
            lambda i, s: ops.less(i, n),
            lambda i, s: (ops.add(i, one), ops.tanh(ops.add(ops.mul(s, w), x))),
            [i, s0],
        )
        loss = ops.sum(ops.mul(s, s))
        grads = pc.gradients([loss], [x, s0, w])
    return main, loss, grads


def reference_recurrence(x, s0, w, n):
    s = s0
    for _ in range(n):
        s = np.tanh(s * w + x)
    return np.sum(s * s)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_gradients_through_a_bounded_while(n):
    main, loss, grads = build_recurrence()
    scope = pc.Scope()
    w = np.array([0.5, -1.5, 0.9])
    scope.set_var("w", w.copy())
    feed = {"x": np.array([0.3, -0.7, 0.2]), "s0": np.array([0.1, 0.4, -0.5]), "n": np.array([n])}
    exe = pc.Executor()
    got = exe.run(main, feed=feed, fetch_list=[loss, *grads], scope=scope)
    np.testing.assert_allclose(
        got[0], reference_recurrence(feed["x"], feed["s0"], w, n), rtol=1e-12
    )
    forward = main.clone(for_test=True)
    for name, value in zip(["x", "s0", "w"], got[1:]):
        want = numeric(forward, loss.name, feed, scope, name)
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-9)


def test_gradients_through_a_while_with_blocks_inside_are_refused_naming_the_op():
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [2], "float64")
        x.stop_gradient = False
        p = pc.data("p", [1], "bool")
        i = ops.fill_constant(shape=[1], dtype="int64", value=0)
        one = ops.fill_constant(shape=[1], dtype="int64", value=1)
        _, s = pc.layers.while_loop(
            lambda i, s: ops.less(i, one),
            lambda i, s: (ops.add(i, one), pc.layers.cond(p, lambda: ops.square(s), lambda: s)),
            [i, x],
        )
        with pytest.raises(pc.ProgramError, match=r"op 'while_block'.*holds op 'cond_block'"):
            pc.gradients([ops.sum(s)], [x])


def test_gradients_through_a_loop_body_that_draws_random_numbers_are_refused():
    """The gradient block runs the body's ops again: a dropout there would draw another mask
    than the forward's. Refused, naming the op, rather than a gradient of the wrong mask."""
    main = pc.Program()
    with pc.program_guard(main):
        s0 = pc.data("s0", [3], "float64")
        s0.stop_gradient = False
        n = pc.data("n", [1], "int64")
        i = ops.fill_constant(shape=[1], dtype="int64", value=0)
        one = ops.fill_constant(shape=[1], dtype="int64", value=1)
        _, s = pc.layers.while_loop(
            lambda i, s: ops.less(i, n),
            lambda i, s: (ops.add(i, one), pc.layers.dropout(ops.tanh(s), 0.5)),
            [i, s0],
        )
        with pytest.raises(pc.ProgramError, match=r"holds op 'dropout', which draws random"):
            pc.gradients([ops.sum(s)], [s0])
