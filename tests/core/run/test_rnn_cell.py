"""pc.layers.rnn: a recurrent cell written with layers, run as a recurrent_block op, against
NumPy references (an Elman cell, an LSTM cell), pc.layers.lstm and finite differences; the
mistakes it refuses, naming them."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import numeric

import paddle_core as pc
from paddle_core import ops

B, T, IN, H = 3, 5, 4, 6


def elman(w_ih, w_hh, b):
    """h' = tanh(x W_ih^T + h W_hh^T + b); out = h'."""

    def cell(x_t, h):
        pre = ops.add(
            ops.matmul(x_t, w_ih, transpose_y=True), ops.matmul(h, w_hh, transpose_y=True)
        )
        h = ops.tanh(ops.add(pre, b))
        return h, h

    return cell


def reference_elman(x, h0, w_ih, w_hh, b, reverse=False, time_major=False):
    if time_major:
        x = x.transpose(1, 0, 2)
    outs = np.zeros((x.shape[0], x.shape[1], w_hh.shape[0]), x.dtype)
    h = h0
    steps = range(x.shape[1] - 1, -1, -1) if reverse else range(x.shape[1])
    for t in steps:
        h = np.tanh(x[:, t] @ w_ih.T + h @ w_hh.T + b)
        outs[:, t] = h
    return (outs.transpose(1, 0, 2) if time_major else outs), h


def params(dtype, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "w_ih": rng.uniform(-0.5, 0.5, (H, IN)).astype(dtype),
        "w_hh": rng.uniform(-0.5, 0.5, (H, H)).astype(dtype),
        "b": rng.uniform(-0.5, 0.5, (H,)).astype(dtype),
    }


def build_elman(dtype="float64", reverse=False, time_major=False):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.data("x", [T, B, IN] if time_major else [B, T, IN], dtype)
        h0 = pc.data("h0", [B, H], dtype)
        x.stop_gradient = h0.stop_gradient = False
        w_ih = pc.layers.create_parameter([H, IN], dtype, attr="w_ih")
        w_hh = pc.layers.create_parameter([H, H], dtype, attr="w_hh")
        b = pc.layers.create_parameter([H], dtype, attr="b")
        out, h_n = pc.layers.rnn(
            elman(w_ih, w_hh, b), x, h0, time_major=time_major, is_reverse=reverse
        )
    return main, x, h0, out, h_n


def set_params(scope, values):
    for name, value in values.items():
        scope.set_var(name, value.copy())


def feed_elman(dtype, time_major=False, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((T, B, IN) if time_major else (B, T, IN)).astype(dtype)
    return {"x": x, "h0": rng.standard_normal((B, H)).astype(dtype)}


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("time_major", [False, True])
def test_elman_cell_matches_numpy(reverse, time_major):
    main, _, _, out, h_n = build_elman("float32", reverse, time_major)
    assert out.shape == ((T, B, H) if time_major else (B, T, H)) and h_n.shape == (B, H)
    scope, values = pc.Scope(), params(np.float32)
    set_params(scope, values)
    feed = feed_elman(np.float32, time_major)
    got_out, got_h = pc.Executor().run(main, feed=feed, fetch_list=[out, h_n], scope=scope)
    want_out, want_h = reference_elman(
        feed["x"], feed["h0"], *values.values(), reverse=reverse, time_major=time_major
    )
    np.testing.assert_allclose(got_out, want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-5, atol=1e-6)


def test_the_step_runs_as_a_compiled_scan():
    main, _, _, out, _ = build_elman("float32")
    plan = pc.Executor().prepare(
        main, {"x": ([B, T, IN], "float32"), "h0": ([B, H], "float32")}, [out]
    )
    (step,) = [s for s in plan.steps if s.op.type == "recurrent_block"]
    assert step.fn.block.compiled and "tanh" in step.fn.block.op_types
    assert step.fn.block.scan_runner is not None  # no Python between time steps


def test_a_step_drawing_random_numbers_runs_with_python_between_steps():
    """dropout (p = 0: the identity) makes the step random: the scan falls back to a plan
    run per step, with the same results."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.data("x", [B, T, IN], "float32")
        h0 = pc.data("h0", [B, H], "float32")
        w_ih = pc.layers.create_parameter([H, IN], "float32", attr="w_ih")
        w_hh = pc.layers.create_parameter([H, H], "float32", attr="w_hh")
        b = pc.layers.create_parameter([H], "float32", attr="b")
        inner = elman(w_ih, w_hh, b)

        def cell(x_t, h):
            return inner(pc.layers.dropout(x_t, 0.0), h)

        out, h_n = pc.layers.rnn(cell, x, h0)
    scope, values = pc.Scope(), params(np.float32)
    set_params(scope, values)
    feed = feed_elman(np.float32)
    exe = pc.Executor()
    got_out, got_h = exe.run(main, feed=feed, fetch_list=[out, h_n], scope=scope)
    want_out, want_h = reference_elman(feed["x"], feed["h0"], *values.values())
    np.testing.assert_allclose(got_out, want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-5, atol=1e-6)
    plan = exe.prepare(main, {"x": ([B, T, IN], "float32"), "h0": ([B, H], "float32")}, [out])
    (step,) = [s for s in plan.steps if s.op.type == "recurrent_block"]
    assert step.fn.block.scan_runner is None


