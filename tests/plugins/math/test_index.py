"""paddle-ops-math index ops against NumPy: gather (numpy.take) and its gradient, one_hot; an
index out of range is a KernelError at run, never a read or write past a buffer."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import assert_matches, check_grad, finishes_within, pc, rand, run1, run_op

from paddle_core._src.base.dtypes import DTYPES

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

ALL = list(DTYPES)  # every dtype: bool, int8 ... uint64, float16, bfloat16, float32, float64


def values(shape, dtype):
    """Distinct-ish values, so that an element taken from the wrong place shows."""
    n = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    return (n % 3 == 1) if dtype == "bool" else n.astype(dtype)


# -- gather -------------------------------------------------------------------------------------

GATHER = [  # x shape, index, axis
    ((5, 3), [4, 0, 0, 2], 0),
    ((5, 3), [[1, -1], [-3, 0]], 1),
    ((2, 3, 4), [3, 1], -1),
    ((2, 3, 4), 2, 1),  # a 0-d index drops the axis
    ((2, 3, 4), -2, 0),
    ((4,), [[0, 1, 2], [3, 3, 3]], 0),
    ((4,), np.zeros((0,), np.int64), 0),  # empty index
    ((0, 3), np.zeros((2, 0), np.int64), 0),  # empty x, empty index
    ((3, 0), [2, 1], 0),  # rows of no elements
    ((4097, 9), [4096, 0, 17, 4096], 0),
    ((3, 5000), list(range(4999, -1, -7)), 1),  # large enough to split across threads
]


@pytest.mark.parametrize(("xs", "index", "axis"), GATHER)
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_gather_matches_numpy_take(xs, index, axis, index_dtype):
    index = np.asarray(index).astype(index_dtype)
    for dtype in ALL:
        x = values(xs, dtype)
        got = run1("gather", {"x": x, "index": index}, {"axis": axis})
        assert_matches(got, np.take(x, index, axis=axis))


def test_gather_default_axis_is_0():
    x = values((4, 2), "float32")
    assert_matches(run1("gather", {"x": x, "index": np.array([3, 1])}), x[[3, 1]])


@pytest.mark.parametrize("bad", [5, -6, 2**40, -(2**40)])
@pytest.mark.parametrize("op", ["gather", "gather_grad"])
def test_an_index_out_of_range_is_a_kernel_error_naming_it(bad, op):
    x = np.zeros((5, 2), np.float64)
    index = np.array([[0, 4], [bad, -5]])
    inputs = {"x": x, "index": index}
    if op == "gather_grad":
        inputs["out_grad"] = np.ones((2, 2, 2))
    with pytest.raises(
        pc.KernelError,
        match=rf"op '{op}'.*index {bad} \(at flat position 2\) is out of range for the gather "
        r"axis of size 5 \(valid: -5 to 4\)",
    ):
        run_op(op, inputs)


def test_gather_from_an_empty_axis_is_refused():
    x = np.zeros((0, 3), np.float32)
    with pytest.raises(pc.ShapeError, match=r"op 'gather'.*axis 0 of x has size 0"):
        run1("gather", {"x": x, "index": np.array([0])})
    prog = pc.Program()
    with pc.program_guard(prog):  # the index's size is unknown until run time: checked then
        out = pc.ops.gather(pc.data("x", [0, 3]), pc.data("i", [None], "int64"))
    with pytest.raises(pc.ShapeError, match=r"op 'gather'.*axis 0 of x has size 0"):
        pc.Executor().run(prog, feed={"x": x, "i": np.array([0])}, fetch_list=[out])
    (got,) = pc.Executor().run(prog, feed={"x": x, "i": np.zeros(0, np.int64)}, fetch_list=[out])
    assert got.shape == (0, 3)


def test_gather_shapes_are_checked_when_appended():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [None, 3, 4])
        out = pc.ops.gather(x, pc.data("i", [2, None], "int32"), axis=-2)
        assert out.shape == (None, 2, None, 4) and out.dtype == "float32"
        with pytest.raises(pc.ShapeError, match=r"op 'gather'.*index must be int32 or int64"):
            pc.ops.gather(x, pc.data("f", [2]))
        with pytest.raises(pc.ShapeError, match=r"op 'gather'.*axis 3 is out of range"):
            pc.ops.gather(x, pc.data("j", [2], "int64"), axis=3)
        with pytest.raises(pc.ShapeError, match=r"op 'gather'.*0-d"):
            pc.ops.gather(pc.data("s", []), pc.data("k", [2], "int64"))


GATHER_GRAD = [
    ((5, 3), [4, 0, 0, 2, 0], 0),  # repeated indices add up
    ((3, 4), [[1, -1], [-1, 1]], 1),
    ((2, 3, 4), 1, 1),
    ((2, 3, 2), [1, 1, 0], -1),
    ((4,), np.zeros((0,), np.int64), 0),
]


@pytest.mark.parametrize(("xs", "index", "axis"), GATHER_GRAD)
def test_gather_gradient(xs, index, axis):
    rng = np.random.default_rng(0)
    x = rand(rng, xs, "float64")
    check_grad("gather", {"x": x, "index": np.asarray(index)}, {"axis": axis}, wrt=["x"])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gather_grad_scatter_adds_like_numpy(dtype):
    rng = np.random.default_rng(1)
    x = np.zeros((3, 700, 5), dtype)
    index = rng.integers(-700, 700, size=(40, 30))
    g = rand(rng, (3, 40, 30, 5), dtype)
    want = np.zeros(x.shape, np.float64)
    np.add.at(want, (slice(None), index), g.astype(np.float64))
    got = run_op("gather_grad", {"x": x, "index": index, "out_grad": g}, {"axis": 1})["x_grad"][0]
    assert_matches(got, want.astype(dtype), rtol=1e-5, atol=1e-5)


# -- one_hot ------------------------------------------------------------------------------------


def numpy_one_hot(index, depth, dtype):
    return (index[..., None] == np.arange(depth)).astype(dtype)


ONE_HOT = [  # index, depth
    ([0, 2, 1, 2], 3),
    ([[4, 0], [1, 1], [3, 2]], 5),
    (2, 4),  # 0-d index: a vector
    (np.zeros((0, 3), np.int64), 2),
    ([0], 1),
    (np.arange(20000) % 7, 7),  # large enough to split across threads
]


@pytest.mark.parametrize(("index", "depth"), ONE_HOT)
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_one_hot_matches_numpy(index, depth, index_dtype):
    index = np.asarray(index).astype(index_dtype)
    for dtype in ALL:
        got = run1("one_hot", {"index": index}, {"depth": depth, "dtype": dtype})
        assert_matches(got, numpy_one_hot(index, depth, dtype))


def test_one_hot_is_float32_by_default():
    got = run1("one_hot", {"index": np.array([1, 0])}, {"depth": 2})
    assert_matches(got, np.array([[0, 1], [1, 0]], np.float32))


@pytest.mark.parametrize("bad", [3, -1, 2**40])
def test_one_hot_index_out_of_range_is_a_kernel_error(bad):
    with pytest.raises(
        pc.KernelError,
        match=rf"op 'one_hot'.*index {bad} \(at flat position 1\) is out of range for depth of "
        r"size 3 \(valid: 0 to 2\)",
    ):
        run1("one_hot", {"index": np.array([0, bad])}, {"depth": 3})


def test_one_hot_is_checked_when_appended():
    with pc.program_guard(pc.Program()):
        i = pc.data("i", [None, 2], "int64")
        out = pc.ops.one_hot(i, depth=4, dtype="int32")
        assert out.shape == (None, 2, 4) and out.dtype == "int32"
        with pytest.raises(pc.ShapeError, match=r"op 'one_hot'.*index must be int32 or int64"):
            pc.ops.one_hot(pc.data("f", [2]), depth=4)
        with pytest.raises(pc.AttrError, match=r"op 'one_hot', attr 'depth'"):
            pc.ops.one_hot(i, depth=0)
        with pytest.raises(pc.AttrError, match=r"op 'one_hot', attr 'dtype'"):
            pc.ops.one_hot(i, depth=2, dtype="complex64")


# -- gather_nd ----------------------------------------------------------------------------------


def numpy_gather_nd(x, index, batch_dims=0):
    """ONNX's GatherND, written out: each batch takes x's slices at its index tuples."""
    b = batch_dims
    batch_shape = index.shape[:b]
    tuples = index.reshape(int(np.prod(batch_shape)), -1, index.shape[-1])
    xs = x.reshape(int(np.prod(batch_shape)), *x.shape[b:])
    out = [[xs[n][tuple(t)] for t in tuples[n]] for n in range(tuples.shape[0])]
    rest = x.shape[b + index.shape[-1] :]
    return np.array(out, dtype=x.dtype).reshape(*index.shape[:-1], *rest)


GATHER_ND = [  # x shape, index, batch_dims
    ((3, 4), [[0, 1], [2, 3], [-1, -4]], 0),
    ((3, 4, 2), [[1], [0], [1]], 0),  # slices
    ((3, 4, 2), [[[0, 0, 1]], [[2, 3, 0]]], 0),
    ((2, 3, 4), [[1, 2], [0, 0]], 1),  # one tuple per batch
    ((2, 3, 4), [[[1], [2]], [[0], [0]]], 1),
    ((2, 3), np.zeros((0, 2), np.int64), 0),  # no tuples
    ((0, 3), np.zeros((0, 1), np.int64), 0),
]


@pytest.mark.parametrize(("xs", "index", "batch_dims"), GATHER_ND)
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_gather_nd_matches_onnxs_definition(xs, index, batch_dims, index_dtype):
    index = np.asarray(index).astype(index_dtype)
    for dtype in ALL:
        x = values(xs, dtype)
        got = run1("gather_nd", {"x": x, "index": index}, {"batch_dims": batch_dims})
        assert_matches(got, numpy_gather_nd(x, index, batch_dims))


def test_gather_nd_of_full_tuples_is_numpy_fancy_indexing():
    x = values((5, 6, 7), "float64")
    index = np.random.default_rng(4).integers(-5, 5, size=(40, 20, 2))
    index[..., 1] %= 6
    got = run1("gather_nd", {"x": x, "index": index})
    assert_matches(got, x[index[..., 0], index[..., 1]])


@pytest.mark.parametrize(("xs", "index", "batch_dims"), [g for g in GATHER_ND[:5]])
def test_gather_nd_gradient(xs, index, batch_dims):
    x = rand(np.random.default_rng(5), xs, "float64")
    inputs = {"x": x, "index": np.asarray(index)}
    check_grad("gather_nd", inputs, {"batch_dims": batch_dims}, wrt=["x"])


def test_gather_nd_grad_adds_up_repeated_tuples():
    x = np.zeros((3, 2))
    index = np.array([[1], [1], [-1]])
    g = np.arange(6.0).reshape(3, 2)
    got = run_op("gather_nd_grad", {"x": x, "index": index, "out_grad": g})["x_grad"][0]
    assert_matches(got, np.array([[0, 0], [0 + 2, 1 + 3], [4, 5]], np.float64))


@pytest.mark.parametrize(("bad", "at"), [(3, 2), (-4, 2), (2**40, 2)])
def test_a_gather_nd_index_out_of_range_is_a_kernel_error_naming_it(bad, at):
    x, index = np.zeros((3, 4)), np.array([[0, 1], [bad, 0]])
    with pytest.raises(
        pc.KernelError,
        match=rf"op 'gather_nd'.*index {bad} \(at flat position {at}\) is out of range for "
        r"indexed axis 0 of x of size 3 \(valid: -3 to 2\)",
    ):
        run1("gather_nd", {"x": x, "index": index})
    with pytest.raises(pc.KernelError, match=r"indexed axis 1 of x of size 4"):
        run1("gather_nd", {"x": x, "index": np.array([[0, 4]])})


def test_gather_nd_shapes_are_checked_when_appended():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [None, 3, 4])
        assert pc.ops.gather_nd(x, pc.data("i", [5, 2], "int64")).shape == (5, 4)
        assert pc.ops.gather_nd(x, pc.data("j", [None, 1], "int32"), batch_dims=1).shape == (
            None,
            4,
        )
        with pytest.raises(pc.ShapeError, match=r"op 'gather_nd'.*tuples of 4 indices"):
            pc.ops.gather_nd(x, pc.data("k", [5, 4], "int64"))
        with pytest.raises(pc.ShapeError, match=r"op 'gather_nd'.*index must be int32 or int64"):
            pc.ops.gather_nd(x, pc.data("f", [5, 2]))
        with pytest.raises(pc.ShapeError, match=r"op 'gather_nd'.*batch_dims"):
            pc.ops.gather_nd(x, pc.data("m", [2, 2], "int64"), batch_dims=2)
        with pytest.raises(pc.ShapeError, match=r"op 'gather_nd'.*must be known"):
            pc.ops.gather_nd(x, pc.data("n", [2, None], "int64"))
        with pytest.raises(pc.AttrError, match=r"op 'gather_nd', attr 'batch_dims'"):
            pc.ops.gather_nd(x, pc.data("o", [2, 1], "int64"), batch_dims=-1)


# -- scatter (ONNX's ScatterElements) and scatter_nd --------------------------------------------

REDUCE = {
    "none": lambda a, b: b,
    "add": np.add,
    "mul": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}


def numpy_scatter(x, index, updates, axis, reduction):
    """ScatterElements as ONNX defines it, in updates' row-major order (later ones win)."""
    out = x.copy()
    axis %= x.ndim
    for p in np.ndindex(*index.shape):
        target = list(p)
        target[axis] = index[p]
        t = tuple(target)
        out[t] = REDUCE[reduction](out[t], updates[p])
    return out


