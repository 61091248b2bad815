"""paddle-ops-math shape ops against NumPy: reshape, flatten, transpose, concat, stack, split, slice,
squeeze, unsqueeze, broadcast_to, expand, pad, shape and size; their errors at append time; their
gradients."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import assert_matches, check_grad, pc, rand, run_op

from paddle_core._src.base.dtypes import DTYPES
from paddle_core.proto import framework_pb2 as pb

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

ALL = list(DTYPES)  # every dtype: bool, int8 ... uint64, float16, bfloat16, float32, float64
END = 2**63 - 1  # slice bounds are 64-bit (LONGS); out-of-range values clamp, as in Python


def values(shape, dtype):
    """Distinct-ish values, so that an element moved to the wrong place shows (the 16-bit
    floats' below 256, which both hold exactly)."""
    n = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    if dtype in ("float16", "bfloat16"):
        n = n % 256
    return (n % 3 == 1) if dtype == "bool" else n.astype(dtype)


def run(op, inputs, attrs, slot="out"):
    return run_op(op, inputs, attrs)[slot]


# -- forward, against NumPy ---------------------------------------------------------------------

RESHAPE = [  # x shape, shape attr, the shape NumPy is given
    ((2, 3, 4), [4, 6], (4, 6)),
    ((2, 3, 4), [-1], (24,)),
    ((2, 3, 4), [0, -1], (2, 12)),
    ((2, 3, 4), [0, 0, 2, -1], (2, 3, 2, 2)),
    ((2, 3, 4), [-1, 0, 1], (8, 3, 1)),
    ((), [1, 1], (1, 1)),
    ((1, 1), [], ()),
    ((0, 3), [3, -1], (3, 0)),
    ((0, 3), [0, -1], (0, 3)),  # the copied 0 cancels out: NumPy alone could not infer this
    ((4097, 33), [33, -1], (33, 4097)),
]


@pytest.mark.parametrize(("xs", "shape", "want"), RESHAPE)
def test_reshape(xs, shape, want):
    for dtype in ALL:
        x = values(xs, dtype)
        (got,) = run("reshape", {"x": x}, {"shape": shape})
        assert_matches(got, np.reshape(x, want))


TRANSPOSE = [
    ((2, 3, 4), [2, 0, 1]),
    ((2, 3, 4), []),
    ((2, 3, 4), [0, 2, 1]),
    ((2, 3, 4), [-1, 0, 1]),
    ((2, 3, 4), [0, 1, 2]),
    ((3, 5), [1, 0]),
    ((), []),
    ((0, 3), [1, 0]),
    ((1, 4, 1, 3), [3, 2, 1, 0]),
    ((5, 6, 7, 8), [3, 1, 0, 2]),
    ((67, 45), [1, 0]),  # partial tiles at both edges
    ((3, 70, 40), [0, 2, 1]),  # a batch of 2-D transposes
    ((513, 1025), [1, 0]),  # large enough to split across threads
]


@pytest.mark.parametrize(("xs", "perm"), TRANSPOSE)
def test_transpose(xs, perm):
    for dtype in ALL:
        x = values(xs, dtype)
        (got,) = run("transpose", {"x": x}, {"perm": perm})
        assert_matches(got, np.transpose(x, perm or None))


def test_transpose_moves_float_bits_unchanged():
    """Transposes move bits, whatever they mean: signalling NaNs with payloads, -0 and
    denormals come out bit for bit (the 4 x 4 register blocks included)."""
    bits = np.random.default_rng(3).integers(0, 2**32, (37, 45), dtype=np.uint64)
    bits[::3] = 0x7F800001 + bits[::3] % 0x3FFFFF  # signalling NaNs
    bits[1::5] = 0x80000000  # -0
    x = bits.astype(np.uint32).view(np.float32)
    (got,) = run("transpose", {"x": x}, {"perm": [1, 0]})
    np.testing.assert_array_equal(got.view(np.uint32), x.T.view(np.uint32))


CONCAT = [
    ([(2, 3), (4, 3)], 0),
    ([(2, 3), (2, 1), (2, 0)], 1),
    ([(2, 3, 4)] * 3, -1),
    ([(2, 3, 4), (2, 5, 4)], 1),
    ([(3,)], 0),
    ([(0, 2), (0, 3)], 1),
    ([(4097, 3), (4097, 5)], 1),
    ([(40000,), (3,)], 0),
]


@pytest.mark.parametrize(("shapes", "axis"), CONCAT)
def test_concat(shapes, axis):
    for dtype in ALL:
        xs = [values(s, dtype) + (k if dtype != "bool" else 0) for k, s in enumerate(shapes)]
        (got,) = run("concat", {"xs": xs}, {"axis": axis})
        assert_matches(got, np.concatenate(xs, axis=axis))


SPLIT = [  # x shape, attrs, NumPy's indices_or_sections
    ((6, 4), {"num": 3}, 3),
    ((6, 4), {"sections": [1, -1, 2]}, [1, 4]),
    ((2, 7), {"sections": [0, 7], "axis": -1}, [0]),
    ((4, 0), {"num": 2}, 2),
    ((0, 4), {"num": 2}, 2),
    ((3, 8, 2), {"num": 4, "axis": 1}, 4),
    ((5,), {"sections": [5]}, 1),
    ((4097, 6), {"sections": [2, 4], "axis": 1}, [2]),
]


@pytest.mark.parametrize(("xs", "attrs", "parts"), SPLIT)
def test_split(xs, attrs, parts):
    for dtype in ALL:
        x = values(xs, dtype)
        got = run("split", {"x": x}, attrs, "outs")
        want = np.split(x, parts, axis=attrs.get("axis", 0))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_matches(g, w)


SLICE = [  # x shape, axes, starts, ends, steps
    ((5, 6), [0], [1], [4], []),
    ((5, 6), [1, 0], [-4, 0], [-1, 10], []),
    ((5, 6), [1], [5], [0], [-2]),
    ((5, 6), [0], [-1], [-(2**31)], [-1]),  # the whole axis, backward
    ((5, 6), [0], [10], [20], []),  # empty
    ((5, 6), [0, 1], [-10, 2], [END, END], [2, 3]),
    ((2, 3, 4), [-1, 1], [0, 2], [4, -5], [3, -1]),
    ((0, 3), [0], [0], [1], []),
    ((), [], [], [], []),
    ((4097, 8), [1], [1], [7], [2]),
    ((300, 300), [0], [-1], [-(2**31)], [-1]),
    # 64-bit bounds and steps, as exporters write them: INT64_MAX / INT64_MIN mean the ends
    ((5, 6), [0, 1], [-(2**63), 2**63 - 1], [2**63 - 1, -(2**63)], [1, -1]),
    ((5, 6), [1], [2**40], [-(2**40)], [-(2**63)]),
    ((5, 6), [1], [-(2**62)], [2**62], [2**63 - 1]),
    ((5, 6), [0], [1], [2**63 - 1], [2**62]),
]


def numpy_slice(shape, axes, starts, ends, steps):
    index = [slice(None)] * len(shape)
    for a, s, e, st in zip(axes, starts, ends, steps or [1] * len(axes)):
        index[a] = slice(s, e, st)
    return tuple(index)


@pytest.mark.parametrize(("xs", "axes", "starts", "ends", "steps"), SLICE)
def test_slice(xs, axes, starts, ends, steps):
    attrs = {"axes": axes, "starts": starts, "ends": ends, "steps": steps}
    for dtype in ALL:
        x = values(xs, dtype)
        (got,) = run("slice", {"x": x}, attrs)
        assert_matches(got, x[numpy_slice(xs, axes, starts, ends, steps)])


@pytest.mark.parametrize(("xs", "axes", "starts", "ends", "steps"), [*SLICE[:6], SLICE[9]])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_slice_grad_adds_into_its_accumulator(xs, axes, starts, ends, steps, dtype):
    """slice_grad's x_grad: zeros with out_grad where the slice took its elements; with
    x_grad_acc, that accumulator with out_grad added there instead."""
    attrs = {"axes": axes, "starts": starts, "ends": ends, "steps": steps}
    x = values(xs, dtype)
    where = numpy_slice(xs, axes, starts, ends, steps)
    g = values(x[where].shape, dtype)
    (plain,) = run("slice_grad", {"x": x, "out_grad": g}, attrs, "x_grad")
    want = np.zeros(xs)
    want[where] = g.astype(np.float64)
    assert_matches(plain, want.astype(dtype))
    acc = (values(xs, dtype).astype(np.float64) % 7).astype(dtype)
    (got,) = run("slice_grad", {"x": x, "out_grad": g, "x_grad_acc": acc}, attrs, "x_grad")
    assert_matches(got, (acc.astype(np.float64) + want).astype(dtype))
    with pytest.raises(pc.PaddleCoreError, match="x_grad_acc and x"):
        run("slice_grad", {"x": x, "out_grad": g, "x_grad_acc": acc.reshape(-1)[:-1]}, attrs)


@pytest.mark.parametrize(
    ("xs", "axes"),
    [
        ((1, 3, 1), []),
        ((1, 3, 1), [0]),
        ((1, 3, 1), [-1, 0]),
        ((3,), []),
        ((1,), []),
        ((), []),
        ((0, 1), [1]),
        ((0, 1), []),
    ],
)
def test_squeeze(xs, axes):
    for dtype in ALL:
        x = values(xs, dtype)
        (got,) = run("squeeze", {"x": x}, {"axes": axes})
        assert_matches(got, np.squeeze(x, tuple(axes) or None))


@pytest.mark.parametrize(
    ("xs", "axes"),
    [((3,), [0]), ((3,), [-1]), ((2, 3), [0, 3]), ((), [0]), ((2, 3), [-1, 1]), ((0, 2), [1])],
)
def test_unsqueeze(xs, axes):
    for dtype in ALL:
        x = values(xs, dtype)
        (got,) = run("unsqueeze", {"x": x}, {"axes": axes})
        assert_matches(got, np.expand_dims(x, tuple(axes)))


BROADCAST = [  # x shape, shape attr, NumPy's shape
    ((3, 1), [2, 3, 4], (2, 3, 4)),
    ((), [2, 3], (2, 3)),
    ((4,), [3, 4], (3, 4)),
    ((1, 4), [0, 4], (0, 4)),
    ((2, 1, 3), [2, 5, 3], (2, 5, 3)),
    ((3, 1), [-1, 5], (3, 5)),
    ((2, 3), [2, 3], (2, 3)),
    ((1, 1), [4097, 33], (4097, 33)),
    ((5, 1, 1), [5, 300, 7], (5, 300, 7)),
]


@pytest.mark.parametrize("op", ["broadcast_to", "expand"])
@pytest.mark.parametrize(("xs", "shape", "want"), BROADCAST)
def test_broadcast_to_and_expand(op, xs, shape, want):
    for dtype in ALL:
        x = values(xs, dtype)
        (got,) = run(op, {"x": x}, {"shape": shape})
        assert_matches(got, np.broadcast_to(x, want))


def test_non_contiguous_feeds():
    base = values((6, 8), "float32")
    t, s = base.T, base[::2, 1::3]  # a transposed and a strided view
    assert not t.flags.c_contiguous and not s.flags.c_contiguous
    assert_matches(run("reshape", {"x": t}, {"shape": [4, -1]})[0], t.reshape(4, -1))
    assert_matches(run("transpose", {"x": s}, {})[0], s.T)
    assert_matches(run("concat", {"xs": [t, t[:3]]}, {"axis": 0})[0], np.concatenate([t, t[:3]]))
    for got, want in zip(run("split", {"x": t}, {"num": 2, "axis": 1}, "outs"), np.split(t, 2, 1)):
        assert_matches(got, want)
    attrs = {"axes": [0], "starts": [-1], "ends": [0], "steps": [-1]}
    assert_matches(run("slice", {"x": s}, attrs)[0], s[-1:0:-1])
    assert_matches(run("squeeze", {"x": t[:, None]}, {"axes": [1]})[0], t)
    assert_matches(run("broadcast_to", {"x": s[:1]}, {"shape": [4, 3]})[0], np.tile(s[:1], (4, 1)))


# -- unknown dimensions -------------------------------------------------------------------------


def test_unknown_dimensions_are_kept_and_filled_in_at_run_time():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 4, 3])
        flat = pc.ops.reshape(x, shape=[0, -1])
        tail = pc.ops.reshape(x, shape=[-1, 6])
        moved = pc.ops.transpose(x, perm=[1, 2, 0])
        joined = pc.ops.concat([x, x], axis=0)
        wide = pc.ops.concat([x, x], axis=2)
        parts = pc.ops.split(x, num=2, axis=0)
        cut = pc.ops.slice(x, axes=[0, 1], starts=[1, 1], ends=[END, 3])
        grown = pc.ops.unsqueeze(x, axes=[1])
        kept = pc.ops.broadcast_to(
            pc.ops.slice(x, axes=[2], starts=[0], ends=[1]), shape=[-1, 4, 5]
        )
    assert flat.shape == (None, 12) and tail.shape == (None, 6)
    assert moved.shape == (4, 3, None) and joined.shape == (None, 4, 3)
    assert wide.shape == (None, 4, 6) and [p.shape for p in parts] == [(None, 4, 3)] * 2
    assert cut.shape == (None, 2, 3) and grown.shape == (None, 1, 4, 3)
    assert kept.shape == (None, 4, 5)
    xv = values((6, 4, 3), "float32")
    fetch = [flat, tail, moved, joined, wide, *parts, cut, grown, kept]
    got = pc.Executor().run(prog, feed={"x": xv}, fetch_list=fetch)
    want = [
        xv.reshape(6, 12),
        xv.reshape(-1, 6),
        xv.transpose(1, 2, 0),
        np.concatenate([xv, xv]),
        np.concatenate([xv, xv], 2),
        *np.split(xv, 2),
        xv[1:, 1:3],
        xv[:, None],
        np.broadcast_to(xv[:, :, :1], (6, 4, 5)),
    ]
    for g, w in zip(got, want):
        assert_matches(g, w)


