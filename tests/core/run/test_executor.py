"""The executor: results against NumPy, pruning, the plan cache, scopes, feed/fetch and kernel
errors, loaded programs. Ops come from the installed toy plugin (paddle-ops-toy) and, for
misbehaving kernels, from in-process plugins."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc
from paddle_core.proto import framework_pb2 as pb

FLOATS = ["float32", "float64"]
INTS = ["int32", "int64"]


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype in INTS:
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def run(program, feed, fetch_list, **kwargs):
    return pc.Executor("cpu").run(program, feed=feed, fetch_list=fetch_list, **kwargs)


def assert_same(got, want):
    """Equal values, dtype and shape (tolerance for float rounding order only)."""
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5 if got.dtype == np.float32 else 1e-12)


# -- results against NumPy -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_multi_op_program_matches_numpy(dtype):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 3], dtype=dtype)
        bias = pc.data("bias", shape=[3], dtype=dtype)
        w = pc.data("w", shape=[3, 4], dtype=dtype)
        scaled = pc.ops.toy_scale(x, scale=2.0, bias=0.5)
        shifted = pc.ops.toy_add(scaled, bias)  # [?, 3] + [3] broadcasts
        prod = pc.ops.toy_matmul(shifted, w)
        act = pc.ops.toy_relu(prod)
        leaky = pc.ops.toy_leaky_relu(prod, alpha=0.1)
        joined = pc.ops.toy_concat([act, leaky], axis=1)
        total = pc.ops.toy_reduce(joined, axes=[1], reduction="sum")
    feed = {"x": rand((5, 3), dtype, 1), "bias": rand((3,), dtype, 2), "w": rand((3, 4), dtype, 3)}
    got = run(prog, feed, [scaled, shifted, prod, act, leaky, joined, total])

    s = feed["x"] * 2.0 + 0.5
    a = s + feed["bias"]
    p = a @ feed["w"]
    r = np.maximum(p, 0)
    lr = np.where(p > 0, p, p * 0.1)
    j = np.concatenate([r, lr], axis=1)
    want = [s, a, p, r, lr, j, j.sum(axis=1)]
    for g, w_ in zip(got, want, strict=True):
        assert_same(g, w_.astype(dtype))


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_scale_both_bias_orders(dtype):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[2, 3], dtype=dtype)
        after = pc.ops.toy_scale(x, scale=3.0, bias=2.0)
        before = pc.ops.toy_scale(x, scale=3.0, bias=2.0, bias_after_scale=False)
    value = rand((2, 3), dtype)
    got_after, got_before = run(prog, {"x": value}, [after, before])
    assert_same(got_after, (value * 3 + 2).astype(dtype))
    assert_same(got_before, ((value + 2) * 3).astype(dtype))


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_add_broadcasts_like_numpy(dtype):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[2, 1, 4], dtype=dtype)
        y = pc.data("y", shape=[3, 1], dtype=dtype)
        out = pc.ops.toy_add(x, y)
    assert out.shape == (2, 3, 4)
    xv, yv = rand((2, 1, 4), dtype, 1), rand((3, 1), dtype, 2)
    (got,) = run(prog, {"x": xv, "y": yv}, [out])
    assert_same(got, xv + yv)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("transpose_x", [False, True])
@pytest.mark.parametrize("transpose_y", [False, True])
def test_matmul_transpose_flags(dtype, transpose_x, transpose_y):
    xs = (3, 2) if transpose_x else (2, 3)
    ys = (4, 3) if transpose_y else (3, 4)
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[5, *xs], dtype=dtype)  # batched over the leading dim
        y = pc.data("y", shape=list(ys), dtype=dtype)
        out = pc.ops.toy_matmul(x, y, transpose_x=transpose_x, transpose_y=transpose_y)
    assert out.shape == (5, 2, 4)
    xv, yv = rand((5, *xs), dtype, 1), rand(ys, dtype, 2)
    (got,) = run(prog, {"x": xv, "y": yv}, [out])
    a = np.swapaxes(xv, -1, -2) if transpose_x else xv
    b = yv.T if transpose_y else yv
    assert_same(got, a @ b)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_concat_and_split(dtype):
    prog = pc.Program()
    with pc.program_guard(prog):
        a = pc.data("a", shape=[None, 2], dtype=dtype)
        b = pc.data("b", shape=[None, 4], dtype=dtype)
        joined = pc.ops.toy_concat([a, b], axis=-1)
        parts = pc.ops.toy_split(joined, num=3, axis=1)
    assert len(parts) == 3
    av, bv = rand((4, 2), dtype, 1), rand((4, 4), dtype, 2)
    got = run(prog, {"a": av, "b": bv}, [joined, *parts])
    want_joined = np.concatenate([av, bv], axis=-1)
    assert_same(got[0], want_joined)
    for g, w in zip(got[1:], np.split(want_joined, 3, axis=1), strict=True):
        assert_same(g, w)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", ["sum", "mean", "max"])
@pytest.mark.parametrize(("axes", "keepdim"), [([], False), ([0, 2], False), ([-1], True)])
def test_reduce(dtype, reduction, axes, keepdim):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[2, 3, 4], dtype=dtype)
        out = pc.ops.toy_reduce(x, axes=axes, keepdim=keepdim, reduction=reduction)
    value = rand((2, 3, 4), dtype)
    (got,) = run(prog, {"x": value}, [out])
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max}[reduction]
    want = np.asarray(fn(value, axis=tuple(axes) or None, keepdims=keepdim), dtype=dtype)
    assert out.shape == want.shape
    assert_same(got, want)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_fill_needs_no_feed(dtype):
    prog = pc.Program()
    with pc.program_guard(prog):
        out = pc.ops.toy_fill(shape=[2, 3], value=7.0, dtype=dtype)
    assert (out.shape, out.dtype) == ((2, 3), dtype)
    (got,) = run(prog, {}, [out])
    assert_same(got, np.full((2, 3), 7, dtype=dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_with_and_without_bias(dtype, with_bias):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 3], dtype=dtype)
        w = pc.data("w", shape=[3, 2], dtype=dtype)
        b = pc.data("b", shape=[2], dtype=dtype) if with_bias else None
        out = pc.ops.toy_linear(x, w, b)
    feed = {"x": rand((4, 3), dtype, 1), "w": rand((3, 2), dtype, 2)}
    want = feed["x"] @ feed["w"]
    if with_bias:
        feed["b"] = rand((2,), dtype, 3)
        want = want + feed["b"]
    (got,) = run(prog, feed, [out])
    assert_same(got, want)


@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_mask_while_training(dtype):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[50, 20], dtype=dtype)
        out, mask = pc.ops.toy_dropout(x, p=0.25, seed=7)
    assert mask is not None and mask.dtype == "uint8"
    value = rand((50, 20), dtype) + 3  # no zeros, so dropped elements are visible
    got_out, got_mask = run(prog, {"x": value}, [out, mask])
    want_mask = (np.random.default_rng(7).random((50, 20)) >= 0.25).astype(np.uint8)
    assert_same(got_mask, want_mask)
    assert 0 < want_mask.sum() < want_mask.size
    assert_same(got_out, (value * want_mask / 0.75).astype(dtype))


def test_dropout_in_test_mode_has_no_mask_and_passes_x_through():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[4, 5], dtype="float32")
        out, mask = pc.ops.toy_dropout(x, p=0.5, is_test=True)
    assert mask is None
    assert prog.global_block().ops[0].output("mask") == []
    value = rand((4, 5), "float32")
    (got,) = run(prog, {"x": value}, [out])
    assert_same(got, value)


# -- fetching and the default program ------------------------------------------------------------


def test_fetch_by_variable_and_by_name_agree():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[3], dtype="float32")
        y = pc.ops.toy_scale(x, scale=4.0, name="y")
    value = rand((3,), "float32")
    by_var, by_name, fed = run(prog, {"x": value}, [y, "y", "x"])
    assert_same(by_var, value * 4)
    assert_same(by_name, value * 4)
    assert_same(fed, value)


def test_default_program_inside_program_guard():
    prog = pc.Program()
    exe = pc.Executor("cpu")
    with pc.program_guard(prog):
        assert pc.default_main_program() is prog
        x = pc.data("x", shape=[2], dtype="float64")
        y = pc.ops.toy_scale(x, scale=-1.0)
        (got,) = exe.run(feed={"x": np.array([1.0, -2.0])}, fetch_list=[y])
    assert pc.default_main_program() is not prog
    assert_same(got, np.array([-1.0, 2.0]))
    assert prog.global_block().ops[0].type == "toy_scale"


def test_run_rejects_something_that_is_not_a_program():
    with pytest.raises(pc.ProgramError, match="expects a Program, got str"):
        pc.Executor("cpu").run("main", feed={}, fetch_list=[])


def test_return_numpy_false_gives_cpu_buffers():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[2], dtype="float32")
        y = pc.ops.toy_relu(x)
    (got,) = run(prog, {"x": np.array([-1, 2], np.float32)}, [y], return_numpy=False)
    assert isinstance(got, np.ndarray)  # on CPU the device buffers are NumPy arrays
    assert_same(got, np.array([0, 2], np.float32))


# -- pruning -------------------------------------------------------------------------------------


class Tripwire:
    """An in-process plugin whose op `tripwire` fails whenever its kernel runs."""

    def paddle_core_manifest(self):
        return """
            ops {
              proto {
                type: "tripwire" comment: "Raises when run."
                inputs { name: "x" } outputs { name: "out" }
              }
              kernels { device: "cpu" dtypes: [FLOAT32, FLOAT64] python: "tripwire_cpu" }
              shape_rule: "paddle_core.rules:unary"
            }
        """

    def tripwire_cpu(self, x):
        raise AssertionError("the tripwire kernel ran")


def branchy_program():
    """x -> toy_scale -> toy_relu, and x -> tripwire -> toy_leaky_relu on an unfetched branch."""
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 3], dtype="float32")
        a = pc.ops.toy_scale(x, scale=2.0, name="a")
        b = pc.ops.toy_relu(a, name="b")
        trip = pc.ops.tripwire(x, name="trip")
        c = pc.ops.toy_leaky_relu(trip, name="c")
    return prog, a, b, c


def test_fetching_an_intermediate_runs_only_the_ops_it_needs():
    pc.register_plugin(Tripwire())
    prog, a, b, c = branchy_program()
    exe = pc.Executor("cpu")
    assert exe.prepare(prog, {"x": ((2, 3), "float32")}, [a]).op_types == ["toy_scale"]
    assert exe.prepare(prog, {"x": ((2, 3), "float32")}, [b]).op_types == ["toy_scale", "toy_relu"]
    plan = exe.prepare(prog, {"x": ((2, 3), "float32")}, [c, b])
    assert plan.op_types == ["toy_scale", "toy_relu", "tripwire", "toy_leaky_relu"]  # program order

    value = rand((2, 3), "float32")
    (got,) = exe.run(prog, feed={"x": value}, fetch_list=[b])  # the tripwire does not run
    assert_same(got, np.maximum(value * 2, 0))
    with pytest.raises(pc.KernelRuntimeError, match="tripwire kernel ran"):
        exe.run(prog, feed={"x": value}, fetch_list=[c])


def test_a_fed_intermediate_is_not_recomputed():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 3], dtype="float32")
        a = pc.ops.toy_scale(x, scale=2.0)
        b = pc.ops.toy_relu(a)
    exe = pc.Executor("cpu")
    fed_a = np.array([[-1.0, 0.5, 3.0]], np.float32)
    assert exe.prepare(prog, {a.name: fed_a}, [b]).op_types == ["toy_relu"]
    # x is not fed at all: toy_scale cannot run, and must not
    (got,) = exe.run(prog, feed={a.name: fed_a}, fetch_list=[b])
    assert_same(got, np.maximum(fed_a, 0))
    # feeding both: the fed value of a wins over recomputing it from x
    (got_a, got_b) = exe.run(
        prog, feed={"x": np.full_like(fed_a, 100), a.name: fed_a}, fetch_list=[a, b]
    )
    assert_same(got_a, fed_a)
    assert_same(got_b, np.maximum(fed_a, 0))


def test_an_op_writing_a_persistable_variable_runs_though_not_fetched():
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[4], dtype="float32")
        y = pc.ops.toy_relu(x)
    state = block.create_var("state", shape=[4], dtype="float32", persistable=True)
    block.append_op("toy_scale", inputs={"x": x}, outputs={"out": state}, attrs={"scale": 3.0})
    exe = pc.Executor("cpu")
    plan = exe.prepare(prog, {"x": ((4,), "float32")}, [y])
    assert plan.op_types == ["toy_relu", "toy_scale"]
    assert plan.persistable_outputs == ["state"]

    scope = pc.Scope()
    value = np.array([1, -2, 3, -4], np.float32)
    (got,) = exe.run(prog, feed={"x": value}, fetch_list=[y], scope=scope)
    assert_same(got, np.maximum(value, 0))
    assert_same(scope.get("state"), value * 3)
    assert "state" in scope


def test_persistable_state_accumulates_across_runs():
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[3], dtype="float64")
    total = block.create_var("total", shape=[3], dtype="float64", persistable=True)
    block.append_op("toy_add", inputs={"x": total, "y": x}, outputs={"out": total})
    scope = pc.Scope()
    scope.set_var("total", np.zeros(3))
    exe = pc.Executor("cpu")
    for step in range(1, 4):
        exe.run(prog, feed={"x": np.array([1.0, 2.0, 3.0])}, fetch_list=[], scope=scope)
        assert_same(scope.get("total"), np.array([1.0, 2.0, 3.0]) * step)
    # fetching the persistable variable itself reads the latest value
    (got,) = exe.run(prog, feed={"x": np.ones(3)}, fetch_list=[total], scope=scope)
    assert_same(got, np.array([4.0, 7.0, 10.0]))
    assert exe.prepare_count == 2  # fetch list [] and [total]


# -- the plan cache ------------------------------------------------------------------------------


def test_plans_are_reused_until_the_signature_or_program_changes():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 3], dtype="float32")
        y = pc.ops.toy_scale(x, scale=2.0)
        z = pc.ops.toy_relu(y)
    exe = pc.Executor("cpu")
    v2, v5 = rand((2, 3), "float32"), rand((5, 3), "float32")

    exe.run(prog, feed={"x": v2}, fetch_list=[z])
    exe.run(prog, feed={"x": v2 + 1}, fetch_list=[z])
    assert (exe.prepare_count, exe.run_count) == (1, 2)
    plan = exe.prepare(prog, {"x": ((2, 3), "float32")}, [z])
    assert plan is exe.prepare(prog, {"x": v2}, [z])  # arrays or (shape, dtype): one plan
    assert exe.prepare_count == 1

    exe.run(prog, feed={"x": v5}, fetch_list=[z])  # another batch size
    assert exe.prepare_count == 2
    exe.run(prog, feed={"x": v2}, fetch_list=[y])  # another fetch list
    assert exe.prepare_count == 3
    exe.run(prog, feed={"x": v2}, fetch_list=[z])  # back to the first: still cached
    assert exe.prepare_count == 3

    version = prog.version
    with pc.program_guard(prog):
        w = pc.ops.toy_scale(z, scale=10.0)
    assert prog.version > version
    (got,) = exe.run(prog, feed={"x": v2}, fetch_list=[z])  # the program changed: new plan
    assert exe.prepare_count == 4
    assert_same(got, np.maximum(v2 * 2, 0))
    (got,) = exe.run(prog, feed={"x": v2}, fetch_list=[w])
    assert_same(got, np.maximum(v2 * 2, 0) * 10)


def test_separate_programs_get_separate_plans():
    exe = pc.Executor("cpu")
    results = []
    for factor in (2.0, 3.0):
        prog = pc.Program()
        with pc.program_guard(prog):
            x = pc.data("x", shape=[2], dtype="float32")
            y = pc.ops.toy_scale(x, scale=factor)
        results.append(exe.run(prog, feed={"x": np.ones(2, np.float32)}, fetch_list=[y])[0])
    assert exe.prepare_count == 2
    assert_same(results[0], np.full(2, 2, np.float32))
    assert_same(results[1], np.full(2, 3, np.float32))


# -- scopes --------------------------------------------------------------------------------------


def linear_with_parameter():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 3], dtype="float32")
        w = prog.global_block().create_parameter("w", shape=[3, 2], dtype="float32")
        out = pc.ops.toy_linear(x, w)
    return prog, out


def test_persistable_inputs_are_read_from_the_given_scope():
    prog, out = linear_with_parameter()
    xv, wv = rand((4, 3), "float32", 1), rand((3, 2), "float32", 2)
    scope = pc.Scope()
    scope.set_var("w", wv)
    exe = pc.Executor("cpu")
    assert exe.prepare(prog, {"x": xv}, [out]).persistable_inputs == ["w"]
    (got,) = exe.run(prog, feed={"x": xv}, fetch_list=[out], scope=scope)
    assert_same(got, xv @ wv)
    (got,) = exe.run(prog, feed={"x": xv}, fetch_list=[out], scope=scope.new_scope())
    assert_same(got, xv @ wv)  # a child scope reads its parent's values


def test_global_scope_is_the_default(monkeypatch):
    monkeypatch.setattr("paddle_core._src.run.scope._global_scope", pc.Scope())
    prog, out = linear_with_parameter()
    xv, wv = rand((4, 3), "float32", 1), rand((3, 2), "float32", 2)
    pc.global_scope().set_var("w", wv)
    (got,) = run(prog, {"x": xv}, [out])
    assert_same(got, xv @ wv)


def test_a_persistable_of_the_wrong_shape_is_refused_where_it_is_set():
    """Once a program declaring ``w`` ran in a scope, set_var refuses an array of another shape
    for it (in a child scope too), naming both shapes, and says when it is the transpose."""
    prog, out = linear_with_parameter()
    xv, wv = rand((4, 3), "float32", 1), rand((3, 2), "float32", 2)
    scope = pc.Scope()
    scope.set_var("w", wv.T)  # no program declared w here yet: the run will check it
    with pytest.raises(pc.FeedError, match=r"holds ndarray float32\[2, 3\] in the scope"):
        run(prog, {"x": xv}, [out], scope=scope)
    scope.set_var("w", wv)
    run(prog, {"x": xv}, [out], scope=scope)
    with pytest.raises(
        pc.FeedError,
        match=r"persistable variable 'w' is declared float32\[3, 2\], got an array of shape "
        r"\[2, 3\] \(its transpose: set value.T; fc's weight is \[in, out\] where PyTorch's "
        r"Linear has \[out, in\]",
    ):
        scope.set_var("w", wv.T)
    with pytest.raises(
        pc.FeedError, match=r"declared float32\[3, 2\], got an array of shape \[3\]$"
    ):
        scope.new_scope().set_var("w", wv[:, 0])
    np.testing.assert_array_equal(scope.find_var("w"), wv)  # nothing was set
    scope.set_var("w", wv + 1)  # the right shape still goes in
    scope.set_var("b", wv.T)  # and names no program declared are set as they are


def test_missing_persistable_value_names_the_variable():
    prog, out = linear_with_parameter()
    with pytest.raises(pc.FeedError, match=r"persistable variable 'w' has no value in the scope"):
        run(prog, {"x": rand((4, 3), "float32")}, [out], scope=pc.Scope())


# -- feed and fetch errors -----------------------------------------------------------------------


def two_input_program():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("input_x", shape=[None, 4], dtype="float32")
        y = pc.data("input_y", shape=[None, 4], dtype="float32")
        out = pc.ops.toy_add(x, y, name="total")
    return prog, out


def test_unknown_feed_name_suggests_the_closest():
    prog, out = two_input_program()
    with pytest.raises(pc.FeedError, match=r"feed 'input_z' is not a variable.*'input_x'"):
        run(prog, {"input_z": np.zeros((1, 4), np.float32)}, [out])


def test_feed_with_wrong_dtype():
    prog, out = two_input_program()
    feed = {"input_x": np.zeros((1, 4)), "input_y": np.zeros((1, 4), np.float32)}
    with pytest.raises(pc.FeedError) as info:
        run(prog, feed, [out])
    message = str(info.value)
    assert "'input_x'" in message and "float64" in message and "float32" in message


@pytest.mark.parametrize(
    ("shape", "shown"), [((4,), r"\[4\]"), ((1, 1, 4), r"\[1, 1, 4\]"), ((1, 5), r"\[1, 5\]")]
)
def test_feed_with_wrong_rank_or_known_dim(shape, shown):
    prog, out = two_input_program()
    feed = {"input_x": np.zeros(shape, np.float32), "input_y": np.zeros((1, 4), np.float32)}
    with pytest.raises(
        pc.FeedError, match=rf"feed 'input_x' has shape {shown}.*declared \[\?, 4\]"
    ):
        run(prog, feed, [out])


def test_missing_required_feed_names_op_and_variable():
    prog, out = two_input_program()
    with pytest.raises(pc.FeedError) as info:
        run(prog, {"input_x": np.zeros((1, 4), np.float32)}, [out])
    message = str(info.value)
    assert "op 'toy_add'" in message and "'input_y'" in message and "input_x" in message


def test_fetch_errors():
    prog, _ = two_input_program()
    never = prog.global_block().create_var("never_written", shape=[4])
    feed = {"input_x": np.zeros((1, 4), np.float32), "input_y": np.zeros((1, 4), np.float32)}
    with pytest.raises(pc.FeedError, match=r"fetch 'totl' is not a variable.*'total'"):
        run(prog, feed, ["totl"])
    with pytest.raises(pc.FeedError, match=r"fetch 'never_written' is neither fed nor computed"):
        run(prog, feed, [never])
    with pytest.raises(pc.FeedError, match="Variables or names, got int"):
        run(prog, feed, [3])


def test_a_data_variable_that_is_fetched_but_not_fed():
    prog, _ = two_input_program()
    with pytest.raises(pc.FeedError, match="fetch 'input_y' is neither fed nor computed"):
        run(prog, {"input_x": np.zeros((1, 4), np.float32)}, ["input_y"])


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_lists_are_fed_as_the_variable_dtype(dtype):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 2], dtype=dtype)
        y = pc.ops.toy_scale(x, scale=2.0)
    (got,) = run(prog, {"x": [[1, 2], [3, 4]]}, [y])
    assert_same(got, np.array([[2, 4], [6, 8]], dtype=dtype))


# -- kernel errors -------------------------------------------------------------------------------


def with_dtype(prog: pc.Program, dtype: str) -> pc.Program:
    """``prog`` as loaded from a file whose variables are all ``dtype``: loading checks no
    op's dtype against its kernels, so the executor meets what appending refuses."""
    desc = prog.to_desc()
    for var in desc.blocks[0].vars:
        var.dtype = pb.VarType.DataType.Value(dtype.upper())
    return pc.Program.from_desc(desc)


