"""Expressions: value() runs only the ops it needs, planned once, and runs again only when a
feed or a persistable value it reads changed; model.run runs a union once; training steps."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc


class Counted:
    """An in-process plugin whose op `counted` (out = x) counts the times its kernel runs."""

    def __init__(self):
        self.calls = 0

    def paddle_core_manifest(self):
        return """
            ops {
              proto {
                type: "counted" comment: "out = x, counting its runs."
                inputs { name: "x" } outputs { name: "out" }
              }
              kernels { device: "cpu" dtypes: [FLOAT32, FLOAT64] python: "counted_cpu" }
              shape_rule: "paddle_core.rules:unary"
            }
        """

    def counted_cpu(self, x):
        self.calls += 1
        return x.copy()


@pytest.fixture
def counted():
    plugin = Counted()
    pc.register_plugin(plugin)
    return plugin


def branchy(model):
    """x -> counted -> relu -> scale (b), and x -> counted -> scale (c), a branch b never needs."""
    x = pc.layers.data("x", [3], model=model)
    a = pc.ops.counted(x)
    b = pc.ops.scale(pc.layers.relu(a), scale=2.0)
    c = pc.ops.scale(pc.ops.counted(x), scale=3.0)
    return x, a, b, c


def rows(*values):
    return np.array([values], np.float32)


def test_an_expression_has_a_name_a_shape_a_dtype_and_a_value():
    model = pc.Model()
    x = pc.layers.data("x", [3], model=model)
    y = pc.ops.scale(x, scale=2.0, name="doubled")
    assert isinstance(y, pc.Expression) and y.model is model
    assert (y.name(), y.shape, y.dtype, y.ndim) == ("doubled", (None, 3), "float32", 2)
    assert repr(y) == "Expression('doubled', float32[?, 3])"
    assert y.variable is model.main_program.global_block().var("doubled")
    np.testing.assert_array_equal(y.value(feed={x: rows(1, 2, 3)}), rows(2, 4, 6))


def test_value_runs_only_the_ops_its_expression_needs(counted):
    model = pc.Model()
    _, _, b, c = branchy(model)
    np.testing.assert_array_equal(b.value(feed={"x": rows(-1, 2, 3)}), rows(0, 4, 6))
    assert counted.calls == 1  # one counted op of two: c's branch did not run
    assert (model.run_count, model.ops_run) == (1, 3)
    np.testing.assert_array_equal(c.value(), rows(-3, 6, 9))
    assert counted.calls == 2
    assert (model.run_count, model.ops_run) == (2, 5)


def test_a_value_is_served_again_until_something_it_reads_changes(counted):
    model = pc.Model()
    x, _, b, _ = branchy(model)
    first = b.value(feed={x: rows(1, 2, 3)})
    for _ in range(3):
        np.testing.assert_array_equal(b.value(), first)
    assert (counted.calls, model.run_count) == (1, 1)  # no run after the first
    np.testing.assert_array_equal(b.value(feed={x: rows(4, 5, 6)}), rows(8, 10, 12))
    assert (counted.calls, model.run_count) == (2, 2)
    same = rows(4, 5, 6)
    b.value(feed={x: same})  # a feed is a change, even of equal values: no look at arrays
    assert counted.calls == 3


def test_a_feed_an_expression_does_not_read_leaves_its_value_alone():
    model = pc.Model()
    x = pc.layers.data("x", [2], model=model)
    z = pc.layers.data("z", [2], model=model)
    from_x, from_z = pc.ops.scale(x, scale=2.0), pc.ops.scale(z, scale=3.0)
    model.feed({x: rows(1, 1)[:, :2], z: rows(1, 1)[:, :2]})
    from_x.value()
    runs = model.run_count
    np.testing.assert_array_equal(from_z.value(feed={z: np.array([[2, 2]], np.float32)}), [[6, 6]])
    from_x.value()
    assert model.run_count == runs + 1  # from_z ran; from_x was served again


def test_a_value_is_recomputed_after_its_parameters_change():
    model = pc.Model()
    x = pc.layers.data("x", [2], model=model)
    y = pc.layers.fc(x, 1, bias_attr=False, param_attr=pc.ParamAttr(name="w"))
    data = np.array([[1, 2]], np.float32)
    y.value(feed={x: data})
    model.scope.set_var("w", np.array([[3], [4]], np.float32))  # a stamped write
    np.testing.assert_array_equal(y.value(), [[11]])
    assert model.run_count == 2

    label = pc.layers.data("label", [1], model=model)
    loss = pc.layers.mean(pc.ops.square(pc.ops.sub(y, label)))
    step = model.minimize(loss, pc.optimizer.SGD(learning_rate=0.1))
    y.value(feed={label: np.array([[0]], np.float32)})  # the program changed: a new plan
    runs = model.run_count
    y.value()
    assert model.run_count == runs  # nothing changed
    step.value()  # an optimizer step writes w
    w = model.scope.find_var("w")
    np.testing.assert_allclose(w, [[3 - 0.1 * 2 * 11 * 1], [4 - 0.1 * 2 * 11 * 2]], rtol=1e-6)
    np.testing.assert_allclose(y.value(), data @ w, rtol=1e-6)
    assert model.run_count == runs + 2


def test_run_computes_the_union_once_and_keeps_each_value(counted):
    model = pc.Model()
    x, a, b, c = branchy(model)
    got_b, got_c, got_a = model.run([b, c, a], feed={x: rows(-1, 2, 3)})
    np.testing.assert_array_equal(got_a, rows(-1, 2, 3))
    np.testing.assert_array_equal(got_b, rows(0, 4, 6))
    np.testing.assert_array_equal(got_c, rows(-3, 6, 9))
    assert (counted.calls, model.run_count, model.ops_run) == (2, 1, 5)
    for expr in (a, b, c):
        expr.value()
    model.run([b, c, a])
    assert (counted.calls, model.run_count) == (2, 1)  # all served from the run above
    (same,) = model.run([pc.ops.scale(a, scale=1.0)])
    np.testing.assert_array_equal(same, got_a)
    assert model.run([]) == []


def test_a_plan_is_prepared_once_per_feed_shape():
    model = pc.Model()
    x = pc.layers.data("x", [3], model=model)
    y = pc.layers.relu(x)
    for batch in (2, 2, 5, 2, 5):
        assert y.value(feed={x: np.ones((batch, 3), np.float32)}).shape == (batch, 3)
    assert model.prepare_count == 2
    assert model.run_count == 5


def test_values_are_read_only():
    model = pc.Model()
    x = pc.layers.data("x", [2], model=model)
    y = pc.ops.scale(x, scale=2.0)
    value = y.value(feed={x: np.ones((1, 2), np.float32)})
    with pytest.raises(ValueError, match="read-only"):
        value[0, 0] = 5
    np.testing.assert_array_equal(y.value(), [[2, 2]])
    writable = value.copy()
    writable[0, 0] = 5  # a copy is the caller's


def test_a_training_step_trains_on_every_evaluation_and_gives_its_loss():
    model = pc.Model()
    x = pc.layers.data("x", [4], model=model)
    label = pc.layers.data("label", [1], dtype="int64", model=model)
    logits = pc.layers.fc(pc.layers.fc(x, 8, act="relu"), 2)
    loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
    accuracy = pc.layers.accuracy(pc.layers.softmax(logits), label)
    step = model.minimize(loss, pc.optimizer.Adam(learning_rate=0.05))
    assert isinstance(step, pc.TrainStep) and step.name() == loss.name()
    assert sorted(model.param_grad_map) == ["fc.b_0", "fc.b_1", "fc.w_0", "fc.w_1"]
    data = np.random.default_rng(0).standard_normal((64, 4)).astype(np.float32)
    model.feed({x: data, label: (data[:, :1] > 0).astype(np.int64)})

    before = loss.value()
    params = {p.name(): p.value() for p in model.parameters()}
    loss.value()
    for name, value in params.items():  # evaluating the loss never trains
        np.testing.assert_array_equal(model.scope.find_var(name), value)
    first = step.value()
    np.testing.assert_array_equal(first, before)  # the step's loss: before its update
    losses = [float(step.value()) for _ in range(30)]  # never served from a cache
    assert model.run_count >= 32
    assert losses[-1] < float(before) / 2
    step_loss, acc = model.run([step, accuracy])
    assert float(acc) > 0.9
    assert float(loss.value()) < float(step_loss)  # loss now reads the updated parameters


def test_a_parameter_and_the_step_updating_it_cannot_share_a_run():
    model = pc.Model()
    x = pc.layers.data("x", [2], model=model)
    loss = pc.layers.mean(pc.layers.fc(x, 1, param_attr=pc.ParamAttr(name="w")))
    step = model.minimize(loss, pc.optimizer.SGD(0.1))
    (w,) = [p for p in model.parameters() if p.name() == "w"]
    with pytest.raises(pc.ProgramError, match=r"'w' is rewritten by op 'sgd'.*separate runs"):
        model.run([w, step], feed={x: np.ones((1, 2), np.float32)})
    step.value()
    w.value()  # separately, each is fine


def test_the_gradient_of_a_parameter():
    model = pc.Model()
    x = pc.layers.data("x", [2], model=model)
    y = pc.layers.fc(x, 1, bias_attr=False, param_attr=pc.ParamAttr(name="w"))
    loss = pc.layers.mean(pc.ops.square(y))
    model.minimize(loss, pc.optimizer.SGD(0.1))
    data = np.array([[1, 2], [3, 4]], np.float32)
    grad = model.gradient("w").value(feed={x: data})
    w = model.scope.find_var("w")
    np.testing.assert_allclose(grad, data.T @ (2 * (data @ w)) / 2, rtol=1e-5)
    with pytest.raises(pc.ProgramError, match="no gradient of 'x'"):
        model.gradient(x)


def test_generated_ops_take_expressions_and_lists_of_them():
    model = pc.Model()
    x = pc.layers.data("x", [2], model=model)
    y = pc.ops.scale(x, scale=2.0)
    both = pc.ops.concat([x, y], axis=1)
    assert isinstance(both, pc.Expression)
    np.testing.assert_array_equal(both.value(feed={x: rows(1, 2)[:, :2]}), [[1, 2, 2, 4]])
    total = pc.ops.add_n([x, y, x])
    np.testing.assert_array_equal(total.value(), [[4, 8]])


def test_a_batch_norm_updating_its_statistics_runs_on_every_evaluation():
    model = pc.Model()
    x = pc.layers.data("x", [2, 1, 1], model=model)
    y = pc.layers.batch_norm(x, momentum=0.5)
    (mean,) = [p for p in model.parameters() if p.name().startswith("batch_norm.mean")]
    model.feed({x: np.array([[[[2]], [[4]]]], np.float32)})
    y.value()
    y.value()  # stateful: runs again, moving the running mean again
    assert model.run_count == 2
    np.testing.assert_allclose(mean.value(), [1.5, 3.0])  # 0 -> 1 -> 1.5, 0 -> 2 -> 3


def test_an_expression_means_its_value_where_it_was_made():
    model = pc.Model()
    counter = pc.layers.step_counter(model=model)  # persistable: the scope's value
    assert counter.value().tolist() == [-1.0]
    x = pc.layers.data("x", [1], model=model)
    y = pc.ops.scale(x, scale=1.0)
    block = model.main_program.global_block()
    block.append_op("scale", {"x": y.variable}, {"out": y.variable}, {"scale": 10.0})
    later = model.expression(y.name())
    np.testing.assert_array_equal(y.value(feed={x: [[1.0]]}), [[1]])  # before the rewrite
    np.testing.assert_array_equal(later.value(), [[10]])  # after it
    block.remove_op(len(block.ops) - 1)
    block.remove_op(len(block.ops) - 1)
    with pytest.raises(pc.ProgramError, match=r"the op it follows \('scale'\) is no longer"):
        y.value()


# -- mistakes ------------------------------------------------------------------------------------


def test_feeding_mistakes_are_named():
    model = pc.Model()
    x = pc.layers.data("x", [2], model=model)
    y = pc.ops.scale(pc.layers.relu(x), scale=2.0)
    with pytest.raises(pc.FeedError, match=r"'scale_0.out' needs data 'x'.*feed=\{'x': \.\.\.\}"):
        y.value()
    with pytest.raises(pc.FeedError, match=r"'relu_0.out' is not a data variable.*: x"):
        model.feed({"relu_0.out": np.ones((1, 2), np.float32)})
    with pytest.raises(pc.FeedError, match=r"feed 'xx' is not a variable.*did you mean 'x'"):
        y.value(feed={"xx": np.ones((1, 2), np.float32)})
    with pytest.raises(pc.FeedError, match=r"feed 'x' has shape \[1, 3\].*declared \[\?, 2\]"):
        y.value(feed={x: np.ones((1, 3), np.float32)})
    with pytest.raises(pc.FeedError, match="has dtype float64, but variable 'x' is float32"):
        y.value(feed={x: np.ones((1, 2))})
    with pytest.raises(pc.FeedError, match="feed must be a dict"):
        model.feed([np.ones((1, 2))])
    with pytest.raises(pc.FeedError, match=r"takes a list of expressions.*value\(\)"):
        model.run(y)


def test_building_mistakes_are_named():
    one, two = pc.Model(), pc.Model()
    x = pc.layers.data("x", [2], model=one)
    z = pc.layers.data("z", [2], model=two)
    with pytest.raises(pc.ProgramError, match="'z' belongs to another model"):
        pc.ops.add(x, z)
    with pytest.raises(pc.ProgramError, match="'x' belongs to another model"):
        pc.layers.fc(x, 2, model=two)
    with pytest.raises(pc.ProgramError, match="belongs to another model"):
        two.run([x])
    loss = pc.layers.mean(pc.layers.fc(x, 1))
    with pytest.raises(pc.ProgramError, match=r"train it with model.minimize\(loss, optimizer\)"):
        pc.optimizer.SGD(0.1).minimize(loss)
    step = one.minimize(loss, pc.optimizer.SGD(0.1))
    with pytest.raises(pc.ProgramError, match="takes a loss, not a training step"):
        one.minimize(step, pc.optimizer.SGD(0.1))


class TenfoldScales:
    """A program pass setting every scale op's factor to 10 (on the planner's private copy)."""

    @pc.hookimpl
    def paddle_core_transform_program(self, program, device):
        for op in program.global_block().ops:
            if op.type == "scale":
                op.set_attr("scale", 10.0)


def test_a_subgraph_is_planned_on_the_program_passes_rewrite():
    model = pc.Model()
    x = pc.layers.data("x", [2], model=model)
    y = pc.ops.scale(x, scale=2.0)
    pc.ops.exp(x)  # an op y does not need, after it
    data = np.ones((1, 2), np.float32)
    np.testing.assert_array_equal(y.value(feed={x: data}), [[2, 2]])
    pc.register_plugin(TenfoldScales(), name="tenfold")  # plugins changed: plans are redone
    np.testing.assert_array_equal(y.value(), [[10, 10]])
    assert model.ops_run == 2  # still y's op alone
    assert model.main_program.global_block().ops[0].attr("scale") == 2.0


class CopiesBeforeExps:
    """A pass inserting an op before each exp, which then reads a copy of its input."""

    @pc.hookimpl
    def paddle_core_transform_program(self, program):
        block = program.global_block()
        for op in [op for op in block.ops if op.type == "exp"]:
            (x,) = op.input("x")
            copy = block.insert_op(block.ops.index(op), "scale", {"x": x}, {"out": x + "@c"})
            block.rewrite_op(op, inputs={"x": copy.output("out")})


def test_expressions_are_evaluated_at_their_place_in_a_program_a_pass_grew():
    model = pc.Model()
    x = pc.layers.data("x", [2], model=model)
    y = pc.ops.exp(x)
    z = pc.ops.scale(y, scale=3.0)
    w = pc.ops.exp(z)  # the pass puts an op before each exp: the later ops move down
    pc.register_plugin(CopiesBeforeExps(), name="copies")
    data = np.array([[0.0, 0.5]], np.float32)
    np.testing.assert_allclose(z.value(feed={x: data}), 3 * np.exp(data), rtol=1e-6)
    np.testing.assert_allclose(w.value(), np.exp(3 * np.exp(data)), rtol=1e-6)
    np.testing.assert_allclose(y.value(), np.exp(data), rtol=1e-6)
