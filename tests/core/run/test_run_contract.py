"""What a run guarantees whatever it is given: programs are checked against their ops' protos
before any kernel sees them, kernels never see overlapping or odd memory, results never
change under the caller, and every bad input is a paddle-core error. Native kernels come from
paddle-ops-math; Python kernels from in-process plugins."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import paddle_core as pc
from paddle_core import ops

F32 = np.float32


def program(build):
    """A new program built by ``build()`` inside its guard; returns (program, build's result)."""
    prog = pc.Program()
    with pc.program_guard(prog):
        result = build()
    return prog, result


GIVEN_IN_PLACE: list[np.ndarray] = []  # the arrays double_in_place was given


class Passthrough:
    """Python kernels that return their input, a view of it, or odd byte orders."""

    def paddle_core_manifest(self):
        ops_text = "".join(
            f"""ops {{ proto {{ type: "{name}" comment: "c" inputs {{ name: "x" }}
                     outputs {{ name: "out" }} }}
                   kernels {{ device: "cpu" dtypes: [FLOAT32] python: "{name}_cpu" }}
                   shape_rule: "paddle_core.rules:unary" }}"""
            for name in ("ident", "first_view", "big_endian")
        )
        return ops_text + (
            """ops { proto { type: "double_in_place" comment: "c" inputs { name: "x" }
                     outputs { name: "out" comment: "." inplace: "x" } }
                   kernels { device: "cpu" dtypes: [FLOAT32] python: "double_in_place_cpu" }
                   shape_rule: "paddle_core.rules:unary" }"""
        )

    def double_in_place_cpu(self, x):
        x *= 2
        GIVEN_IN_PLACE.append(x)
        return x

    def ident_cpu(self, x):
        return x

    def first_view_cpu(self, x):
        return x.reshape(x.shape)  # a view

    def big_endian_cpu(self, x):
        return x.astype(">f4")


@pytest.fixture
def passthrough():
    pc.register_plugin(Passthrough(), name="passthrough")
    return pc.ops


# -- programs are checked against the ops' protos ------------------------------------------------


def edited_add(edit):
    """A saved x + y program, its desc edited by ``edit(op_desc)`` and loaded back."""
    prog, z = program(lambda: ops.add(pc.data("x", [3]), pc.data("y", [3])))
    desc = prog.to_desc()
    edit(desc.blocks[0].ops[0])
    return pc.Program.from_desc(desc), z.name


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda op: op.inputs.pop(1), "op 'add' is missing its required input 'y'"),
        (lambda op: op.inputs[1].vars.append("x"), r"input 'y' takes one variable.*\(y, x\)"),
        (lambda op: setattr(op.inputs[1], "name", "why"), "input slot 'why'.*inputs are: x, y"),
        (lambda op: setattr(op.outputs[0], "name", "result"), "output slot 'result'"),
    ],
)
def test_a_loaded_program_whose_op_breaks_its_proto_is_refused(edit, problem):
    loaded, fetch = edited_add(edit)
    with pytest.raises(pc.ProgramError, match=problem):
        pc.Executor().run(
            loaded, feed={"x": np.ones(3, F32), "y": np.ones(3, F32)}, fetch_list=[fetch]
        )


def test_a_loaded_programs_block_attrs_are_indices():
    from paddle_core._src.spec.attr_validator import _as_block

    assert _as_block(2) == 2
    with pytest.raises(ValueError):
        _as_block(-1)


def test_an_op_rewriting_a_variable_with_another_shape_is_a_shape_error():
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        x = pc.data("x", [None])
        y = ops.scale(x, scale=2.0)
    block.append_op("concat", {"xs": [x, x]}, {"out": y})  # y: [?] either way, until run
    with pytest.raises(
        pc.ShapeError, match=r"writes '.*' as float32\[6\], but it is already float32\[3\]"
    ):
        pc.Executor().run(prog, feed={"x": np.ones(3, F32)}, fetch_list=[y])