def test_no_kernel_for_the_dtype_is_refused_when_appended():
    """toy_relu's shape rule takes any dtype, but none of its kernels takes int32: appending
    it says so, rather than the first run."""
    with pc.program_guard(pc.Program()):
        x = pc.data("x", shape=[3], dtype="int32")
        with pytest.raises(pc.KernelNotFoundError) as info:
            pc.ops.toy_relu(x)
    assert info.value.op == "toy_relu"
    assert str(info.value).startswith(
        "op 'toy_relu' has no kernel for dtype int32 on any device: input 'x' ('x') is int32 "
        "(plugin 'toy'"
    )
    assert str(info.value).endswith("its kernels: cpu (float32, float64)")


def test_no_kernel_for_the_dtype():
    prog = pc.Program()
    with pc.program_guard(prog):
        y = pc.ops.toy_relu(pc.data("x", shape=[3]))
    with pytest.raises(pc.KernelNotFoundError) as info:
        run(with_dtype(prog, "int32"), {"x": np.arange(3, dtype=np.int32)}, [y.name])
    message = str(info.value)
    assert info.value.op == "toy_relu"
    for part in (
        "'toy_relu'",
        "device cpu",
        "dtype int32",
        "plugin 'toy'",
        "cpu (float32, float64)",
    ):
        assert part in message


