"""Python's operators on Variables and Expressions append ops (graph/arithmetic.py)."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc

X = np.array([[-2.5, -1.0, 0.0], [0.5, 1.5, 3.0]])
Y = np.array([1.5, -2.0, 4.0])
I = np.array([-7, -3, 0, 5, 8], np.int32)  # noqa: E741


def run(prog, feed, fetch):
    return pc.Executor().run(prog, feed=feed, fetch_list=fetch)


def test_float_operators_compute_what_numpys_do():
    prog = pc.Program()
    with pc.program_guard(prog):
        x, y = pc.data("x", [2, 3], "float64"), pc.data("y", [3], "float64")
        m = pc.data("m", [3, 2], "float64")
        outs = [
            x + y,
            2 + x,
            x - 1.5,
            1 - y,
            x * y,
            0.5 * x,
            x / y,
            3 / y,
            x % y,
            7.5 % y,
            abs(x) ** y,
            2.0**x,
            -x,
            +x,
            abs(x),
            x @ m,
            -(2 * x + y) / 4 - abs(x) ** 2,
        ]
    M = np.arange(6.0).reshape(3, 2)
    got = run(prog, {"x": X, "y": Y, "m": M}, outs)
    want = [
        X + Y,
        2 + X,
        X - 1.5,
        1 - Y,
        X * Y,
        0.5 * X,
        X / Y,
        3 / Y,
        X % Y,
        7.5 % Y,
        abs(X) ** Y,
        2.0**X,
        -X,
        X,
        abs(X),
        X @ M,
        -(2 * X + Y) / 4 - abs(X) ** 2,
    ]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-15)
        assert g.dtype == np.float64


def test_integer_operators_floor_as_numpys_do():
    prog = pc.Program()
    with pc.program_guard(prog):
        i = pc.data("i", [5], "int32")
        outs = [i // 3, i // -3, -7 // (i + 10), i % 3, 10 % (i + 10), i * 2 - 1]
    got = run(prog, {"i": I}, outs)
    for g, w in zip(got, [I // 3, I // -3, -7 // (I + 10), I % 3, 10 % (I + 10), I * 2 - 1]):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == np.int32


def test_a_number_becomes_a_0d_constant_of_the_tensors_dtype():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [2, 3], "float32")
        y = 3 * x
    ops = prog.global_block().ops
    assert [op.type for op in ops] == ["fill_constant", "mul"]
    assert ops[0].attrs["shape"] == [] and ops[0].attrs["dtype"] == "float32"
    assert ops[1].input("x") == [ops[0].output("out")[0]] and ops[1].input("y") == ["x"]
    assert y.dtype == "float32" and list(y.shape) == [2, 3]


def test_gradients_flow_through_the_operators():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [2, 3], "float64")
        x.stop_gradient = False
        loss = pc.ops.sum(x * x / 2 - 3 * x)
        (grad,) = pc.gradients([loss], [x])
    (got,) = run(prog, {"x": X}, [grad])
    np.testing.assert_allclose(got, X - 3, rtol=1e-15)


def test_what_python_would_compute_otherwise_is_refused_with_what_to_write():
    with pc.program_guard(pc.Program()):
        x, i = pc.data("x", [3], "float32"), pc.data("i", [3], "int32")
        u, b = pc.data("u", [3], "uint8"), pc.data("b", [3], "bool")
        big = pc.data("big", [3], "int64")
        cases = [
            (lambda: i / 2, r"^'i' \(int32\) / 2: '/' of integers would floor them .* write //"),
            (lambda: x // 2, r"^'x' \(float32\) // 2: '//' of floats .* pc.ops.floor\(a / b\)"),
            (lambda: i * 2.5, r"2.5 is a float, .* NumPy would compute in floats; cast"),
            (lambda: i * 2.0, "2.0 is a float"),
            (lambda: i + float("nan"), "nan is a float"),
            (lambda: i**-1, "a negative power of integers is a fraction"),
            (lambda: u + 300, r"300 does not fit the tensor's dtype uint8 \[0, 255\]"),
            (lambda: big + (2**53 + 1), "beyond 2\\*\\*53, where a constant is no longer exact"),
            (lambda: x + 10**400, "is beyond the range of float64"),
            (lambda: x @ 2, "'@' multiplies matrices, not a matrix by a number"),
            (lambda: b + 1, "arithmetic of bool tensors is not offered"),
            (lambda: -b, "^-'b' \\(bool\\): arithmetic of bool tensors"),
            (lambda: np.ones(3) * x, "are variables and numbers, not ndarray"),
            (lambda: x + "a", "^'x' \\(float32\\) \\+ 'a': .* not str"),
        ]
        for make, message in cases:
            with pytest.raises(pc.OpInputError, match=message):
                make()


def test_numbers_take_the_tensors_dtype_as_numpy_would():
    prog = pc.Program()
    with pc.program_guard(prog):
        x, i = pc.data("x", [3], "float64"), pc.data("i", [3], "int32")
        outs = [x + 0.1, x * True, i * True, np.float64(0.1) * x, i + np.int64(7), x + np.inf]
    got = run(prog, {"x": X[0], "i": I[:3]}, outs)
    want = [X[0] + 0.1, X[0] * True, I[:3] * True, 0.1 * X[0], I[:3] + 7, X[0] + np.inf]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)  # (0.1 exactly: the constant is a double)
        assert g.dtype == w.dtype


def test_comparisons_stay_pythons_so_variables_stay_dict_keys():
    with pc.program_guard(pc.Program()):
        x, y = pc.data("x", [3]), pc.data("y", [3])
    assert x != y and x == x
    assert {x: 1, y: 2}[y] == 2


def test_expressions_compute_into_their_model():
    model = pc.Model()
    x = pc.layers.data("x", [3], model=model)
    z = 1 - x * 2
    assert isinstance(z, pc.Expression) and z.model is model
    np.testing.assert_array_equal(z.value(feed={x: np.ones((2, 3), np.float32)}), -np.ones((2, 3)))
    # A Variable of the model's program beside an expression: the expression's model builds.
    for mixed in (z + x.variable, x.variable + z):
        assert isinstance(mixed, pc.Expression) and mixed.model is model
    other = pc.layers.data("x", [3], model=pc.Model())
    with pytest.raises(pc.ProgramError, match="belongs to another model"):
        z + other
