"""paddle-ops-nn's recurrent networks: lstm and gru against a float64 NumPy network (several layers,
both directions, initial states, padded batches), gradients by finite differences, bad inputs
refused by name, and the layer with PyTorch's parameter names."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import FLOATS, check_grad, pc, run_op

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

RNG = np.random.default_rng(11)
# float32: sums of H products per gate and per step, through T steps.
LOOSE = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-12, atol=1e-12)}
GATES = {"lstm": 4, "gru": 3}


# -- the reference ---------------------------------------------------------------------------


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One step of every sequence: (h, c) after x."""
    i, f, g, o = np.split(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def recurrent_reference(
    kind,
    x,
    weight_ih,
    weight_hh,
    bias_ih,
    bias_hh,
    h0=None,
    c0=None,
    sequence_length=None,
    *,
    hidden_size,
    num_layers=1,
    bidirectional=False,
):
    """out, h_n (and c_n for lstm) in float64, the plain way: layer by layer, direction by
    direction, step by step. A sequence's padded steps leave its state alone and give zeros."""
    steps, batch, _ = x.shape
    units, directions = num_layers * (1 + bidirectional), 1 + bidirectional
    zeros = np.zeros((units, batch, hidden_size))
    h0 = zeros if h0 is None else np.asarray(h0, np.float64)
    c0 = zeros if c0 is None else np.asarray(c0, np.float64)
    lengths = np.full(batch, steps) if sequence_length is None else np.asarray(sequence_length)
    step = STEPS[kind]
    layer_in, h_n, c_n = np.asarray(x, np.float64), [], []
    for layer in range(num_layers):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            weights = [
                np.asarray(w[k], np.float64) for w in (weight_ih, weight_hh, bias_ih, bias_hh)
            ]
            h, c = h0[k], c0[k]
            out = np.zeros((steps, batch, hidden_size))
            for t in range(steps) if d == 0 else reversed(range(steps)):
                h_new, c_new = step(layer_in[t], h, c, *weights)
                valid = (t < lengths)[:, None]
                h, c = np.where(valid, h_new, h), np.where(valid, c_new, c)
                out[t] = np.where(valid, h_new, 0)
            outs.append(out)
            h_n.append(h)
            c_n.append(c)
        layer_in = np.concatenate(outs, axis=2)
    results = {"out": layer_in, "h_n": np.stack(h_n)}
    if kind == "lstm":
        results["c_n"] = np.stack(c_n)
    return results


def gru_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One step of every sequence: (h, c) after x (c passes through: gru has none)."""
    xr, xz, xn = np.split(x @ w_ih.T + b_ih, 3, axis=1)
    hr, hz, hn = np.split(h @ w_hh.T + b_hh, 3, axis=1)
    r, z = sigmoid(xr + hr), sigmoid(xz + hz)
    n = np.tanh(xn + r * hn)
    return (1 - z) * n + z * h, c


STEPS = {"lstm": lstm_step, "gru": gru_step}


def weights(kind, inputs, hidden, layers=1, bidirectional=False, dtype="float64", scale=0.5):
    """{slot: [one tensor per layer and direction]}, uniform in [-scale, scale)."""
    rows, directions = GATES[kind] * hidden, 1 + bidirectional
    made = {s: [] for s in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    for layer in range(layers):
        width = inputs if layer == 0 else directions * hidden
        for _ in range(directions):
            shapes = ((rows, width), (rows, hidden), (rows,), (rows,))
            for slot, shape in zip(made, shapes):
                made[slot].append(RNG.uniform(-scale, scale, shape).astype(dtype))
    return made


def network(kind, steps, batch, inputs, hidden, layers=1, bidirectional=False, dtype="float64"):
    """The op's inputs (x and the weights) and attrs."""
    x = RNG.standard_normal((steps, batch, inputs)).astype(dtype)
    attrs = {"hidden_size": hidden, "num_layers": layers, "bidirectional": bidirectional}
    return {"x": x, **weights(kind, inputs, hidden, layers, bidirectional, dtype)}, attrs


def check_against_reference(kind, inputs, attrs, dtype):
    got = run_op(kind, inputs, attrs)
    want = recurrent_reference(kind, **inputs, **attrs)
    for slot, value in want.items():
        (array,) = got[slot]
        assert array.dtype == np.dtype(dtype), slot
        np.testing.assert_allclose(array, value, **LOOSE[dtype], err_msg=f"output {slot}")


# -- forward ---------------------------------------------------------------------------------

# (T, B, I, H, L): one step, one sequence, one unit, several layers, inputs wider and narrower
# than the hidden state; H = 11 has both whole and partial blocks of the float32 AVX2 cells'
# eight units.
SHAPES = [
    (1, 1, 1, 1, 1),
    (5, 3, 4, 6, 1),
    (4, 2, 7, 3, 2),
    (3, 4, 2, 5, 3),
    (6, 1, 3, 2, 1),
    (3, 2, 5, 11, 1),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("steps", "batch", "inputs", "hidden", "layers"), SHAPES, ids=str)
def test_lstm_matches_numpy(steps, batch, inputs, hidden, layers, dtype):
    values, attrs = network("lstm", steps, batch, inputs, hidden, layers, dtype=dtype)
    check_against_reference("lstm", values, attrs, dtype)


def test_lstm_of_a_larger_network_matches_numpy():
    """Large enough that the cells' loops split across threads."""
    values, attrs = network("lstm", 7, 64, 32, 48, layers=2, dtype="float32")
    check_against_reference("lstm", values, attrs, "float32")


# -- gradients -------------------------------------------------------------------------------

OUTPUTS = {"lstm": ["out", "h_n", "c_n"], "gru": ["out", "h_n"]}


@pytest.mark.parametrize(
    ("steps", "batch", "inputs", "hidden", "layers"), [(3, 2, 3, 2, 1), (2, 2, 2, 3, 2)], ids=str
)
def test_lstm_gradients(steps, batch, inputs, hidden, layers):
    values, attrs = network("lstm", steps, batch, inputs, hidden, layers)
    check_grad("lstm", values, attrs, output=OUTPUTS["lstm"])


@pytest.mark.parametrize("output", ["out", "h_n", "c_n"])
def test_lstm_gradients_from_one_output(output):
    """The other outputs' gradients are absent, read as zeros."""
    values, attrs = network("lstm", 3, 2, 2, 2, layers=2)
    check_grad("lstm", values, attrs, output=output)


@pytest.mark.parametrize("wanted", [["x"], ["weight_hh"], ["bias_ih", "weight_ih"]])
def test_lstm_computes_the_gradients_asked_for(wanted):
    values, attrs = network("lstm", 3, 2, 2, 2)
    check_grad("lstm", values, attrs, wrt=wanted, output=OUTPUTS["lstm"])


def test_no_gradient_flows_back_through_the_reserve():
    values, attrs = network("lstm", 2, 1, 2, 2)
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", list(values["x"].shape), "float64")
        x.stop_gradient = False
        w = {s: [pc.data(f"{s}{k}", list(v.shape), "float64") for k, v in enumerate(vs)]
             for s, vs in values.items() if s != "x"}  # fmt: skip
        out, _, _, reserve = pc.ops.lstm(x, **w, **attrs)
        with pytest.raises(
            pc.ProgramError, match=r"op 'lstm' propagates no gradient through its output reserve"
        ):
            pc.gradients([pc.ops.add(pc.layers.mean(out), pc.layers.mean(reserve))], [x])


# -- bad inputs ------------------------------------------------------------------------------


def append(kind, values, attrs):
    """Append the op on data variables shaped and typed like ``values``."""
    prog = pc.Program()
    with pc.program_guard(prog):
        args = {}
        for slot, v in values.items():
            if isinstance(v, list):
                args[slot] = [
                    pc.data(f"{slot}{k}", list(a.shape), a.dtype.name) for k, a in enumerate(v)
                ]
            else:
                args[slot] = pc.data(slot, list(v.shape), v.dtype.name)
        return getattr(pc.ops, kind)(**args, **attrs)


def test_a_weight_of_the_wrong_shape_is_refused_by_name():
    values, attrs = network("lstm", 3, 2, 4, 5, layers=2)
    values["weight_hh"][1] = values["weight_hh"][1][:, :4]
    with pytest.raises(
        pc.ShapeError,
        match=r"op 'lstm'.*weight_hh\[1\] \(layer 1\) must be \[20, 5\] for hidden_size 5, got \[20, 4\]",
    ):
        append("lstm", values, attrs)


def test_an_input_weight_that_does_not_fit_x_is_refused():
    values, attrs = network("lstm", 3, 2, 4, 5)
    values["x"] = values["x"][:, :, :3]
    with pytest.raises(
        pc.ShapeError,
        match=r"weight_ih\[0\] \(layer 0\) must be \[20, 3\] for hidden_size 5 and x's 3 input "
        r"features \(its last axis\), got \[20, 4\]",
    ):
        append("lstm", values, attrs)


def test_a_hidden_size_the_weights_do_not_have_is_refused():
    values, attrs = network("lstm", 3, 2, 4, 5)
    with pytest.raises(
        pc.ShapeError, match=r"weight_ih\[0\] \(layer 0\) must be \[24, 4\] for hidden_size 6"
    ):
        append("lstm", values, {**attrs, "hidden_size": 6})


def test_weights_for_another_layer_count_are_refused():
    values, attrs = network("lstm", 3, 2, 4, 5)
    with pytest.raises(
        pc.ShapeError,
        match=r"weight_ih has 1 tensor\(s\), but num_layers 2 x 1 direction\(s\) needs 2",
    ):
        append("lstm", values, {**attrs, "num_layers": 2})


def test_weights_of_another_dtype_are_refused():
    values, attrs = network("lstm", 3, 2, 4, 5)
    values["bias_hh"][0] = values["bias_hh"][0].astype(np.float32)
    with pytest.raises(
        pc.ShapeError, match=r"bias_hh\[0\] \(layer 0\) is float32, but x is float64"
    ):
        append("lstm", values, attrs)


@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4, 5)], ids=str)
def test_x_must_be_time_major_rank_3(shape):
    values, attrs = network("lstm", 3, 2, 4, 5)
    values["x"] = np.zeros(shape)
    with pytest.raises(pc.ShapeError, match=r"x must be time-major \[T, B, I\] \(rank 3\)"):
        append("lstm", values, attrs)