class Faulty:
    """An in-process plugin of kernels that break their ops' contracts."""

    def paddle_core_manifest(self):
        single = "outputs { name: 'out' }"
        ops = [
            ("raising", single, "paddle_core.rules:unary"),
            ("wrong_shape", single, "paddle_core.rules:unary"),
            ("wrong_dtype", single, "paddle_core.rules:unary"),
            ("not_array", single, "paddle_core.rules:unary"),
            ("pair", "outputs { name: 'first' } outputs { name: 'second' }", "pair_shape"),
            ("parts", "outputs { name: 'outs' duplicable: true }", "parts_shape"),
        ]
        return "".join(
            f"""
            ops {{
              proto {{ type: "{op}" comment: "Misbehaves." inputs {{ name: "x" }} {outputs} }}
              kernels {{ device: "cpu" dtypes: [FLOAT32] python: "{op}_cpu" }}
              shape_rule: "{rule}"
            }}
            """
            for op, outputs, rule in ops
        )

    def pair_shape(self, ctx):
        x = ctx.input("x")
        ctx.set_output("first", x.shape, x.dtype)
        ctx.set_output("second", x.shape, x.dtype)

    def parts_shape(self, ctx):
        x = ctx.input("x")
        ctx.set_output_list("outs", [(x.shape, x.dtype)] * 2)

    def raising_cpu(self, x):
        raise ZeroDivisionError("deliberate")

    def wrong_shape_cpu(self, x):
        return x[:1]

    def wrong_dtype_cpu(self, x):
        return x.astype(np.float64)

    def not_array_cpu(self, x):
        return x.tolist()

    def pair_cpu(self, x):
        return x.copy()  # should be a tuple of two

    def parts_cpu(self, x):
        return [x, x, x]