def test_a_shape_too_large_for_any_buffer_is_refused():
    prog, y = program(lambda: ops.add(pc.data("x", [None, 1]), pc.data("y", [1, None])))
    exe = pc.Executor()
    with pytest.raises(
        pc.ShapeError,
        match=r"'add': output 'out' float32\[1048576, 1099511627776\] is larger than the 256 TiB",
    ):
        exe.prepare(prog, {"x": ((2**20, 1), "float32"), "y": ((1, 2**40), "float32")}, [y])
    with pytest.raises(pc.FeedError, match="more than any array can hold"):
        exe.prepare(prog, {"x": ((2**60, 1), "float32"), "y": ((1, 1), "float32")}, [y])


# -- feeds ---------------------------------------------------------------------------------------


def test_feeding_a_variable_that_a_needed_op_computes_is_refused():
    prog, (a, b) = program(lambda: ops.split(pc.data("x", [None, 4]), num=2, axis=1))
    mine = np.zeros((1, 2), F32)
    with pytest.raises(pc.FeedError, match=f"variable '{a.name}' is fed, but op 'split'"):
        pc.Executor().run(prog, feed={"x": np.ones((3, 4), F32), a.name: mine}, fetch_list=[b])
    assert mine.tolist() == [[0.0, 0.0]]  # untouched


def test_a_fed_variable_is_the_first_value_of_one_updated_after_it_is_read():
    """x = x + 1 on a fed x: the feed is x's value until the update, which runs (it used to
    be skipped as if the feed stood for it, silently); a feed still stands for the ops that
    compute a variable before anything reads it (feeding an intermediate value)."""
    prog = pc.Program()
    with pc.program_guard(prog, pc.Program()):
        x = pc.data("x", [1], "int64")
        one = ops.fill_constant(shape=[1], dtype="int64", value=1)
        pc.layers.assign(ops.add(x, one), output=x)
        after = ops.scale(x, scale=1.0)
        a = pc.data("a", [2])
        y = ops.exp(a)
        z = ops.scale(y, scale=2.0)
    feed = {"x": np.array([3]), "a": np.zeros(2, F32), y.name: np.full(2, 5.0, F32)}
    got = pc.Executor().run(prog, feed=feed, fetch_list=[after, x, z])
    assert [v.tolist() for v in got] == [[4], [4], [10.0, 10.0]]
    model = pc.Model(main_program=prog)
    assert model.expression(after).value(feed={"x": np.array([7])}).tolist() == [8]


def test_a_fed_array_an_op_updates_is_never_written():
    """x = x + 1 on a fed x updates a copy: the caller's array stays as given, and a read-only
    one (np.frombuffer over bytes) is not written through its read-only flag."""
    prog = pc.Program()
    with pc.program_guard(prog, pc.Program()):
        x = pc.data("x", [2, 3], "float32")
        pc.layers.assign(ops.add(x, ops.fill_constant(shape=[2, 3], value=1.0)), output=x)
        y = ops.scale(x, scale=2.0)
    exe = pc.Executor()
    mine = np.zeros((2, 3), F32)
    (got,) = exe.run(prog, feed={"x": mine}, fetch_list=[y])
    assert got.tolist() == [[2.0] * 3] * 2 and not mine.any()
    plan = exe.prepare(prog, {"x": mine}, [y])
    assert plan.compiled and not np.shares_memory(plan._runner.array("x"), mine)
    frozen = np.full((2, 3), 4, F32).tobytes()
    readonly = np.frombuffer(frozen, F32).reshape(2, 3)
    for _ in range(2):  # the same call again takes the repeated call's path
        (got,) = exe.run(prog, feed={"x": readonly}, fetch_list=[y])
        assert got.tolist() == [[10.0] * 3] * 2
    assert frozen == np.full((2, 3), 4, F32).tobytes()


def test_a_while_block_with_its_carried_variables_fed_runs():
    prog = pc.Program()
    with pc.program_guard(prog, pc.Program()):
        going = pc.data("p", [1], "bool")
        x = pc.data("x", [1], "int64")
        ten = ops.fill_constant(shape=[1], dtype="int64", value=10)
        one = ops.fill_constant(shape=[1], dtype="int64", value=1)
        loop = pc.layers.While(going)
        with loop.block():
            pc.layers.assign(ops.add(x, one), output=x)
            pc.layers.assign(ops.less(x, ten), output=going)
    feed = {"x": np.array([3]), "p": np.array([True])}
    got = pc.Executor().run(prog, feed=feed, fetch_list=[x, going])
    assert [v.tolist() for v in got] == [[10], [False]]