# -- gradients --------------------------------------------------------------------------------


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("time_major", [False, True])
def test_elman_gradients_match_finite_differences(reverse, time_major):
    main, _, _, out, h_n = build_elman("float64", reverse, time_major)
    with pc.program_guard(main):
        r_out = pc.data("r_out", list(out.shape), "float64")
        r_h = pc.data("r_h", [B, H], "float64")
        loss = ops.add(ops.sum(ops.mul(out, r_out)), ops.sum(ops.mul(h_n, r_h)))
        names = ["x", "h0", "w_ih", "w_hh", "b"]
        grads = pc.gradients([loss], [main.global_block().var(n) for n in names])
    scope = pc.Scope()
    set_params(scope, params(np.float64))
    rng = np.random.default_rng(5)
    feed = feed_elman(np.float64, time_major)
    feed["r_out"] = rng.standard_normal(out.shape)
    feed["r_h"] = rng.standard_normal((B, H))
    got = pc.Executor().run(main, feed=feed, fetch_list=grads, scope=scope)
    forward = main.clone(for_test=True)
    for name, g in zip(names, got):
        want = numeric(forward, loss.name, feed, scope, name)
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8, err_msg=name)


def test_gradients_of_only_the_final_state_and_of_unused_parts():
    """No gradient flows into the outputs: the step's gradient is seeded by the states'
    only (no output seeds), and still reaches the weights and every time slice of x."""
    main, x, _, _, h_n = build_elman("float64")
    with pc.program_guard(main):
        loss = ops.sum(ops.square(h_n))
        gw, gx = pc.gradients([loss], [main.global_block().var("w_hh"), x])
    scope = pc.Scope()
    set_params(scope, params(np.float64))
    feed = feed_elman(np.float64)
    got_w, got_x = pc.Executor().run(main, feed=feed, fetch_list=[gw, gx], scope=scope)
    forward = main.clone(for_test=True)
    np.testing.assert_allclose(got_w, numeric(forward, loss.name, feed, scope, "w_hh"), rtol=1e-6)
    np.testing.assert_allclose(got_x, numeric(forward, loss.name, feed, scope, "x"), rtol=1e-6)


def test_the_parameters_gradients_are_summed_by_ops_of_the_gradient_block():
    main, _, _, out, _ = build_elman("float64")
    with pc.program_guard(main):
        pc.gradients([ops.sum(out)], [main.global_block().var("w_ih")])
    (op,) = [op for op in main.global_block().ops if op.type == "recurrent_block_backward"]
    grad = main.block(op.attr("grad_block"))
    (acc,) = op.attr("accumulators")
    (total,) = [o for o in grad.ops if o.type == "add_n" and acc in o.input_names]
    assert total.output_names == [op.attr("grad_outs")[-1]]


