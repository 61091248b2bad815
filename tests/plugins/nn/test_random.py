"""paddle-ops-nn's random ops: initializers and dropout. Statistics, reproducibility (runs,
scopes, thread counts, seeds), inference mode and gradients."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import FLOATS, check_grad, cpu_has_avx2_fma, on_both_paths, pc

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

N = 20000


def draw(op: str, attrs: dict, *, runs: int = 1, scope=None, threads: int = 2):
    """``runs`` runs of a program holding one ``op``, on ``scope``."""
    prog = pc.Program()
    with pc.program_guard(prog):
        out = getattr(pc.ops, op)(**attrs)
    exe = pc.Executor(num_threads=threads)
    scope = scope or pc.Scope()
    return [exe.run(prog, fetch_list=[out], scope=scope)[0] for _ in range(runs)]


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_random(dtype):
    (u,) = draw("uniform_random", {"shape": [N], "min": -2.0, "max": 3.0, "dtype": dtype})
    assert u.dtype == dtype and u.shape == (N,)
    assert u.min() >= -2 and u.max() < 3
    assert abs(u.mean() - 0.5) < 0.05 and abs(u.var() - 25 / 12) < 0.1


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["gaussian_random", "truncated_gaussian_random"])
def test_gaussian_random(op, dtype):
    (z,) = draw(op, {"shape": [N], "mean": 1.0, "std": 2.0, "dtype": dtype})
    assert z.dtype == dtype
    assert abs(z.mean() - 1) < 0.06
    if op == "gaussian_random":
        assert abs(z.std() - 2) < 0.05
        assert np.abs(z - 1).max() > 4  # the tails are there
    else:
        assert np.abs(z - 1).max() <= 4 + 1e-5  # nothing beyond 2 std
        assert abs(z.std() - 2 * 0.8796) < 0.05  # a normal truncated at 2 std


def test_runs_differ_and_reproduce():
    first = draw("uniform_random", {"shape": [64]}, runs=3)
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[1], first[2])
    again = draw("uniform_random", {"shape": [64]}, runs=3)  # a fresh scope: the same stream
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def test_results_do_not_depend_on_the_thread_count():
    attrs = {"shape": [300000], "std": 1.0}
    (one,) = draw("gaussian_random", attrs, threads=1)
    (two,) = draw("gaussian_random", attrs, threads=2)
    np.testing.assert_array_equal(one, two)


DRAWS = """
import sys
import numpy as np
import paddle_core as pc

x = np.load(sys.argv[1])["x"]
results = {}
prog = pc.Program()
with pc.program_guard(prog):
    fetch = {op: getattr(pc.ops, op)(shape=[1_000_003], dtype="float64", seed=11)
             for op in ("gaussian_random", "truncated_gaussian_random")}
    fetch["uniform_random"] = pc.ops.uniform_random(shape=[1_000_003], seed=12)
    fetch["dropout"], fetch["mask"] = pc.ops.dropout(pc.data("x", [None, 1001]), seed=13)