def test_feeding_a_persistable_variable_an_op_updates_is_refused():
    prog = pc.Program()
    block = prog.global_block()
    p = block.create_parameter("p", [3], "float32")
    block.append_op("scale", {"x": p}, {"out": p}, {"scale": 2.0})
    mine = np.ones(3, F32)
    with pytest.raises(pc.FeedError, match=r"variable 'p' is fed.*scope\.set_var"):
        pc.Executor().run(prog, feed={"p": mine}, fetch_list=[], scope=pc.Scope())
    assert mine.tolist() == [1.0] * 3


@pytest.mark.parametrize(
    ("feed", "problem"),
    [
        ([("x", [1.0, 2.0, 3.0])], "feed must be a dict of variable names to values, got list"),
        ({1: np.ones(3, F32)}, r"feed keys must be variable names \(str\), got 1"),
        ({"x": [[1, 2, 3], [4, 5]]}, "feed 'x' is not an array of numbers"),
        ({"x": np.array([None, 1, 2], dtype=object)}, "has dtype object"),
    ],
)
def test_malformed_feeds_are_feed_errors(feed, problem):
    prog, y = program(lambda: ops.scale(pc.data("x", [None]), scale=2.0))
    with pytest.raises(pc.FeedError, match=problem):
        pc.Executor().run(prog, feed=feed, fetch_list=[y])


def test_a_list_fed_to_a_bfloat16_variable_becomes_an_ml_dtypes_array():
    """NumPy has no bfloat16 of its own: the core makes ml_dtypes' (a dependency)."""
    prog, x = program(lambda: pc.data("x", [3], "bfloat16"))
    (got,) = pc.Executor().run(prog, feed={"x": [1.0, 2.5, -3.0]}, fetch_list=[x])
    assert got.dtype.name == "bfloat16"
    np.testing.assert_array_equal(got.astype(np.float64), [1.0, 2.5, -3.0])


def test_a_list_fed_to_a_dtype_numpy_lacks_is_a_feed_error(monkeypatch):
    from paddle_core._src.run import executor

    def no_numpy_dtype(name):
        raise TypeError("NumPy has no bfloat16 without ml_dtypes (pip install ml_dtypes)")

    monkeypatch.setattr(executor, "numpy_dtype", no_numpy_dtype)
    prog, x = program(lambda: pc.data("x", [2], "bfloat16"))
    with pytest.raises(pc.FeedError, match=r"NumPy cannot make bfloat16.*pip install ml_dtypes"):
        pc.Executor().run(prog, feed={"x": [1.0, 2.0]}, fetch_list=[x])


def test_a_single_fetch_counts_as_a_list_of_one():
    """As in Paddle: fetch_list=y is fetch_list=[y], on the first call and on the repeated
    calls that skip planning (where it used to raise a bare TypeError)."""
    prog, y = program(lambda: ops.scale(pc.data("x", [3]), scale=2.0))
    exe, feed = pc.Executor(), {"x": np.ones(3, F32)}
    for fetch in (y, y, [y], y.name, y.name, y):
        (out,) = exe.run(prog, feed=feed, fetch_list=fetch)
        np.testing.assert_array_equal(out, [2.0, 2.0, 2.0])


@pytest.mark.parametrize("fetch", [3, {"y": None}])
def test_a_fetch_list_of_another_type_is_a_feed_error(fetch):
    prog, y = program(lambda: ops.scale(pc.data("x", [3]), scale=2.0))
    exe, feed = pc.Executor(), {"x": np.ones(3, F32)}
    exe.run(prog, feed=feed, fetch_list=[y])  # a remembered call first: no shortcut around it
    with pytest.raises(pc.FeedError, match="fetch_list must be a list of Variables or names"):
        exe.run(prog, feed=feed, fetch_list=fetch)


