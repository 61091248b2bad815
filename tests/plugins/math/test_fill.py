"""paddle-ops-math scale, cast, fill_constant, fill_constant_batch_size_like, full_like,
assign against NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from op_helpers import (
    FLOATS,
    HALVES,
    NUMBERS,
    assert_matches,
    check_grad,
    pc,
    rand,
    run1,
    run_op,
)

from paddle_core._src.base.dtypes import DTYPES

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

ALL = list(DTYPES)  # every dtype: bool, int8 ... uint64, float16, bfloat16, float32, float64


@pytest.mark.parametrize("dtype", NUMBERS)
@pytest.mark.parametrize("after", [True, False])
def test_scale(dtype, after):
    x = rand(np.random.default_rng(0), (4097, 3), dtype)
    want = (x * 2.5 + 1.0) if after else (x + 1.0) * 2.5
    got = run1("scale", {"x": x}, {"scale": 2.5, "bias": 1.0, "bias_after_scale": after})
    assert_matches(got, want.astype(dtype))


def test_scale_computes_in_the_order_its_doc_gives():
    """(x + bias) * scale is finite here; scale * x + bias * scale overflows to inf - inf."""
    x = np.array([3.0, 1.5, -0.2])
    got = run1("scale", {"x": x}, {"scale": 1e308, "bias": -1.5, "bias_after_scale": False})
    np.testing.assert_array_equal(got, (x - 1.5) * 1e308)
    assert np.isfinite(got).all()


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
def test_cast_like_numpy_astype(src, dst):
    x = (
        rand(np.random.default_rng(1), (7, 3), src, -5, 5)
        if src != "uint8"
        else np.arange(21, dtype=np.uint8).reshape(7, 3)
    )
    if src in ("int8", "int16"):
        x = np.random.default_rng(1).integers(-5, 6, (7, 3)).astype(src)
    if dst.startswith("uint") and x.dtype.kind not in "ub":  # in range: C leaves the rest open
        x = np.abs(x)
    assert_matches(run1("cast", {"x": x}, {"dtype": dst}), x.astype(dst))


@pytest.mark.parametrize("dtype", ALL)
def test_fill_constant_and_full_like(dtype):
    got = run1(
        "fill_constant",
        {},
        {"shape": [2, 0, 3] if dtype == "bool" else [2, 3], "value": 3.0, "dtype": dtype},
    )
    assert_matches(got, np.full([2, 0, 3] if dtype == "bool" else [2, 3], 3, dtype))
    like = np.zeros((3, 2), dtype)
    assert_matches(run1("full_like", {"x": like}, {"value": 1.0}), np.ones((3, 2), dtype))


@pytest.mark.parametrize("dtype", ALL)
def test_fill_constant_batch_size_like(dtype):
    like = np.zeros((5, 2), np.float32)
    attrs = {"shape": [-1, 3], "value": 1.0, "dtype": dtype}
    assert_matches(
        run1("fill_constant_batch_size_like", {"input": like}, attrs), np.ones((5, 3), dtype)
    )


@pytest.mark.parametrize(
    ("in_idx", "out_idx", "want"),
    [(0, 0, (4, 2, 3)), (1, 2, (7, 2, 6)), (-1, -2, (7, 6, 3)), (-2, 1, (7, 4, 3))],
)
def test_fill_constant_batch_size_like_takes_the_dimension_named(in_idx, out_idx, want):
    attrs = {"shape": [7, 2, 3], "value": -2.5, "input_dim_idx": in_idx, "output_dim_idx": out_idx}
    got = run1("fill_constant_batch_size_like", {"input": np.zeros((4, 6), np.int64)}, attrs)
    assert_matches(got, np.full(want, -2.5, np.float32))


def test_a_zero_state_for_a_batch_of_any_size():
    """Built once with an unknown batch, the state follows each run's batch size."""
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 4], "float32")
        h0 = pc.layers.fill_constant_batch_size_like(x, [-1, 8], "float32", 0.5)
        assert h0.shape == (None, 8)
    exe = pc.Executor()
    for batch in (1, 3):
        (got,) = exe.run(prog, feed={"x": np.ones((batch, 4), np.float32)}, fetch_list=[h0])
        assert_matches(got, np.full((batch, 8), 0.5, np.float32))


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        (
            {"shape": [-1, 3], "output_dim_idx": 2},
            r"output_dim_idx 2 is out of range for out's shape \[-1, 3\]: it must be in \[-2, 2\)",
        ),
        (
            {"shape": [-1, 3], "input_dim_idx": -3},
            r"input_dim_idx -3 is out of range for input of shape \[5, 2\]",
        ),
        (
            {"shape": [-1, -1]},
            r"shape \[-1, -1\]: only the dimension at output_dim_idx may be negative",
        ),
        ({"shape": [-1, 3], "dtype": "uint8", "value": -1.0}, r"value -1.0 .*uint8"),
    ],
)
def test_fill_constant_batch_size_like_refuses_what_it_cannot_build(attrs, message):
    with pytest.raises(pc.ShapeError, match=message) as info:
        run1("fill_constant_batch_size_like", {"input": np.zeros((5, 2), np.float32)}, attrs)
    assert info.value.op == "fill_constant_batch_size_like"