got = pc.Executor().run(prog, feed={"x": x}, fetch_list=list(fetch.values()))
np.savez(sys.argv[2], **dict(zip(fetch, got)))
"""


@pytest.mark.skipif(not cpu_has_avx2_fma(), reason="this CPU has no AVX2+FMA")
def test_the_avx2_draws_are_the_portable_ones(tmp_path):
    """Float32 uniforms (uniform_random, dropout) from the AVX2 Philox are the portable path's
    bit for bit, over a million elements and the partial blocks at the ends of threads' chunks.
    Normals: the vectorised log and cosine against libm's within 4 ulps, plus where the result
    is near 0 what libm's own cosine errs by there (its argument 2 pi u, rounded, is off by up
    to 4.4e-16, times a radius of at most 6.7; the vectorised one takes u's quadrant out
    exactly first)."""
    x = np.random.default_rng(0).standard_normal((999, 1001)).astype(np.float32)
    avx2, portable = on_both_paths(tmp_path, DRAWS, {"x": x}, "PADDLE_OPS_NN_DISABLE_AVX2")
    for key in ("uniform_random", "dropout", "mask"):
        np.testing.assert_array_equal(avx2[key], portable[key], err_msg=key)
    for op in ("gaussian_random", "truncated_gaussian_random"):
        got, want = avx2[op], portable[op]
        excess = np.abs(got - want) - 4 * np.spacing(np.abs(want))
        assert excess.max() <= 3e-15, f"{op}: off by {excess.max()} at {want[np.argmax(excess)]}"
        assert np.mean(got == want) > 0.3  # the same numbers, not merely the same distribution
    assert np.abs(portable["truncated_gaussian_random"]).max() <= 2


def test_a_nonzero_seed_gives_the_same_numbers_every_run():
    runs = draw("uniform_random", {"shape": [16], "seed": 7}, runs=2)
    np.testing.assert_array_equal(runs[0], runs[1])
    (other,) = draw("uniform_random", {"shape": [16], "seed": 8})
    assert not np.array_equal(runs[0], other)


def test_the_program_seed_and_the_ops_place_key_the_numbers():
    def program(seed):
        prog = pc.Program()
        prog.random_seed = seed
        with pc.program_guard(prog):
            a = pc.ops.uniform_random(shape=[8])
            b = pc.ops.uniform_random(shape=[8])
        return pc.Executor().run(prog, fetch_list=[a, b], scope=pc.Scope())

    a, b = program(0)
    assert not np.array_equal(a, b)  # two ops, two streams
    a1, _ = program(1)
    assert not np.array_equal(a, a1)
    np.testing.assert_array_equal(program(0)[0], a)


def test_bad_bounds_are_refused():
    with pytest.raises(pc.ShapeError, match=r"min \(2.0\) must be below max \(1.0\)"):
        draw("uniform_random", {"shape": [2], "min": 2.0, "max": 1.0})
    with pytest.raises(pc.AttrError, match="attr 'std'"):
        draw("gaussian_random", {"shape": [2], "std": -1.0})


# -- dropout --------------------------------------------------------------------------------


def dropout_program(**attrs):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 100], "float64")
        out, mask = pc.ops.dropout(x, **attrs)
    return prog, out, mask


@pytest.mark.parametrize("implementation", ["downgrade_in_infer", "upscale_in_train"])
def test_dropout_trains_and_infers(implementation):
    prog, out, mask = dropout_program(dropout_prob=0.3, dropout_implementation=implementation)
    x = np.random.default_rng(0).uniform(1, 2, (200, 100))
    exe, scope = pc.Executor(), pc.Scope()
    got, m = exe.run(prog, feed={"x": x}, fetch_list=[out, mask], scope=scope)
    assert m.dtype == np.uint8 and abs(1 - m.mean() - 0.3) < 0.02
    keep = 1 / 0.7 if implementation == "upscale_in_train" else 1.0
    np.testing.assert_allclose(got, x * m * keep)
    _, m2 = exe.run(prog, feed={"x": x}, fetch_list=[out, mask], scope=scope)
    assert not np.array_equal(m, m2)  # a new mask each run
    test = prog.clone(for_test=True)
    (inferred,) = exe.run(test, feed={"x": x}, fetch_list=[out.name], scope=scope)
    scale = 1.0 if implementation == "upscale_in_train" else 0.7
    np.testing.assert_allclose(inferred, x * scale)


@pytest.mark.parametrize("implementation", ["downgrade_in_infer", "upscale_in_train"])
def test_dropout_gradient(implementation):
    x = np.random.default_rng(1).standard_normal((4, 6))
    # a fixed seed: the same mask in every run that finite differences make
    check_grad(
        "dropout",
        {"x": x},
        {"dropout_prob": 0.4, "seed": 3, "dropout_implementation": implementation},
    )


def test_dropout_prob_must_be_below_one():
    with pytest.raises(pc.AttrError, match=r"attr 'dropout_prob': expected a float in \[0, 1\)"):
        dropout_program(dropout_prob=1.0)
