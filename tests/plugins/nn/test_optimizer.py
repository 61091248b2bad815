"""paddle-ops-nn's optimizers: several steps against NumPy references, in place (no copy per
step), and their checks."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import FLOATS, pc

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

SHAPE = (5, 4)
RNG = np.random.default_rng(0)


def reference(op: str, attrs: dict, state: dict, grad: np.ndarray, lr: float) -> None:
    """One step of ``op`` in NumPy (float64), updating ``state`` (param, moments, powers)."""
    p = state["param"]
    if op == "sgd":
        state["param"] = p - lr * grad
    elif op == "momentum":
        mu = attrs.get("mu", 0.9)
        v = mu * state["velocity"] + grad
        state["velocity"] = v
        state["param"] = p - lr * (grad + mu * v if attrs.get("use_nesterov") else v)
    else:
        b1, b2 = attrs.get("beta1", 0.9), attrs.get("beta2", 0.999)
        eps = attrs.get("epsilon", 1e-8)
        if op == "adamw":
            p = p * (1 - lr * attrs.get("coeff", 0.01))
        m1 = b1 * state["moment1"] + (1 - b1) * grad
        m2 = b2 * state["moment2"] + (1 - b2) * grad**2
        b1p, b2p = state["beta1_pow"], state["beta2_pow"]
        state["param"] = p - lr / (1 - b1p) * m1 / (np.sqrt(m2 / (1 - b2p)) + eps)
        state.update(moment1=m1, moment2=m2, beta1_pow=b1p * b1, beta2_pow=b2p * b2)


SLOTS = {
    "sgd": ["param"],
    "momentum": ["param", "velocity"],
    "adam": ["param", "moment1", "moment2", "beta1_pow", "beta2_pow"],
    "adamw": ["param", "moment1", "moment2", "beta1_pow", "beta2_pow"],
}
CASES = [
    ("sgd", {}),
    ("momentum", {}),
    ("momentum", {"mu": 0.5, "use_nesterov": True}),
    ("adam", {}),
    ("adam", {"beta1": 0.5, "beta2": 0.9, "epsilon": 1e-3}),
    ("adamw", {"coeff": 0.1}),
]


def program(op: str, attrs: dict, dtype: str):
    """One ``op`` step updating its state variables (persistable) in place; grad and
    learning_rate are fed."""
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        grad = pc.data("grad", list(SHAPE), dtype)
        lr = pc.data("learning_rate", [1], dtype)
        state = {}
        for slot in SLOTS[op]:
            shape = [1] if slot.endswith("_pow") else list(SHAPE)
            state[slot] = block.create_var(slot, shape, dtype, persistable=True)
        inputs = {**state, "grad": grad, "learning_rate": lr}
        outputs = {f"{slot}_out": var for slot, var in state.items()}
        block.append_op(op, inputs, outputs, attrs)
    return prog


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("op", "attrs"), CASES, ids=lambda c: str(c))
def test_steps_match_numpy_and_update_in_place(op, attrs, dtype):
    prog = program(op, attrs, dtype)
    start = {
        "param": RNG.standard_normal(SHAPE),
        "velocity": np.zeros(SHAPE),
        "moment1": np.zeros(SHAPE),
        "moment2": np.zeros(SHAPE),
        "beta1_pow": np.array([attrs.get("beta1", 0.9)]),
        "beta2_pow": np.array([attrs.get("beta2", 0.999)]),
    }
    want = {slot: start[slot].copy() for slot in SLOTS[op]}
    scope = pc.Scope()
    for slot in SLOTS[op]:
        scope.set_var(slot, start[slot].astype(dtype))
    held = scope.get("param")
    exe = pc.Executor()
    for step in range(4):
        grad = RNG.standard_normal(SHAPE)
        lr = 0.1 / (step + 1)
        feed = {"grad": grad.astype(dtype), "learning_rate": np.array([lr], dtype)}
        exe.run(prog, feed=feed, scope=scope)
        reference(op, attrs, want, grad.astype(dtype).astype(np.float64), lr)
    rtol = 1e-4 if dtype == "float32" else 1e-12
    for slot in SLOTS[op]:
        np.testing.assert_allclose(scope.get(slot), want[slot], rtol=rtol, atol=rtol, err_msg=slot)
    assert scope.get("param") is held  # updated where it lives
    plan = exe.prepare(prog, feed, [])
    assert plan.compiled and plan._runner.scratch_copies == 0  # in place: no copy per step


def test_a_learning_rate_of_more_than_one_element_is_refused():
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        p = block.create_var("p", [3], persistable=True)
        with pytest.raises(
            pc.ShapeError, match=r"learning_rate must hold one element, got shape \[2\]"
        ):
            block.append_op(
                "sgd",
                {"param": p, "grad": pc.data("g", [3]), "learning_rate": pc.data("lr", [2])},
                {"param_out": p},
            )
        with pytest.raises(pc.ShapeError, match="grad is float64, but param is float32"):
            block.append_op(
                "sgd",
                {
                    "param": p,
                    "grad": pc.data("g64", [3], "float64"),
                    "learning_rate": pc.data("lr1", [1]),
                },
                {"param_out": p},
            )
        with pytest.raises(pc.ShapeError, match=r"grad must have param's shape \[3\], got \[4\]"):
            block.append_op(
                "sgd",
                {"param": p, "grad": pc.data("g4", [4]), "learning_rate": pc.data("lr2", [1])},
                {"param_out": p},
            )


@pytest.mark.parametrize(
    ("attrs", "attr"),
    [({"beta1": 1.0}, "beta1"), ({"epsilon": 0.0}, "epsilon"), ({"beta2": -0.1}, "beta2")],
)
def test_adam_attrs_out_of_range(attrs, attr):
    with pytest.raises(pc.AttrError, match=f"attr '{attr}'"):
        program("adam", attrs, "float32")
