"""paddle-ops-math index ops against NumPy: gather (numpy.take) and its gradient, one_hot; an
index out of range is a KernelError at run, never a read or write past a buffer."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import assert_matches, check_grad, pc, rand, run1, run_op

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

ALL = ["bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64"]


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
            pc.ops.one_hot(i, depth=2, dtype="float16")
