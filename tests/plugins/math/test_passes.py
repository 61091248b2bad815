"""paddle-ops-math's matmul_bias pass (paddle_ops_math/passes.py): in CPU plans a linear
layer's bias add becomes the matmul's bias, and in training its add_grad the bias's gradient.
A Transformer encoder layer gives the same outputs with the pass as without, and an MLP trains
alike; what must not be fused is not (a fetched product, a product read twice, a bias that is
not one row's worth); a matmul with a bias exports to ONNX as MatMul then Add."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import pc

passes = pytest.importorskip("paddle_ops_math.passes", reason="paddle-ops-math is not installed")
RNG = np.random.default_rng(0)


def encoder():
    """An evaluation Transformer encoder layer (d_model 16, 2 heads, feed-forward 32)."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [5, 16])
        out = pc.layers.transformer_encoder_layer(x, 16, 2, 32, dropout=0.0, is_test=True)
    scope = pc.Scope()
    pc.Executor().run(startup, scope=scope)
    for name, var in main.global_block().vars.items():  # biases are zeros at first in places
        if var.persistable and name.endswith("bias"):
            scope.set_var(name, RNG.standard_normal(var.shape).astype(np.float32))
    return main, out, scope


FEED = {"x": RNG.standard_normal((3, 5, 16)).astype(np.float32)}


def test_an_encoder_layers_biases_join_their_matmuls(without):
    main, out, scope = encoder()
    exe = pc.Executor()
    (got,) = exe.run(main, feed=FEED, fetch_list=[out], scope=scope)
    plan = exe.prepare(main, FEED, [out])
    matmuls = [s.op for s in plan.steps if s.op.type == "matmul"]
    biased = [m for m in matmuls if m.input("bias")]
    assert len(biased) == 4  # in-projection, out-projection, linear1, linear2
    assert plan.op_types.count("add") == 2  # the residual connections
    without("matmul_bias")
    other = pc.Executor()
    (want,) = other.run(main, feed=FEED, fetch_list=[out], scope=scope)
    assert plan.op_types.count("add") + 4 == other.prepare(main, FEED, [out]).op_types.count("add")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def linear_program(bias_shape=(8,)):
    """x [4, 6] -> matmul with w -> add b; the product and the sum fetchable."""
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [4, 6])
        w = pc.data("w", [6, 8])
        b = pc.data("b", list(bias_shape))
        product = pc.ops.matmul(x, w)
        out = pc.ops.add(product, b)
    feed = {
        "x": RNG.standard_normal((4, 6)).astype(np.float32),
        "w": RNG.standard_normal((6, 8)).astype(np.float32),
        "b": RNG.standard_normal(bias_shape).astype(np.float32),
    }
    return main, product, out, feed


def test_a_linear_product_is_fused_and_computes_the_sum():
    main, _, out, feed = linear_program()
    exe = pc.Executor()
    (got,) = exe.run(main, feed=feed, fetch_list=[out])
    assert exe.prepare(main, feed, [out]).op_types == ["matmul"]
    np.testing.assert_allclose(got, feed["x"] @ feed["w"] + feed["b"], rtol=1e-5, atol=1e-6)


def test_a_fetched_product_is_not_fused():
    main, product, out, feed = linear_program()
    exe = pc.Executor()
    got_product, got = exe.run(main, feed=feed, fetch_list=[product, out])
    assert exe.prepare(main, feed, [product, out]).op_types == ["matmul", "add"]
    np.testing.assert_allclose(got_product, feed["x"] @ feed["w"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, got_product + feed["b"], rtol=1e-6)


@pytest.mark.parametrize("shape", [(1, 8), (4, 8), (1,)])
def test_an_add_that_is_not_a_rows_bias_is_not_fused(shape):
    main, _, out, feed = linear_program(shape)
    exe = pc.Executor()
    (got,) = exe.run(main, feed=feed, fetch_list=[out])
    assert exe.prepare(main, feed, [out]).op_types == ["matmul", "add"]
    np.testing.assert_allclose(got, feed["x"] @ feed["w"] + feed["b"], rtol=1e-5, atol=1e-6)


def mlp(dropout=0.0):
    """Two linear layers (relu and dropout between) trained by SGD, and a startup program."""
    main, startup = pc.Program(), pc.Program()
    main.random_seed = 5
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [6])
        h = pc.layers.dropout(pc.ops.relu(pc.layers.linear(x, 5)), dropout)
        loss = pc.ops.mean(pc.ops.square(pc.layers.linear(h, 3)))
        pc.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


def train(main, startup, loss, steps=3):
    """The losses of ``steps`` training steps from the startup's weights, the parameters
    after them, and the plan."""
    feed = {"x": np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)}
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0] for _ in range(steps)]
    params = {p.name: scope.get(p.name).copy() for p in main.all_parameters()}
    return losses, params, exe.prepare(main, feed, [loss])