def test_split_of_unknown_size_is_checked_at_run_time():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 2])
        parts = pc.ops.split(x, num=4)
    with pytest.raises(pc.ShapeError, match="3 parts of 2 would leave -1 elements for the last"):
        pc.Executor().run(prog, feed={"x": np.zeros((5, 2), np.float32)}, fetch_list=parts)
    got = pc.Executor().run(prog, feed={"x": np.zeros((7, 2), np.float32)}, fetch_list=parts)
    assert [g.shape[0] for g in got] == [2, 2, 2, 1]


@pytest.mark.parametrize(
    ("size", "num", "sizes"),
    [(7, 4, [2, 2, 2, 1]), (8, 3, [3, 3, 2]), (6, 4, [2, 2, 2, 0]), (9, 3, [3, 3, 3])],
)
def test_split_into_uneven_parts_follows_onnx(size, num, sizes):
    """ONNX's Split with num_outputs: parts of ceil(size / num), the last one the rest (a
    documented choice: numpy.array_split would give 7 / 4 as 2, 2, 2, 1 too, but 10 / 4 as
    3, 3, 2, 2 where this gives 3, 3, 3, 1)."""
    x = values((2, size), "float64")
    got = run_op("split", {"x": x}, {"num": num, "axis": 1})["outs"]
    want = np.split(x, np.cumsum(sizes)[:-1], axis=1)
    assert [g.shape[1] for g in got] == sizes
    for g, w in zip(got, want):
        assert_matches(g, w)
    check_grad("split", {"x": x}, {"num": num, "axis": 1}, wrt=["x"], output="outs")


