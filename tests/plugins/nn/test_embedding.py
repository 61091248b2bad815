"""paddle-ops-nn's embedding: lookup against NumPy, padding, id checks, the table's gradient."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import FLOATS, assert_matches, check_grad, pc, run1

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("id_dtype", ["int64", "int32"])
@pytest.mark.parametrize("ids_shape", [(5,), (2, 3), (4, 1), (0,)], ids=str)
def test_lookup_matches_numpy(dtype, id_dtype, ids_shape):
    w = RNG.standard_normal((7, 3)).astype(dtype)
    ids = RNG.integers(0, 7, ids_shape).astype(id_dtype)
    assert_matches(run1("embedding", {"ids": ids, "w": w}), w[ids])


def test_padding_rows_are_zeros_and_get_no_gradient():
    w = RNG.standard_normal((5, 2))
    ids = np.array([[0, 2], [2, 4]])
    want = w[ids]
    want[ids == 2] = 0
    assert_matches(run1("embedding", {"ids": ids, "w": w}, {"padding_idx": 2}), want)
    check_grad("embedding", {"ids": ids, "w": w}, {"padding_idx": 2}, wrt=["w"])


def test_the_tables_gradient_sums_repeated_ids():
    check_grad(
        "embedding", {"ids": np.array([1, 3, 1, 1, 0]), "w": RNG.standard_normal((4, 3))}, wrt=["w"]
    )


@pytest.mark.parametrize("bad", [-1, 7, 2**40])
def test_an_id_outside_the_table_is_refused_naming_it(bad):
    w = np.zeros((7, 2))
    ids = np.array([1, bad, 2])
    with pytest.raises(
        pc.KernelError, match=rf"id {bad} \(at flat position 1\) is outside \[0, 7\)"
    ):
        run1("embedding", {"ids": ids, "w": w})


def test_shapes_and_dtypes_are_checked_when_appended():
    prog = pc.Program()
    with pc.program_guard(prog):
        w = pc.data("w", [7, 2])
        with pytest.raises(pc.ShapeError, match="ids must be int64 or int32, got float32"):
            pc.ops.embedding(pc.data("f", [3]), w)
        with pytest.raises(pc.ShapeError, match=r"padding_idx 7 is outside \[0, 7\)"):
            pc.ops.embedding(pc.data("ids", [3], "int64"), w, padding_idx=7)
        with pytest.raises(pc.AttrError, match="attr 'padding_idx'"):
            pc.ops.embedding(pc.data("i2", [3], "int64"), w, padding_idx=-2)