@pytest.mark.parametrize("attr, value", [("hidden_size", 0), ("num_layers", 0)])
def test_sizes_below_one_are_refused(attr, value):
    values, attrs = network("lstm", 3, 2, 4, 5)
    with pytest.raises(pc.AttrError, match=rf"op 'lstm', attr '{attr}'"):
        append("lstm", values, {**attrs, attr: value})


# -- directions, initial states, padded batches ----------------------------------------------


def with_states(kind, values, attrs, lengths=None, dtype="float64"):
    """values plus random initial states (and sequence_length, when given)."""
    batch = values["x"].shape[1]
    units = attrs["num_layers"] * (1 + attrs["bidirectional"])
    for slot in ("h0", "c0") if kind == "lstm" else ("h0",):
        values[slot] = RNG.standard_normal((units, batch, attrs["hidden_size"])).astype(dtype)
    if lengths is not None:
        values["sequence_length"] = np.asarray(lengths)
    return values


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layers", [1, 2, 3])
def test_bidirectional_lstm_matches_numpy(layers, dtype):
    values, attrs = network("lstm", 5, 3, 4, 3, layers, bidirectional=True, dtype=dtype)
    check_against_reference("lstm", values, attrs, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bidirectional", [False, True], ids=["forward", "bidirectional"])
def test_lstm_with_initial_states_matches_numpy(bidirectional, dtype):
    values, attrs = network("lstm", 4, 3, 2, 5, 2, bidirectional, dtype)
    check_against_reference("lstm", with_states("lstm", values, attrs, dtype=dtype), attrs, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("index", ["int32", "int64"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["forward", "bidirectional"])
def test_padded_lstm_matches_numpy(bidirectional, index, dtype):
    """Lengths from 1 to T, unsorted: padded steps give zeros, the final states are each
    sequence's last valid one, the reverse direction starts at each sequence's last step."""
    values, attrs = network("lstm", 6, 4, 3, 4, 2, bidirectional, dtype)
    lengths = np.array([3, 6, 1, 5], index)
    values = with_states("lstm", values, attrs, lengths, dtype)
    check_against_reference("lstm", values, attrs, dtype)
    out = run_op("lstm", values, attrs)["out"][0]
    assert np.all(out[3:, 0] == 0) and np.all(out[1:, 2] == 0) and np.all(out[:, 1] != 0)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["forward", "bidirectional"])
@pytest.mark.parametrize("padded", [False, True], ids=["full", "padded"])
def test_lstm_gradients_with_states_and_directions(bidirectional, padded):
    values, attrs = network("lstm", 3, 3, 2, 2, 2, bidirectional)
    values = with_states("lstm", values, attrs, [2, 3, 1] if padded else None)
    floats = [s for s in values if s != "sequence_length"]  # (lengths are not differentiable)
    check_grad("lstm", values, attrs, wrt=floats, output=OUTPUTS["lstm"])


@pytest.mark.parametrize("length", [0, 5, -1])
def test_a_sequence_length_outside_1_to_t_is_refused_before_anything_is_computed(length):
    values, attrs = network("lstm", 4, 3, 2, 2)
    values["sequence_length"] = np.array([4, length, 2], np.int64)
    with pytest.raises(
        pc.KernelError,
        match=rf"op 'lstm'.*sequence_length\[1\] is {length}, outside \[1, 4\] \(T, the steps of x\)",
    ):
        run_op("lstm", values, attrs)


def test_a_sequence_length_of_another_batch_size_is_refused():
    values, attrs = network("lstm", 4, 3, 2, 2)
    values["sequence_length"] = np.array([4, 4], np.int64)
    with pytest.raises(
        pc.ShapeError,
        match=r"sequence_length must be \[B\] = \[3\], one length per sequence, got \[2\]",
    ):
        append("lstm", values, attrs)
    values["sequence_length"] = np.array([4.0, 4.0, 4.0])
    with pytest.raises(pc.ShapeError, match=r"sequence_length must be int32 or int64, got float64"):
        append("lstm", values, attrs)


@pytest.mark.parametrize("slot", ["h0", "c0"])
def test_an_initial_state_of_the_wrong_shape_is_refused(slot):
    values, attrs = network("lstm", 4, 3, 2, 2, bidirectional=True)
    values = with_states("lstm", values, attrs)
    values[slot] = values[slot][:1]
    with pytest.raises(
        pc.ShapeError, match=rf"{slot} must be \[L \* D, B, H\] = \[2, 3, 2\], got \[1, 3, 2\]"
    ):
        append("lstm", values, attrs)


def test_bidirectional_weights_are_named_by_direction():
    values, attrs = network("lstm", 3, 2, 4, 5, layers=2, bidirectional=True)
    values["weight_ih"][3] = values["weight_ih"][3][:, :5]
    with pytest.raises(
        pc.ShapeError,
        match=r"weight_ih\[3\] \(layer 1, reverse\) must be \[20, 10\] for hidden_size 5 and the "
        r"10 features of the layer below, got \[20, 5\]",
    ):
        append("lstm", values, attrs)


def test_bidirectional_lstm_layer_with_states_and_lengths():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [5, 3])
        h0 = pc.data("h0", [4, None, 2])
        c0 = pc.data("c0", [4, None, 2])
        lengths = pc.data("lengths", [None], "int32")
        out, (h_n, c_n) = pc.layers.lstm(
            x, 2, num_layers=2, bidirectional=True, initial_states=(h0, c0),
            sequence_length=lengths, name="bi",
        )  # fmt: skip
    assert out.shape == (None, 5, 4) and h_n.shape == (4, None, 2)
    names = [p.name for p in main.all_parameters()]
    assert names[:8] == [
        "bi.weight_ih_l0", "bi.weight_hh_l0", "bi.bias_ih_l0", "bi.bias_hh_l0",
        "bi.weight_ih_l0_reverse", "bi.weight_hh_l0_reverse", "bi.bias_ih_l0_reverse",
        "bi.bias_hh_l0_reverse",
    ]  # fmt: skip
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    feed = {
        "x": RNG.standard_normal((3, 5, 3)).astype(np.float32),
        "h0": RNG.standard_normal((4, 3, 2)).astype(np.float32),
        "c0": RNG.standard_normal((4, 3, 2)).astype(np.float32),
        "lengths": np.array([5, 2, 4], np.int32),
    }
    got = exe.run(main, feed=feed, fetch_list=[out, h_n, c_n], scope=scope)
    slots = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    params = {
        s: [scope.get(f"bi.{s}_l{k // 2}{'_reverse' * (k % 2)}") for k in range(4)] for s in slots
    }
    want = recurrent_reference(
        "lstm", feed["x"].transpose(1, 0, 2), **params, h0=feed["h0"], c0=feed["c0"],
        sequence_length=feed["lengths"], hidden_size=2, num_layers=2, bidirectional=True,
    )  # fmt: skip
    np.testing.assert_allclose(got[0], want["out"].transpose(1, 0, 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], want["h_n"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], want["c_n"], rtol=1e-5, atol=1e-5)


# -- the layer -------------------------------------------------------------------------------


def test_lstm_layer_names_its_parameters_as_pytorch():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [7, 3])  # [B, T, I], batch first
        out, (h_n, c_n) = pc.layers.lstm(x, 4, num_layers=2, name="enc")
    assert out.shape == (None, 7, 4)
    assert h_n.shape == c_n.shape == (2, None, 4)
    shapes = {p.name: p.shape for p in main.all_parameters()}
    assert shapes == {
        "enc.weight_ih_l0": (16, 3),
        "enc.weight_hh_l0": (16, 4),
        "enc.bias_ih_l0": (16,),
        "enc.bias_hh_l0": (16,),
        "enc.weight_ih_l1": (16, 4),
        "enc.weight_hh_l1": (16, 4),
        "enc.bias_ih_l1": (16,),
        "enc.bias_hh_l1": (16,),
    }
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    bound = 1 / np.sqrt(4)
    for name in shapes:
        value = scope.get(name)
        assert np.all(np.abs(value) <= bound) and np.any(value != 0), name
    batch = RNG.standard_normal((5, 7, 3)).astype(np.float32)
    got = exe.run(main, feed={"x": batch}, fetch_list=[out, h_n, c_n], scope=scope)
    params = {
        s: [scope.get(f"enc.{s}_l{k}") for k in range(2)]
        for s in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    }
    want = recurrent_reference(
        "lstm", batch.transpose(1, 0, 2), **params, hidden_size=4, num_layers=2
    )
    np.testing.assert_allclose(got[0], want["out"].transpose(1, 0, 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], want["h_n"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], want["c_n"], rtol=1e-5, atol=1e-5)