def faulty_program(op_type):
    pc.register_plugin(Faulty())
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[3, 2], dtype="float32")
        result = getattr(pc.ops, op_type)(x)
    outs = list(result) if isinstance(result, (list, tuple)) else [result]
    return prog, outs


def test_a_raising_kernel_becomes_a_kernel_runtime_error():
    prog, outs = faulty_program("raising")
    with pytest.raises(pc.KernelRuntimeError) as info:
        run(prog, {"x": np.ones((3, 2), np.float32)}, outs)
    message = str(info.value)
    assert info.value.op == "raising"
    assert "op 'raising'" in message and "'raising_cpu'" in message and "faulty" in message
    assert "ZeroDivisionError: deliberate" in message
    assert isinstance(info.value.__cause__, ZeroDivisionError)


@pytest.mark.parametrize(
    ("op_type", "problem"),
    [
        (
            "wrong_shape",
            r"produced 'wrong_shape_0.out' as ndarray float32\[1, 2\].*float32\[3, 2\]",
        ),
        (
            "wrong_dtype",
            r"produced 'wrong_dtype_0.out' as ndarray float64\[3, 2\].*float32\[3, 2\]",
        ),
        ("not_array", r"produced 'not_array_0.out' as list"),
        ("pair", "should return 2 outputs as a tuple"),
        ("parts", "returned 3 arrays for output 'outs', expected 2"),
    ],
)
def test_a_kernel_breaking_its_contract_is_caught(op_type, problem):
    prog, outs = faulty_program(op_type)
    with pytest.raises(pc.KernelRuntimeError, match=problem) as info:
        run(prog, {"x": np.ones((3, 2), np.float32)}, outs)
    assert info.value.op == op_type
    assert f"op '{op_type}'" in str(info.value)