# -- errors at append time ----------------------------------------------------------------------

SLICE_ATTRS = {"axes": [0], "starts": [0], "ends": [1]}
ERRORS = [  # op, x shape, attrs, error, message
    ("reshape", (2, 3, 4), {"shape": [-1, -1]}, pc.ShapeError, "more than one -1"),
    ("reshape", (2, 3, 4), {"shape": [5, 5]}, pc.ShapeError, "element counts differ"),
    ("reshape", (2, 3, 4), {"shape": [-1, 5]}, pc.ShapeError, "cannot hold"),
    ("reshape", (2, 3), {"shape": [0, 0, 0]}, pc.ShapeError, "beyond x's 2 dimensions"),
    ("reshape", (2, 3), {"shape": [-2, 3]}, pc.AttrError, "attr 'shape'"),
    ("reshape", (2, 3), {}, pc.AttrError, "attr 'shape': a value is required"),
    ("flatten", (2, 3), {"start_axis": 2}, pc.ShapeError, "start_axis 2 is out of range"),
    ("flatten", (2, 3), {"stop_axis": -3}, pc.ShapeError, "stop_axis -3 is out of range"),
    ("flatten", (2, 3, 4), {"start_axis": 2, "stop_axis": 1}, pc.ShapeError, "comes after"),
    ("flatten", (2, 3, 4), {"start_axis": -1, "stop_axis": 0}, pc.ShapeError, "comes after"),
    ("flatten", (), {"start_axis": 1}, pc.ShapeError, "start_axis 1 is out of range for 1"),
    ("flatten", (2, 3), {"start_axis": 1.5}, pc.AttrError, "attr 'start_axis'"),
    ("transpose", (2, 3, 4), {"perm": [0, 0, 1]}, pc.ShapeError, "name an axis twice"),
    ("transpose", (2, 3, 4), {"perm": [0, 1]}, pc.ShapeError, "has 2 entries"),
    ("transpose", (2, 3, 4), {"perm": [0, 1, 3]}, pc.ShapeError, "perm 3 is out of range"),
    ("split", (6, 4), {}, pc.ShapeError, "exactly one of num and sections"),
    ("split", (6, 4), {"num": 2, "sections": [3, 3]}, pc.ShapeError, "exactly one of num"),
    ("split", (5, 4), {"num": 4}, pc.ShapeError, "3 parts of 2 would leave -1 elements"),
    ("split", (6, 4), {"sections": [2, 2]}, pc.ShapeError, "add up to 4"),
    ("split", (6, 4), {"sections": [-1, -1]}, pc.ShapeError, "more than one -1"),
    ("split", (6, 4), {"sections": [4, 3, -1]}, pc.ShapeError, "take more than"),
    ("split", (6, 4), {"sections": [-2, 8]}, pc.AttrError, "attr 'sections'"),
    ("split", (6, 4), {"num": -1}, pc.AttrError, "attr 'num'"),
    ("split", (6, 4), {"num": 2, "axis": 2}, pc.ShapeError, "axis 2 is out of range"),
    ("split", (), {"num": 1}, pc.ShapeError, "0-d tensor"),
    ("slice", (5, 6), {"axes": [0], "starts": [0], "ends": []}, pc.ShapeError, "one entry per"),
    ("slice", (5, 6), {**SLICE_ATTRS, "steps": [0]}, pc.ShapeError, "must not hold 0"),
    ("slice", (5, 6), {**SLICE_ATTRS, "axes": [-3]}, pc.ShapeError, "out of range"),
    ("slice", (5, 6), {"axes": [0, -2], "starts": [0, 0], "ends": [1, 1]}, pc.ShapeError, "twice"),
    ("slice", (5, 6), {"axes": [2], "starts": [0], "ends": [1]}, pc.ShapeError, "out of range"),
    ("slice", (5, 6), {"axes": [0], "starts": [0]}, pc.AttrError, "attr 'ends'"),
    ("squeeze", (1, 3), {"axes": [1]}, pc.ShapeError, "axis 1 has size 3, not 1"),
    ("squeeze", (1, 3), {"axes": [0, -2]}, pc.ShapeError, "name an axis twice"),
    ("squeeze", (1, 3), {"axes": [2]}, pc.ShapeError, "out of range"),
    ("squeeze", (None, 3), {}, pc.ShapeError, "name the axes"),
    ("unsqueeze", (2, 3), {"axes": [3]}, pc.ShapeError, "out of range"),
    ("unsqueeze", (2, 3), {"axes": [1, -3]}, pc.ShapeError, "name an axis twice"),
    ("broadcast_to", (3, 2), {"shape": [3, 4]}, pc.ShapeError, "cannot be broadcast to 4"),
    ("broadcast_to", (3, 2), {"shape": [2]}, pc.ShapeError, "fewer dimensions"),
    ("broadcast_to", (3,), {"shape": [-1, 3]}, pc.ShapeError, "-1 at position 0"),
    ("broadcast_to", (3,), {"shape": [-2, 3]}, pc.AttrError, "attr 'shape'"),
    ("expand", (3, 2), {"shape": [3, 4]}, pc.ShapeError, "cannot be broadcast to 4"),
]