def numpy_scatter_nd(x, index, updates, reduction):
    out = x.copy()
    tuples = index.reshape(-1, index.shape[-1])
    slices = updates.reshape(len(tuples), *x.shape[index.shape[-1] :])
    for t, u in zip(tuples, slices):
        out[tuple(t)] = REDUCE[reduction](out[tuple(t)], u)
    return out


SCATTER = [  # x shape, index, axis
    ((3, 3), [[1, 0, 2], [0, 2, 1]], 0),
    ((3, 3), [[1, 0, 2], [0, 2, 1]], 1),
    ((1, 5), [[1, 3]], 1),
    ((1, 5), [[1, 1]], 1),  # repeated: reduce in order
    ((4, 3, 2), [[[0], [-1]], [[3], [2]]], 0),
    ((4, 3, 2), [[[1, 0]], [[-1, -2]]], 2),
    ((5,), np.zeros((0,), np.int64), 0),
]


@pytest.mark.parametrize(("xs", "index", "axis"), SCATTER)
@pytest.mark.parametrize("reduction", list(REDUCE))
def test_scatter_matches_onnxs_scatter_elements(xs, index, axis, reduction):
    index = np.asarray(index)
    rng = np.random.default_rng(6)
    for dtype in ALL:
        x = values(xs, dtype)
        updates = rand(rng, index.shape, dtype)
        got = run1(
            "scatter",
            {"x": x, "index": index.astype("int32"), "updates": updates},
            {"axis": axis, "reduction": reduction},
        )
        assert_matches(got, numpy_scatter(x, index, updates, axis, reduction))