# -- saved and loaded programs -------------------------------------------------------------------


@pytest.mark.parametrize("filename", ["model.pb", "model.pbtxt"])
def test_a_loaded_program_gives_the_same_results(tmp_path, filename):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 4], dtype="float64")
        w = prog.global_block().create_parameter("w", shape=[4, 3], dtype="float64")
        h = pc.ops.toy_linear(x, w)
        h = pc.ops.toy_leaky_relu(h, alpha=0.3)
        h, _ = pc.ops.toy_dropout(h, p=0.2, seed=11)
        h = pc.ops.toy_reduce(h, axes=[1], keepdim=True, reduction="mean")
        ones = pc.ops.toy_fill(shape=[1, 1], value=1.5, dtype="float64")
        out = pc.ops.toy_add(h, ones, name="out")
    path = tmp_path / filename
    pc.save_program(prog, path)
    loaded = pc.load_program(path)

    scope = pc.Scope()
    scope.set_var("w", rand((4, 3), "float64", 5))
    xv = rand((6, 4), "float64", 6)
    (want,) = run(prog, {"x": xv}, [out], scope=scope)
    (got,) = run(loaded, {"x": xv}, ["out"], scope=scope)
    assert_same(got, want)
    assert want.shape == (6, 1)


def test_a_program_whose_op_no_plugin_provides_any_more(tmp_path):
    class Ephemeral:
        def paddle_core_manifest(self):
            return """
                ops {
                  proto { type: "ephemeral_op" comment: "Soon gone." inputs { name: "x" }
                          outputs { name: "out" } }
                  kernels { device: "cpu" dtypes: [FLOAT32] python: "ephemeral_cpu" }
                  shape_rule: "paddle_core.rules:unary"
                }
            """

        def ephemeral_cpu(self, x):
            return x

    name = pc.register_plugin(Ephemeral())
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[2], dtype="float32")
        y = pc.ops.ephemeral_op(x)
    pc.save_program(prog, tmp_path / "p.pb")
    pc.unregister_plugin(name)

    with pytest.raises(pc.OpNotFoundError, match="uses op 'ephemeral_op'") as info:
        pc.load_program(tmp_path / "p.pb")  # refused at load (see test_provenance.py)
    assert info.value.op == "ephemeral_op"
    with pytest.raises(pc.OpNotFoundError, match="ephemeral_op") as info:
        run(prog, {"x": np.ones(2, np.float32)}, [y.name])  # the program still in memory
    assert info.value.op == "ephemeral_op"


