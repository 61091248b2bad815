"""paddle-ops-math matrix products (OpenBLAS) against NumPy; their gradients."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import FLOATS, assert_matches, check_grad, rand, run1

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
]


def np_matmul(x, y, tx, ty):
    return np.matmul(np.swapaxes(x, -1, -2) if tx else x, np.swapaxes(y, -1, -2) if ty else y)


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
        with pytest.raises(pc.ShapeError, match="at least 2-D"):
            pc.ops.matmul(pc.data("c", [3]), pc.data("d", [3, 2]))


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
        [sys.executable, "-c", script],
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