@pytest.mark.parametrize(("op", "xs", "attrs", "error", "message"), ERRORS)
def test_invalid_attrs_are_refused_when_appended(op, xs, attrs, error, message):
    with pc.program_guard(pc.Program()):
        x = pc.data("x", xs)
        with pytest.raises(error, match=rf"op '{op}'.*{message}") as info:
            getattr(pc.ops, op)(x, **attrs)
    assert info.value.op == op


@pytest.mark.parametrize(
    ("shapes", "dtypes", "axis", "message"),
    [
        ([(2, 3), (2, 4)], ["float32"] * 2, 0, "differ in dimension 1"),
        ([(2, 3), (2, 3)], ["float32", "float64"], 0, "one dtype and rank"),
        ([(2, 3), (2, 3, 1)], ["float32"] * 2, 0, "one dtype and rank"),
        ([(2, 3), (2, 3)], ["float32"] * 2, -3, "axis -3 is out of range"),
        ([(), ()], ["float32"] * 2, 0, "0-d tensors"),
    ],
)
def test_concat_refuses_misfits_when_appended(shapes, dtypes, axis, message):
    with pc.program_guard(pc.Program()):
        xs = [pc.data(f"x{k}", s, d) for k, (s, d) in enumerate(zip(shapes, dtypes))]
        with pytest.raises(pc.ShapeError, match=rf"op 'concat'.*{message}"):
            pc.ops.concat(xs, axis=axis)


# -- gradients ----------------------------------------------------------------------------------


def r64(shape, seed=0):
    return rand(np.random.default_rng(seed), shape, "float64")


GRADS = [
    ("reshape", {"x": r64((2, 3, 4))}, {"shape": [0, -1]}),
    ("reshape", {"x": r64((2, 3, 4))}, {"shape": [4, 3, 2]}),
    ("reshape", {"x": r64(())}, {"shape": [1, 1]}),
    ("flatten", {"x": r64((2, 3, 4))}, {}),
    ("flatten", {"x": r64((2, 3, 4))}, {"start_axis": -3, "stop_axis": -2}),
    ("flatten", {"x": r64(())}, {"start_axis": 0}),
    ("transpose", {"x": r64((2, 3, 4))}, {"perm": [2, 0, 1]}),
    ("transpose", {"x": r64((2, 3, 4))}, {"perm": []}),
    ("concat", {"xs": [r64((2, 3)), r64((2, 1), 1), r64((2, 2), 2)]}, {"axis": -1}),
    ("concat", {"xs": [r64((1, 3)), r64((2, 3), 1)]}, {"axis": 0}),
    ("stack", {"xs": [r64((2, 3)), r64((2, 3), 1), r64((2, 3), 2)]}, {"axis": 1}),
    ("stack", {"xs": [r64((2, 3)), r64((2, 3), 1)]}, {"axis": -1}),
    ("stack", {"xs": [r64(()), r64((), 1)]}, {}),
    (
        "slice",
        {"x": r64((4, 5))},
        {"axes": [1, 0], "starts": [-1, 1], "ends": [0, END], "steps": [-2, 1]},
    ),
    ("slice", {"x": r64((4, 5))}, {"axes": [0], "starts": [1], "ends": [3]}),
    ("squeeze", {"x": r64((1, 3, 1))}, {}),
    ("squeeze", {"x": r64((1, 3, 1))}, {"axes": [-1]}),
    ("unsqueeze", {"x": r64((2, 3))}, {"axes": [0, -1]}),
    ("unsqueeze", {"x": r64((2, 3))}, {"axes": []}),
    ("broadcast_to", {"x": r64((3, 1))}, {"shape": [2, 3, 4]}),
    ("broadcast_to", {"x": r64(())}, {"shape": [2, 3]}),
    ("expand", {"x": r64((1, 4))}, {"shape": [3, -1]}),
]