@pytest.mark.parametrize("dtype", ALL)
def test_assign_copies(dtype):
    x = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    assert_matches(run1("assign", {"x": x}), x)


@pytest.mark.parametrize(
    "op,attrs",
    [
        ("scale", {"scale": -1.5, "bias": 2.0}),
        ("scale", {"scale": 3.0, "bias": 1.0, "bias_after_scale": False}),
        ("assign", {}),
        ("cast", {"dtype": "float64"}),
    ],
)
def test_gradients(op, attrs):
    check_grad(op, {"x": rand(np.random.default_rng(2), (3, 4), "float64")}, attrs)


def test_float_to_float32_cast_gradient_is_cast_back():
    import paddle_core as pc

    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [3], "float64")
        y = pc.ops.cast(x, dtype="float32")
        (gx,) = pc.gradients([y], [x])
    assert gx.dtype == "float64"
    (g,) = pc.Executor().run(prog, feed={"x": np.ones(3)}, fetch_list=[gx])
    assert_matches(g, np.ones(3))
    assert FLOATS  # the module's dtype table is in use above


def test_a_dropped_result_lends_its_memory_to_the_next_run():
    """Native kernels write fetched outputs into memory the caller no longer holds, sparing a
    fresh allocation (and its page faults) per run; held results are never overwritten."""
    import paddle_core as pc

    prog = pc.Program()
    with pc.program_guard(prog):
        out = pc.ops.scale(pc.data("x", [1024]), scale=2.0)
    exe = pc.Executor()
    (first,) = exe.run(prog, feed={"x": np.ones(1024, np.float32)}, fetch_list=[out])
    (second,) = exe.run(prog, feed={"x": np.full(1024, 3, np.float32)}, fetch_list=[out])
    assert not np.shares_memory(first, second) and float(first[0]) == 2.0
    address = second.ctypes.data
    del second
    (third,) = exe.run(prog, feed={"x": np.full(1024, 5, np.float32)}, fetch_list=[out])
    assert third.ctypes.data == address and float(third[0]) == 10.0 and float(first[0]) == 2.0


def test_a_kernel_rejecting_its_inputs_at_prepare_is_a_clean_error():
    """The runtime reports a kernel's refusal (status + message) as a KernelError naming the
    op and the kernel; nothing reaches memory."""
    import paddle_core as pc
    from paddle_core._src.run.planning import plan
    from paddle_core._src.run.prepared import CompiledRunner

    prog = pc.Program()
    with pc.program_guard(prog):
        out = pc.ops.add(pc.data("x", [3]), pc.data("y", [3]))
    spec = plan(prog, pc.CPU(), (("x", (3,), "float32"), ("y", (3,), "float32")), [out.name])
    spec.shapes[out.name] = ((5,), "float32")  # a plan the kernel cannot accept
    with pytest.raises(pc.KernelError) as err:
        CompiledRunner(spec, pc.CPU(), num_threads=1)
    message = str(err.value)
    assert "op 'add' (kernel 'add' of plugin 'math'" in message and "rejected its inputs" in message
    assert "do not broadcast" in message and err.value.op == "add"