def test_scatter_max_propagates_nan_and_bool_adds_as_or():
    x = np.array([1.0, np.nan, 3.0])
    got = run1("scatter", {"x": x, "index": np.array([0, 1, 2]), "updates": np.array([np.nan, 2, 5])},
               {"reduction": "max"})  # fmt: skip
    assert_matches(got, np.array([np.nan, np.nan, 5.0]))
    b = np.array([True, False, False])
    got = run1("scatter", {"x": b, "index": np.array([1, 1]), "updates": np.array([True, False])},
               {"reduction": "add"})  # fmt: skip
    assert_matches(got, np.array([True, True, False]))


SCATTER_ND = [  # x shape, index, updates shape
    ((8,), [[4], [3], [1], [7]], (4,)),
    ((4, 4, 4), [[0], [2]], (2, 4, 4)),
    ((4, 4, 4), [[0, 1], [2, -1], [0, 1]], (3, 4)),  # repeated
    ((2, 3), [[[0, 0], [1, 2]]], (1, 2)),
    ((3,), np.zeros((0, 1), np.int64), (0,)),
]


@pytest.mark.parametrize(("xs", "index", "us"), SCATTER_ND)
@pytest.mark.parametrize("reduction", list(REDUCE))
def test_scatter_nd_matches_onnxs_definition(xs, index, us, reduction):
    index = np.asarray(index)
    rng = np.random.default_rng(7)
    for dtype in ALL:
        x, updates = values(xs, dtype), rand(rng, us, dtype)
        got = run1(
            "scatter_nd",
            {"x": x, "index": index, "updates": updates},
            {"reduction": reduction},
        )
        assert_matches(got, numpy_scatter_nd(x, index, updates, reduction))