def test_list_feeds_convert_only_without_loss() -> None:
    prog = pc.Program()
    with pc.program_guard(prog):
        i = pc.data("i", [2], "int32")
        f = pc.data("f", [2], "float32")
        outs = [pc.ops.toy_scale(i, scale=2.0), pc.ops.toy_scale(f, scale=2.0)]
    exe = pc.Executor()
    got = exe.run(prog, feed={"i": [1, 2], "f": [1, 2]}, fetch_list=outs)
    assert got[0].dtype == np.int32 and got[0].tolist() == [2, 4]
    assert got[1].dtype == np.float32 and got[1].tolist() == [2.0, 4.0]
    with pytest.raises(pc.FeedError, match=r"feed 'i' holds float64 values.*int32"):
        exe.run(prog, feed={"i": [1.5, 2.0], "f": [1, 2]}, fetch_list=outs)


def test_fetched_results_are_never_overwritten_by_later_runs():
    prog = pc.Program()
    with pc.program_guard(prog):
        out = pc.ops.toy_scale(pc.data("x", [4]), scale=2.0)
    exe = pc.Executor()
    (first,) = exe.run(prog, feed={"x": np.ones(4, np.float32)}, fetch_list=[out])
    (second,) = exe.run(prog, feed={"x": np.full(4, 3, np.float32)}, fetch_list=[out])
    assert first.tolist() == [2.0] * 4 and second.tolist() == [6.0] * 4
    assert not np.shares_memory(first, second)


