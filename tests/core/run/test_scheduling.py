"""Early updates (paddle_core/_src/run/scheduling.py): in a training plan each parameter update
runs right after the last step it depends on, not after the whole backward pass. Runs give
what the program's order gives, bit for bit, and the arena holds fewer gradients at once."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc

UPDATES = {"sgd", "momentum", "adam"}


def mlp(optimizer, between=None):
    """A 4-layer perceptron's training program on mean((fc(x) - y)^2). ``between(loss)``
    appends ops after the gradients and before the updates."""
    main, start = pc.Program(), pc.Program()
    with pc.program_guard(main, start):
        x, y = pc.data("x", [None, 32]), pc.data("y", [None, 1])
        h = x
        for _ in range(4):
            h = pc.layers.fc(h, 96, act="relu")
        loss = pc.ops.mean(pc.ops.square(pc.ops.sub(pc.layers.fc(h, 1), y)))
        params_grads = optimizer.backward(loss)
        if between is not None:
            between(loss)
        optimizer.apply_gradients(params_grads)
    return main, start, loss


def batch(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((64, 32)).astype(np.float32),
        "y": rng.standard_normal((64, 1)).astype(np.float32),
    }


def two_scopes(start):
    """Two scopes holding the same initial parameters."""
    first = pc.Scope()
    pc.Executor().run(start, scope=first)
    second = pc.Scope()
    for name in first:
        second.set_var(name, np.array(first.get(name)))
    return first, second


def trained_both_ways(main, start, loss, steps=3):
    """Executors with and without early updates, each after ``steps`` training steps from the
    same parameters, which gave the same losses and left the same values, bit for bit."""
    executors, losses, scopes = [], [], two_scopes(start)
    for early, scope in zip((True, False), scopes):
        exe = pc.Executor(early_updates=early)
        run = [
            exe.run(main, feed=batch(i), fetch_list=[loss], scope=scope)[0] for i in range(steps)
        ]
        executors.append(exe)
        losses.append(run)
    np.testing.assert_array_equal(*losses)
    for name in scopes[0]:
        np.testing.assert_array_equal(scopes[0].get(name), scopes[1].get(name), err_msg=name)
    return executors


def updates_at_types(types):
    return [i for i, t in enumerate(types) if t in UPDATES]


def updates_at(plan):
    return updates_at_types(plan.op_types)


def last_grad_at(plan):
    return max(i for i, t in enumerate(plan.op_types) if t.endswith("_grad"))


@pytest.mark.parametrize(
    "optimizer",
    [
        lambda: pc.optimizer.SGD(0.1),
        lambda: pc.optimizer.Momentum(0.05),
        lambda: pc.optimizer.Adam(1e-3),
    ],
    ids=["sgd", "momentum", "adam"],
)
def test_updates_run_as_their_gradients_are_ready_with_the_same_results(optimizer):
    main, start, loss = mlp(optimizer())
    early, late = trained_both_ways(main, start, loss)
    feed = batch()
    early_plan = early.prepare(main, feed, [loss])
    late_plan = late.prepare(main, feed, [loss])
    # The program's order: every update after the last gradient; early: most before it.
    assert min(updates_at(late_plan)) > last_grad_at(late_plan)
    assert sum(i < last_grad_at(early_plan) for i in updates_at(early_plan)) >= 8
    assert sorted(early_plan.op_types) == sorted(late_plan.op_types)
    assert early_plan.memory.arena_bytes < late_plan.memory.arena_bytes


def test_updates_after_a_global_norm_clip_wait_for_every_gradient():
    clip = pc.optimizer.GradientClipByGlobalNorm(0.5)
    main, start, loss = mlp(pc.optimizer.Momentum(0.05, grad_clip=clip))
    early, _ = trained_both_ways(main, start, loss)
    plan = early.prepare(main, batch(), [loss])
    assert min(updates_at(plan)) > last_grad_at(plan)  # (each reads the norm of them all)


def test_a_parameter_read_after_the_gradients_is_read_before_its_update():
    read = {}

    def doubled_weights(loss):
        weight = loss.block.program.all_parameters()[0]
        read["weight"], read["doubled"] = weight.name, pc.ops.scale(weight, scale=2.0)

    main, start, _ = mlp(pc.optimizer.SGD(0.1), between=doubled_weights)
    scope, _ = two_scopes(start)
    before = np.array(scope.get(read["weight"]))
    (doubled,) = pc.Executor().run(main, feed=batch(), fetch_list=[read["doubled"]], scope=scope)
    np.testing.assert_array_equal(doubled, 2 * before)
    assert not np.array_equal(scope.get(read["weight"]), before)  # (and it was updated)


def test_no_update_moves_before_a_control_flow_op():
    counted = []

    def loop(loss):  # a while loop on a counter of its own: nothing an update touches
        i = pc.ops.fill_constant(shape=[], value=0.0, dtype="float32")
        three = pc.ops.fill_constant(shape=[], value=3.0, dtype="float32")
        counted.extend(
            pc.layers.while_loop(
                lambda i: pc.ops.less(i, three), lambda i: pc.ops.scale(i, bias=1.0), [i]
            )
        )

    main, _, loss = mlp(pc.optimizer.SGD(0.1), between=loop)
    types = pc.Executor().prepare(main, batch(), [loss, counted[0]]).op_types
    assert min(updates_at_types(types)) > types.index("while_block")