def test_scatter_of_many_columns_runs_in_parallel_and_in_order():
    """Enough columns to split across threads; each column's repeated indices reduce in
    updates' order, so the result is the same with any number of threads."""
    rng = np.random.default_rng(8)
    x = rand(rng, (4, 6000), "float64")
    index = rng.integers(-4, 4, size=(9, 6000))
    updates = rand(rng, (9, 6000), "float64")
    prog = pc.Program()
    with pc.program_guard(prog):
        args = [
            pc.data(n, list(v.shape), str(v.dtype))
            for n, v in (("x", x), ("i", index), ("u", updates))
        ]
        outs = [pc.ops.scatter(*args, reduction=r) for r in REDUCE]
    for threads in (1, 3):
        feed = {"x": x, "i": index, "u": updates}
        got = pc.Executor(num_threads=threads).run(prog, feed=feed, fetch_list=outs)
        for g, reduction in zip(got, REDUCE):
            assert_matches(g, numpy_scatter(x, index, updates, 0, reduction))


EMPTY_SCATTERS = """
import numpy as np
from paddle_core.testing import run_op

x = np.zeros((0, 2**31 - 1, 4), np.int32)  # no element, no byte
for reduction in ("none", "add", "mul", "max", "min"):
    inputs = {"x": x, "index": x, "updates": x}
    (out,) = run_op("scatter", inputs, {"axis": 0, "reduction": reduction})["out"]
    inputs = {"x": x, "index": np.zeros((0, 1), np.int64), "updates": x}
    (out_nd,) = run_op("scatter_nd", inputs, {"reduction": reduction})["out"]
    print(reduction, out.shape, out_nd.shape)
"""


