"""Backward through programs that rewrite variables in place: gradients are kept per version of
a variable, checked against finite differences; a gradient that needs an overwritten value is
refused, naming the ops."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3))
W = RNG.standard_normal((3, 2))


def numeric_grad(f, w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        plus, minus = w.copy(), w.copy()
        plus[i] += eps
        minus[i] -= eps
        grad[i] = (f(plus) - f(minus)) / (2 * eps)
    return grad


def build(forward):
    """A program of x (fed) and parameter w through ``forward(block, x, w) -> loss``, with
    the gradient of the loss w.r.t. w appended; returns the gradient computed by a run."""
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        x = pc.data("x", [2, 3], "float64")
        w = block.create_parameter("w", [3, 2], "float64")
        loss = forward(block, x, w)
        (gw,) = pc.gradients([loss], [w])
    scope = pc.Scope()
    scope.set_var("w", W.copy())
    (got,) = pc.Executor().run(prog, feed={"x": X}, fetch_list=[gw], scope=scope)
    return prog, got


def test_an_op_rewriting_its_input_in_place_gets_the_right_gradient():
    def forward(block, x, w):
        h = pc.ops.matmul(x, w)
        block.append_op("tanh", {"x": h}, {"out": h})  # h = tanh(h)
        return pc.ops.sum(h)

    prog, got = build(forward)
    want = numeric_grad(lambda w: np.tanh(X @ w).sum(), W)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # the gradient of the h that tanh wrote flows into tanh_grad only: nothing is summed
    assert "add_n" not in [op.type for op in prog.global_block().ops]


def test_versions_and_several_uses_combine():
    def forward(block, x, w):
        h = pc.ops.matmul(x, w)
        block.append_op("tanh", {"x": h}, {"out": h})  # h1 = tanh(h0)
        t = pc.ops.mul(h, h)  # uses h1 twice
        block.append_op("scale", {"x": t}, {"out": t}, {"scale": 3.0})  # t1 = 3 t0
        return pc.ops.sum(pc.ops.add(t, h))  # and h1 a third time

    _, got = build(forward)

    def f(w):
        h1 = np.tanh(X @ w)
        return (3 * h1 * h1 + h1).sum()

    np.testing.assert_allclose(got, numeric_grad(f, W), rtol=1e-6)


def test_gradients_of_what_is_not_a_variable_are_refused():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [2])
        y = pc.ops.sum(x)
        for targets, inputs, named in [
            ("nope", [x], "'nope' is not a Variable but str"),
            (y, [3], "3 .* but int"),
        ]:
            with pytest.raises(pc.ProgramError, match=rf"^gradients\(\): {named} \(pass the"):
                pc.gradients(targets, inputs)


def test_a_gradient_needing_a_value_rewritten_in_place_is_refused():
    def forward(block, x, w):
        h = pc.ops.matmul(x, w)
        block.append_op("square", {"x": h}, {"out": h})  # square_grad needs the old h
        return pc.ops.sum(h)

    with pytest.raises(pc.ProgramError) as err:
        build(forward)
    assert str(err.value) == (
        "op 'square_grad' (the gradient of op 'square') needs 'matmul_0.out' as op 'square' "
        "read it, but op 'square' rewrites 'matmul_0.out' in place afterwards; give op 'square' "
        "an output of its own (e.g. 'matmul_0.out_1') so that the value stays available"
    )


def test_a_later_rewrite_of_a_value_a_gradient_needs_is_refused():
    def forward(block, x, w):
        h = pc.ops.matmul(x, w)
        y = pc.ops.sin(h)  # sin_grad needs h as sin read it
        block.append_op("scale", {"x": h}, {"out": h}, {"scale": 2.0})
        return pc.ops.sum(pc.ops.add(y, h))

    with pytest.raises(pc.ProgramError, match=r"op 'sin' read it, but op 'scale' rewrites"):
        build(forward)


def test_minimizing_twice_is_refused_with_a_remedy_the_user_can_apply():
    with pc.program_guard(pc.Program(), pc.Program()):
        x = pc.layers.data("x", [4])
        loss = pc.layers.mean(pc.layers.fc(x, 2))
        pc.optimizer.SGD(0.1).minimize(loss)
        with pytest.raises(pc.ProgramError) as err:
            pc.optimizer.SGD(0.1).minimize(loss)
    assert "but op 'sgd' rewrites" in str(err.value)
    assert str(err.value).endswith(
        "it updates a parameter for an earlier minimize(), and a program's gradients are taken "
        "before its updates: minimize once (of the sum of the losses, if several); a loaded "
        "model's program holds its updates already, and model.run() runs one training step"
    )


def test_gradients_through_the_while_block_form_point_to_while_loop():
    with pc.program_guard(pc.Program(), pc.Program()):
        x = pc.layers.data("x", [1], append_batch_size=False)
        x.stop_gradient = False
        i = pc.ops.fill_constant(shape=[1], dtype="int64", value=0)
        n = pc.ops.fill_constant(shape=[1], dtype="int64", value=3)
        cond = pc.ops.less(i, n)
        acc = pc.layers.assign(x)
        loop = pc.control_flow.While(cond)
        with loop.block():
            pc.layers.assign(pc.ops.mul(acc, x), output=acc)
            pc.layers.assign(
                pc.ops.add(i, pc.ops.fill_constant(shape=[1], dtype="int64", value=1)), output=i
            )
            pc.layers.assign(pc.ops.less(i, n), output=cond)
        with pytest.raises(pc.ProgramError) as err:
            pc.gradients([acc], [x])
    assert "but op 'while_block' rewrites" in str(err.value)
    assert str(err.value).endswith(
        "the While block form updates its loop variables in place; for gradients, write the "
        "loop with pc.control_flow.while_loop, whose results are new variables"
    )


def test_a_rewrite_the_gradients_do_not_need_is_fine():
    def forward(block, x, w):
        h = pc.ops.matmul(x, w)
        y = pc.ops.tanh(h)  # tanh_grad needs only its output
        block.append_op("scale", {"x": h}, {"out": h}, {"scale": 2.0})
        return pc.ops.sum(pc.ops.add(y, h))

    _, got = build(forward)
    f = lambda w: (np.tanh(X @ w) + 2 * (X @ w)).sum()  # noqa: E731
    np.testing.assert_allclose(got, numeric_grad(f, W), rtol=1e-6)


def two_layer():
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        x = pc.data("x", [2, 3], "float64")
        w = block.create_parameter("w", [3, 2], "float64")
        v = block.create_parameter("v", [2, 2], "float64")
        frozen = block.create_parameter("frozen", [2, 2], "float64", trainable=False)
        h = pc.ops.tanh(pc.ops.matmul(x, w))
        loss = pc.ops.sum(pc.ops.matmul(pc.ops.matmul(h, v), frozen))
    return prog, loss, h


def test_append_backward_takes_every_trainable_parameter_by_default():
    prog, loss, _ = two_layer()
    with pc.program_guard(prog):
        pairs = pc.append_backward(loss)
    assert [(p.name, g.name) for p, g in pairs] == [("w", "w@GRAD"), ("v", "v@GRAD")]


def test_append_backward_with_a_parameter_list_and_a_no_grad_set():
    prog, loss, h = two_layer()
    with pc.program_guard(prog):
        pairs = pc.append_backward(loss, parameter_list=["v", "frozen"], no_grad_set=[h])
    assert [p.name for p, _ in pairs] == ["v", "frozen"]
    prog, loss, h = two_layer()
    with pc.program_guard(prog):
        # no gradient flows through h, so w gets none
        assert [p.name for p, _ in pc.append_backward(loss, no_grad_set={h.name})] == ["v"]
    prog, loss, _ = two_layer()
    with pc.program_guard(prog):
        assert pc.append_backward(loss, parameter_list=["w"], no_grad_set=["w"]) == []


@pytest.mark.parametrize(
    "kwargs, problem",
    [
        ({"parameter_list": ["nope"]}, "parameter_list: 'nope' is not a variable of the program"),
        ({"parameter_list": ["x"]}, "'x' in parameter_list is not a Parameter"),
        ({"no_grad_set": "x"}, "no_grad_set must be a collection of Variables or names"),
    ],
)
def test_append_backward_refuses_what_it_cannot_use(kwargs, problem):
    prog, loss, _ = two_layer()
    with pc.program_guard(prog), pytest.raises(pc.ProgramError, match=problem):
        pc.append_backward(loss, **kwargs)
