"""paddle-ops-nn softmax, log_softmax, cross_entropy, softmax_with_cross_entropy and accuracy
against NumPy; their gradients by finite differences; extreme logits; their errors; and a small
softmax regression trained with append_backward."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from op_helpers import (
    FLOATS,
    assert_matches,
    check_grad,
    cpu_has_avx2_fma,
    finishes_within,
    on_both_paths,
    pc,
    rand,
    run_op,
)

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

IGNORE = -100  # the default ignore_index


# -- NumPy references (computed in float64, cast back) --------------------------------------


def np_log_softmax(x, axis=-1):
    x = x.astype(np.float64)
    if x.size == 0:
        return x
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def np_softmax(x, axis=-1):
    return np.exp(np_log_softmax(x, axis))


def onehot(label, classes):
    """Hard labels [...] as one-hot rows [..., classes]; ignored rows are all 0."""
    eye = np.vstack([np.eye(classes), np.zeros((1, classes))])
    return eye[np.where(label == IGNORE, classes, label)]


def hard_rows(label, x_ndim, axis):
    """Hard labels with the class axis as 1, whichever convention they use."""
    axis %= x_ndim
    return label if label.ndim == x_ndim else np.expand_dims(label, axis)


def np_cross_entropy(x, label, soft):
    """cross_entropy over the last axis: [..., 1]."""
    x64 = x.astype(np.float64)
    if soft:
        terms = np.where(label == 0, 0.0, label * np.log(np.where(label == 0, 1.0, x64)))
        return (-terms.sum(axis=-1, keepdims=True)).astype(x.dtype)
    rows = hard_rows(label, x.ndim, -1)
    picked = np.take_along_axis(x64, np.where(rows == IGNORE, 0, rows), axis=-1)
    return np.where(rows == IGNORE, 0.0, -np.log(picked)).astype(x.dtype)


def np_softmax_with_cross_entropy(logits, label, soft, axis=-1):
    logp = np_log_softmax(logits, axis)
    if soft:
        loss = -(label * logp).sum(axis=axis, keepdims=True)
    else:
        rows = hard_rows(label, logits.ndim, axis)
        picked = np.take_along_axis(logp, np.where(rows == IGNORE, 0, rows), axis=axis)
        loss = np.where(rows == IGNORE, 0.0, -picked)
    return np.exp(logp).astype(logits.dtype), loss.astype(logits.dtype)


def np_accuracy(x, label, k):
    """Top-k with ties to the lower class index and NaN above every number."""
    classes = x.shape[-1]
    scores = x.reshape(-1, classes)
    want = label.reshape(-1)
    own = scores[np.arange(len(want)), want][:, None]
    above = (scores > own) | (np.isnan(scores) & ~np.isnan(own))
    ties = (scores == own) | (np.isnan(scores) & np.isnan(own))
    rank = (above | (ties & (np.arange(classes) < want[:, None]))).sum(axis=1)
    correct = int((rank < k).sum())
    return correct, len(want)


def probabilities(rng, shape, dtype):
    """Rows of probabilities kept away from 0 (for logs and finite differences)."""
    p = rng.uniform(0.2, 1.0, shape)
    return (p / p.sum(axis=-1, keepdims=True)).astype(dtype)


def labels(rng, shape, classes, ignored=()):
    """int64 labels in [0, classes), with IGNORE at the given flat positions."""
    label = rng.integers(0, classes, size=shape).astype(np.int64)
    label.reshape(-1)[list(ignored)] = IGNORE
    return label


# -- softmax, log_softmax --------------------------------------------------------------------

SOFTMAX = {"softmax": np_softmax, "log_softmax": np_log_softmax}
# (shape, axis): last and first axes, negative ones, a middle axis (strided lanes), 1-D, empty
# tensors (no rows; no classes), and sizes split across threads (contiguous and strided).
SOFTMAX_CASES = [
    ((3, 4), -1),
    ((3, 4), 0),
    ((2, 3, 5), 1),
    ((2, 3, 5), -3),
    ((2, 3, 5), 2),
    ((7,), 0),
    ((1, 1), -1),
    ((0, 4), -1),
    ((3, 0), -1),
    ((300, 130), -1),
    ((2, 50, 1000), 1),
]


@pytest.mark.parametrize("op", sorted(SOFTMAX))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", SOFTMAX_CASES, ids=str)
def test_softmax_matches_numpy(op, dtype, shape, axis):
    x = rand(np.random.default_rng(0), shape, dtype, -5, 5)
    (out,) = run_op(op, {"x": x}, {"axis": axis})["out"]
    assert_matches(out, SOFTMAX[op](x, axis).astype(dtype))


def test_softmax_default_axis_is_the_last():
    x = rand(np.random.default_rng(1), (2, 3, 4), "float64")
    (out,) = run_op("softmax", {"x": x})["out"]
    assert_matches(out, np_softmax(x, -1))
    np.testing.assert_allclose(out.sum(axis=-1), 1, rtol=1e-12)


@pytest.mark.parametrize("op", sorted(SOFTMAX))
@pytest.mark.parametrize("shape,axis", [((3, 4), -1), ((3, 4), 0), ((2, 3, 2), 1)], ids=str)
def test_softmax_gradient(op, shape, axis):
    x = rand(np.random.default_rng(2), shape, "float64")
    check_grad(op, {"x": x}, {"axis": axis})


EXTREME = np.array([[1000.0, -1000.0, 0.0], [-1000.0, -1000.0, -1000.0], [1000.0, 1000.0, -1000.0]])


@pytest.mark.parametrize("op", sorted(SOFTMAX))
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_of_extreme_logits_is_finite(op, dtype):
    x = EXTREME.astype(dtype)
    for axis in (-1, 0):
        (out,) = run_op(op, {"x": x}, {"axis": axis})["out"]
        assert np.all(np.isfinite(out))
        assert_matches(out, SOFTMAX[op](x, axis).astype(dtype))


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmax_with_cross_entropy"])
@pytest.mark.parametrize("axis", [1, -1], ids=["strided lanes", "rows"])
def test_results_do_not_depend_on_the_thread_count(op, axis):
    rng = np.random.default_rng(20)
    x = rand(rng, (3, 40, 700), "float32", -5, 5)
    label = labels(rng, (3, 700) if axis == 1 else (3, 40), x.shape[axis])
    results = []
    for threads in (1, 2):
        prog = pc.Program()
        with pc.program_guard(prog):
            xv = pc.data("x", list(x.shape), "float32")
            if op == "softmax_with_cross_entropy":
                yv = pc.data("y", list(label.shape), "int64")
                outs = list(pc.ops.softmax_with_cross_entropy(xv, yv, axis=axis))
            else:
                outs = [getattr(pc.ops, op)(xv, axis=axis)]
        exe = pc.Executor("cpu", num_threads=threads)
        feed = {"x": x, "y": label} if op == "softmax_with_cross_entropy" else {"x": x}
        results.append(exe.run(prog, feed=feed, fetch_list=outs))
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)


EMPTY_LANES = """
import numpy as np
import paddle_core as pc
from paddle_core.testing import run_op