def test_scatters_into_an_empty_x_with_huge_dimensions_take_no_time():
    """x [0, 2**31 - 1, 4] holds nothing, nor do index and updates: nothing to write, an
    answer at once (walking the 2**33 columns took about a minute each)."""
    printed = finishes_within(120, EMPTY_SCATTERS).splitlines()
    shape = (0, 2**31 - 1, 4)
    assert printed == [f"{r} {shape} {shape}" for r in ("none", "add", "mul", "max", "min")]


# Gradient checks away from ties (max, min) and with no repeated target under "none" but for
# one case, where only the winning update gets a gradient (checked exactly below).
SCATTER_GRAD = [
    ((3, 4), [[1, 0, 2, 2], [0, 2, 1, 0]], 0),
    ((2, 5), [[1, 3, 3], [0, 0, 4]], 1),  # repeated targets
    ((4,), [3, -4], 0),
]


@pytest.mark.parametrize(("xs", "index", "axis"), SCATTER_GRAD)
@pytest.mark.parametrize("reduction", list(REDUCE))
def test_scatter_gradients(xs, index, axis, reduction):
    rng = np.random.default_rng(9)
    index = np.asarray(index)
    x, updates = rng.uniform(0.5, 2, xs), rng.uniform(0.5, 2, index.shape)
    if reduction in ("max", "min"):  # distinct values: no ties at a kink
        x = rng.permutation(np.arange(x.size, dtype=np.float64) / 3).reshape(xs)
        updates = rng.permutation(np.arange(updates.size) / 3 + 0.1).reshape(index.shape)
    inputs = {"x": x, "index": index, "updates": updates}
    check_grad("scatter", inputs, {"axis": axis, "reduction": reduction}, wrt=["x", "updates"])


