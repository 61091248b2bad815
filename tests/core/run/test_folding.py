"""Constant folding (paddle_core/_src/run/folding.py): ops reading only parameters the plan
does not write run once per change of those parameters, not once per run; results are those of
the unfolded plan after every kind of write (set_var, a training program's update, another
scope), and ops that must run every time (random, writing persistables, fetched) do."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc

RNG = np.random.default_rng(0)


def scaled_linear(start=None):
    """out = relu(x @ (2 w) + b): the doubling and nothing else reads only parameters. With
    a startup program, a training program (SGD on mean(out^2)) and its loss instead of x."""
    prog = pc.Program()
    with pc.program_guard(prog, start or pc.Program()):
        x = pc.data("x", [None, 3])
        block = prog.global_block()
        w = block.create_parameter("w", shape=[3, 4], dtype="float32")
        b = block.create_parameter("b", shape=[4], dtype="float32")
        doubled = pc.ops.scale(w, scale=2.0)
        out = pc.ops.relu(pc.ops.add(pc.ops.matmul(x, doubled), b))
        if start is not None:
            x = pc.ops.mean(pc.ops.square(out))
            pc.optimizer.SGD(0.5).minimize(x)
    return prog, x, doubled, out


def expected(x, w, b):
    return np.maximum(x @ (2 * w) + b, 0)


def setup_scope(scope=None):
    scope = scope or pc.Scope()
    scope.set_var("w", RNG.standard_normal((3, 4)).astype(np.float32))
    scope.set_var("b", RNG.standard_normal(4).astype(np.float32))
    return scope


def test_an_op_reading_only_parameters_runs_once_per_change():
    prog, _, _, out = scaled_linear()
    exe, scope = pc.Executor(), setup_scope()
    plan = exe.prepare(prog, {"x": ((2, 3), "float32")}, [out])
    assert plan.folded_ops == ["scale"]
    assert plan.op_types == ["matmul", "relu"]  # (the bias add: paddle-ops-math's matmul_bias)
    assert plan.feed_names == ["x"]  # the folded value is the plan's business
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    with pc.profiler.profile() as profile:
        for _ in range(3):
            (got,) = exe.run(prog, feed={"x": x}, fetch_list=[out], scope=scope)
    np.testing.assert_allclose(got, expected(x, scope.get("w"), scope.get("b")), rtol=1e-6)
    calls = {s.type: s.calls for s in profile.by_type()}
    assert calls == {"scale": 1, "matmul": 3, "relu": 3}


def test_setting_a_parameter_refolds():
    prog, _, _, out = scaled_linear()
    exe, scope = pc.Executor(), setup_scope()
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    exe.run(prog, feed={"x": x}, fetch_list=[out], scope=scope)
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    scope.set_var("w", w)
    (got,) = exe.run(prog, feed={"x": x}, fetch_list=[out], scope=scope)
    np.testing.assert_allclose(got, expected(x, w, scope.get("b")), rtol=1e-6)
    scope.set_var("b", np.zeros(4, np.float32))  # a write the fold does not read: no refold
    (got,) = exe.run(prog, feed={"x": x}, fetch_list=[out], scope=scope)
    np.testing.assert_allclose(got, expected(x, w, 0), rtol=1e-6)


def test_a_training_step_between_evaluations_refolds():
    prog, _, _, out = scaled_linear()
    start = pc.Program()
    train, loss, _, _ = scaled_linear(start)
    exe, scope = pc.Executor(), pc.Scope()
    exe.run(start, scope=scope)  # the learning rate
    setup_scope(scope)
    xv = np.abs(RNG.standard_normal((2, 3))).astype(np.float32)
    before = exe.run(prog, feed={"x": xv}, fetch_list=[out], scope=scope)[0]
    w_before = scope.get("w").copy()
    exe.run(train, feed={"x": xv}, fetch_list=[loss], scope=scope)
    assert not np.array_equal(scope.get("w"), w_before)  # the step moved the weights
    (after,) = exe.run(prog, feed={"x": xv}, fetch_list=[out], scope=scope)
    np.testing.assert_allclose(after, expected(xv, scope.get("w"), scope.get("b")), rtol=1e-6)
    assert not np.allclose(after, before)
    assert exe.prepare(train, {"x": xv}, [loss]).folded_ops == []  # it writes w


def test_each_scope_has_its_own_folded_values():
    prog, _, _, out = scaled_linear()
    exe = pc.Executor()
    one, two = setup_scope(), setup_scope()
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    for scope in (one, two, one, two.new_scope()):
        (got,) = exe.run(prog, feed={"x": x}, fetch_list=[out], scope=scope)
        np.testing.assert_allclose(got, expected(x, scope.get("w"), scope.get("b")), rtol=1e-6)


def test_a_fetched_value_is_not_folded_and_folding_can_be_switched_off():
    prog, _, doubled, out = scaled_linear()
    scope = setup_scope()
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    exe = pc.Executor()
    assert exe.prepare(prog, {"x": x}, [out, doubled]).folded_ops == []
    got = exe.run(prog, feed={"x": x}, fetch_list=[out, doubled], scope=scope)
    np.testing.assert_allclose(got[1], 2 * scope.get("w"))
    off = pc.Executor(fold_constants=False)
    assert off.prepare(prog, {"x": x}, [out]).folded_ops == []
    want = exe.run(prog, feed={"x": x}, fetch_list=[out], scope=scope)[0]
    np.testing.assert_array_equal(
        off.run(prog, feed={"x": x}, fetch_list=[out], scope=scope)[0], want
    )
    with pytest.raises(pc.ConfigError, match="fold_constants must be True or False"):
        pc.Executor(fold_constants=1)


def test_random_ops_and_ops_writing_parameters_are_not_folded():
    prog, start = pc.Program(), pc.Program()
    with pc.program_guard(prog, start):
        x = pc.data("x", [2, 4])
        block = prog.global_block()
        w = block.create_parameter("w", shape=[2, 4], dtype="float32")
        noisy, _ = pc.ops.dropout(w, dropout_prob=0.5, is_test=False)
        out = pc.ops.add(x, noisy)
        count = block.create_var("count", shape=[2, 4], dtype="float32", persistable=True)
        block.append_op("scale", inputs={"x": w}, outputs={"out": count}, attrs={"scale": 3.0})
    scope = pc.Scope()
    scope.set_var("w", np.ones((2, 4), np.float32))
    exe = pc.Executor()
    assert exe.prepare(prog, {"x": ((2, 4), "float32")}, [out]).folded_ops == []
    x = np.zeros((2, 4), np.float32)
    draws = [exe.run(prog, feed={"x": x}, fetch_list=[out], scope=scope)[0] for _ in range(4)]
    assert any(not np.array_equal(draws[0], d) for d in draws[1:])  # fresh noise every run
    np.testing.assert_array_equal(scope.get("count"), 3 * np.ones((2, 4)))