@pytest.mark.parametrize("src", FLOATS + HALVES)
@pytest.mark.parametrize("dst", [d for d in DTYPES if "int" in d] + ["bool"])
def test_casting_floats_no_integer_holds_gives_defined_values(src, dst):
    """NaN, infinities and out-of-range values (undefined behaviour for a plain C++ cast) give
    what NumPy on x86 shows: signed types go through int32 (int64 for int64) and wrap around,
    the minimum of that type where it cannot hold the value; unsigned types wrap around
    through int64 (uint64 also holds [2^63, 2^64) as it is; NaN gives 0, where NumPy on x86
    shows 2^63); bool is "not zero"."""
    values = [np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, -3e9, 1e19, 300.7, -1.5]
    with np.errstate(all="ignore"):
        x = np.array(values).astype(src)
        wide = x.astype(np.float64)
    if dst == "bool":
        want = x.astype(np.float64) != 0
    elif dst.startswith("uint"):
        in_int64 = np.abs(np.nan_to_num(wide, nan=np.inf)) < 2.0**63
        want = np.where(in_int64, np.trunc(np.where(in_int64, wide, 0)), 0).astype(np.int64)
        want = want.astype(dst)
        if dst == "uint64":
            upper = (wide >= 2.0**63) & (wide < 2.0**64)
            want[upper] = np.trunc(wide[upper]).astype(np.uint64)
    else:
        via = np.iinfo(dst if dst == "int64" else "int32")
        fits = (wide >= via.min) & (wide < -float(via.min))  # NaN compares false
        want = np.where(fits, np.trunc(np.where(fits, wide, 0)), via.min).astype(via.dtype)
        want = want.astype(dst)  # wraps around
        if dst in ("int8", "int16"):  # NumPy on x86 itself, for the cases where it is defined
            with np.errstate(all="ignore"):
                assert_matches(want[fits], wide[fits].astype(dst))
    assert_matches(run1("cast", {"x": x}, {"dtype": dst}), want)


def exactly_rounded(n: int, dtype: str) -> float:
    """Integer n rounded once to nearest even in float16 (11 significant bits, largest finite
    65504) or bfloat16 (8 bits), worked out in Python's exact integers."""
    bits = 11 if dtype == "float16" else 8
    m = abs(n)
    if m.bit_length() > bits:
        shift = m.bit_length() - bits
        q, rest = divmod(m, 1 << shift)
        half = 1 << (shift - 1)
        q += rest > half or (rest == half and q % 2 == 1)
        m = q << shift
    if dtype == "float16" and m > 65504:
        return math.copysign(math.inf, n)
    return float(-m if n < 0 else m)  # exact: few significant bits


def integers_near_rounding_points(dtype: str) -> list[int]:
    """Integers of dtype (int64, uint64) at and around the points where float16 and bfloat16
    round, from 2**11 up to the top of the dtype: half way between two neighbours, one either
    side, and one past half way by less than a double resolves there (above 2**53); and the
    negatives of them all."""
    low, high = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    values = set()
    for k in range(11, 65):
        for bits in (8, 11):
            if k <= bits:
                continue
            half = 1 << (k - bits)  # half the distance between neighbours in [2**k, 2**(k+1))
            fine = 1 << max(k - 53, 0)  # what a double resolves there
            for j in range(5):
                for d in (-fine, -1, 0, 1, fine):
                    values.add((1 << k) + j * half + d)
        values.add((1 << k) - 1)
    values |= {-v for v in values}
    values |= {2**62 + 2**54 + 1, low, high, 0, 1, -1}
    return sorted(v for v in values if low <= v <= high)


@pytest.mark.parametrize("src", ["int64", "uint64"])
@pytest.mark.parametrize("dst", HALVES)
def test_casting_64_bit_integers_to_16_bit_floats_rounds_once(src, dst):
    """Rounded to nearest even once, from the integer itself: 2**62 + 2**54 + 1 is past half
    way between the bfloat16s 2**62 and 2**62 + 2**55, so it rounds up, where rounding it to
    a double first (2**62 + 2**54, a tie) and then to bfloat16 gives 2**62."""
    ints = integers_near_rounding_points(src)
    x = np.array(ints, dtype=src)
    want = np.array([exactly_rounded(n, dst) for n in ints]).astype(dst)  # exact: representable
    got = run1("cast", {"x": x}, {"dtype": dst})
    assert got.dtype == want.dtype
    wrong = np.flatnonzero(got.view(np.uint16) != want.view(np.uint16))
    assert wrong.size == 0, [(ints[i], float(got[i]), float(want[i])) for i in wrong[:10]]
    if dst == "bfloat16":
        (trap,) = run1("cast", {"x": np.array([2**62 + 2**54 + 1], src)}, {"dtype": dst})
        assert float(trap) == 2**62 + 2**55


