"""paddle-ops-math sorting ops against NumPy: sort and argsort (stable; NaN after every number,
as numpy.sort puts it) and topk (ONNX's TopK: the lower position first among equal elements);
their gradients against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import FLOATS, HALVES, assert_matches, check_grad, pc, rand, run1, run_op

from paddle_core._src.base.dtypes import DTYPES

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

ALL = list(DTYPES)  # every dtype: bool, int8 ... uint64, float16, bfloat16, float32, float64


def sample(rng, shape, dtype):
    """Values with many ties (and, for floats, NaN and infinities), so order matters."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    x = rng.integers(0, 5, size=shape).astype(dtype)
    if dtype in FLOATS + HALVES and x.size:
        flat = x.reshape(-1)
        picks = rng.integers(0, x.size, size=max(1, x.size // 5))
        flat[picks] = rng.choice([np.nan, np.inf, -np.inf, -0.0], size=picks.size)
    return x


def numpy_argsort(x, axis, descending):
    """Stable, NaN last; descending keeps equal elements in order and puts NaN first. The
    16-bit floats sort as float32, which holds them exactly."""
    if x.dtype.name in HALVES:
        x = x.astype(np.float32)
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    # Reversed order of a stable sort of the reversed array: stable among equals.
    flipped = np.flip(x, axis=axis)
    order = np.argsort(flipped, axis=axis, kind="stable")
    return np.flip(x.shape[axis] - 1 - order, axis=axis) if x.ndim else order


SHAPES = [((7,), 0), ((4, 9), 1), ((4, 9), 0), ((3, 5, 6), -2), ((2, 0, 3), 1), ((3000,), 0)]


@pytest.mark.parametrize(("shape", "axis"), SHAPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_match_numpys_stable_sort(shape, axis, descending):
    rng = np.random.default_rng(0)
    for dtype in ALL:
        x = sample(rng, shape, dtype)
        attrs = {"axis": axis, "descending": descending}
        order = numpy_argsort(x, axis, descending)
        assert_matches(run1("argsort", {"x": x}, attrs), order)
        assert_matches(run1("sort", {"x": x}, attrs), np.take_along_axis(x, order, axis))
        if not descending and dtype not in HALVES:
            assert_matches(run1("sort", {"x": x}, attrs), np.sort(x, axis=axis))


@pytest.mark.parametrize("descending", [False, True])
def test_long_rows_of_random_bits_sort_like_numpy(descending):
    """Rows long enough for the radix sort, of every bit pattern: negatives, NaNs of either
    sign and any payload (all last, in their order in x), -0 beside +0 (equal: in order),
    denormals; plus rows of a few values, where most bytes agree and cost no pass."""
    rng = np.random.default_rng(7)
    for dtype in ALL:
        if dtype == "bool":
            x = rng.random((3, 500)) < 0.5
        else:
            raw = rng.integers(0, 256, size=(3, 500 * np.dtype(dtype).itemsize), dtype=np.uint8)
            x = raw.view(dtype).copy()
            x[1] = x[1, rng.integers(0, 4, size=500)]  # ties: four values, repeated
            if dtype in FLOATS + HALVES:
                x[2, ::7] = -0.0
                x[2, 3::7] = 0.0
        attrs = {"axis": 1, "descending": descending}
        order = numpy_argsort(x, 1, descending)
        assert_matches(run1("argsort", {"x": x}, attrs), order)
        for k in (1, 37, 499):  # topk: the same keys, the first k kept
            got = run_op("topk", {"x": x}, {"k": k, "axis": 1, "largest": descending})
            assert_matches(got["indices"][0], order[:, :k])


def test_nan_sorts_last_ascending_and_first_descending():
    x = np.array([3.0, np.nan, -np.inf, 1.0, np.nan, np.inf])
    assert_matches(run1("argsort", {"x": x}), [2, 3, 0, 5, 1, 4])
    assert_matches(run1("argsort", {"x": x}, {"descending": True}), [1, 4, 5, 0, 3, 2])


def test_a_0d_x_sorts_to_itself():
    x = np.array(2.5)
    assert_matches(run1("sort", {"x": x}, {"axis": 0}), x)
    assert_matches(run1("argsort", {"x": x}, {"axis": -1}), np.array(0))


def numpy_topk(x, k, axis, largest):
    order = numpy_argsort(x, axis, largest)
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis), idx


@pytest.mark.parametrize(
    ("shape", "k", "axis"),
    [((7,), 3, 0), ((4, 9), 9, 1), ((4, 9), 2, 0), ((3, 5, 6), 2, -2), ((300, 40), 5, -1)],
)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_onnxs_order(shape, k, axis, largest):
    rng = np.random.default_rng(1)
    for dtype in ALL:
        x = sample(rng, shape, dtype)
        got = run_op("topk", {"x": x}, {"k": k, "axis": axis, "largest": largest})
        values, indices = numpy_topk(x, k, axis, largest)
        assert_matches(got["values"][0], values)
        assert_matches(got["indices"][0], indices)


def test_topk_with_k_0_or_all():
    x = np.array([[3, 1, 2]], np.int64)
    got = run_op("topk", {"x": x}, {"k": 0})
    assert got["values"][0].shape == (1, 0) and got["indices"][0].dtype == np.int64
    got = run_op("topk", {"x": x}, {"k": 3, "largest": False})
    assert_matches(got["values"][0], [[1, 2, 3]])


def test_the_sorting_ops_are_checked_when_appended():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [None, 5])
        values, indices = pc.ops.topk(x, k=2)
        assert values.shape == (None, 2) and indices.dtype == "int64"
        assert pc.ops.argsort(x, axis=0).dtype == "int64"
        with pytest.raises(pc.ShapeError, match=r"op 'topk'.*k = 6 is larger than x's size 5"):
            pc.ops.topk(x, k=6)
        with pytest.raises(pc.ShapeError, match=r"op 'sort'.*axis 2 is out of range"):
            pc.ops.sort(x, axis=2)
        with pytest.raises(pc.AttrError, match=r"op 'topk', attr 'k'"):
            pc.ops.topk(x, k=-1)
    prog = pc.Program()
    with pc.program_guard(prog):  # k checked again when the size along axis is known
        values, _ = pc.ops.topk(pc.data("y", [None]), k=4)
    with pytest.raises(pc.ShapeError, match=r"op 'topk'.*k = 4 is larger than x's size 3"):
        pc.Executor().run(prog, feed={"y": np.ones(3, np.float32)}, fetch_list=[values])


@pytest.mark.parametrize(("shape", "axis"), [((6,), 0), ((3, 5), 1), ((4, 3, 2), 0)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_gradient(shape, axis, descending):
    # Distinct values: a tie is a kink where finite differences mean nothing.
    rng = np.random.default_rng(2)
    x = rng.permutation(np.arange(np.prod(shape), dtype=np.float64)).reshape(shape) / 7
    check_grad("sort", {"x": x}, {"axis": axis, "descending": descending})


@pytest.mark.parametrize(("shape", "k", "axis"), [((6,), 2, 0), ((3, 5), 5, 1), ((4, 3, 2), 1, 0)])
@pytest.mark.parametrize("largest", [False, True])
def test_topk_gradient(shape, k, axis, largest):
    rng = np.random.default_rng(3)
    x = rng.permutation(np.arange(np.prod(shape), dtype=np.float64)).reshape(shape) / 7
    attrs = {"k": k, "axis": axis, "largest": largest}
    check_grad("topk", {"x": x}, attrs, wrt=["x"], output="values")


def test_sort_gradient_of_a_0d_x():
    check_grad("sort", {"x": np.array(1.5)}, {"axis": 0})


def test_sorting_large_rows_in_parallel():
    x = rand(np.random.default_rng(4), (64, 4000), "float32")
    prog = pc.Program()
    with pc.program_guard(prog):
        order = pc.ops.argsort(pc.data("x", [64, 4000]), axis=1)
    for threads in (1, 2):
        (got,) = pc.Executor(num_threads=threads).run(prog, feed={"x": x}, fetch_list=[order])
        assert_matches(got, np.argsort(x, axis=1, kind="stable"))