x = np.zeros((2**40, 0))  # 2**40 lanes of no class: no element, no byte
for op in ("softmax", "log_softmax"):
    (dx,) = run_op(op + "_grad", {"out": x, "out_grad": x})["x_grad"]
    prog = pc.Program()
    with pc.program_guard(prog):
        xv = pc.data("x", [2**40, 0], "float64")
        out = getattr(pc.ops, op)(xv)
        (gx,) = pc.gradients([pc.ops.sum(out)], [xv])
    got = pc.Executor().run(prog, feed={"x": x}, fetch_list=[out, gx])
    print(op, dx.shape, *(a.shape for a in got))
"""


def test_empty_lanes_beside_a_huge_dimension_take_no_time():
    """[2**40, 0] holds nothing: the ops and their gradients have no element to compute, and
    answer at once (walking its 2**40 empty lanes would take the better part of an hour)."""
    printed = finishes_within(120, EMPTY_LANES).splitlines()
    shape = (2**40, 0)
    assert printed == [f"{op} {shape} {shape} {shape}" for op in ("softmax", "log_softmax")]


# -- the AVX2 lanes --------------------------------------------------------------------------
# Float32 lanes along the last axis run softmax_avx2.cpp on CPUs with AVX2 and FMA, and the
# portable lane functions with PADDLE_OPS_NN_DISABLE_AVX2=1.

LANES = """
import sys
import numpy as np
from paddle_core.testing import run_op

inputs = dict(np.load(sys.argv[1]))
results = {}
for name, x in inputs.items():
    if name.startswith("label "):
        continue
    results["softmax " + name] = run_op("softmax", {"x": x})["out"][0]
    results["log_softmax " + name] = run_op("log_softmax", {"x": x})["out"][0]
    got = run_op("softmax_with_cross_entropy", {"logits": x, "label": inputs["label " + name]})
    results["loss " + name] = got["loss"][0]