def test_gradients_flow_through_the_outputs_when_the_only_state_is_an_integer():
    """A step counter as the only state: no state gradient to carry, yet the outputs' give
    the parameter's and the inputs'."""
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [B, T, 2], "float64")
        x.stop_gradient = False
        k0 = pc.data("k0", [1], "int64")
        w = pc.layers.create_parameter([2], "float64", attr="w")

        def cell(x_t, k):
            one = ops.fill_constant(shape=[1], dtype="int64", value=1)
            return ops.tanh(ops.mul(x_t, w)), ops.add(k, one)

        out, k_n = pc.layers.rnn(cell, x, k0)
        loss = ops.sum(ops.square(out))
        gw, gx = pc.gradients([loss], [w, x])
    scope = pc.Scope()
    scope.set_var("w", np.array([0.7, -1.3]))
    feed = {"x": np.random.default_rng(6).standard_normal((B, T, 2)), "k0": np.array([0])}
    got_w, got_x, got_k = pc.Executor().run(main, feed=feed, fetch_list=[gw, gx, k_n], scope=scope)
    assert got_k.tolist() == [T]
    forward = main.clone(for_test=True)
    np.testing.assert_allclose(got_w, numeric(forward, loss.name, feed, scope, "w"), rtol=1e-6)
    np.testing.assert_allclose(got_x, numeric(forward, loss.name, feed, scope, "x"), rtol=1e-6)


# -- an LSTM cell written with layers ---------------------------------------------------------


def lstm_cell(w_ih, w_hh, b_ih, b_hh):
    """PyTorch's LSTM step, gates i, f, g, o; states (h, c); out = h."""

    def cell(x_t, states):
        h, c = states
        gates = ops.add(ops.matmul(x_t, w_ih, transpose_y=True), b_ih)
        gates = ops.add(gates, ops.add(ops.matmul(h, w_hh, transpose_y=True), b_hh))
        i, f, g, o = ops.split(gates, num=4, axis=-1)
        c = ops.add(ops.mul(ops.sigmoid(f), c), ops.mul(ops.sigmoid(i), ops.tanh(g)))
        h = ops.mul(ops.sigmoid(o), ops.tanh(c))
        return h, (h, c)

    return cell