def test_list_feeds_out_of_the_integer_range_are_refused():
    prog, y = program(lambda: ops.add(pc.data("i", [2], "int32"), pc.data("j", [2], "int32")))
    with pytest.raises(pc.FeedError, match="outside the range of int32"):
        pc.Executor().run(prog, feed={"i": [1, 2**40], "j": [0, 0]}, fetch_list=[y])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("order", [">", "unaligned"])
def test_big_endian_and_unaligned_feeds_reach_kernels_as_native_arrays(dtype, order):
    values = np.linspace(0.1, 1.0, 4099).astype(dtype)
    if order == ">":
        fed = values.astype(np.dtype(dtype).newbyteorder(">"))
    else:  # one byte off the element size
        raw = np.zeros(values.nbytes + 1, np.uint8)
        fed = raw[1:].view(dtype)
        fed[:] = values
        assert not fed.flags.aligned
    prog, (total, twice, e) = program(
        lambda: (
            ops.sum(x := pc.data("x", [4099], dtype)),
            ops.add(x, x),
            ops.exp(x),
        )
    )
    got = pc.Executor(num_threads=1).run(prog, feed={"x": fed}, fetch_list=[total, twice, e])
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got[0], values.sum(dtype=np.float64), rtol=tol)
    np.testing.assert_allclose(got[1], values + values, rtol=tol)
    np.testing.assert_allclose(got[2], np.exp(values), rtol=tol)


def test_non_native_dtypes_have_no_canonical_name():
    from paddle_core._src.base.dtypes import DTYPES, name_of

    assert name_of(np.dtype("<f4" if np.little_endian else ">f4")) == "float32"
    assert name_of(np.dtype(">f4" if np.little_endian else "<f4")) not in DTYPES


# -- prepared programs ---------------------------------------------------------------------------


def test_a_prepared_program_runs_only_the_feeds_it_was_prepared_for():
    prog, y = program(lambda: ops.add(x := pc.data("x", [None, 3]), x))
    exe = pc.Executor()
    plan = exe.prepare(prog, {"x": np.ones((4, 3), F32)}, [y])
    (got,) = plan.run({"x": np.full((4, 3), 2, F32)}, pc.Scope())
    assert got.tolist() == [[4.0] * 3] * 4
    with pytest.raises(
        pc.FeedError,
        match=r"feed 'x' is float32\[1, 3\], but this plan was prepared for float32\[4, 3\]",
    ):
        plan.run({"x": np.ones((1, 3), F32)}, pc.Scope())
    with pytest.raises(pc.FeedError, match=r"this plan is fed \['x'\], got \['y'\]"):
        plan.run({"y": np.ones((4, 3), F32)}, pc.Scope())
    with pytest.raises(pc.FeedError, match="float64"):
        plan.run({"x": np.ones((4, 3))}, pc.Scope())


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (((-5, 3), "float32"), r"shape \[-5, 3\] must hold ints >= 0"),
        (((2, 3), "float99"), "unsupported dtype 'float99'"),
        (((2, 3), "float64"), "given as float64, but variable 'x' is float32"),
        (((2,), "float32"), r"has shape \[2\], but variable 'x' is declared \[\?, 3\]"),
    ],
)
def test_prepare_checks_shape_and_dtype_specs(spec, problem):
    prog, y = program(lambda: ops.add(x := pc.data("x", [None, 3]), x))
    with pytest.raises(pc.FeedError, match=problem):
        pc.Executor().prepare(prog, {"x": spec}, [y])


# -- results never change under the caller -------------------------------------------------------


@pytest.mark.parametrize("op", ["ident", "first_view"])
def test_a_python_kernel_returning_its_input_gets_memory_of_its_own(passthrough, op):
    kernel = getattr(passthrough, op)
    prog, y = program(lambda: kernel(ops.scale(pc.data("x", [3]), scale=2.0)))
    exe = pc.Executor()
    (first,) = exe.run(prog, feed={"x": np.ones(3, F32)}, fetch_list=[y])
    (second,) = exe.run(prog, feed={"x": np.full(3, 5, F32)}, fetch_list=[y])
    assert first.tolist() == [2.0] * 3 and second.tolist() == [10.0] * 3