def test_lstm_layer_names_default_to_a_unique_prefix():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [3, 4, 2], append_batch_size=False)  # [T, B, I]
        pc.layers.lstm(x, 2, batch_first=False)
        pc.layers.lstm(x, 2, batch_first=False)
    names = [p.name for p in main.all_parameters()]
    assert names[0] == "lstm_0.weight_ih_l0" and names[4] == "lstm_1.weight_ih_l0"
    assert main.global_block().find_var("lstm_1.h_n") is not None  # the op named alike


def test_lstm_layer_trains():
    """A sequence's label is whether its first step's feature was positive: the network must
    carry it to the end."""
    rng = np.random.default_rng(5)
    data = rng.standard_normal((64, 6, 1)).astype(np.float32)
    labels = (data[:, 0, 0] > 0).astype(np.int64)[:, None]
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [6, 1])
        label = pc.layers.data("label", [1], dtype="int64")
        _, (h_n, _) = pc.layers.lstm(x, 8)
        logits = pc.layers.fc(pc.ops.reshape(h_n, shape=[-1, 8]), 2)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        _, params_grads = pc.optimizer.Adam(learning_rate=0.05).minimize(loss)
    assert len(params_grads) == 6  # the lstm's four and fc's two
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    losses = [
        float(exe.run(main, feed={"x": data, "label": labels}, fetch_list=[loss], scope=scope)[0])
        for _ in range(60)
    ]
    assert losses[-1] < 0.3 * losses[0], losses