def reference_lstm(x, h, c, w_ih, w_hh, b_ih, b_hh):
    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    outs = []
    for t in range(x.shape[1]):
        gates = x[:, t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, g, o = np.split(gates, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs, 1), h, c


def build_lstm_pair(dtype="float64"):
    """pc.layers.lstm and the cell through pc.layers.rnn on the same x, states and weights."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.data("x", [B, T, IN], dtype)
        h0 = pc.data("h0", [B, H], dtype)
        c0 = pc.data("c0", [B, H], dtype)
        x.stop_gradient = False
        ref_out, (ref_h, ref_c) = pc.layers.lstm(
            x, H, initial_states=(ops.unsqueeze(h0, axes=[0]), ops.unsqueeze(c0, axes=[0])),
            name="ref",
        )  # fmt: skip
        block = main.global_block()
        weights = [
            block.var(f"ref.{n}_l0") for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        ]
        out, (h_n, c_n) = pc.layers.rnn(lstm_cell(*weights), x, (h0, c0))
    return main, startup, x, weights, (ref_out, ref_h, ref_c), (out, h_n, c_n)


def test_an_lstm_cell_matches_numpy_and_pc_layers_lstm():
    main, startup, x, weights, ref, ours = build_lstm_pair()
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(2)
    feed = {
        "x": rng.standard_normal((B, T, IN)),
        "h0": rng.standard_normal((B, H)),
        "c0": rng.standard_normal((B, H)),
    }
    with pc.program_guard(main):
        r = pc.data("r", [B, T, H], "float64")
        ref_loss = ops.add(ops.sum(ops.mul(ref[0], r)), ops.sum(ref[2]))
        our_loss = ops.add(ops.sum(ops.mul(ours[0], r)), ops.sum(ours[2]))
        ref_grads = pc.gradients([ref_loss], [x, *weights])
        our_grads = pc.gradients([our_loss], [x, *weights])
    feed["r"] = rng.standard_normal((B, T, H))
    got = exe.run(main, feed=feed, fetch_list=[*ref, *ours, *ref_grads, *our_grads], scope=scope)
    ref_out, ref_h, ref_c, out, h_n, c_n = got[:6]
    values = [scope.get(w.name) for w in weights]
    want_out, want_h, want_c = reference_lstm(feed["x"], feed["h0"], feed["c0"], *values)
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h_n, want_h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(c_n, want_c, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out, ref_out, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h_n, ref_h[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(c_n, ref_c[0], rtol=1e-9, atol=1e-12)
    n = len(ref_grads)
    for k, (want, have) in enumerate(zip(got[6 : 6 + n], got[6 + n :])):
        np.testing.assert_allclose(have, want, rtol=1e-8, atol=1e-10, err_msg=f"gradient {k}")


def test_nested_states_and_several_input_sequences():
    """inputs [x, [y]] and states (h, [c, k]): the cell sees and returns those structures."""
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [B, T, 2], "float64")
        y = pc.data("y", [B, T, 2], "float64")
        h0 = pc.data("h0", [B, 2], "float64")
        c0 = pc.data("c0", [B, 2], "float64")
        k0 = pc.data("k0", [1], "int64")
        seen = {}

        def cell(inputs, states):
            x_t, (y_t,) = inputs
            h, (c, k) = states
            seen["structure"] = (type(inputs), type(inputs[1]), type(states), type(states[1]))
            c = ops.add(c, ops.mul(x_t, y_t))
            h = ops.tanh(ops.add(h, c))
            k = ops.add(k, ops.fill_constant(shape=[1], dtype="int64", value=1))
            return [h, c], (h, [c, k])

        (outs, (h_n, (c_n, k_n))) = pc.layers.rnn(cell, [x, [y]], (h0, [c0, k0]))
    assert seen["structure"] == (list, list, tuple, list)
    assert isinstance(outs, list) and len(outs) == 2
    rng = np.random.default_rng(3)
    feed = {n: rng.standard_normal((B, T, 2)) for n in ("x", "y")}
    feed.update(h0=rng.standard_normal((B, 2)), c0=rng.standard_normal((B, 2)), k0=np.array([10]))
    got = pc.Executor().run(main, feed=feed, fetch_list=[*outs, h_n, c_n, k_n])
    h, c = feed["h0"], feed["c0"]
    hs, cs = [], []
    for t in range(T):
        c = c + feed["x"][:, t] * feed["y"][:, t]
        h = np.tanh(h + c)
        hs.append(h)
        cs.append(c)
    np.testing.assert_allclose(got[0], np.stack(hs, 1), rtol=1e-12)
    np.testing.assert_allclose(got[1], np.stack(cs, 1), rtol=1e-12)
    np.testing.assert_allclose(got[2], h, rtol=1e-12)
    np.testing.assert_allclose(got[3], c, rtol=1e-12)
    assert got[4].tolist() == [10 + T]


def test_a_cell_returning_its_inputs_and_swapped_states():
    """out_t = x_t and new states (c, h) from states (h, c): results that are no values of the
    step's ops are copied, so the swap and the outputs hold what the cell said."""
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [B, T, 2], "float32")
        a0 = pc.data("a0", [B, 2], "float32")
        b0 = pc.data("b0", [B, 2], "float32")
        outs, (a_n, b_n) = pc.layers.rnn(lambda x_t, s: (x_t, (s[1], s[0])), x, (a0, b0))
    feed = {
        "x": np.arange(B * T * 2, dtype=np.float32).reshape(B, T, 2),
        "a0": np.ones((B, 2), np.float32),
        "b0": np.zeros((B, 2), np.float32),
    }
    got_out, got_a, got_b = pc.Executor().run(main, feed=feed, fetch_list=[outs, a_n, b_n])
    np.testing.assert_array_equal(got_out, feed["x"])
    # T = 5 swaps: a ends as b0
    np.testing.assert_array_equal(got_a, feed["b0"])
    np.testing.assert_array_equal(got_b, feed["a0"])