@pytest.mark.parametrize(("op", "inputs", "attrs"), GRADS, ids=lambda v: str(v)[:40])
def test_gradients(op, inputs, attrs):
    check_grad(op, inputs, attrs, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("attrs", [{"num": 3, "axis": 1}, {"sections": [1, -1, 0], "axis": 0}])
def test_split_gradients(attrs):
    check_grad("split", {"x": r64((4, 6))}, attrs, output="outs", rtol=1e-7, atol=1e-9)


def grads_of(build, feed, wrt):
    """Run build() in a fresh program; return the gradients of its output w.r.t. ``wrt``."""
    prog = pc.Program()
    with pc.program_guard(prog):
        inputs, out = build()
        grads = pc.gradients([out], [inputs[n] for n in wrt])
    return pc.Executor().run(prog, feed=feed, fetch_list=grads)


def test_unused_split_parts_get_zero_gradients():
    def build():
        x = pc.data("x", [4, 3], "float64")
        return {"x": x}, pc.ops.split(x, sections=[1, -1])[0]

    (gx,) = grads_of(build, {"x": r64((4, 3))}, ["x"])
    assert_matches(gx, np.concatenate([np.ones((1, 3)), np.zeros((3, 3))]))


def test_concat_gradient_for_some_inputs_only():
    def build():
        a, b = pc.data("a", [2, 3], "float64"), pc.data("b", [2, 2], "float64")
        return {"a": a, "b": b}, pc.ops.concat([b, a], axis=1)

    (ga,) = grads_of(build, {"a": r64((2, 3)), "b": r64((2, 2))}, ["a"])
    assert_matches(ga, np.ones((2, 3)))


def test_gradients_through_unknown_dimensions():
    def build():
        x = pc.data("x", [None, 4, 3], "float64")
        y = pc.ops.reshape(x, shape=[0, -1])
        y = pc.ops.unsqueeze(y, axes=[1])
        y = pc.ops.transpose(y, perm=[2, 1, 0])
        y = pc.ops.squeeze(y, axes=[1])
        y = pc.ops.concat([y, y], axis=0)
        y = pc.ops.reshape(y, shape=[-1, 2])
        return {"x": x}, pc.ops.broadcast_to(y, shape=[3, -1, 2])

    (gx,) = grads_of(build, {"x": r64((5, 4, 3))}, ["x"])
    assert_matches(gx, np.full((5, 4, 3), 6.0))


def test_gradients_that_need_two_unknown_sizes_are_refused():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [None, None], "float64")
        x.stop_gradient = False
        with pytest.raises(pc.ProgramError, match="more than one unknown dimension"):
            pc.gradients([pc.ops.reshape(x, shape=[-1])], [x])
        with pytest.raises(pc.ProgramError, match="more than one input of unknown size"):
            pc.gradients([pc.ops.concat([x, x], axis=1)], [x])


def test_reshape_gradient_of_an_empty_input():
    def build():
        x = pc.data("x", [0, 3], "float64")
        return {"x": x}, pc.ops.reshape(x, shape=[3, -1])

    (gx,) = grads_of(build, {"x": np.zeros((0, 3))}, ["x"])
    assert gx.shape == (0, 3)


# -- tile, tril and triu ------------------------------------------------------------------------

TILE = [  # x shape, repeat_times
    ((2, 3), [2, 3]),
    ((2, 3), [3]),  # fewer repeats than axes: 1s in front
    ((3,), [2, 1, 2]),  # more: x gets leading axes
    ((), [4]),
    ((), []),
    ((2, 3), []),
    ((2, 3), [0, 2]),
    ((0, 3), [2, 2]),
    ((1, 4, 1), [3, 1, 5]),
    ((300, 40), [2, 3]),  # large enough to split across threads
]


@pytest.mark.parametrize(("xs", "reps"), TILE)
def test_tile(xs, reps):
    for dtype in ALL:
        x = values(xs, dtype)
        (got,) = run("tile", {"x": x}, {"repeat_times": reps})
        assert_matches(got, np.tile(x, reps))


@pytest.mark.parametrize(
    ("xs", "reps"),
    [((2, 3), [2, 3]), ((3,), [2, 1, 2]), ((), [3]), ((2, 1), [0, 2]), ((2, 2), [1])],
)
def test_tile_gradient(xs, reps):
    check_grad("tile", {"x": r64(xs)}, {"repeat_times": reps})


def test_tile_keeps_unknown_dimensions():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [None, 3])
        assert pc.ops.tile(x, repeat_times=[2, 1, 2]).shape == (2, None, 6)
        assert pc.ops.tile(x, repeat_times=[0, 2]).shape == (0, 6)
        with pytest.raises(pc.AttrError, match=r"op 'tile', attr 'repeat_times'"):
            pc.ops.tile(x, repeat_times=[-1, 2])


TRIANGLE = [  # x shape, diagonal
    ((4, 4), 0),
    ((3, 5), 1),
    ((5, 3), -1),
    ((2, 3, 4), 2),
    ((2, 3, 4), -5),  # nothing kept by tril, everything by triu
    ((2, 3, 4), 7),
    ((0, 3), 0),
    ((3, 0), 0),
    ((2, 1, 1), 0),
    ((5, 300, 70), 3),  # large enough to split across threads
]


@pytest.mark.parametrize("op", ["tril", "triu"])
@pytest.mark.parametrize(("xs", "diagonal"), TRIANGLE)
def test_tril_and_triu(op, xs, diagonal):
    reference = np.tril if op == "tril" else np.triu
    for dtype in ALL:
        x = values(xs, dtype) if dtype == "bool" else values(xs, dtype) + np.asarray(1, dtype)
        (got,) = run(op, {"x": x}, {"diagonal": diagonal})
        assert_matches(got, reference(x, diagonal))


@pytest.mark.parametrize("op", ["tril", "triu"])
def test_tril_and_triu_default_to_the_main_diagonal(op):
    x = values((3, 3), "float32") + 1
    (got,) = run(op, {"x": x}, {})
    assert_matches(got, (np.tril if op == "tril" else np.triu)(x))


@pytest.mark.parametrize("op", ["tril", "triu"])
@pytest.mark.parametrize(("xs", "diagonal"), [((3, 4), 0), ((2, 3, 3), -1), ((4, 2), 1)])
def test_tril_and_triu_gradients(op, xs, diagonal):
    check_grad(op, {"x": r64(xs)}, {"diagonal": diagonal})