@pytest.mark.parametrize("reduction", list(REDUCE))
def test_scatter_nd_gradients(reduction):
    rng = np.random.default_rng(10)
    index = np.array([[0, 1], [2, 0], [0, 1]])
    x, updates = rng.uniform(0.5, 2, (3, 2, 3)), rng.uniform(0.5, 2, (3, 3))
    if reduction in ("max", "min"):
        x = rng.permutation(np.arange(18.0) / 3).reshape(3, 2, 3)
        updates = rng.permutation(np.arange(9.0) / 3 + 0.1).reshape(3, 3)
    inputs = {"x": x, "index": index, "updates": updates}
    check_grad("scatter_nd", inputs, {"reduction": reduction}, wrt=["x", "updates"])


def test_scatter_grad_at_zeros_ties_and_repeats():
    """The exact cases finite differences cannot check: mul with zeros, max with ties (split
    evenly), and none with repeats (the last update wins and alone gets a gradient)."""
    x = np.array([2.0, 0.0, 5.0])
    index = np.array([0, 0, 1, 2])
    updates = np.array([0.0, 3.0, 4.0, 5.0])
    g = np.array([1.0, 10.0, 100.0])
    inputs = {"x": x, "index": index, "updates": updates}

    def grads(reduction):
        out = run1("scatter", inputs, {"reduction": reduction})
        got = run_op(
            "scatter_grad", {**inputs, "out": out, "out_grad": g}, {"reduction": reduction}
        )
        return got["x_grad"][0], got["updates_grad"][0]

    dx, du = grads("mul")  # out = [2 * 0 * 3, 0 * 4, 5 * 5]
    assert_matches(dx, [0.0, 40.0, 500.0])
    assert_matches(du, [6.0, 0.0, 0.0, 500.0])
    dx, du = grads("max")  # out = [3, 4, 5]: x[2] and updates[3] tie
    assert_matches(dx, [0.0, 0.0, 50.0])
    assert_matches(du, [0.0, 1.0, 10.0, 50.0])
    dx, du = grads("none")
    assert_matches(dx, [0.0, 0.0, 0.0])
    assert_matches(du, [0.0, 1.0, 10.0, 100.0])
    dx, du = grads("add")
    assert_matches(dx, g)
    assert_matches(du, [1.0, 1.0, 10.0, 100.0])


@pytest.mark.parametrize(("op", "index"), [("scatter", [[0, 5]]), ("scatter_nd", [[0], [5]])])
def test_a_scatter_index_out_of_range_is_a_kernel_error_naming_it(op, index):
    x = np.zeros((5, 2))
    index = np.asarray(index)
    updates = np.ones(index.shape if op == "scatter" else (2, 2))
    what = "the scatter axis" if op == "scatter" else "indexed axis 0 of x"
    with pytest.raises(
        pc.KernelError,
        match=rf"op '{op}'.*index 5 \(at flat position 1\) is out of range for {what} of size "
        r"5 \(valid: -5 to 4\)",
    ):
        run1(op, {"x": x, "index": index, "updates": updates})


def test_scatter_shapes_are_checked_when_appended():
    with pc.program_guard(pc.Program()):
        x, i = pc.data("x", [4, 3]), pc.data("i", [2, 3], "int64")
        assert pc.ops.scatter(x, i, pc.data("u", [2, 3])).shape == (4, 3)
        with pytest.raises(pc.ShapeError, match=r"op 'scatter'.*updates must have index's shape"):
            pc.ops.scatter(x, i, pc.data("v", [2, 2]))
        with pytest.raises(pc.ShapeError, match=r"op 'scatter'.*dim 1 \(5\) is larger than x's"):
            pc.ops.scatter(x, pc.data("j", [2, 5], "int64"), pc.data("w", [2, 5]))
        with pytest.raises(pc.ShapeError, match=r"op 'scatter'.*updates must have x's dtype"):
            pc.ops.scatter(x, i, pc.data("d", [2, 3], "float64"))
        with pytest.raises(pc.AttrError, match=r"op 'scatter', attr 'reduction'"):
            pc.ops.scatter(x, i, pc.data("e", [2, 3]), reduction="sum")
        assert pc.ops.scatter_nd(x, pc.data("k", [5, 1], "int32"), pc.data("s", [5, 3])).shape == (
            4,
            3,
        )
        with pytest.raises(pc.ShapeError, match=r"op 'scatter_nd'.*updates must have shape"):
            pc.ops.scatter_nd(x, pc.data("m", [5, 2], "int32"), pc.data("t", [5, 3]))