def test_a_python_kernel_updating_its_input_in_place_keeps_that_buffer(passthrough):
    """An output bound to its input's variable, returned as that very input: no copy, the
    variable keeps its buffer (the collectives sum gradients this way)."""
    prog = pc.Program()
    with pc.program_guard(prog, pc.Program()):
        y = ops.scale(pc.data("x", [3]), scale=3.0)
        prog.global_block().append_op("double_in_place", {"x": y}, {"out": y})
        z = ops.scale(y, scale=1.0)
    exe = pc.Executor()
    for value in (1.0, 2.0):
        (got,) = exe.run(prog, feed={"x": np.full(3, value, F32)}, fetch_list=[z])
        assert got.tolist() == [6.0 * value] * 3
    plan = exe.prepare(prog, {"x": np.ones(3, F32)}, [z])
    first, second = GIVEN_IN_PLACE[-2:]
    assert first is second and plan._runner.array(y.name) is second


def test_fetching_a_fed_variable_gives_a_copy(passthrough):
    prog, y = program(lambda: passthrough.ident(pc.data("x", [3])))
    mine = np.ones(3, F32)
    got = pc.Executor().run(prog, feed={"x": mine}, fetch_list=[y, "x"])
    assert all(not np.shares_memory(g, mine) for g in got)


def test_a_python_kernels_big_endian_result_is_read_correctly(passthrough):
    prog, c = program(lambda: ops.add(b := passthrough.big_endian(pc.data("x", [3])), b))
    (got,) = pc.Executor().run(prog, feed={"x": np.array([1, 2, 3], F32)}, fetch_list=[c])
    assert got.tolist() == [2.0, 4.0, 6.0]


def test_views_of_a_dropped_result_keep_their_values():
    prog, y = program(lambda: ops.scale(pc.data("x", [2, 3]), scale=1.0))
    exe = pc.Executor()

    def first_row(value):
        (out,) = exe.run(prog, feed={"x": np.full((2, 3), value, F32)}, fetch_list=[y])
        return out[0]  # `out` itself is dropped here

    rows = [first_row(v) for v in (1.0, 2.0, 3.0)]
    assert [r.tolist() for r in rows] == [[1.0] * 3, [2.0] * 3, [3.0] * 3]


def test_a_dropped_result_is_reused():
    prog, y = program(lambda: ops.scale(pc.data("x", [1024]), scale=2.0))
    exe = pc.Executor()
    (out,) = exe.run(prog, feed={"x": np.ones(1024, F32)}, fetch_list=[y])
    address = out.ctypes.data
    del out
    (out,) = exe.run(prog, feed={"x": np.full(1024, 3, F32)}, fetch_list=[y])
    assert out.ctypes.data == address and out[0] == 6.0


def test_target_gradients_are_never_overwritten():
    prog = pc.Program()
    with pc.program_guard(prog):
        x, gy, gz = (pc.data(n, [3]) for n in ("x", "gy", "gz"))
        y = ops.scale(x, scale=2.0)
        z = ops.scale(y, scale=3.0)
        (dx,) = pc.gradients([y, z], [x], target_gradients=[gy, gz])
    assert not any(gy.name in op.output_names for op in prog.global_block().ops)
    seed_y, seed_z = np.ones(3, F32), np.full(3, 2, F32)
    (got,) = pc.Executor().run(
        prog, feed={"x": np.ones(3, F32), "gy": seed_y, "gz": seed_z}, fetch_list=[dx]
    )
    assert got.tolist() == (2 * (seed_y + 3 * seed_z)).tolist()
    assert seed_y.tolist() == [1.0] * 3


# -- in-place updates and scopes -----------------------------------------------------------------


