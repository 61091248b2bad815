"""Control flow: while_loop, cond and the While block form, run against NumPy references; the
mistakes each catches, naming the op and its blocks."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc
from paddle_core import ops

F32 = np.float32


def const(value, dtype="int64", shape=(1,)):
    return ops.fill_constant(shape=list(shape), dtype=dtype, value=value)


def accumulate(n_steps=None):
    """while i < n: i += 1; s += x * i   (n fed, or a constant)"""
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [4], "float32")
        n = pc.data("n", [1], "int64") if n_steps is None else const(n_steps)
        i, s = const(0), const(0.0, "float32", [4])

        def body(i, s):
            i = ops.add(i, const(1))
            return i, ops.add(s, ops.mul(x, ops.cast(i, dtype="float32")))

        i_out, s_out = pc.layers.while_loop(lambda i, s: ops.less(i, n), body, [i, s])
    return main, i_out, s_out


def reference_accumulate(x, n):
    s = np.zeros_like(x)
    for i in range(1, n + 1):
        s = s + x * F32(i)
    return s


@pytest.mark.parametrize("n", [0, 1, 7])
def test_while_with_an_accumulator(n):
    main, i_out, s_out = accumulate()
    x = np.array([1.0, -2.0, 0.5, 3.0], F32)
    exe = pc.Executor()
    i, s = exe.run(main, feed={"x": x, "n": np.array([n])}, fetch_list=[i_out, s_out])
    assert i.tolist() == [n]
    np.testing.assert_allclose(s, reference_accumulate(x, n), rtol=1e-6)


def test_while_reruns_and_leaves_its_inputs_alone():
    main, _, s_out = accumulate()
    exe = pc.Executor()
    x = np.arange(4, dtype=F32)
    n = np.array([3])
    first = exe.run(main, feed={"x": x, "n": n}, fetch_list=[s_out])[0]
    second = exe.run(main, feed={"x": x, "n": n}, fetch_list=[s_out])[0]
    np.testing.assert_array_equal(first, second)
    assert x.tolist() == [0, 1, 2, 3] and n.tolist() == [3]


def test_while_body_runs_compiled():
    main, _, s_out = accumulate()
    plan = pc.Executor().prepare(main, {"x": ([4], "float32"), "n": ([1], "int64")}, [s_out])
    assert plan.compiled
    (step,) = [s for s in plan.steps if s.op.type == "while_block"]
    assert step.fn.body.compiled and "add" in step.fn.body.op_types
    assert step.fn.body.loop_runner is not None  # run by the compiled runtime's run_while


def test_pruning_drops_a_loop_nothing_needs():
    main, _, _ = accumulate(3)
    with pc.program_guard(main):
        other = ops.scale(main.global_block().var("x"), scale=2.0)
    plan = pc.Executor().prepare(main, {"x": ([4], "float32")}, [other])
    assert plan.op_types == ["scale"]


def test_while_swaps_loop_variables():
    main = pc.Program()
    with pc.program_guard(main):
        a, b = const(1.0, "float32"), const(2.0, "float32")
        i, n = const(0), const(3)
        _, a_out, b_out = pc.layers.while_loop(
            lambda i, a, b: ops.less(i, n), lambda i, a, b: (ops.add(i, const(1)), b, a), [i, a, b]
        )
    a, b = pc.Executor().run(main, fetch_list=[a_out, b_out])
    assert (a.tolist(), b.tolist()) == ([2.0], [1.0])  # three swaps


def test_nested_while_and_cond_in_a_body():
    """for i < 3: for j < 4: t += (i == 1 ? j : -j)"""
    main = pc.Program()
    with pc.program_guard(main):

        def inner(j, t, i):
            odd = ops.equal(i, const(1))
            jf = ops.cast(j, dtype="float32")
            step = pc.layers.cond(odd, lambda: jf, lambda: ops.neg(jf))
            return ops.add(j, const(1)), ops.add(t, step), i

        def outer(i, t):
            _, t, _ = pc.layers.while_loop(
                lambda j, t, i: ops.less(j, const(4)), inner, [const(0), t, i]
            )
            return ops.add(i, const(1)), t

        _, total = pc.layers.while_loop(
            lambda i, t: ops.less(i, const(3)), outer, [const(0), const(0.0, "float32")]
        )
    expected = sum((j if i == 1 else -j) for i in range(3) for j in range(4))
    exe = pc.Executor()
    assert exe.run(main, fetch_list=[total])[0].tolist() == [expected]
    (step,) = [s for s in exe.prepare(main, {}, [total]).steps if s.op.type == "while_block"]
    assert step.fn.body.loop_runner is None  # a body holding a loop: Python between its runs


def test_body_reads_a_parameter_from_the_scope():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        w = pc.layers.create_parameter([2], "float32", attr="w")
        i, s = const(0), const(0.0, "float32", [2])
        _, s_out = pc.layers.while_loop(
            lambda i, s: ops.less(i, const(2)),
            lambda i, s: (ops.add(i, const(1)), ops.add(s, w)),
            [i, s],
        )
    scope = pc.Scope()
    scope.set_var("w", np.array([1.5, -1.0], F32))
    exe = pc.Executor()
    out = exe.run(main, fetch_list=[s_out], scope=scope)[0]
    assert out.tolist() == [3.0, -2.0]
    plan = exe.prepare(main, {}, [s_out])
    (step,) = [s for s in plan.steps if s.op.type == "while_block"]
    assert step.fn.body.loop_runner is not None  # w comes in as an input of the loop


@pytest.mark.parametrize("t, expected", [(0.0, [2.0, 4.0, 6.0]), (100.0, [-1.0, -2.0, -3.0])])
def test_cond_on_a_runtime_value(t, expected):
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [3], "float32")
        limit = pc.data("t", [], "float32")
        pred = ops.greater(ops.sum(x), limit)
        out = pc.layers.cond(pred, lambda: ops.scale(x, scale=2.0), lambda: ops.neg(x))
    x = np.array([1, 2, 3], F32)
    got = pc.Executor().run(main, feed={"x": x, "t": np.array(t, F32)}, fetch_list=[out])[0]
    assert got.tolist() == expected


def test_cond_returns_several_values_and_outer_variables():
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [2], "float32")
        flag = pc.data("flag", [1], "bool")
        a, b = pc.layers.cond(flag, lambda: (x, ops.exp(x)), lambda: (ops.abs(x), x))
    exe = pc.Executor()
    x = np.array([-1.0, 0.0], F32)
    a1, b1 = exe.run(main, feed={"x": x, "flag": np.array([True])}, fetch_list=[a, b])
    np.testing.assert_allclose(a1, x)
    np.testing.assert_allclose(b1, np.exp(x), rtol=1e-6)
    a2, b2 = exe.run(main, feed={"x": x, "flag": np.array([False])}, fetch_list=[a, b])
    np.testing.assert_allclose(a2, np.abs(x))
    np.testing.assert_allclose(b2, x)


def test_while_block_form():
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [3], "float32")
        i, n = const(0), const(4)
        acc = const(0.0, "float32", [3])
        c = ops.less(i, n)
        loop = pc.layers.While(c)
        with loop.block():
            pc.layers.assign(ops.add(acc, x), output=acc)
            pc.layers.assign(ops.add(i, const(1)), output=i)
            pc.layers.assign(ops.less(i, n), output=c)
    x = np.array([1, 2, 3], F32)
    acc_v, i_v = pc.Executor().run(main, feed={"x": x}, fetch_list=[acc, i])
    assert acc_v.tolist() == [4.0, 8.0, 12.0] and i_v.tolist() == [4]


def test_loaded_program_runs_the_same():
    main, _, s_out = accumulate()
    loaded = pc.Program.parse(main.serialize())
    feed = {"x": np.array([1, 2, 3, 4], F32), "n": np.array([5])}
    exe = pc.Executor()
    want = exe.run(main, feed=feed, fetch_list=[s_out.name])[0]
    got = exe.run(loaded, feed=feed, fetch_list=[s_out.name])[0]
    np.testing.assert_array_equal(want, got)


# -- mistakes ---------------------------------------------------------------------------------


def test_condition_must_be_a_bool_scalar():
    main = pc.Program()
    with pc.program_guard(main):
        i = const(0)
        with pytest.raises(pc.ShapeError, match=r"while_block.*block 0.*bool scalar.*int64\[1\]"):
            pc.layers.while_loop(lambda i: i, lambda i: i, [i])
        v = pc.data("v", [2], "bool")
        with pytest.raises(pc.ShapeError, match=r"cond_block.*bool scalar.*bool\[2\]"):
            pc.layers.cond(v, lambda: i, lambda: i)


def test_while_block_op_refuses_a_non_bool_condition():
    main = pc.Program()
    block = main.global_block()
    c = block.create_var("c", [1], "float32")
    body = main.create_block()
    main.rollback()
    with pytest.raises(pc.ShapeError, match=r"in block 0, the condition 'c' must be a bool scalar"):
        block.append_op(
            "while_block", {"condition": c, "carried": [c]}, {"out": [c]}, {"sub_block": body}
        )


def test_loop_variables_keep_their_shape_and_dtype():
    main = pc.Program()
    with pc.program_guard(main):
        i, s = const(0), const(0.0, "float32", [2])
        with pytest.raises(
            pc.ShapeError,
            match=r"while_block' in block 0, body block 1\): loop variable 1 .* starts as "
            r"float32\[2\] but body_fn returns .* float64\[2\]",
        ):
            pc.layers.while_loop(
                lambda i, s: ops.less(i, const(3)),
                lambda i, s: (ops.add(i, const(1)), ops.cast(s, dtype="float64")),
                [i, s],
            )
        assert main.current_block_idx == 0  # rolled back after the failure
        with pytest.raises(pc.ShapeError, match=r"starts as float32\[2\].*float32\[1, 2\]"):
            pc.layers.while_loop(
                lambda i, s: ops.less(i, const(3)),
                lambda i, s: (i, ops.reshape(s, shape=[1, 2])),
                [i, s],
            )


def test_cond_branches_of_different_types():
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [2], "float32")
        p = pc.data("p", [1], "bool")
        with pytest.raises(
            pc.ShapeError, match=r"cond_block' in block 0, true block 1, false block 2\): result 0"
        ):
            pc.layers.cond(p, lambda: x, lambda: ops.cast(x, dtype="int32"))
        with pytest.raises(pc.ShapeError, match="different structures: true_fn a Variable"):
            pc.layers.cond(p, lambda: x, lambda: (x, x))


def test_cond_and_while_loop_refuse_what_they_cannot_build_from():
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [2], "float32")
        p = pc.data("p", [1], "bool")
        cases = [
            ((lambda: None, lambda: x), "true_fn must return a Variable or a non-empty sequence"),
            ((lambda: x, lambda: 1), "false_fn must return a Variable .*got a int"),
            ((lambda: [], lambda: []), r"got 0 value\(s\)"),
            ((x, lambda: x), "true_fn must be a function .*got Variable"),
        ]
        for (true_fn, false_fn), problem in cases:
            with pytest.raises(pc.ProgramError, match=problem):
                pc.layers.cond(p, true_fn, false_fn)
        with pytest.raises(pc.ProgramError, match=r"loop_vars must be .*\(one variable: \[x\]\)"):
            pc.layers.while_loop(lambda v: ops.less(v, v), lambda v: [v], x)
        with pytest.raises(pc.ProgramError, match="assign: output must be a Variable, got int"):
            pc.layers.assign(x, output=3)
        before = main.serialize()
        for bad in (0, -2, 1.5, True):
            with pytest.raises(pc.ProgramError, match="max_iters must be an int >= 1"):
                pc.layers.While(p, max_iters=bad)
            with pytest.raises(pc.ProgramError, match="max_iters must be an int >= 1"):
                pc.layers.while_loop(lambda v: p, lambda v: [v], [x], max_iters=bad)
        assert main.serialize() == before  # refused before anything was built
    model = pc.Model()
    e = pc.layers.data("e", [1], "bool", model=model)
    with pytest.raises(pc.ProgramError, match=r"got Expression \(a model's expressions: build"):
        pc.layers.cond(e, lambda: x, lambda: x)


def test_a_cond_branch_writing_an_outer_variable_is_refused():
    """Its write would change nothing outside the branch (it used to be ignored silently);
    returning the new value works."""
    main = pc.Program()
    with pc.program_guard(main, pc.Program()):
        p = pc.data("p", [1], "bool")
        v = ops.fill_constant(shape=[1], dtype="float32", value=1.0)
        five = ops.fill_constant(shape=[1], dtype="float32", value=5.0)
        with pytest.raises(
            pc.ProgramError, match=f"op 'assign' of true_fn's branch writes '{v.name}', a variable"
        ):
            pc.layers.cond(p, lambda: pc.layers.assign(five, output=v), lambda: v)
        out = pc.layers.cond(p, lambda: pc.layers.assign(five), lambda: v)
    exe = pc.Executor()
    for flag, want in ((True, 5.0), (False, 1.0)):
        (got,) = exe.run(main, feed={"p": np.array([flag])}, fetch_list=[out])
        assert got.tolist() == [want]


def test_a_run_past_max_iters():
    main = pc.Program()
    with pc.program_guard(main):
        i = const(0)
        (out,) = pc.layers.while_loop(
            lambda i: ops.less(i, const(100)), lambda i: ops.add(i, const(1)), [i], max_iters=10
        )
    with pytest.raises(
        pc.KernelRuntimeError,
        match=r"op 'while_block' \(#\d+ in block 0\): the condition .* still holds after "
        r"max_iters=10 runs of body block 1",
    ):
        pc.Executor().run(main, fetch_list=[out])


def test_while_block_form_must_recompute_its_condition():
    main = pc.Program()
    with pc.program_guard(main):
        i = const(0)
        c = ops.less(i, const(3))
        loop = pc.layers.While(c)
        with pytest.raises(pc.ProgramError, match="body never writes the condition"):
            with loop.block():
                pc.layers.assign(ops.add(i, const(1)), output=i)