# -- range --------------------------------------------------------------------------------------

RANGE = [  # start, limit, delta
    (0, 10, 1),
    (3, -2, -1),
    (10, 6, -3),
    (1, 5, 2),
    (5, 5, 1),  # empty
    (5, 1, 1),  # empty: the wrong way
    (-(2**53), -(2**53) + 4, 1),  # the largest integers the attrs' doubles hold exactly
]


@pytest.mark.parametrize(("start", "limit", "delta"), RANGE)
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_range_matches_numpy_arange(start, limit, delta, dtype):
    if dtype == "int32" and abs(start) > 2**31:
        pytest.skip("beyond int32")
    got = run_op("range", {}, {"start": start, "limit": limit, "delta": delta, "dtype": dtype})
    want = np.arange(start, limit, delta, dtype=np.int64).astype(dtype)
    assert_matches(got["out"][0], want)


def test_float_ranges_count_as_numpy_does():
    for start, limit, delta in [(0, 1, 0.1), (1.5, -2, -0.25), (0, 1e-3, 7e-5), (2, 2.0001, 1)]:
        for dtype in FLOATS:
            got = run_op("range", {}, {"start": start, "limit": limit, "delta": delta,
                                       "dtype": dtype})["out"][0]  # fmt: skip
            want = np.arange(start, limit, delta, dtype=np.float64).astype(dtype)
            assert_matches(got, want, rtol=1e-6, atol=1e-7)


def test_range_is_int64_by_default_and_checked_when_appended():
    with pc.program_guard(pc.Program()):
        out = pc.ops.range(limit=4)
        assert out.shape == (4,) and out.dtype == "int64"
        with pytest.raises(pc.ShapeError, match=r"op 'range'.*delta must not be 0"):
            pc.ops.range(limit=4, delta=0)
        with pytest.raises(pc.ShapeError, match=r"op 'range'.*start = 0.5: a int32 range needs"):
            pc.ops.range(start=0.5, limit=4, dtype="int32")
        with pytest.raises(pc.ShapeError, match=r"op 'range'.*limit = 1e\+16: a int64 range"):
            pc.ops.range(limit=1e16)
        with pytest.raises(pc.ShapeError, match=r"op 'range'.*do not fit int32"):
            pc.ops.range(start=2**31 - 2, limit=2**31 + 2, dtype="int32")
        with pytest.raises(pc.ShapeError, match=r"op 'range'.*limit must be finite"):
            pc.ops.range(limit=float("inf"), dtype="float32")
        with pytest.raises(pc.ShapeError, match=r"op 'range'.*larger than"):
            pc.ops.range(limit=2.0**52, dtype="float64")
        with pytest.raises(pc.AttrError, match=r"op 'range', attr 'dtype'"):
            pc.ops.range(limit=3, dtype="bool")


def test_integer_fills_refuse_values_their_dtype_cannot_hold():
    """NumPy's full raises where an int8 cannot hold 200; a NaN has no integer at all. Values
    within the range truncate toward zero, as NumPy's do."""
    with pc.program_guard(pc.Program()):
        x = pc.data("x", [2], dtype="uint8")
        for value, dtype, problem in [
            (200, "int8", r"value 200.0 does not fit int8 \[-128, 127\]"),
            (-1, "uint32", r"value -1.0 does not fit uint32"),
            (2.0**63, "int64", r"does not fit int64"),
            (float("nan"), "int32", r"value nan has no int32 equivalent"),
            (float("-inf"), "int16", r"value -inf has no int16 equivalent"),
        ]:
            with pytest.raises(pc.ShapeError, match=rf"op 'fill_constant'.*{problem}"):
                pc.ops.fill_constant(shape=[2], dtype=dtype, value=value)
        with pytest.raises(pc.ShapeError, match=r"op 'full_like'.*value 256.0 does not fit uint8"):
            pc.ops.full_like(x, value=256)
    got = run_op("fill_constant", {}, {"shape": [3], "dtype": "int8", "value": -128.9})
    assert_matches(got["out"][0], np.full(3, -128, np.int8))
    got = run_op("full_like", {"x": np.zeros(2, np.float32)}, {"value": float("nan")})
    assert np.isnan(got["out"][0]).all()  # a float fill takes any value
