"""The shared shape helpers every append runs: broadcasting with unknown dimensions, and the
size limits on a shape rule's output."""

from __future__ import annotations

import itertools
import re
from types import SimpleNamespace

import numpy as np
import pytest

import paddle_core as pc
from paddle_core._src.base.limits import MAX_BYTES, MAX_RANK, shape_problem
from paddle_core._src.graph.shape_inference import ShapeContext, check_spec
from paddle_core._src.graph.shape_rules import broadcast_shapes, unary


def _ctx() -> ShapeContext:
    return ShapeContext("add", {}, {}, ["out"])


SHAPES = [(), (1,), (3,), (2, 1), (1, 3), (2, 3), (4, 1, 3), (4, 2, 1), (5, 4, 2, 3)]


@pytest.mark.parametrize("count", [1, 2, 3])
def test_known_shapes_broadcast_as_numpy_does(count):
    for shapes in itertools.product(SHAPES, repeat=count):
        try:
            want = np.broadcast_shapes(*shapes)
        except ValueError:
            with pytest.raises(pc.ShapeError, match="cannot be broadcast together"):
                broadcast_shapes(_ctx(), *shapes)
        else:
            assert broadcast_shapes(_ctx(), *shapes) == want, shapes


@pytest.mark.parametrize(
    "shapes, want",
    [
        (((None, 16), (16, 16)), (16, 16)),  # an unknown dim meets a known n > 1: n
        (((None, 16), (1, 16)), (None, 16)),  # ... meets 1: still unknown
        (((None,), (None,)), (None,)),
        (((None, 1), (5, None)), (5, None)),
        (((1, None), (None, 3), (2, None)), (2, 3)),
        (((None, 4), (3, 1, 4)), (3, None, 4)),
        (([None, 2], (2,)), (None, 2)),  # a list is a shape too
        ((), ()),
    ],
)
def test_unknown_dimensions(shapes, want):
    assert broadcast_shapes(_ctx(), *shapes) == want


def test_a_mismatch_names_the_axis_and_both_sizes():
    with pytest.raises(pc.ShapeError, match=r"\[2, 3\], \[4, 3\] .*\(axis -2: 2 vs 4\)"):
        broadcast_shapes(_ctx(), (2, 3), (4, 3))
    with pytest.raises(pc.ShapeError, match=r"\(axis -1: 3 vs 5\)"):
        broadcast_shapes(_ctx(), (None, 3), (None, 5))


def test_unary_takes_the_first_bound_input():
    x = pc.Program().global_block().create_var("x", shape=(2, None), dtype="int32")
    ctx = ShapeContext("abs", {"x": [], "y": [x]}, {}, ["out"])
    unary(ctx)
    assert ctx.outputs == {"out": [((2, None), "int32")]}


def test_unary_without_an_input_names_the_op():
    # (an op whose inputs are all dispensable, appended with none)
    with pytest.raises(pc.ShapeError, match=r"op 'abs': its output takes .* none was given"):
        unary(ShapeContext("abs", {"x": []}, {}, ["out"]))


@pytest.mark.parametrize(
    "shape, itemsize, problem",
    [
        ((2, 3), 4, None),
        ((None, 1 << 20), 8, None),  # unknown counts as 1
        ((1 << 24, 1 << 24), 1, None),  # exactly the limit
        ((1 << 24, 1 << 24), 2, "larger than"),
        ((None, 1 << 49), 1, "larger than"),
        ((0, 3), 8, None),
        ((0, 1 << 62), 1, "is empty, but"),
        ((0, None, 1 << 62), 1, "is empty, but"),
        ((1,) * MAX_RANK, 1, None),
        ((1,) * (MAX_RANK + 1), 1, "dimensions"),
    ],
)
def test_shape_problem(shape, itemsize, problem):
    found = shape_problem(shape, itemsize)
    assert (found is None) == (problem is None)
    if problem:
        assert problem in found
    assert MAX_BYTES == 1 << 48  # the cases above are sized against this limit


# What check_spec reads of a registry entry: the op's type and its plugin's label.
_INFO = SimpleNamespace(type="toy", plugin=SimpleNamespace(label="plugin 'toy'"))


@pytest.mark.parametrize(
    "shape, dtype, problem",
    [
        ((2, 3), "float32", None),
        ((None, 1 << 20), "float64", None),
        ((1 << 24, 1 << 22), "float32", None),  # exactly the limit
        ((1 << 24, 1 << 23), "float32", "larger than"),
        ((0, 1 << 62), "bool", "is empty, but"),
        ((0, 3), "int64", None),
        ((1,) * MAX_RANK, "uint8", None),
        ((1,) * (MAX_RANK + 1), "uint8", "dimensions"),
        ((2, -1), "float32", "expected ints >= 0 or None"),
        ((2, True), "float32", "expected ints >= 0 or None"),  # a bool is no dimension
        ((2, 3.0), "float32", "expected ints >= 0 or None"),
        ((2, 3), "float", "expected ints >= 0 or None"),  # no such dtype
    ],
)
def test_a_shape_rules_output_is_held_to_the_limits(shape, dtype, problem):
    if problem is None:
        assert check_spec(_INFO, "out", shape, dtype) is None
        return
    with pytest.raises(pc.ShapeError, match=re.escape(problem)) as info:
        check_spec(_INFO, "out", shape, dtype)
    assert str(info.value).startswith("op 'toy': ")