def test_a_repeated_call_is_still_checked_when_anything_changes():
    """The same run() again skips re-planning, but any change falls back to the full checks."""
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 3])
        out = pc.ops.toy_scale(x, scale=2.0)
    exe = pc.Executor()
    ones = np.ones((2, 3), np.float32)
    for _ in range(3):
        (got,) = exe.run(prog, feed={"x": ones}, fetch_list=[out])
        assert got.tolist() == [[2.0] * 3] * 2
    assert exe.prepare_count == 1
    with pytest.raises(pc.FeedError, match="has dtype float64"):  # another dtype
        exe.run(prog, feed={"x": ones.astype(np.float64)}, fetch_list=[out])
    with pytest.raises(pc.FeedError, match=r"has shape \[2, 4\]"):  # a shape the var refuses
        exe.run(prog, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[out])
    with pytest.raises(pc.FeedError, match="is not a variable"):  # another feed name
        exe.run(prog, feed={"y": ones}, fetch_list=[out])
    (got,) = exe.run(prog, feed={"x": np.ones((5, 3), np.float32)}, fetch_list=[out])
    assert got.shape == (5, 3) and exe.prepare_count == 2  # another batch size: a new plan
    strided = np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2]
    (got,) = exe.run(prog, feed={"x": strided}, fetch_list=[out])  # same dtype/shape, strided
    np.testing.assert_array_equal(got, strided * 2)
    with pc.program_guard(prog):
        more = pc.ops.toy_scale(out, scale=3.0)  # the program changed
    (got,) = exe.run(prog, feed={"x": ones}, fetch_list=[more])
    assert got.tolist() == [[6.0] * 3] * 2 and exe.prepare_count == 3  # (2, 3) was cached


