"""paddle-ops-nn activations against NumPy, and their gradients by finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import FLOATS, assert_matches, check_grad, pc, rand, run1

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

# op: (NumPy reference, attrs)
ACTIVATIONS = {
    "relu": (lambda x: np.maximum(x, 0).astype(x.dtype), {}),
}
# Shapes: a matrix, a scalar, an empty tensor, an odd length, a size split across threads.
SHAPES = [(3, 4), (), (0,), (37,), (1025, 65)]


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_numpy(op, dtype, shape):
    reference, attrs = ACTIVATIONS[op]
    x = rand(np.random.default_rng(0), shape, dtype)
    assert_matches(run1(op, {"x": x}, attrs), reference(x))


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_gradient(op):
    _, attrs = ACTIVATIONS[op]
    x = rand(np.random.default_rng(1), (3, 5), "float64")
    x[np.abs(x) < 0.05] += 0.1  # keep finite differences off the kinks
    check_grad(op, {"x": x}, attrs)


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_in_place(op):
    """An activation may write its input: out aliases x, and the gradient still flows."""
    _, attrs = ACTIVATIONS[op]
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        x = pc.data("x", [4], "float64")
        w = block.create_parameter("w", [4], "float64")
        h = pc.ops.mul(x, w)
        block.append_op(op, {"x": h}, {"out": h}, attrs)
        loss = pc.ops.sum(h)
        (gw,) = pc.gradients([loss], [w])
    xv = np.array([1.0, -2.0, 3.0, -4.0])
    wv = np.array([0.5, 0.5, -0.5, -0.5])
    scope = pc.Scope()
    scope.set_var("w", wv)
    got_loss, got_gw = pc.Executor().run(prog, feed={"x": xv}, fetch_list=[loss, gw], scope=scope)
    reference = ACTIVATIONS[op][0]
    np.testing.assert_allclose(got_loss, reference(xv * wv).sum())
    eps = 1e-6
    numeric = [
        (reference(xv * (wv + eps * e)).sum() - reference(xv * (wv - eps * e)).sum()) / (2 * eps)
        for e in np.eye(4)
    ]
    np.testing.assert_allclose(got_gw, numeric, rtol=1e-6, atol=1e-9)


def test_other_dtypes_are_refused():
    with pytest.raises(pc.KernelNotFoundError, match="no kernel for device cpu and dtype int32"):
        run1("relu", {"x": np.ones(3, np.int32)})