def test_an_op_rewriting_its_own_input_sees_the_old_value():
    prog = pc.Program()
    block = prog.global_block()
    w = block.create_parameter("w", [3, 3], "float32")
    block.append_op("transpose", {"x": w}, {"out": w}, {"perm": [1, 0]})  # w = w.T
    block.append_op("matmul", {"x": w, "y": w}, {"out": w})  # w = w @ w
    scope = pc.Scope()
    start = np.arange(9, dtype=F32).reshape(3, 3)
    scope.set_var("w", start.copy())
    pc.Executor().run(prog, feed={}, fetch_list=[], scope=scope)
    np.testing.assert_array_equal(scope.find_var("w"), start.T @ start.T)


def test_persistable_results_are_written_where_the_variable_lives():
    prog = pc.Program()
    block = prog.global_block()
    p = block.create_parameter("p", [3], "float32")
    block.append_op("scale", {"x": p}, {"out": p}, {"scale": 2.0})
    parent = pc.Scope()
    parent.set_var("p", np.ones(3, F32))
    child = parent.new_scope()
    pc.Executor().run(prog, feed={}, fetch_list=[], scope=child)
    assert parent.find_var("p").tolist() == [2.0] * 3
    replacement = np.zeros(3, F32)
    parent.set_var("p", replacement)
    assert child.find_var("p") is replacement  # the child holds no copy of its own


def test_op_attrs_change_only_through_set_attr_which_replans():
    prog, (h, y) = program(
        lambda: (h := ops.scale(x := pc.data("x", [3]), scale=2.0), ops.add(h, x))
    )
    exe, scope = pc.Executor(), pc.Scope()
    feed = {"x": np.ones(3, F32)}
    assert exe.run(prog, feed=feed, fetch_list=[y], scope=scope)[0].tolist() == [3.0] * 3
    op = prog.global_block().ops[0]
    with pytest.raises(pc.ProgramError, match=r"op 'scale': attrs are read-only.*set_attr"):
        op.attrs["scale"] = 10.0
    with pytest.raises(pc.AttrError, match="scale"):
        op.set_attr("scale", "ten")
    op.set_attr("scale", 10.0)
    h.persistable = True  # keep h in the scope from now on
    assert exe.run(prog, feed=feed, fetch_list=[y], scope=scope)[0].tolist() == [11.0] * 3
    assert scope.find_var(h.name).tolist() == [10.0] * 3