def _small_program():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [4])
        y = pc.ops.add(x, x)
    return prog, y


def test_an_executor_does_not_keep_the_programs_it_ran_alive():
    """Plans are cached per program but live on the program: 500 programs built, run through
    one executor and dropped are all collected, and so is an executor dropped before its
    program."""
    import gc
    import weakref

    exe = pc.Executor()
    feed = {"x": np.ones(4, np.float32)}
    dropped = []
    for _ in range(500):
        prog, y = _small_program()
        exe.run(prog, feed=feed, fetch_list=[y])
        dropped.append(weakref.ref(prog))
        del prog, y
    last, y = _small_program()
    exe.run(last, feed=feed, fetch_list=[y])  # the executor remembers only its last call
    gc.collect()
    assert sum(r() is not None for r in dropped) == 0
    (got,) = exe.run(last, feed=feed, fetch_list=[y])  # and its cache still works
    assert exe.prepare_count == 501 and (got == 2).all()
    gone = weakref.ref(exe)
    del exe
    gc.collect()
    assert gone() is None and len(last.plan_cache) == 0


@pytest.mark.parametrize("shared", [True, False], ids=["one executor", "an executor each"])
def test_memory_stays_flat_over_10000_programs(shared):
    """Programs built, run and dropped, through one shared executor or one each: no program,
    plan or executor outlives its use, and resident memory stops growing once warm."""
    import gc
    import resource

    feed = {"x": np.ones(4, np.float32)}
    exe = pc.Executor()

    def churn(n):
        nonlocal exe
        for _ in range(n):
            prog, y = _small_program()
            if not shared:
                exe = pc.Executor()
            exe.run(prog, feed=feed, fetch_list=[y])

    def live(kind):
        gc.collect()
        return sum(type(o).__name__ == kind for o in gc.get_objects())

    churn(500)  # warm: caches, allocator pools
    programs, plans = live("Program"), live("PreparedProgram")
    # Peak RSS from here: after live(), whose list of every object (megabytes in a worker of
    # the full suite) would otherwise count as growth.
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    churn(9500)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss
    assert live("Program") <= programs and live("PreparedProgram") <= plans
    assert grown_kib < 4096, f"resident memory grew {grown_kib} KiB over 9,500 programs"


def test_a_written_persistable_named_like_part_of_a_feed_name():
    """'a' is part of the text "target": planning compares names, never text."""
    main = pc.Program()
    with pc.program_guard(main):
        target = pc.data("target", [1], "float32")
        a = main.global_block().create_var("a", [1], "float32", persistable=True)
        main.global_block().append_op("add", {"x": a, "y": target}, {"out": a})
    scope = pc.Scope()
    scope.set_var("a", np.array([1.0], np.float32))
    feed = {"target": np.array([2.0], np.float32)}
    assert pc.Executor().run(main, feed=feed, fetch_list=[a], scope=scope)[0].tolist() == [3.0]