@pytest.mark.parametrize("op", ["tril", "triu"])
def test_tril_and_triu_need_matrices(op):
    with pc.program_guard(pc.Program()):
        with pytest.raises(pc.ShapeError, match=rf"op '{op}'.*x must be at least 2-D.*got 1-D"):
            getattr(pc.ops, op)(pc.data("x", [3]))


# -- 64-bit attrs, and programs saved before them ----------------------------------------------


def test_64_bit_attrs_beyond_their_range_name_it():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [5, 6])
        with pytest.raises(pc.AttrError) as info:
            pc.ops.slice(x, axes=[0], starts=[0], ends=[2**63])
        assert str(info.value).startswith("op 'slice', attr 'ends': expected a list of ints")
        assert "outside the 64-bit range [-9223372036854775808, 9223372036854775807]" in str(
            info.value
        )
        with pytest.raises(pc.AttrError, match=r"attr 'axes'.*outside the 32-bit range"):
            pc.ops.slice(x, axes=[2**31], starts=[0], ends=[1])


def test_a_program_saved_with_32_bit_attrs_loads_and_runs():
    """slice's bounds, reshape's shape and tile's repeats were INTS before they became LONGS:
    a saved program keeps its stored types (and writes them back unchanged), and runs."""
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [4, 6])
        sliced = pc.ops.slice(x, axes=[1], starts=[1], ends=[END], steps=[2])
        flat = pc.ops.reshape(sliced, shape=[-1])
        tiled = pc.ops.tile(flat, repeat_times=[2])
        low = pc.ops.tril(x, diagonal=1)
    desc = prog.to_desc()
    widened = {"starts", "ends", "steps", "shape", "repeat_times", "diagonal"}
    for op in desc.blocks[0].ops:
        for attr in op.attrs:
            if attr.name in widened:  # as an older paddle-ops-math wrote them
                value = attr.value
                if value.type == pb.LONGS:
                    narrow = [min(v, 2**31 - 1) for v in value.longs]
                    value.ClearField("longs")
                    value.type, value.ints[:] = pb.INTS, narrow
                else:
                    value.type, value.i = pb.INT, value.l
                    value.ClearField("l")
    old = pc.Program.parse(desc.SerializeToString())
    assert old.serialize() == desc.SerializeToString()
    xv = values((4, 6), "float32")
    got = pc.Executor().run(old, feed={"x": xv}, fetch_list=[tiled.name, low.name])
    assert_matches(got[0], np.tile(xv[:, 1::2].reshape(-1), 2))
    assert_matches(got[1], np.tril(xv, 1))


def test_huge_64_bit_attrs_reach_no_kernel_unchecked():
    """Sizes beyond the limits are refused where the shape is inferred; a diagonal beyond
    every row keeps (or zeroes) everything."""
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [0, 3])
        with pytest.raises(pc.ShapeError, match=r"op 'tile'.*is empty, but its other dimensions"):
            pc.ops.tile(x, repeat_times=[1, 2**62])
    xv = values((3, 4), "float64")
    for diagonal in (2**63 - 1, -(2**63)):
        (low,) = run("tril", {"x": xv}, {"diagonal": diagonal})
        (up,) = run("triu", {"x": xv}, {"diagonal": diagonal})
        assert_matches(low, np.tril(xv, 10 if diagonal > 0 else -10))
        assert_matches(up, np.triu(xv, 10 if diagonal > 0 else -10))


# -- reshape's allowzero ------------------------------------------------------------------------


def test_reshape_allowzero_makes_0_a_dimension():
    """ONNX's allowzero = 1 (and NumPy's reshape): a 0 is a size, not a copy of x's."""
    x = np.zeros((0, 3, 4), np.float32)
    (got,) = run("reshape", {"x": x}, {"shape": [3, 4, 0], "allowzero": True})
    assert got.shape == (3, 4, 0)
    (got,) = run("reshape", {"x": values((2, 3, 4), "int32")}, {"shape": [4, 0, 2]})
    assert got.shape == (4, 3, 2)  # without allowzero, the 0 copies x's dimension 1
    with pc.program_guard(pc.Program()):
        with pytest.raises(pc.ShapeError, match=r"op 'reshape'.*both -1 and 0 with allowzero"):
            pc.ops.reshape(pc.data("y", [0, 3]), shape=[0, -1], allowzero=True)
        with pytest.raises(pc.ShapeError, match=r"op 'reshape'.*element counts differ"):
            pc.ops.reshape(pc.data("z", [2, 3]), shape=[6, 0], allowzero=True)
    check_grad("reshape", {"x": r64((2, 3, 4))}, {"shape": [4, 6], "allowzero": True})


# -- shape and size -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end", "want"),
    [(0, END, [2, 3, 4]), (1, END, [3, 4]), (-1, END, [4]), (0, -1, [2, 3]), (-10, 10, [2, 3, 4]),
     (2, 1, []), (3, END, []), (1, 2, [3])],
)  # fmt: skip
def test_shape_gives_onnxs_slice_of_the_dims(start, end, want):
    for dtype in ("float32", "bool", "int64"):
        (got,) = run("shape", {"x": np.zeros((2, 3, 4), dtype)}, {"start": start, "end": end})
        assert_matches(got, np.array(want, np.int64))


def test_shape_and_size_of_any_tensor():
    for shape in [(), (0,), (2, 0, 5), (7, 1)]:
        x = np.zeros(shape, np.float64)
        assert_matches(run("shape", {"x": x}, {})[0], np.array(shape, np.int64))
        assert_matches(run("size", {"x": x}, {})[0], np.array(x.size, np.int64))
    prog = pc.Program()
    with pc.program_guard(prog):  # unknown until fed
        dims = pc.ops.shape(pc.data("x", [None, 3]))
        count = pc.ops.size(pc.data("y", [None, None], "int32"))
    assert dims.shape == (2,) and count.shape == () and count.dtype == "int64"
    feed = {"x": np.zeros((5, 3), np.float32), "y": np.zeros((4, 2), np.int32)}
    got = pc.Executor().run(prog, feed=feed, fetch_list=[dims, count])
    assert_matches(got[0], np.array([5, 3], np.int64))
    assert_matches(got[1], np.array(8, np.int64))


