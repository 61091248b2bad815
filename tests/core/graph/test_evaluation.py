"""Op roles and the evaluation program: running a training program trains; its
``clone(for_test=True)`` computes the model only and never updates a parameter."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc

F32 = np.float32
X = np.array([[1, 2], [3, 4], [5, 6]], F32)
LABEL = np.array([[1], [2], [3]], F32)


def training_program(lr: float = 0.1):
    """Linear regression: pred = x @ w, loss = mean((pred - label)^2), w -= lr * dloss/dw."""
    main = pc.Program()
    block = main.global_block()
    with pc.program_guard(main):
        x = pc.data("x", [None, 2])
        label = pc.data("label", [None, 1])
        w = block.create_parameter("w", [2, 1])
        pred = pc.ops.matmul(x, w)
        loss = pc.ops.mean(pc.ops.square(pc.ops.sub(pred, label)))
        ((_, gw),) = pc.append_backward(loss)
        with main.role_guard("optimize"):
            block.append_op("sub", {"x": w, "y": pc.ops.scale(gw, scale=lr)}, {"out": w})
    return main, pred, loss


def fresh_scope() -> pc.Scope:
    scope = pc.Scope()
    scope.set_var("w", np.zeros((2, 1), F32))
    return scope


def test_ops_have_the_role_of_what_appended_them():
    main, _, _ = training_program()
    roles = [(op.type, op.role) for op in main.global_block().ops]
    assert roles[:4] == [(t, "forward") for t in ("matmul", "sub", "square", "mean")]
    assert roles[-2:] == [("scale", "optimize"), ("sub", "optimize")]
    assert {role for _, role in roles[4:-2]} == {"backward"}
    assert "  [backward]" in str(main) and "  [optimize]" in str(main)


def test_running_the_training_program_trains():
    main, pred, _ = training_program()
    scope = fresh_scope()
    exe = pc.Executor()
    with pytest.raises(pc.FeedError, match="'label'"):  # the update needs the loss, so the label
        exe.run(main, feed={"x": X}, fetch_list=[pred], scope=scope)
    exe.run(main, feed={"x": X, "label": LABEL}, fetch_list=[pred], scope=scope)
    assert np.any(scope.get("w") != 0)


def test_the_evaluation_program_computes_the_model_and_never_updates_a_parameter():
    main, pred, loss = training_program()
    test = main.clone(for_test=True)
    block = test.global_block()
    assert [op.type for op in block.ops] == ["matmul", "sub", "square", "mean"]
    assert {op.role for op in block.ops} == {"forward"}
    assert not [name for name in block.vars if "@GRAD" in name]  # only backward wrote them
    assert len(main.global_block().ops) > 4  # the training program is untouched
    scope = fresh_scope()
    scope.set_var("w", np.array([[1], [0.5]], F32))
    exe = pc.Executor()
    for _ in range(3):
        (got,) = exe.run(test, feed={"x": X}, fetch_list=[pred.name], scope=scope)
        np.testing.assert_allclose(got, X @ [[1], [0.5]])
        (value,) = exe.run(test, feed={"x": X, "label": LABEL}, fetch_list=[loss.name], scope=scope)
        np.testing.assert_allclose(value, np.mean((X @ [[1], [0.5]] - LABEL) ** 2), rtol=1e-6)
    np.testing.assert_array_equal(scope.get("w"), [[1], [0.5]])


def test_train_and_evaluate_on_one_scope():
    main, pred, _ = training_program(lr=0.02)
    test = main.clone(for_test=True)
    scope = fresh_scope()
    exe = pc.Executor()
    errors = []
    for _ in range(30):
        exe.run(main, feed={"x": X, "label": LABEL}, fetch_list=[], scope=scope)
        (got,) = exe.run(test, feed={"x": X}, fetch_list=[pred.name], scope=scope)
        errors.append(float(np.abs(got - LABEL).max()))
    assert errors[-1] < errors[0] / 4  # it learns, and evaluation sees what it learnt


def test_evaluation_switches_ops_with_an_is_test_attr_to_inference():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [4, 5], "float64")
        out, _ = pc.ops.toy_dropout(x, p=0.5, seed=7)
    test = prog.clone(for_test=True)
    assert prog.global_block().ops[0].attr("is_test") is False
    assert test.global_block().ops[0].attr("is_test") is True
    value = np.ones((4, 5))
    (train,) = pc.Executor().run(prog, feed={"x": value}, fetch_list=[out])
    (infer,) = pc.Executor().run(test, feed={"x": value}, fetch_list=[out.name])
    assert np.any(train == 0)  # dropped while training
    np.testing.assert_array_equal(infer, value)  # identity at inference


def test_roles_survive_saving_and_loading(tmp_path):
    main, _, _ = training_program()
    pc.save_program(main, tmp_path / "main.pbtxt")
    assert "role: BACKWARD" in (tmp_path / "main.pbtxt").read_text()
    loaded = pc.load_program(tmp_path / "main.pbtxt")
    assert [op.role for op in loaded.global_block().ops] == [
        op.role for op in main.global_block().ops
    ]
    assert loaded.serialize() == main.serialize()


def test_an_unknown_role_is_refused():
    with pytest.raises(pc.ProgramError, match="op role 'train' is none of forward, backward"):
        with pc.Program().role_guard("train"):
            pass