def test_lstm_layer_refuses_an_x_of_unknown_features():
    with pc.program_guard(pc.Program(), pc.Program()):
        x = pc.data("x", [None, 4, None])
        with pytest.raises(
            pc.ProgramError, match=r"lstm: x must be \[B, T, I\] with a known feature count"
        ):
            pc.layers.lstm(x, 3)


# -- gru -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("steps", "batch", "inputs", "hidden", "layers"), SHAPES, ids=str)
def test_gru_matches_numpy(steps, batch, inputs, hidden, layers, dtype):
    values, attrs = network("gru", steps, batch, inputs, hidden, layers, dtype=dtype)
    check_against_reference("gru", values, attrs, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bidirectional", [False, True], ids=["forward", "bidirectional"])
@pytest.mark.parametrize("padded", [False, True], ids=["full", "padded"])
def test_gru_with_states_directions_and_lengths_matches_numpy(padded, bidirectional, dtype):
    values, attrs = network("gru", 6, 4, 3, 4, 2, bidirectional, dtype)
    lengths = np.array([3, 6, 1, 5], np.int32) if padded else None
    check_against_reference("gru", with_states("gru", values, attrs, lengths, dtype), attrs, dtype)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["forward", "bidirectional"])
@pytest.mark.parametrize("padded", [False, True], ids=["full", "padded"])
def test_gru_gradients(bidirectional, padded):
    values, attrs = network("gru", 3, 3, 2, 2, 2, bidirectional)
    values = with_states("gru", values, attrs, [2, 3, 1] if padded else None)
    floats = [s for s in values if s != "sequence_length"]
    check_grad("gru", values, attrs, wrt=floats, output=OUTPUTS["gru"])