# -- pad ------------------------------------------------------------------------------------------

PAD = [  # x shape, paddings
    ((5,), [2, 3]),
    ((3, 4), [1, 2, 0, 3]),
    ((3, 4), [0, 0, 6, 7]),  # wider than x: reflect and wrap go around again
    ((2, 3, 4), [1, 0, 2, 1, 0, 2]),
    ((1, 3), [2, 2, 1, 1]),  # a 1-wide axis reflects onto itself
    ((4, 0), [1, 1, 0, 0]),
    ((), []),
]


def numpy_pad(x, paddings, mode, value):
    if x.ndim == 0:
        return x.copy()
    pairs = [(paddings[2 * k], paddings[2 * k + 1]) for k in range(x.ndim)]
    numpy_mode = {"constant": "constant", "edge": "edge", "reflect": "reflect", "wrap": "wrap"}
    kwargs = {"constant_values": value} if mode == "constant" else {}
    return np.pad(x, pairs, mode=numpy_mode[mode], **kwargs)


@pytest.mark.parametrize(("xs", "paddings"), PAD)
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_matches_numpy(xs, paddings, mode):
    for dtype in ALL:
        x = values(xs, dtype)
        value = 1.0 if dtype == "bool" else 7.0
        (got,) = run("pad", {"x": x}, {"paddings": paddings, "mode": mode, "value": value})
        assert_matches(got, numpy_pad(x, paddings, mode, np.asarray(value).astype(dtype)))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
@pytest.mark.parametrize("paddings", [[-1, 2, 1, -3], [2, -3, -2, 0], [-4, 0, 0, 0]])
def test_negative_paddings_crop_as_onnx_allows(mode, paddings):
    """A negative padding removes elements; the positive ones still repeat the whole x: the
    same as padding by the positive parts (numpy.pad), then cropping."""
    x = values((4, 5), "float64")
    (got,) = run("pad", {"x": x}, {"paddings": paddings, "mode": mode})
    grown = numpy_pad(x, [max(p, 0) for p in paddings], mode, 0.0)
    crop = tuple(
        slice(-min(paddings[2 * k], 0), grown.shape[k] + min(paddings[2 * k + 1], 0))
        for k in range(2)
    )
    assert_matches(got, grown[crop])


@pytest.mark.parametrize(("xs", "paddings"), PAD[:5])
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_gradient(xs, paddings, mode):
    check_grad("pad", {"x": r64(xs)}, {"paddings": paddings, "mode": mode})


def test_pad_is_checked_when_appended():
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [None, 3])
        assert pc.ops.pad(x, paddings=[1, 1, -1, 2]).shape == (None, 4)
        with pytest.raises(pc.ShapeError, match=r"op 'pad'.*paddings has 2 entries"):
            pc.ops.pad(x, paddings=[1, 1])
        with pytest.raises(pc.ShapeError, match=r"op 'pad'.*would have -1"):
            pc.ops.pad(x, paddings=[0, 0, -2, -2])
        with pytest.raises(pc.ShapeError, match=r"op 'pad'.*mode 'reflect' has nothing"):
            pc.ops.pad(pc.data("e", [0]), paddings=[1, 0], mode="reflect")
        with pytest.raises(pc.AttrError, match=r"op 'pad', attr 'mode'"):
            pc.ops.pad(x, paddings=[0, 0, 0, 0], mode="symmetric")


# -- flatten ------------------------------------------------------------------------------------


def torch_flatten(x, start, stop):
    """torch.flatten in NumPy: x's axes start ... stop (negative from the end) merged into one."""
    shape = x.shape or (1,)
    start, stop = start % len(shape), stop % len(shape)
    return x.reshape((*shape[:start], int(np.prod(shape[start : stop + 1])), *shape[stop + 1 :]))


FLATTEN = [  # x shape, start_axis, stop_axis, out's shape
    ((2, 3, 4), 1, -1, (2, 12)),
    ((2, 3, 4), 0, 1, (6, 4)),
    ((2, 3, 4), 0, -1, (24,)),
    ((2, 3, 4), -2, -1, (2, 12)),
    ((2, 3, 4), 1, 1, (2, 3, 4)),  # one axis: nothing merges
    ((2, 3, 4, 5), 1, 2, (2, 12, 5)),
    ((), 0, -1, (1,)),  # a 0-d x counts as 1-D, as torch.flatten's does
    ((7,), 0, 0, (7,)),
    ((0, 3, 4), 1, -1, (0, 12)),
    ((2, 0, 4), 0, 1, (0, 4)),  # a merged 0 is 0, not an unknown product
]


@pytest.mark.parametrize(("xs", "start", "stop", "want"), FLATTEN)
def test_flatten(xs, start, stop, want):
    for dtype in ALL:
        x = values(xs, dtype)
        (got,) = run("flatten", {"x": x}, {"start_axis": start, "stop_axis": stop})
        assert got.shape == want
        assert_matches(got, torch_flatten(x, start, stop))


def test_flatten_defaults_keep_the_batch_dimension():
    (got,) = run("flatten", {"x": values((2, 3, 4, 5), "float32")}, {})
    assert got.shape == (2, 60)


@pytest.mark.parametrize(
    ("xs", "attrs", "want"),
    [
        ([None, 3, 4], {}, (None, 12)),
        ([None, None, 4], {"start_axis": 0, "stop_axis": 1}, (None, 4)),
        ([3, None, 4], {"start_axis": -2}, (3, None)),
        ([None, 0, None], {"start_axis": 0}, (0,)),
    ],
)
def test_flatten_of_unknown_dimensions(xs, attrs, want):
    with pc.program_guard(pc.Program()):
        assert pc.ops.flatten(pc.data("x", xs), **attrs).shape == want


def test_flatten_gradient_through_unknown_dimensions():
    """flatten_grad takes x's shape from x when it runs: any number of x's dimensions may be
    unknown when the program is built (a reshape back would allow one)."""

    def build():
        x = pc.data("x", [None, None, 3], "float64")
        y = pc.ops.flatten(x, start_axis=0, stop_axis=1)
        return {"x": x}, pc.ops.mul(y, y)

    x = r64((2, 5, 3))
    (gx,) = grads_of(build, {"x": x}, ["x"])
    assert_matches(gx, 2 * x)