@pytest.mark.parametrize("dropout", [0.0, 0.4])
def test_a_training_programs_linear_layers_take_their_biases_and_train_alike(dropout, without):
    """With dropout too: the ops the pass removes do not move the dropout's random numbers."""
    main, startup, loss = mlp(dropout)
    losses, params, plan = train(main, startup, loss)
    biased = [s.op for s in plan.steps if s.op.type == "matmul" and s.op.input("bias")]
    assert len(biased) == 2
    # Each add_grad became its bias's gradient, read from out's gradient by a sum.
    assert "add" not in plan.op_types and "add_grad" not in plan.op_types
    sums = [s.op for s in plan.steps if s.op.type == "sum"]
    assert sorted(op.output("out")[0] for op in sums) == [
        "linear_0.bias@GRAD",
        "linear_1.bias@GRAD",
    ]
    for op in plan.steps:
        if op.op.type == "matmul_grad":
            assert not op.op.input("out_grad")[0].startswith("matmul_")  # out's gradient
    without("matmul_bias")
    want_losses, want_params, other = train(main, startup, loss)
    assert other.op_types.count("add_grad") == 2
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    for name, value in want_params.items():
        np.testing.assert_allclose(params[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_vectors_linear_layer_trains_alike_with_its_bias_fused(without):
    """A vector x makes out [N]: the bias's gradient is out's, with no axis to sum."""

    def run():
        main, startup = pc.Program(), pc.Program()
        with pc.program_guard(main, startup):
            x = pc.data("x", [6])
            w = pc.layers.create_parameter([6, 4], "float32", "w")
            b = pc.layers.create_parameter(
                [4], "float32", "b", default_initializer=pc.initializer.Constant(0.5)
            )
            out = pc.ops.add(pc.ops.matmul(x, w), b)
            pc.optimizer.SGD(0.1).minimize(pc.ops.sum(pc.ops.mul(out, out)))
        scope, exe = pc.Scope(), pc.Executor()
        exe.run(startup, scope=scope)
        feed = {"x": np.linspace(-1, 1, 6, dtype=np.float32)}
        w0, b0 = scope.get("w").copy(), scope.get("b").copy()
        exe.run(main, feed=feed, scope=scope)
        fused = any(
            s.op.input("bias") for s in exe.prepare(main, feed, []).steps if s.op.type == "matmul"
        )
        want_b = b0 - 0.1 * 2 * (feed["x"] @ w0 + b0)  # d sum(out^2) / db = 2 out
        np.testing.assert_allclose(scope.get("b"), want_b, rtol=1e-5, atol=1e-6)
        return fused, scope.get("w").copy()

    fused, w = run()
    without("matmul_bias")
    unfused, want = run()
    assert fused and not unfused
    np.testing.assert_allclose(w, want, rtol=1e-5, atol=1e-6)


def test_a_product_whose_gradient_has_another_reader_is_not_fused():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [6])
        product = pc.ops.matmul(x, pc.layers.create_parameter([6, 4], "float32", "w"))
        out = pc.ops.add(product, pc.layers.create_parameter([4], "float32", "b"))
        loss = pc.ops.mean(pc.ops.mul(out, product))  # the product is read twice
        pc.optimizer.SGD(0.1).minimize(loss)
    _, _, plan = train(main, startup, loss, steps=1)
    assert not any(s.op.input("bias") for s in plan.steps if s.op.type == "matmul")
    assert plan.op_types.count("add_grad") == 1


def test_unknown_pass_names_are_refused():
    with pytest.raises(pc.ConfigError, match="paddle-ops-math has no pass 'bias'; its passes"):
        passes.set_pass_enabled("bias", False)


def test_a_matmul_with_a_bias_exports_as_matmul_then_add(tmp_path):
    onnx = pytest.importorskip("onnx", reason="the checker comes with onnx (the test extra)")
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [6])
        w = pc.layers.create_parameter([8, 6], "float32", "w")
        b = pc.layers.create_parameter([8], "float32", "b")
        out = pc.ops.matmul(x, w, bias=b, transpose_y=True)
    scope = pc.Scope()
    pc.Executor().run(startup, scope=scope)
    scope.set_var("b", RNG.standard_normal(8).astype(np.float32))
    path = tmp_path / "linear.onnx"
    model = pc.onnx.export(main, path, feeds=["x"], fetches=[out], scope=scope)
    onnx.checker.check_model(str(path), full_check=True)
    assert [n.op_type for n in model.graph.node] == ["Transpose", "MatMul", "Add"]
    feed = {"x": RNG.standard_normal((3, 6)).astype(np.float32)}
    (want,) = pc.Executor().run(main, feed=feed, fetch_list=[out], scope=scope)
    (got,) = pc.onnx.load(path).run(feed)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