@pytest.mark.parametrize("output", ["out", "h_n"])
def test_gru_gradients_from_one_output(output):
    values, attrs = network("gru", 3, 2, 2, 3)
    check_grad("gru", values, attrs, output=output)


def test_gru_weights_have_three_gate_blocks():
    values, attrs = network("lstm", 3, 2, 4, 5)  # four blocks
    with pytest.raises(
        pc.ShapeError,
        match=r"op 'gru'.*weight_ih\[0\] \(layer 0\) must be \[15, 4\] for hidden_size 5",
    ):
        append("gru", values, attrs)


def test_gru_layer_names_its_parameters_as_pytorch():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [4, 3])
        h0 = pc.data("h0", [2, None, 5])
        out, h_n = pc.layers.gru(x, 5, bidirectional=True, initial_states=h0, name="dec")
    assert out.shape == (None, 4, 10) and h_n.shape == (2, None, 5)
    shapes = {p.name: p.shape for p in main.all_parameters()}
    assert shapes == {
        f"dec.{what}{suffix}": shape
        for suffix in ("_l0", "_l0_reverse")
        for what, shape in (
            ("weight_ih", (15, 3)),
            ("weight_hh", (15, 5)),
            ("bias_ih", (15,)),
            ("bias_hh", (15,)),
        )
    }
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    feed = {
        "x": RNG.standard_normal((3, 4, 3)).astype(np.float32),
        "h0": RNG.standard_normal((2, 3, 5)).astype(np.float32),
    }
    got = exe.run(main, feed=feed, fetch_list=[out, h_n], scope=scope)
    slots = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    params = {s: [scope.get(f"dec.{s}_l0"), scope.get(f"dec.{s}_l0_reverse")] for s in slots}
    want = recurrent_reference(
        "gru", feed["x"].transpose(1, 0, 2), **params, h0=feed["h0"], hidden_size=5,
        bidirectional=True,
    )  # fmt: skip
    np.testing.assert_allclose(got[0], want["out"].transpose(1, 0, 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], want["h_n"], rtol=1e-5, atol=1e-5)