def test_flatten_grad_refuses_an_out_grad_flatten_does_not_give():
    with pc.program_guard(pc.Program()):
        x, g = pc.data("x", [2, 3, 4], "float64"), pc.data("g", [2, 3, 4], "float64")
        with pytest.raises(pc.ShapeError, match=r"op 'flatten_grad'.*'flatten' gives out as"):
            pc.ops.flatten_grad(x, g)


def test_flatten_layer():
    prog = pc.Program()
    with pc.program_guard(prog):
        image = pc.layers.data("image", [2, 3, 3])
        flat = pc.layers.flatten(image)
        pair = pc.layers.flatten(image, start_axis=0, stop_axis=-3)
    assert flat.shape == (None, 18) and pair.shape == (None, 3, 3)
    x = values((4, 2, 3, 3), "float32")
    got, got_pair = pc.Executor().run(prog, feed={"image": x}, fetch_list=[flat, pair])
    assert_matches(got, x.reshape(4, 18))
    assert_matches(got_pair, x.reshape(8, 3, 3))


# -- stack --------------------------------------------------------------------------------------

STACK = [  # the inputs' shape, how many, axis
    ((2, 3), 3, 0),
    ((2, 3), 3, 1),
    ((2, 3), 3, 2),
    ((2, 3), 2, -1),
    ((2, 3), 2, -3),
    ((), 4, 0),
    ((), 4, -1),
    ((5,), 1, 0),
    ((0, 3), 2, 1),
    ((4097, 3), 2, 1),  # large enough to split across threads
]


@pytest.mark.parametrize(("xs", "count", "axis"), STACK)
def test_stack(xs, count, axis):
    for dtype in ALL:
        parts = [values(xs, dtype) + (k if dtype != "bool" else 0) for k in range(count)]
        if dtype == "bool":
            parts = [p ^ bool(k % 2) for k, p in enumerate(parts)]
        (got,) = run("stack", {"xs": parts}, {"axis": axis})
        assert_matches(got, np.stack(parts, axis=axis))


@pytest.mark.parametrize(
    ("shapes", "dtypes", "axis", "message"),
    [
        ([(2, 3), (2, 3)], ["float32"] * 2, 3, r"axis 3 is out of range .* in \[-3, 2\]"),
        ([(2, 3), (2, 3)], ["float32"] * 2, -4, "axis -4 is out of range"),
        ([(), ()], ["float32"] * 2, 1, r"stacking 0-D tensors: it must be in \[-1, 0\]"),
        ([(2, 3), (2, 4)], ["float32"] * 2, 0, "differ in dimension 1"),
        ([(2, 3), (3, 2)], ["float32"] * 2, 0, "differ in dimension 0"),
        ([(2, 3), (2, 3)], ["float32", "float64"], 0, "one dtype and shape"),
        ([(2, 3), (2, 3, 1)], ["float32"] * 2, 0, "one dtype and shape"),
    ],
)
def test_stack_refuses_misfits_when_appended(shapes, dtypes, axis, message):
    with pc.program_guard(pc.Program()):
        xs = [pc.data(f"x{k}", s, d) for k, (s, d) in enumerate(zip(shapes, dtypes))]
        with pytest.raises(pc.ShapeError, match=rf"op 'stack'.*{message}") as info:
            pc.ops.stack(xs, axis=axis)
    assert info.value.op == "stack"


def test_stack_keeps_unknown_dimensions_and_its_gradient_runs():
    def build():
        a, b = pc.data("a", [None, 3], "float64"), pc.data("b", [None, None], "float64")
        y = pc.ops.stack([a, b, a], axis=1)
        assert y.shape == (None, 3, 3)
        return {"a": a, "b": b}, pc.ops.mul(y, y)

    a, b = r64((4, 3)), r64((4, 3), 1)
    ga, gb = grads_of(build, {"a": a, "b": b}, ["a", "b"])
    assert_matches(ga, 4 * a)
    assert_matches(gb, 2 * b)


def test_stack_gradient_for_some_inputs_only():
    def build():
        a, b = pc.data("a", [2, 3], "float64"), pc.data("b", [2, 3], "float64")
        return {"a": a, "b": b}, pc.ops.stack([b, a], axis=-1)

    (ga,) = grads_of(build, {"a": r64((2, 3)), "b": r64((2, 3))}, ["a"])
    assert_matches(ga, np.ones((2, 3)))


def test_stack_grad_needs_the_count_it_splits_into():
    with pc.program_guard(pc.Program()):
        g = pc.data("g", [2, None], "float64")
        with pytest.raises(pc.ShapeError, match=r"op 'stack_grad'.*dimension 1 .* must be known"):
            pc.ops.stack_grad(g, axis=-1)
        with pytest.raises(pc.ShapeError, match=r"op 'stack_grad'.*axis 2 is out of range"):
            pc.ops.stack_grad(g, axis=2)
        huge = pc.data("huge", [2**31, 0], "float64")
        with pytest.raises(pc.ShapeError, match=r"op 'stack_grad'.* at most 65536 xs_grad"):
            pc.ops.stack_grad(huge, axis=0)


def test_flatten_and_stack_match_pytorch():
    torch = pytest.importorskip("torch")
    x = r64((2, 3, 4, 5))
    for start, stop in ((0, -1), (1, -1), (1, 2), (-3, -2), (2, 2)):
        want = torch.flatten(torch.from_numpy(x), start, stop).numpy()
        assert_matches(run("flatten", {"x": x}, {"start_axis": start, "stop_axis": stop})[0], want)
    scalar = r64(())
    want = torch.flatten(torch.from_numpy(scalar)).numpy()  # a 0-d x gives [1]
    assert_matches(run("flatten", {"x": scalar}, {"start_axis": 0})[0], want)
    parts = [r64((3, 4), k) for k in range(3)]
    for axis in (0, 1, 2, -1, -3):
        want = torch.stack([torch.from_numpy(p) for p in parts], axis).numpy()
        assert_matches(run("stack", {"xs": parts}, {"axis": axis})[0], want)
