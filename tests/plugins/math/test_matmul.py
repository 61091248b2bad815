"""paddle-ops-math matrix products (OpenBLAS) and einsum against NumPy; their gradients."""

from __future__ import annotations

import re

import numpy as np
import pytest
from op_helpers import FLOATS, assert_matches, check_grad, finishes_within, rand, run1

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

MATMUL = [  # x shape, y shape, transpose_x, transpose_y
    ((3, 4), (4, 5), False, False),
    ((4, 3), (4, 5), True, False),
    ((3, 4), (5, 4), False, True),
    ((4, 3), (5, 4), True, True),
    ((2, 3, 4), (4, 5), False, False),
    ((4, 5), (2, 5, 3), False, False),
    ((2, 1, 3, 4), (5, 4, 2), False, False),
    ((0, 4), (4, 5), False, False),
    ((3, 0), (0, 5), False, False),  # empty inner dimension: zeros
    ((64, 96), (96, 80), False, False),
    # 1-D operands are vectors, promoted as numpy.matmul promotes them (never transposed)
    ((4,), (4,), False, False),
    ((4,), (4,), True, True),
    ((3,), (3, 5), False, False),  # out [5]: a bias's gradient sums over no axis
    ((3,), (5, 3), False, True),
    ((3,), (2, 3, 5), False, False),
    ((3,), (2, 5, 3), False, True),
    ((2, 1, 5, 3), (3,), False, False),
    ((2, 3, 5), (3,), True, False),
    ((0,), (0,), False, False),
    ((0,), (0, 4), False, False),
]


def np_matmul(x, y, tx, ty):
    swap = lambda a, t: np.swapaxes(a, -1, -2) if t and a.ndim > 1 else a  # noqa: E731
    return np.matmul(swap(x, tx), swap(y, ty))


@pytest.mark.parametrize(("xs", "ys", "tx", "ty"), MATMUL)
@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_matches_numpy(xs, ys, tx, ty, dtype):
    rng = np.random.default_rng(0)
    x, y = rand(rng, xs, dtype), rand(rng, ys, dtype)
    got = run1("matmul", {"x": x, "y": y}, {"transpose_x": tx, "transpose_y": ty})
    assert_matches(
        got,
        np_matmul(x, y, tx, ty),
        rtol=1e-5 if dtype == "float32" else 1e-12,
        atol=1e-5 if dtype == "float32" else 1e-12,
    )


@pytest.mark.parametrize(
    ("xs", "ys", "tx", "ty"), [m for m in MATMUL if 0 not in m[0] and m[0][0] < 64]
)
def test_matmul_gradients(xs, ys, tx, ty):
    rng = np.random.default_rng(1)
    check_grad("matmul", {"x": rand(rng, xs, "float64"), "y": rand(rng, ys, "float64")},
               {"transpose_x": tx, "transpose_y": ty}, rtol=1e-6, atol=1e-8)  # fmt: skip


BIASED = [m for m in MATMUL if len(m[1]) > 1]  # (a bias needs y as matrices)


@pytest.mark.parametrize(("xs", "ys", "tx", "ty"), BIASED)
@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_adds_a_bias_to_every_row(xs, ys, tx, ty, dtype):
    rng = np.random.default_rng(4)
    x, y = rand(rng, xs, dtype), rand(rng, ys, dtype)
    n = ys[-2] if ty else ys[-1]
    b = rand(rng, (n,), dtype)
    got = run1("matmul", {"x": x, "y": y, "bias": b}, {"transpose_x": tx, "transpose_y": ty})
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert_matches(got, np_matmul(x, y, tx, ty) + b, rtol=tol, atol=tol)


@pytest.mark.parametrize(
    ("xs", "ys", "tx", "ty"), [m for m in BIASED if 0 not in m[0] and m[0][0] < 64]
)
def test_matmul_bias_gradients(xs, ys, tx, ty):
    rng = np.random.default_rng(5)
    n = ys[-2] if ty else ys[-1]
    inputs = {
        "x": rand(rng, xs, "float64"),
        "y": rand(rng, ys, "float64"),
        "bias": rand(rng, (n,), "float64"),
    }
    check_grad("matmul", inputs, {"transpose_x": tx, "transpose_y": ty}, rtol=1e-6, atol=1e-8)