def test_concurrent_runs_of_one_plan_take_turns():
    prog, y = program(
        lambda: ops.add(
            ops.scale(x := pc.data("x", [1 << 18]), scale=1.0), ops.exp(ops.scale(x, scale=0.0))
        )
    )
    exe = pc.Executor(num_threads=1)
    wrong = []

    def worker(value):
        feed = {"x": np.full(1 << 18, value, F32)}
        for _ in range(40):
            (out,) = exe.run(prog, feed=feed, fetch_list=[y])
            if not (out == value + 1).all():
                wrong.append(value)

    threads = [threading.Thread(target=worker, args=(v,)) for v in (1.0, 100.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


# -- plugins' hooks ------------------------------------------------------------------------------


class Picker:
    def __init__(self, pick):
        self.pick = pick

    @pc.hookimpl
    def paddle_core_select_kernel(self, op, device, dtype, candidates):
        return self.pick(dtype) if op == "exp" else None


def _raise(dtype):
    raise RuntimeError("picker bug")


@pytest.mark.parametrize(
    ("pick", "problem"),
    [
        (lambda dtype: "exp_fast", r"hook \(of picker\) returned 'exp_fast' for op 'exp'"),
        (
            lambda dtype: pc.get_registry().kernel_candidates("matmul", "cpu", dtype)[0],
            r"returned <native kernel 'matmul'.*expected one of the candidates",
        ),
        (_raise, r"plugin 'picker''s paddle_core_select_kernel hook failed.*picker bug"),
    ],
)
def test_a_select_kernel_hook_returning_nonsense_is_a_plugin_error(pick, problem):
    pc.register_plugin(Picker(pick), name="picker")
    prog, y = program(lambda: ops.exp(pc.data("x", [4])))
    with pytest.raises(pc.PluginError, match=problem) as err:
        pc.Executor().run(prog, feed={"x": np.ones(4, F32)}, fetch_list=[y])
    assert err.value.plugin == "picker"


def _fetch_matches_declaration(prog, feed, fetch):
    got = pc.Executor().run(prog, feed=feed, fetch_list=fetch)
    for array, var in zip(got, fetch):
        assert (array.shape, array.dtype.name) == (var.shape, var.dtype), var.name
    return got


@pytest.mark.parametrize(
    "make, attr, value, want",
    [
        (lambda x: ops.transpose(x, perm=[1, 0]), "perm", [0, 1], ((2, 3), "float32")),
        (lambda x: ops.unsqueeze(x, axes=[0]), "axes", [2], ((2, 3, 1), "float32")),
        (lambda x: ops.sum(x, axes=[1]), "axes", [0], ((3,), "float32")),
        (lambda x: ops.sum(x, axes=[1]), "keepdim", True, ((2, 1), "float32")),
        (lambda x: ops.cast(x, dtype="float64"), "dtype", "int32", ((2, 3), "int32")),
        (lambda x: ops.reshape(x, shape=[3, 2]), "shape", [6], ((6,), "float32")),
    ],
)
def test_set_attr_infers_the_outputs_again_and_everything_downstream(make, attr, value, want):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [2, 3])
        out = make(x)
        after = ops.scale(out, scale=2.0)  # downstream: follows the new shape
    out.op.set_attr(attr, value)
    assert (out.shape, out.dtype) == want and (after.shape, after.dtype) == want
    _fetch_matches_declaration(prog, {"x": np.arange(6, dtype=F32).reshape(2, 3)}, [out, after])


def test_fill_constant_shape_change_reaches_its_readers():
    prog = pc.Program()
    with pc.program_guard(prog):
        c = ops.fill_constant(shape=[2], dtype="float32", value=1.0)
        y = ops.add(c, c)
    c.op.set_attr("shape", [4, 1])
    assert c.shape == y.shape == (4, 1)
    _fetch_matches_declaration(prog, {}, [c, y])


def test_set_attr_that_breaks_a_downstream_op_is_refused_and_changes_nothing():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [2, 3])
        t = ops.transpose(x, perm=[1, 0])
        y = ops.add(t, pc.data("z", [3, 2]))
    version = prog.version
    with pytest.raises(pc.ShapeError, match=r"op 'add'.*\[2, 3\].*\[3, 2\]"):
        t.op.set_attr("perm", [0, 1])
    assert t.op.attrs["perm"] == [1, 0] and t.shape == (3, 2) and y.shape == (3, 2)
    assert prog.version == version


def test_a_declaration_edited_behind_the_api_is_caught_when_planning():
    prog = pc.Program()
    with pc.program_guard(prog):
        y = ops.transpose(pc.data("x", [2, 3]), perm=[1, 0])
    y.shape = (2, 3)  # a stale declaration, as set_attr used to leave
    with pytest.raises(
        pc.ShapeError,
        match=r"gives 'transpose_0.out' as float32\[3, 2\] .*"
        r"declares it float32\[2, 3\]",
    ):
        pc.Executor().run(prog, feed={"x": np.ones((2, 3), F32)}, fetch_list=[y])


def test_set_attr_never_redeclares_a_parameter():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [2, 3])
        w = prog.global_block().create_var("w", [3, 2], persistable=True)
        prog.global_block().append_op("transpose", {"x": x}, {"out": w}, {"perm": [1, 0]})
    with pytest.raises(pc.ShapeError, match=r"persistable variable 'w' float32\[2, 3\]"):
        prog.global_block().ops[0].set_attr("perm", [0, 1])
    assert w.shape == (3, 2)


def test_a_run_that_outgrows_the_memory_available_is_refused_naming_its_largest_value():
    """4 TiB is within what one buffer may hold, but no machine running the suite has it:
    allocating would succeed (Linux overcommits) and the process be killed when written."""
    prog, y = program(
        lambda: pc.ops.fill_constant(shape=[2**20, 2**20], dtype="float32", value=1.0)
    )
    with pytest.raises(
        pc.ProgramError, match=r"needs 4096\.0 GiB .* the largest is '.*' \(float32"
    ):
        pc.Executor().run(prog, fetch_list=[y])