# -- float32 gradients: oneDNN's per-step products, and OpenBLAS's ----------------------------
# For float32 where oneDNN is enabled, each step's product with weight_hh is oneDNN's; float64,
# and float32 with oneDNN switched off, run OpenBLAS's (checked by finite differences above).


def analytic_grads(kind, values, attrs, seeds):
    """The op's outputs, then the gradients of sum(output * seed) w.r.t. every float input (the
    weight slots' tensors in order), from one program."""
    prog = pc.Program()
    with pc.program_guard(prog):
        feed, vars_ = {}, {}
        for slot, v in values.items():
            items = v if isinstance(v, list) else [v]
            made = [pc.data(f"{slot}{k}", list(a.shape), str(a.dtype)) for k, a in enumerate(items)]
            feed |= {f"{slot}{k}": a for k, a in enumerate(items)}
            vars_[slot] = made if isinstance(v, list) else made[0]
        outs = getattr(pc.ops, kind)(**vars_, **attrs)[: len(OUTPUTS[kind])]
        floats = [var for slot, var in vars_.items() if slot != "sequence_length"]
        wrt = [w for var in floats for w in (var if isinstance(var, list) else [var])]
        for var in wrt:
            var.stop_gradient = False
        seed_vars = [pc.data(f"seed{k}", list(s.shape), str(s.dtype)) for k, s in enumerate(seeds)]
        feed |= {f"seed{k}": s for k, s in enumerate(seeds)}
        loss = [pc.ops.sum(pc.ops.mul(o, s)) for o, s in zip(outs, seed_vars)]
        grads = pc.gradients(loss, wrt)
    return pc.Executor().run(prog, feed=feed, fetch_list=list(outs) + grads)