def test_zero_time_steps():
    plan_feed = {"x": np.zeros((B, 0, IN), np.float32), "h0": np.full((B, H), 2.0, np.float32)}
    main2 = pc.Program()
    with pc.program_guard(main2):
        x = pc.data("x", [B, None, IN], "float32")
        h0 = pc.data("h0", [B, H], "float32")
        w_ih = pc.layers.create_parameter([H, IN], "float32", attr="w_ih")
        w_hh = pc.layers.create_parameter([H, H], "float32", attr="w_hh")
        b = pc.layers.create_parameter([H], "float32", attr="b")
        out, h_n = pc.layers.rnn(elman(w_ih, w_hh, b), x, h0)
    scope = pc.Scope()
    set_params(scope, params(np.float32))
    got_out, got_h = pc.Executor().run(main2, feed=plan_feed, fetch_list=[out, h_n], scope=scope)
    assert got_out.shape == (B, 0, H)
    np.testing.assert_array_equal(got_h, plan_feed["h0"])


# -- programs: saving, loading, training ------------------------------------------------------


def test_a_saved_inference_model_loads_and_runs_the_same(tmp_path):
    main, _, _, out, h_n = build_elman("float32")
    scope, values = pc.Scope(), params(np.float32)
    set_params(scope, values)
    feed = feed_elman(np.float32)
    exe = pc.Executor()
    want = exe.run(main, feed=feed, fetch_list=[out, h_n], scope=scope)
    loaded = pc.Program.parse(main.serialize())
    assert loaded.serialize() == main.serialize()
    got = exe.run(loaded, feed=feed, fetch_list=[out.name, h_n.name], scope=scope)
    pc.io.save_inference_model(tmp_path, ["x", "h0"], [out, h_n], main, scope)
    fresh = pc.Scope()
    program, feed_names, fetches = pc.io.load_inference_model(tmp_path, fresh)
    assert feed_names == ["x", "h0"]
    again = exe.run(program, feed=feed, fetch_list=fetches, scope=fresh)
    for a, b, c in zip(want, got, again):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_training_an_lstm_cell_lowers_the_loss(optimizer):
    """Learn to output the running mean of a sequence with an LSTM cell written with layers."""
    main, startup = pc.Program(), pc.Program()
    hidden = 8
    with pc.program_guard(main, startup):
        x = pc.data("x", [B, T, 1], "float32")
        target = pc.data("target", [B, T, 1], "float32")
        zeros = pc.layers.fill_constant_batch_size_like(x, [B, hidden], "float32", 0.0)
        w_ih = pc.layers.create_parameter([4 * hidden, 1], "float32", attr="cell.w_ih")
        w_hh = pc.layers.create_parameter([4 * hidden, hidden], "float32", attr="cell.w_hh")
        b_ih = pc.layers.create_parameter(
            [4 * hidden],
            "float32",
            attr="cell.b_ih",
            default_initializer=pc.initializer.Constant(0.0),
        )
        b_hh = pc.layers.create_parameter(
            [4 * hidden],
            "float32",
            attr="cell.b_hh",
            default_initializer=pc.initializer.Constant(0.0),
        )
        out, _ = pc.layers.rnn(lstm_cell(w_ih, w_hh, b_ih, b_hh), x, (zeros, zeros))
        pred = pc.layers.fc(out, 1, num_flatten_dims=2)
        loss = pc.layers.mean(ops.square(ops.sub(pred, target)))
        opt = pc.optimizer.SGD(0.5) if optimizer == "sgd" else pc.optimizer.Adam(0.02)
        opt.minimize(loss)
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(4)
    losses = []
    for _ in range(60):
        xs = rng.uniform(-1, 1, (B, T, 1)).astype(np.float32)
        means = np.cumsum(xs, 1) / np.arange(1, T + 1, dtype=np.float32)[None, :, None]
        losses.append(
            float(exe.run(main, feed={"x": xs, "target": means}, fetch_list=[loss], scope=scope)[0])
        )
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10]), losses


# -- mistakes ---------------------------------------------------------------------------------


def mistake(cell, states=None):
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [B, T, 2], "float32")
        h0 = pc.data("h0", [B, 2], "float32")
        pc.layers.rnn(cell, x, h0 if states is None else states(h0))