def test_matmul_bias_errors_name_the_op():
    import paddle_core as pc

    with pc.program_guard(pc.Program()):
        x, y = pc.data("x", [3, 4]), pc.data("y", [4, 5])
        with pytest.raises(pc.ShapeError, match=r"op 'matmul' .*bias must be float32\[5\].*\[4\]"):
            pc.ops.matmul(x, y, bias=pc.data("b4", [4]))
        with pytest.raises(pc.ShapeError, match=r"bias must be float32\[5\].*float64\[5\]"):
            pc.ops.matmul(x, y, bias=pc.data("b64", [5], dtype="float64"))
        with pytest.raises(pc.ShapeError, match="bias needs y as matrices"):
            pc.ops.matmul(x, pc.data("v", [4]), bias=pc.data("b1", [1]))
    x, y = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    with pytest.raises(pc.ShapeError, match=r"bias must be float32\[5\].*got float32\[2, 5\]"):
        run1("matmul", {"x": x, "y": y, "bias": np.ones((2, 5), np.float32)})


@pytest.mark.parametrize(
    ("xs", "ys", "xk", "yk"),
    [
        ((3, 4), (4, 5), 1, 1),
        ((2, 3, 4), (12, 5), 1, 1),
        ((2, 3, 4), (4, 5), 2, 1),
        ((2, 3, 4), (3, 4, 5), 1, 2),
    ],
)
def test_matmul_2d_flattens_like_the_original_mul(xs, ys, xk, yk):
    rng = np.random.default_rng(2)
    x, y = rand(rng, xs, "float64"), rand(rng, ys, "float64")
    x2 = x.reshape(int(np.prod(xs[:xk])), -1)
    y2 = y.reshape(int(np.prod(ys[:yk])), -1)
    want = (x2 @ y2).reshape(*xs[:xk], *ys[yk:])
    attrs = {"x_num_col_dims": xk, "y_num_col_dims": yk}
    assert_matches(run1("matmul_2d", {"x": x, "y": y}, attrs), want)
    check_grad("matmul_2d", {"x": x, "y": y}, attrs, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", FLOATS)
def test_rowwise_add(dtype):
    rng = np.random.default_rng(3)
    x, b = rand(rng, (5, 3), dtype), rand(rng, (3,), dtype)
    assert_matches(run1("rowwise_add", {"x": x, "b": b}), x + b)
    if dtype == "float64":
        check_grad("rowwise_add", {"x": x, "b": b})


def test_matmul_shape_errors_name_the_op():
    import paddle_core as pc

    with pc.program_guard(pc.Program()):
        with pytest.raises(
            pc.ShapeError, match=r"op 'matmul' .*inner dimensions differ: 4 \(x\) vs 5"
        ):
            pc.ops.matmul(pc.data("a", [3, 4]), pc.data("b", [5, 6]))
        with pytest.raises(pc.ShapeError, match="at least 1-D"):
            pc.ops.matmul(pc.data("c", []), pc.data("d", [3, 2]))
        with pytest.raises(pc.ShapeError, match=r"inner dimensions differ: 3 \(x\) vs 2"):
            pc.ops.matmul(pc.data("e", [3]), pc.data("f", [2, 3]))
        assert pc.ops.matmul(pc.data("g", [None]), pc.data("h", [5, None, 3])).shape == (5, 3)


@pytest.mark.parametrize(
    "setting", ["OMP_THREAD_LIMIT=1", "OMP_DYNAMIC=true", "OMP_MAX_ACTIVE_LEVELS=0"]
)
def test_threaded_gemms_finish_whatever_openmp_is_told(setting):
    """OpenBLAS's jobs wait on one another, so they must all run at once: OpenMP settings
    that shrink its teams must not leave a GEMM waiting forever."""
    import os
    import subprocess
    import sys

    script = (
        "import numpy as np, paddle_core as pc\n"
        "with pc.program_guard(prog := pc.Program()):\n"
        "    c = pc.ops.matmul(pc.data('a', [512, 512]), pc.data('b', [512, 512]))\n"
        "a = np.random.default_rng(0).random((512, 512), np.float32)\n"
        "(r,) = pc.Executor(num_threads=2).run(prog, feed={'a': a, 'b': a}, fetch_list=[c])\n"
        "assert np.allclose(r, a @ a, rtol=1e-4), 'wrong product'\n"
    )
    key, value = setting.split("=")
    env = {**os.environ, key: value}
    done = subprocess.run(
        [sys.executable, "-P", "-c", script],
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("op", ["matmul_grad", "matmul_2d_grad"])
def test_grad_ops_refuse_operands_of_another_dtype(op):
    """A hand-built program may bind a float32 y beside a float64 x; reading it as float64
    would run past its buffer, so the grad op is refused as its forward op would be."""
    import paddle_core as pc

    prog = pc.Program()
    block = prog.global_block()
    slots = {"x": "float64", "y": "float32", "out_grad": "float64"}
    inputs = {s: block.create_var(s, [3, 3], dt) for s, dt in slots.items()}
    with pytest.raises(pc.ShapeError, match=f"{op}.*x and y must share a dtype"):
        block.append_op(op, inputs)


EMPTY_MATRICES = """
import numpy as np
from paddle_core.testing import run_op

x, y = np.zeros((2**31 - 1, 0, 3), np.float32), np.ones(3, np.float32)
(out,) = run_op("matmul", {"x": x, "y": y})["out"]
got = run_op("matmul_grad", {"x": x, "y": y, "out_grad": out})
(dx,), (dy,) = got["x_grad"], got["y_grad"]
print(out.shape, dx.shape, dy.tolist())
"""


def test_products_of_empty_matrices_in_huge_batches_take_no_time():
    """2**31 - 1 batches of [0, 3] matrices times a vector: no product has an element, so none
    is made (a table of each batch's operands took 32 GiB, and a loop over them minutes); y's
    gradient sums no product: zeros."""
    printed = finishes_within(120, EMPTY_MATRICES)
    assert printed.split("\n")[0] == f"{(2**31 - 1, 0)} {(2**31 - 1, 0, 3)} [0.0, 0.0, 0.0]"


# -- einsum -------------------------------------------------------------------------------------

EINSUM = [  # equation, operand shapes
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ij->i", [(3, 4)]),
    ("ij", [(3, 4)]),  # implicit output: the letters used once, sorted ("ij": x itself)
    ("ji", [(3, 4)]),  # implicit output "ij": a transpose
    ("i,i", [(5,), (5,)]),  # inner product, implicit scalar
    ("i,j->ij", [(3,), (4,)]),
    ("ii->i", [(4, 4)]),  # diagonal
    ("ii", [(4, 4)]),  # trace
    ("...ii->...i", [(2, 3, 3)]),  # batch diagonal
    ("iij->ji", [(3, 3, 2)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),  # ellipsis broadcast, implicit output
    ("ij,jk", [(2, 1), (3, 4)]),  # a size-1 letter broadcasts, as in numpy.einsum
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),  # three operands
    ("Ab,bA", [(2, 3), (3, 2)]),  # upper-case letters
    ("->", [()]),
    ("i->", [(0,)]),
]


@pytest.mark.parametrize(("equation", "shapes"), EINSUM, ids=[e for e, _ in EINSUM])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_einsum_matches_numpy(equation, shapes, dtype):
    rng = np.random.default_rng(20)
    xs = [rand(rng, s, dtype) for s in shapes]
    got = run1("einsum", {"xs": xs}, {"equation": equation})
    want = np.einsum(equation, *xs)
    assert_matches(got, np.asarray(want, dtype), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("equation", "shapes"), [e for e in EINSUM if 0 not in sum(e[1], ())], ids=str
)
def test_einsum_gradients(equation, shapes):
    rng = np.random.default_rng(21)
    xs = [rand(rng, s, "float64") for s in shapes]
    check_grad("einsum", {"xs": xs}, {"equation": equation}, rtol=1e-6, atol=1e-8)


def test_einsum_shapes_are_checked_when_appended():
    import paddle_core as pc

    with pc.program_guard(pc.Program()):
        a, b = pc.data("a", [None, 4]), pc.data("b", [4, 5])
        assert pc.ops.einsum([a, b], equation="ij,jk->ik").shape == (None, 5)
        assert pc.ops.einsum([a], equation="...->...").shape == (None, 4)
        bad = [
            ("ij,jk->ik", [a], "has 2 operand"),
            ("ij,jk->il", [a, b], "output letter 'l' is in no operand"),
            ("ij,jk->ii", [a, b], "output letter 'i' is repeated"),
            ("ijk,jk->i", [a, b], "operand 0 has 2 dims but its subscripts"),
            ("ij,kj->ik", [a, b], "letter 'j' has sizes [4, 5]"),
            ("i...j,jk->ik", [pc.data("t", [2, 3, 4]), b], "must keep the '...' dims"),
            ("i1,jk", [a, b], "only letters"),
        ]
        for equation, xs, message in bad:
            with pytest.raises(pc.ShapeError, match=rf"op 'einsum'.*{re.escape(message)}"):
                pc.ops.einsum(xs, equation=equation)
        with pytest.raises(pc.ShapeError, match=r"op 'einsum'.*share one dtype"):
            pc.ops.einsum([a, pc.data("c", [4], "float64")], equation="ij,j")


@pytest.mark.parametrize("op", ["matmul_grad", "matmul_2d_grad"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_grad_ops_add_into_their_accumulators(op, dtype):
    """x_grad_acc / y_grad_acc: the gradient is the accumulator plus this op's part (what the
    backward pass chains a shared weight's per-step gradients through)."""
    from paddle_core.testing import run_op

    rng = np.random.default_rng(3)
    shapes = (
        [((2, 3, 4), (4, 5)), ((4, 5), (2, 5, 3))] if op == "matmul_grad" else [((3, 4), (4, 5))]
    )
    for xs, ys in shapes:
        x, y = rand(rng, xs, dtype), rand(rng, ys, dtype)
        d = rand(rng, np.matmul(x, y).shape, dtype)
        ax, ay = rand(rng, xs, dtype), rand(rng, ys, dtype)
        plain = run_op(op, {"x": x, "y": y, "out_grad": d})
        both = run_op(op, {"x": x, "y": y, "out_grad": d, "x_grad_acc": ax, "y_grad_acc": ay})
        for slot, acc in (("x_grad", ax), ("y_grad", ay)):
            want = plain[slot][0].astype(np.float64) + acc.astype(np.float64)
            assert_matches(
                both[slot][0],
                want.astype(dtype),
                rtol=1e-2 if "16" in dtype else 1e-6,
                atol=1e-2 if "16" in dtype else 1e-6,
            )


@pytest.mark.parametrize("op", ["matmul_grad", "matmul_2d_grad"])
def test_grad_accumulators_are_checked_by_name(op):
    import paddle_core as pc
    from paddle_core.testing import run_op

    x, y, d = np.ones((3, 4)), np.ones((4, 5)), np.ones((3, 5))
    with pytest.raises(pc.PaddleCoreError, match="y_grad_acc and y"):
        run_op(op, {"x": x, "y": y, "out_grad": d, "y_grad_acc": np.ones((5, 4))})
    with pytest.raises(pc.PaddleCoreError, match="x_grad_acc"):
        run_op(op, {"x": x, "y": y, "out_grad": d, "x_grad_acc": np.ones((3, 4), np.float32)})


def test_matmul_2d_grad_refuses_an_out_grad_of_another_size():
    import paddle_core as pc
    from paddle_core.testing import run_op

    x, y = np.ones((4, 3)), np.ones((3, 5))
    # refused where the op is appended (its kernel checks it again, for loaded programs)
    with pytest.raises(pc.PaddleCoreError, match=r"out_grad .*\[2, 5\]; 'matmul_2d' gives out"):
        run_op("matmul_2d_grad", {"x": x, "y": y, "out_grad": np.ones((2, 5))})