def recurrent_case(kind, bidirectional, padded, dtype):
    values, attrs = network(kind, 6, 4, 5, 11, 2, bidirectional, dtype)
    values = with_states(kind, values, attrs, [3, 6, 1, 5] if padded else None, dtype)
    want = recurrent_reference(kind, **values, **attrs)
    seeds = [RNG.standard_normal(want[slot].shape).astype(dtype) for slot in OUTPUTS[kind]]
    return values, attrs, seeds


def as_float32(values):
    return {
        s: [a.astype(np.float32) for a in v] if isinstance(v, list)
        else v if s == "sequence_length" else v.astype(np.float32)
        for s, v in values.items()
    }  # fmt: skip


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["forward", "bidirectional"])
@pytest.mark.parametrize("padded", [False, True], ids=["full", "padded"])
def test_float32_gradients_agree_with_float64(kind, bidirectional, padded):
    values, attrs, seeds = recurrent_case(kind, bidirectional, padded, "float64")
    want = analytic_grads(kind, values, attrs, seeds)
    got = analytic_grads(kind, as_float32(values), attrs, [s.astype(np.float32) for s in seeds])
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=f"result {k}")


@pytest.fixture
def openblas_only():
    """oneDNN switched off for the plans prepared in the test."""
    onednn = pytest.importorskip("paddle_ops_nn.onednn")
    previous = onednn.set_enabled(False)
    yield
    if previous:
        onednn.set_enabled(True)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["forward", "bidirectional"])
@pytest.mark.parametrize("padded", [False, True], ids=["full", "padded"])
def test_float32_on_openblas_alone_matches_onednn(kind, bidirectional, padded, request):
    values, attrs, seeds = recurrent_case(kind, bidirectional, padded, "float32")
    default = analytic_grads(kind, values, attrs, seeds)
    request.getfixturevalue("openblas_only")
    for k, (g, w) in enumerate(zip(analytic_grads(kind, values, attrs, seeds), default)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"result {k}")


# -- PyTorch ---------------------------------------------------------------------------------