np.savez(sys.argv[2], **results)
"""


def lanes_on_both_paths(tmp_path, inputs: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """Each input's softmax, log_softmax and loss (hard labels), from the AVX2 lanes and from
    the portable ones."""
    rng = np.random.default_rng(31)
    for name, x in list(inputs.items()):
        inputs["label " + name] = rng.integers(0, x.shape[-1], (x.shape[0], 1))
    return on_both_paths(tmp_path, LANES, inputs, "PADDLE_OPS_NN_DISABLE_AVX2")


def ulps(got, want):
    """|got - want| in float32 ulps of want."""
    return np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want).astype(np.float32))


@pytest.mark.skipif(not cpu_has_avx2_fma(), reason="this CPU has no AVX2+FMA")
def test_avx2_lanes_agree_with_the_portable_ones_and_numpy(tmp_path):
    """Every lane length up to 40 (full eights and every tail), long lanes, and a lane whose
    exponentials go denormal: softmax within 3 ulps of the portable lanes and of float64,
    log_softmax within 2 ulps of log(sum)."""
    rng = np.random.default_rng(30)
    inputs = {f"n={n}": rand(rng, (5, n), "float32", -8, 8) for n in [*range(1, 41), 1000, 16387]}
    inputs["wide range"] = rand(rng, (4, 301), "float32", -200, 0)
    avx2, portable = lanes_on_both_paths(tmp_path, inputs)
    for name, x in inputs.items():
        if name.startswith("label "):
            continue
        soft, log_soft = avx2["softmax " + name], avx2["log_softmax " + name]
        assert ulps(soft, portable["softmax " + name]).max() <= 3, name
        # log_softmax = (x - max) - log(sum): the paths' log(sum) differ by rounding only.
        log_sum = np.log(np.exp(x.astype(np.float64) - x.max(-1, keepdims=True)).sum(-1))
        allowed = 2 * np.spacing(np.maximum(np.abs(log_soft), log_sum[:, None]).astype(np.float32))
        assert (np.abs(log_soft - portable["log_softmax " + name]) <= allowed).all(), name
        np.testing.assert_allclose(avx2["loss " + name], portable["loss " + name], rtol=1e-6)
        # Against float64 from the same float32 x - max (whose rounding both paths share):
        # 3 ulps (2 seen), and a few of the denormals' spacing below the normal floats.
        shifted = (x - x.max(-1, keepdims=True)).astype(np.float64)
        want = np.exp(shifted) / np.exp(shifted).sum(-1, keepdims=True)
        normal = want >= np.finfo(np.float32).tiny
        assert ulps(soft[normal], want[normal]).max() <= 3, name
        np.testing.assert_allclose(soft[~normal], want[~normal], rtol=0, atol=2.0**-147)
        assert_matches(log_soft, np_log_softmax(x).astype(np.float32), rtol=1e-5, atol=1e-5)
    differ = [k for k in avx2 if not np.array_equal(avx2[k], portable[k])]
    assert len(differ) > 40  # two paths ran (exp8 and libm's exp differ in the last bit)


@pytest.mark.skipif(not cpu_has_avx2_fma(), reason="this CPU has no AVX2+FMA")
def test_avx2_lanes_treat_special_values_as_the_portable_ones(tmp_path):
    """NaN, +inf and -inf in the first eight of a lane and in its tail; extreme logits."""
    n = 13  # one full eight and a tail of five
    rows = []
    for position in (0, 7, 8, 12):
        for value in (np.nan, np.inf, -np.inf):
            row = np.linspace(-3, 3, n, dtype=np.float32)
            row[position] = value
            rows.append(row)
    rows.append(np.full(n, -np.inf, np.float32))
    rows.append(np.where(np.arange(n) % 2 == 0, 1000, -1000).astype(np.float32))
    x = np.stack(rows)
    avx2, portable = lanes_on_both_paths(tmp_path, {"special": x})
    for what in ("softmax", "log_softmax", "loss"):
        got, want = avx2[f"{what} special"], portable[f"{what} special"]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, equal_nan=True, err_msg=what)
    lane_of_nan = np.isnan(avx2["softmax special"]).any(axis=1)
    assert (np.isnan(avx2["softmax special"]) == lane_of_nan[:, None]).all()  # whole lanes


# -- cross_entropy ---------------------------------------------------------------------------

# (x shape, hard label shape): [..., 1] and [...] for 2-D, 3-D and 1-D x.
CE_CASES = [
    ((5, 4), (5, 1)),
    ((5, 4), (5,)),
    ((2, 3, 4), (2, 3, 1)),
    ((2, 3, 4), (2, 3)),
    ((4,), (1,)),
    ((4,), ()),
    ((0, 4), (0, 1)),
    ((600, 70), (600,)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("x_shape,label_shape", CE_CASES, ids=str)
def test_cross_entropy_hard_labels_match_numpy(dtype, x_shape, label_shape):
    rng = np.random.default_rng(3)
    x = probabilities(rng, x_shape, dtype)
    ignored = [1] if np.prod(label_shape, dtype=int) > 1 else []
    label = labels(rng, label_shape, x_shape[-1], ignored)
    (out,) = run_op("cross_entropy", {"x": x, "label": label})["out"]
    assert out.shape == (*x_shape[:-1], 1)
    assert_matches(out, np_cross_entropy(x, label, soft=False))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (4,)], ids=str)
def test_cross_entropy_soft_labels_match_numpy(dtype, shape):
    rng = np.random.default_rng(4)
    x = probabilities(rng, shape, dtype)
    label = probabilities(rng, shape, dtype)
    label.reshape(-1)[0] = 0  # a zero term counts 0
    (out,) = run_op("cross_entropy", {"x": x, "label": label}, {"soft_label": True})["out"]
    assert_matches(out, np_cross_entropy(x, label, soft=True))


def test_cross_entropy_soft_label_zero_where_x_is_zero():
    x = np.array([[0.0, 0.5, 0.5]])
    label = np.array([[0.0, 0.25, 0.75]])
    (out,) = run_op("cross_entropy", {"x": x, "label": label}, {"soft_label": True})["out"]
    assert np.isfinite(out).all()
    assert_matches(out, np_cross_entropy(x, label, soft=True))


def test_cross_entropy_custom_ignore_index():
    x = probabilities(np.random.default_rng(5), (3, 4), "float64")
    label = np.array([1, 2, 2])
    (out,) = run_op("cross_entropy", {"x": x, "label": label}, {"ignore_index": 2})["out"]
    assert_matches(out, [[-np.log(x[0, 1])], [0.0], [0.0]])


@pytest.mark.parametrize("label_shape", [(4, 1), (4,)], ids=str)
def test_cross_entropy_gradient_hard_labels(label_shape):
    rng = np.random.default_rng(6)
    x = probabilities(rng, (4, 3), "float64")
    label = labels(rng, label_shape, 3, ignored=[2])
    check_grad("cross_entropy", {"x": x, "label": label}, wrt=["x"])


def test_cross_entropy_gradient_soft_labels():
    rng = np.random.default_rng(7)
    x = probabilities(rng, (3, 4), "float64")
    label = probabilities(rng, (3, 4), "float64")
    check_grad("cross_entropy", {"x": x, "label": label}, {"soft_label": True}, wrt=["x"])


# -- softmax_with_cross_entropy --------------------------------------------------------------

# (logits shape, axis, hard label shape)
SWCE_CASES = [
    ((5, 4), -1, (5, 1)),
    ((5, 4), -1, (5,)),
    ((2, 3, 4), -1, (2, 3, 1)),
    ((2, 3, 4), 2, (2, 3)),
    ((2, 3, 4), 1, (2, 1, 4)),
    ((2, 3, 4), -2, (2, 4)),
    ((3, 2), 0, (1, 2)),
    ((4,), 0, (1,)),
    ((4,), -1, ()),
    ((0, 4), -1, (0, 1)),
    ((500, 70), -1, (500, 1)),
    ((4, 60, 100), 1, (4, 1, 100)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis,label_shape", SWCE_CASES, ids=str)
def test_softmax_with_cross_entropy_hard_labels_match_numpy(dtype, shape, axis, label_shape):
    rng = np.random.default_rng(8)
    logits = rand(rng, shape, dtype, -5, 5)
    ignored = [0] if np.prod(label_shape, dtype=int) > 1 else []
    label = labels(rng, label_shape, shape[axis], ignored)
    got = run_op("softmax_with_cross_entropy", {"logits": logits, "label": label}, {"axis": axis})
    softmax, loss = np_softmax_with_cross_entropy(logits, label, soft=False, axis=axis)
    assert_matches(got["softmax"][0], softmax)
    assert_matches(got["loss"][0], loss)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((5, 4), -1), ((2, 3, 4), 1), ((4,), 0)], ids=str)
def test_softmax_with_cross_entropy_soft_labels_match_numpy(dtype, shape, axis):
    rng = np.random.default_rng(9)
    logits = rand(rng, shape, dtype, -5, 5)
    label = np.moveaxis(probabilities(rng, np.moveaxis(logits, axis, -1).shape, dtype), -1, axis)
    got = run_op(
        "softmax_with_cross_entropy",
        {"logits": logits, "label": label},
        {"soft_label": True, "axis": axis},
    )
    softmax, loss = np_softmax_with_cross_entropy(logits, label, soft=True, axis=axis)
    assert_matches(got["softmax"][0], softmax)
    assert_matches(got["loss"][0], loss)


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_with_cross_entropy_of_extreme_logits_is_finite(dtype):
    logits = EXTREME.astype(dtype)
    hard = np.array([[1], [2], [0]])
    soft = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.0, 0.25, 0.75]], dtype)
    for label, soft_label in ((hard, False), (soft, True)):
        got = run_op(
            "softmax_with_cross_entropy",
            {"logits": logits, "label": label},
            {"soft_label": soft_label},
        )
        softmax, loss = np_softmax_with_cross_entropy(logits, label, soft_label)
        assert np.isfinite(got["loss"][0]).all() and np.isfinite(got["softmax"][0]).all()
        assert_matches(got["softmax"][0], softmax)
        assert_matches(got["loss"][0], loss)
    assert float(got["loss"][0][0, 0]) == pytest.approx(1000.0)  # 0.5 * 2000, the soft row 0


@pytest.mark.parametrize(
    "shape,axis,label_shape", [((4, 3), -1, (4, 1)), ((4, 3), -1, (4,)), ((2, 3, 2), 1, (2, 2))]
)
def test_softmax_with_cross_entropy_gradient_hard_labels(shape, axis, label_shape):
    rng = np.random.default_rng(10)
    logits = rand(rng, shape, "float64")
    label = labels(rng, label_shape, shape[axis], ignored=[1])
    inputs, attrs = {"logits": logits, "label": label}, {"axis": axis}
    check_grad("softmax_with_cross_entropy", inputs, attrs, output="loss", wrt=["logits"])


@pytest.mark.parametrize("normalised", [True, False], ids=["sum1", "any"])
def test_softmax_with_cross_entropy_gradient_soft_labels(normalised):
    """Exact also for labels that do not sum to 1 (softmax * sum(label) - label)."""
    rng = np.random.default_rng(11)
    logits = rand(rng, (3, 4), "float64")
    label = probabilities(rng, (3, 4), "float64") * (1 if normalised else 1.7)
    inputs, attrs = {"logits": logits, "label": label}, {"soft_label": True}
    check_grad("softmax_with_cross_entropy", inputs, attrs, output="loss", wrt=["logits"])


def test_softmax_with_cross_entropy_gradient_through_softmax():
    """A gradient flowing back through the softmax output is not dropped."""
    rng = np.random.default_rng(12)
    inputs = {"logits": rand(rng, (3, 4), "float64"), "label": labels(rng, (3, 1), 4)}
    check_grad("softmax_with_cross_entropy", inputs, output="softmax", wrt=["logits"])


def test_softmax_with_cross_entropy_gradient_through_both_outputs():
    rng = np.random.default_rng(13)
    logits = rand(rng, (3, 4), "float64")
    label = labels(rng, (3,), 4, ignored=[2])
    w = rng.standard_normal((3, 4))
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [3, 4], "float64")
        y = pc.data("y", [3], "int64")
        weight = pc.data("w", [3, 4], "float64")
        softmax, loss = pc.ops.softmax_with_cross_entropy(x, y)
        total = pc.ops.add(pc.ops.sum(loss), pc.ops.sum(pc.ops.mul(softmax, weight)))
        (gx,) = pc.gradients([total], [x])
    (got,) = pc.Executor().run(prog, feed={"x": logits, "y": label, "w": w}, fetch_list=[gx])
    s = np_softmax(logits)
    want = (s - onehot(label, 4)) * (label != IGNORE)[:, None]  # ignored rows: no loss part
    want += s * (w - (w * s).sum(axis=-1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("op", ["cross_entropy", "softmax_with_cross_entropy"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_ignored_rows_have_exactly_zero_gradient(op, dtype):
    rng = np.random.default_rng(14)
    x = probabilities(rng, (4, 5), dtype)
    label = np.array([[3], [IGNORE], [0], [IGNORE]])
    prog = pc.Program()
    with pc.program_guard(prog):
        xv = pc.data("x", [4, 5], dtype)
        yv = pc.data("y", [4, 1], "int64")
        out = (
            pc.ops.cross_entropy(xv, yv)
            if op == "cross_entropy"
            else pc.ops.softmax_with_cross_entropy(xv, yv)[1]
        )
        (gx,) = pc.gradients([pc.ops.sum(out)], [xv])
    loss, got = pc.Executor().run(prog, feed={"x": x, "y": label}, fetch_list=[out, gx])
    assert np.all(loss[[1, 3]] == 0)
    assert np.all(got[[1, 3]] == 0)
    assert np.all(np.any(got[[0, 2]] != 0, axis=1))


@pytest.mark.parametrize("soft_label", [False, True], ids=["hard", "soft"])
def test_fused_loss_matches_softmax_then_cross_entropy(soft_label):
    """softmax_with_cross_entropy and cross_entropy(softmax(...)) agree, gradients included."""
    rng = np.random.default_rng(15)
    logits = rand(rng, (4, 5), "float64")
    if soft_label:
        label = probabilities(rng, (4, 5), "float64")
    else:
        label = labels(rng, (4, 1), 5, ignored=[3])
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [4, 5], "float64")
        y = pc.data("y", list(label.shape), label.dtype.name)
        fused = pc.ops.softmax_with_cross_entropy(x, y, soft_label=soft_label)[1]
        plain = pc.ops.cross_entropy(pc.ops.softmax(x), y, soft_label=soft_label)
        (g_fused,) = pc.gradients([pc.ops.sum(fused)], [x])
        (g_plain,) = pc.gradients([pc.ops.sum(plain)], [x])
    values = pc.Executor().run(
        prog, feed={"x": logits, "y": label}, fetch_list=[fused, plain, g_fused, g_plain]
    )
    np.testing.assert_allclose(values[0], values[1], rtol=1e-12)
    np.testing.assert_allclose(values[2], values[3], rtol=1e-10, atol=1e-14)


# -- labels get no gradient ------------------------------------------------------------------


@pytest.mark.parametrize("op", ["cross_entropy", "softmax_with_cross_entropy"])
def test_hard_labels_are_never_asked_for_a_gradient(op):
    """default_grad (and the fused rule) write gradients only for inputs in the backward's
    reach: an int64 label, even one requested explicitly, gets none, and no op writes one."""
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [3, 4], "float64")
        y = pc.data("y", [3, 1], "int64")
        w = prog.global_block().create_parameter("w", [4, 4], "float64")
        h = pc.ops.matmul(x, w)
        if op == "cross_entropy":
            out = pc.ops.cross_entropy(pc.ops.softmax(h), y)
        else:
            out = pc.ops.softmax_with_cross_entropy(h, y)[1]
        loss = pc.ops.mean(out)
        pairs = pc.append_backward(loss)
        g_h, g_y = pc.gradients([loss], [h, y])
    assert [p.name for p, _ in pairs] == ["w"]
    assert g_h is not None and g_y is None
    written = {n for o in prog.global_block().ops for n in o.output_names}
    assert not any(n.startswith("y@GRAD") for n in written)
    grad_ops = [o for o in prog.global_block().ops if o.type == f"{op}_grad"]
    assert grad_ops and all(
        set(o.outputs) == {"x_grad" if op == "cross_entropy" else "logits_grad"} for o in grad_ops
    )


@pytest.mark.parametrize("op", ["cross_entropy", "softmax_with_cross_entropy"])
def test_a_soft_label_needing_a_gradient_is_refused(op):
    """A soft label computed from a parameter would silently miss its gradient: refused, unless
    the backward does not reach it."""
    prog = pc.Program()
    with pc.program_guard(prog):
        block = prog.global_block()
        student = block.create_parameter("student", [2, 3], "float64")
        teacher = block.create_parameter("teacher", [2, 3], "float64")
        target = pc.ops.softmax(teacher)
        if op == "cross_entropy":
            out = pc.ops.cross_entropy(pc.ops.softmax(student), target, soft_label=True)
        else:
            out = pc.ops.softmax_with_cross_entropy(student, target, soft_label=True)[1]
        loss = pc.ops.mean(out)
        with pytest.raises(pc.ProgramError, match=f"op '{op}'.*soft label.*stop_gradient"):
            pc.append_backward(loss)
    prog = pc.Program()
    with pc.program_guard(prog):
        block = prog.global_block()
        student = block.create_parameter("student", [2, 3], "float64")
        teacher = block.create_parameter("teacher", [2, 3], "float64")
        target = pc.ops.softmax(teacher)
        if op == "cross_entropy":
            out = pc.ops.cross_entropy(pc.ops.softmax(student), target, soft_label=True)
        else:
            out = pc.ops.softmax_with_cross_entropy(student, target, soft_label=True)[1]
        pairs = pc.append_backward(pc.ops.mean(out), parameter_list=[student])
    assert [p.name for p, _ in pairs] == ["student"]


# -- accuracy --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("label_shape", [(40, 1), (40,)], ids=str)
def test_accuracy_matches_numpy(dtype, k, label_shape):
    rng = np.random.default_rng(16)
    x = rand(rng, (40, 5), dtype)
    label = labels(rng, label_shape, 5)
    got = run_op("accuracy", {"x": x, "label": label}, {"k": k})
    correct, total = np_accuracy(x, label, k)
    assert got["accuracy"][0].shape == () and got["accuracy"][0].dtype == np.float32
    assert got["correct"][0].dtype == np.int64 and got["total"][0].dtype == np.int64
    assert int(got["correct"][0]) == correct and int(got["total"][0]) == total
    assert got["accuracy"][0] == np.float32(correct / total)
    if k == 5:
        assert correct == total


def test_accuracy_counts_rows_split_across_threads():
    rng = np.random.default_rng(19)
    x = rand(rng, (3001, 30), "float32")
    label = labels(rng, (3001, 1), 30)
    x[np.arange(0, 3001, 3), label[::3, 0]] = 10  # every third row is surely correct
    for k in (1, 4):
        got = run_op("accuracy", {"x": x, "label": label}, {"k": k})
        assert int(got["correct"][0]) == np_accuracy(x, label, k)[0]


def test_accuracy_ties_go_to_the_lower_class_like_argmax():
    rng = np.random.default_rng(17)
    x = rng.integers(0, 3, (500, 4)).astype(np.float32)  # many ties
    x[0, :] = np.nan
    x[1, 2] = np.nan
    label = labels(rng, (500,), 4)
    got = run_op("accuracy", {"x": x, "label": label})
    assert int(got["correct"][0]) == int((np.argmax(x, axis=1) == label).sum())
    for k in (2, 3):
        got = run_op("accuracy", {"x": x, "label": label}, {"k": k})
        assert int(got["correct"][0]) == np_accuracy(x, label, k)[0]


def test_accuracy_of_no_rows_is_nan():
    got = run_op("accuracy", {"x": np.zeros((0, 3)), "label": np.zeros((0, 1), np.int64)})
    assert np.isnan(got["accuracy"][0]) and int(got["total"][0]) == 0


def test_accuracy_is_not_differentiable():
    prog = pc.Program()
    with pc.program_guard(prog):
        w = prog.global_block().create_parameter("w", [2, 3], "float64")
        acc = pc.ops.accuracy(w, pc.data("y", [2], "int64"))[0]
        with pytest.raises(pc.ProgramError, match=r"'accuracy'.*not differentiable"):
            pc.gradients([acc], [w])


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op,inputs,attrs",
    [
        ("softmax", {"x": np.ones((2, 3))}, {"axis": 2}),
        ("log_softmax", {"x": np.ones((2, 3))}, {"axis": -3}),
        (
            "softmax_with_cross_entropy",
            {"logits": np.ones((2, 3)), "label": np.zeros((2, 1), np.int64)},
            {"axis": 5},
        ),
    ],
    ids=["softmax", "log_softmax", "softmax_with_cross_entropy"],
)
def test_bad_axis(op, inputs, attrs):
    axis = attrs["axis"]
    with pytest.raises(pc.ShapeError, match=rf"op '{op}'.*axis {axis} is out of range for a 2-D"):
        run_op(op, inputs, attrs)


def test_softmax_of_a_0d_x_is_refused():
    with pytest.raises(pc.ShapeError, match=r"op 'softmax'.*0-d.*axis -1"):
        run_op("softmax", {"x": np.float64(1.0)})


def test_integer_x_is_refused():
    with pytest.raises(pc.ShapeError, match=r"op 'softmax'.*x must be float32 or float64"):
        run_op("softmax", {"x": np.ones(3, np.int32)})


LOSSES = [
    ("cross_entropy", "x", {}),
    ("softmax_with_cross_entropy", "logits", {}),
    ("accuracy", "x", {}),
]


@pytest.mark.parametrize("op,x_slot,attrs", LOSSES, ids=[c[0] for c in LOSSES])
@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_hard_label_of_the_wrong_dtype(op, x_slot, attrs, dtype):
    inputs = {x_slot: np.full((2, 3), 1 / 3), "label": np.zeros((2, 1), dtype)}
    with pytest.raises(pc.ShapeError, match=f"op '{op}'.*label.*must be int64.*got {dtype}"):
        run_op(op, inputs, attrs)


@pytest.mark.parametrize("op,x_slot,attrs", LOSSES, ids=[c[0] for c in LOSSES])
@pytest.mark.parametrize("shape", [(2, 2), (3, 1), (3,), (2, 1, 1), ()], ids=str)
def test_hard_label_of_the_wrong_shape(op, x_slot, attrs, shape):
    inputs = {x_slot: np.full((2, 3), 1 / 3), "label": np.zeros(shape, np.int64)}
    with pytest.raises(
        pc.ShapeError, match=rf"op '{op}'.*hard labels have the shape \[2, 1\] or \[2\]"
    ):
        run_op(op, inputs, attrs)


@pytest.mark.parametrize(
    "op,x_slot", [("cross_entropy", "x"), ("softmax_with_cross_entropy", "logits")]
)
def test_soft_label_of_the_wrong_dtype_or_shape(op, x_slot):
    x = np.full((2, 3), 1 / 3)
    attrs = {"soft_label": True}
    with pytest.raises(pc.ShapeError, match=f"op '{op}'.*label must have {x_slot}'s dtype float64"):
        run_op(op, {x_slot: x, "label": np.zeros((2, 3), np.int64)}, attrs)
    with pytest.raises(
        pc.ShapeError, match=rf"op '{op}'.*label must have {x_slot}'s shape \[2, 3\]"
    ):
        run_op(op, {x_slot: x, "label": np.zeros((2, 1))}, attrs)


@pytest.mark.parametrize("op,x_slot,attrs", LOSSES, ids=[c[0] for c in LOSSES])
@pytest.mark.parametrize("bad", [3, 7, -1, IGNORE + 1])
def test_label_out_of_range_is_a_kernel_error(op, x_slot, attrs, bad):
    inputs = {x_slot: np.full((3, 3), 1 / 3), "label": np.array([[0], [bad], [2]])}
    with pytest.raises(
        pc.KernelError,
        match=rf"label {bad} \(at position 1 of label\) is out of range: there are 3 classes",
    ):
        run_op(op, inputs, attrs)


def test_accuracy_has_no_ignore_index():
    with pytest.raises(pc.KernelError, match=f"label {IGNORE} .*out of range"):
        run_op("accuracy", {"x": np.ones((2, 3)), "label": np.array([0, IGNORE])})


def test_loss_with_no_classes_is_refused():
    with pytest.raises(pc.ShapeError, match=r"op 'cross_entropy'.*x has no classes"):
        run_op("cross_entropy", {"x": np.ones((2, 0)), "label": np.zeros(2, np.int64)})


@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_is_refused(k):
    with pytest.raises(pc.AttrError, match="k"):
        run_op("accuracy", {"x": np.ones((2, 3)), "label": np.zeros(2, np.int64)}, {"k": k})


def test_k_above_the_class_count_is_a_shape_error():
    with pytest.raises(
        pc.ShapeError, match=r"op 'accuracy'.*k=4 is larger than the number of classes 3"
    ):
        run_op("accuracy", {"x": np.ones((2, 3)), "label": np.zeros(2, np.int64)}, {"k": 4})


# -- end to end ------------------------------------------------------------------------------


def test_softmax_regression_trains():
    """Three Gaussian blobs, a linear model, the fused loss, append_backward and SGD."""
    rng = np.random.default_rng(18)
    centers = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    y_train = rng.integers(0, 3, (96, 1))
    x_train = (centers[y_train[:, 0]] + rng.normal(0, 0.6, (96, 2))).astype(np.float32)

    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.data("x", [None, 2])
        y = pc.data("y", [None, 1], "int64")
        block = main.global_block()
        zeros = pc.Initializer("fill_constant", value=0.0)
        w = block.create_parameter("w", [2, 3], initializer=zeros)
        b = block.create_parameter("b", [3], initializer=zeros)
        logits = pc.ops.add(pc.ops.matmul(x, w), b)
        _, loss = pc.ops.softmax_with_cross_entropy(logits, y)
        avg = pc.ops.mean(loss)
        acc = pc.ops.accuracy(logits, y)[0]
        pairs = pc.append_backward(avg)
        for param, grad in pairs:
            with main.role_guard("optimize"):
                step = pc.ops.scale(grad, scale=-0.5)
                block.append_op("add", inputs={"x": param, "y": step}, outputs={"out": param})
    assert sorted(p.name for p, _ in pairs) == ["b", "w"]

    scope = pc.Scope()
    exe = pc.Executor()
    exe.run(startup, scope=scope)
    losses, accuracies = [], []
    for _ in range(12):
        value, accuracy = exe.run(
            main, feed={"x": x_train, "y": y_train}, fetch_list=[avg, acc], scope=scope
        )
        losses.append(float(value))
        accuracies.append(float(accuracy))
    assert losses[0] == pytest.approx(np.log(3), rel=1e-6)  # zero weights: uniform softmax
    assert all(later < earlier for earlier, later in itertools.pairwise(losses))
    assert losses[-1] < 0.5 * losses[0]
    assert accuracies[-1] > 0.9