def test_a_cell_changing_a_state_s_shape_or_dtype_is_refused_naming_the_state():
    with pytest.raises(
        pc.ShapeError, match=r"state 0 \('h0'\) is float32\[3, 2\].*float32\[3, 4\]"
    ):
        mistake(lambda x_t, h: (h, ops.concat([h, h], axis=1)))
    with pytest.raises(pc.ShapeError, match=r"state 0 \('h0'\).*float64"):
        mistake(lambda x_t, h: (h, ops.cast(h, dtype="float64")))


def test_a_cell_returning_the_wrong_structure_is_refused():
    with pytest.raises(pc.ProgramError, match=r"must return a pair \(out_t, new_states\)"):
        mistake(lambda x_t, h: h)
    with pytest.raises(
        pc.ProgramError, match=r"new_states\[1\].*initial_states\[1\] is a Variable"
    ):
        mistake(lambda x_t, s: (s[0], (s[0], [s[1]])), states=lambda h0: (h0, h0))
    with pytest.raises(
        pc.ProgramError, match=r"new_states is 1 value\(s\) where initial_states is a Variable"
    ):
        mistake(lambda x_t, h: (h, [h]))


def test_a_cell_returning_something_else_than_variables_is_refused():
    with pytest.raises(pc.ProgramError, match=r"the cell's new_states must be a Variable.*got int"):
        mistake(lambda x_t, h: (h, 3))
    with pytest.raises(pc.ProgramError, match=r"the cell's out_t\[1\] must be a Variable.*got str"):
        mistake(lambda x_t, h: ([h, "h"], h))
    with pytest.raises(pc.ProgramError, match=r"cell must be a function"):
        mistake(None)


def test_inputs_without_a_time_axis_or_of_different_lengths_are_refused():
    main = pc.Program()
    with pc.program_guard(main):
        flat = pc.data("flat", [B], "float32")
        x = pc.data("x", [B, T, 2], "float32")
        y = pc.data("y", [B, T + 1, 2], "float32")
        h0 = pc.data("h0", [B, 2], "float32")
        with pytest.raises(
            pc.ShapeError, match=r"sequence 'flat' is float32\[3\]; inputs are \[B, T, \.\.\.\]"
        ):
            pc.layers.rnn(lambda x_t, h: (h, h), flat, h0)
        with pytest.raises(pc.ShapeError, match=r"differ in length"):
            pc.layers.rnn(lambda x_t, h: (h, h), [x, y], h0)
        with pytest.raises(
            pc.ProgramError, match=r"initial_states must be a Variable.*got NoneType"
        ):
            pc.layers.rnn(lambda x_t, h: (h, h), x, None)


def test_gradients_through_a_step_that_draws_random_numbers_are_refused():
    """The gradient block runs the step's ops again: a dropout there would draw another mask
    than the forward's, and its gradient would differentiate that one. Refused, naming it."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.data("x", [B, T, IN], "float32")
        h0 = pc.data("h0", [B, H], "float32")
        w_ih = pc.layers.create_parameter([H, IN], "float32", attr="w_ih")
        w_hh = pc.layers.create_parameter([H, H], "float32", attr="w_hh")
        b = pc.layers.create_parameter([H], "float32", attr="b")
        inner = elman(w_ih, w_hh, b)
        out, _ = pc.layers.rnn(lambda x_t, h: inner(pc.layers.dropout(x_t, 0.5), h), x, h0)
        with pytest.raises(pc.ProgramError, match=r"holds op 'dropout', which draws random"):
            pc.gradients([ops.sum(out)], [w_hh])


def test_a_state_named_twice_is_refused_when_planned():
    """A loaded program's recurrent_block naming one state twice would have the scan swap a
    buffer in two pairs; planning refuses it first."""
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [B, T, 2], "float32")
        h0 = pc.data("h0", [B, 2], "float32")
        out, _ = pc.layers.rnn(lambda x_t, s: (s[0], [s[1], s[0]]), x, [h0, h0])
    (op,) = [op for op in main.global_block().ops if op.type == "recurrent_block"]
    states = op.attrs["step_states"]
    op.set_attr("step_states", [states[0], states[0]])
    with pytest.raises(pc.ProgramError, match=r"step_states names a variable twice"):
        pc.Executor().prepare(main, {"x": ([B, T, 2], "float32"), "h0": ([B, 2], "float32")}, [out])