def torch_run(torch, net, kind, x, states, lengths, weights):
    """PyTorch's out, final states and gradients (x, the initial states, every parameter by
    name) of sum(out * w_out) + sum(h_n * w_h) (+ sum(c_n * w_c))."""
    tx = torch.tensor(x, requires_grad=True)
    ts = [torch.tensor(s, requires_grad=True) for s in states]
    hx = tuple(ts) if kind == "lstm" else ts[0]
    if lengths is None:
        out, finals = net(tx, hx)
    else:
        rnn_utils = torch.nn.utils.rnn
        packed = rnn_utils.pack_padded_sequence(
            tx, torch.tensor(lengths), batch_first=True, enforce_sorted=False
        )
        out, finals = net(packed, hx)
        out, _ = rnn_utils.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    finals = list(finals) if kind == "lstm" else [finals]
    results = [out, *finals]
    loss = sum((r * torch.tensor(w)).sum() for r, w in zip(results, weights))
    loss.backward()
    grads = {"x": tx.grad, **{slot: s.grad for slot, s in zip(("h0", "c0"), ts)}}
    grads |= {name: p.grad for name, p in net.named_parameters()}
    return [r.detach().numpy() for r in results], {k: v.numpy() for k, v in grads.items()}


def ours_run(kind, state_dict, x, states, lengths, weights, hidden, layers, bidirectional):
    """The same from pc.layers.<kind> with PyTorch's parameters copied in by name."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        xv = pc.layers.data("x", list(x.shape[1:]))
        sv = [pc.data(f"s{k}", list(s.shape)) for k, s in enumerate(states)]
        wanted = [xv, *sv]
        for v in wanted:
            v.stop_gradient = False
        lv = None if lengths is None else pc.data("lengths", [None], "int64")
        initial = tuple(sv) if kind == "lstm" else sv[0]
        out, finals = getattr(pc.layers, kind)(
            xv, hidden, num_layers=layers, bidirectional=bidirectional, initial_states=initial,
            sequence_length=lv, name="net",
        )  # fmt: skip
        results = [out, *(finals if kind == "lstm" else [finals])]
        params = main.all_parameters()
        seeds = [pc.data(f"w{k}", list(r.shape)) for k, r in enumerate(results)]
        grads = pc.gradients(results, wanted + params, target_gradients=seeds)
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    assert sorted(p.name for p in params) == sorted(f"net.{k}" for k in state_dict)
    for name, value in state_dict.items():
        scope.set_var(f"net.{name}", value.numpy().copy())
    feed = {
        "x": x,
        **{f"s{k}": s for k, s in enumerate(states)},
        **{f"w{k}": w for k, w in enumerate(weights)},
    }
    if lengths is not None:
        feed["lengths"] = np.asarray(lengths, np.int64)
    values = exe.run(main, feed=feed, fetch_list=results + grads, scope=scope)
    names = ["x", *("h0", "c0")[: len(states)], *(p.name.removeprefix("net.") for p in params)]
    return values[: len(results)], dict(zip(names, values[len(results) :]))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["forward", "bidirectional"])
@pytest.mark.parametrize("padded", [False, True], ids=["full", "padded"])
def test_matches_pytorch_with_its_state_dict(kind, bidirectional, padded):
    """A torch.nn.LSTM / GRU's state_dict copies in by name, no transpose: the same outputs
    and gradients (x, initial states, every parameter) in float32."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    batch, steps, inputs, hidden, layers = 3, 5, 4, 11, 2  # (H: see SHAPES)
    units = layers * (1 + bidirectional)
    net = getattr(torch.nn, kind.upper())(
        inputs, hidden, num_layers=layers, bidirectional=bidirectional, batch_first=True
    )
    x = RNG.standard_normal((batch, steps, inputs)).astype(np.float32)
    states = [
        RNG.standard_normal((units, batch, hidden)).astype(np.float32)
        for _ in range(1 + (kind == "lstm"))
    ]
    lengths = [5, 2, 4] if padded else None
    shapes = [(batch, steps, hidden * (1 + bidirectional))] + [(units, batch, hidden)] * len(states)
    weights = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    theirs, their_grads = torch_run(torch, net, kind, x, states, lengths, weights)
    ours_, our_grads = ours_run(
        kind, net.state_dict(), x, states, lengths, weights, hidden, layers, bidirectional
    )
    for got, want, what in zip(ours_, theirs, ("out", "h_n", "c_n")):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=what)
    assert sorted(our_grads) == sorted(their_grads)
    for name, want in their_grads.items():
        np.testing.assert_allclose(our_grads[name], want, rtol=1e-4, atol=1e-5, err_msg=name)
