"""DLPack: other libraries' arrays fed without a copy, results handed back the same way.

Feeds with ``__dlpack__`` (PyTorch, JAX, CuPy) are read where they are when the device can:
checked here by the address of the buffer the compiled runtime binds. A feed is never
written, read-only or not: a program updating a fed variable works on a copy. PyTorch is a
test-only dependency: its tests skip without it; the CuPy ones need a GPU.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import paddle_core as pc
from paddle_core import ops
from paddle_core._src.base.dtypes import numpy_dtype

F32 = np.float32


def bound(exe, prog, feed, fetch, name="x"):
    """The array the compiled runtime has bound for ``name`` after the last run of this plan."""
    plan = exe.prepare(prog, feed, fetch)
    assert plan.compiled
    return plan._runner.array(name)


def address(array) -> int:
    return array.__array_interface__["data"][0]


def copy_of(dtype="float32", shape=(2, 3)):
    """y = assign(x): a program that only moves x."""
    prog = pc.Program()
    with pc.program_guard(prog, pc.Program()):
        x = pc.data("x", list(shape), dtype)
        y = ops.assign(x)
    return prog, y


def updating_x(dtype="float32"):
    """x = x + 1 on a fed x, then y = 2 x: an op of the program writes the fed variable."""
    prog = pc.Program()
    with pc.program_guard(prog, pc.Program()):
        x = pc.data("x", [2, 3], dtype)
        one = ops.fill_constant(shape=[2, 3], dtype=dtype, value=1)
        pc.layers.assign(ops.add(x, one), output=x)
        y = ops.scale(x, scale=2.0)
    return prog, y


# -- feeds, NumPy ----------------------------------------------------------------------------------


def test_a_fed_numpy_array_is_bound_as_it_is():
    prog, y = copy_of()
    x = np.arange(6, dtype=F32).reshape(2, 3)
    exe = pc.Executor()
    (got,) = exe.run(prog, feed={"x": x}, fetch_list=[y])
    np.testing.assert_array_equal(got, x)
    assert address(bound(exe, prog, {"x": x}, [y])) == address(x)


def test_a_fed_variable_only_read_is_not_copied_though_read_only():
    """Bound as it is: no op writes it (one an op updates is copied: test_run_contract.py)."""
    prog, y = copy_of()
    readonly = np.frombuffer(np.arange(6, dtype=F32).tobytes(), F32).reshape(2, 3)
    exe = pc.Executor()
    (got,) = exe.run(prog, feed={"x": readonly}, fetch_list=[y])
    np.testing.assert_array_equal(got, readonly)
    assert address(bound(exe, prog, {"x": readonly}, [y])) == address(readonly)


def test_numpy_arrays_with_negative_strides_export_and_feed():
    """NumPy exports a reversed view through DLPack as it is (negative strides); the runtime
    binds C-contiguous buffers, so feeding one copies it, with the right values."""
    x = np.arange(12, dtype=F32).reshape(3, 4)
    reversed_ = x[::-1, ::-2]
    view = pc.from_dlpack(reversed_)
    assert view.strides == reversed_.strides and address(view) == address(reversed_)
    prog, y = copy_of(shape=(3, 2))
    (got,) = pc.Executor().run(prog, feed={"x": reversed_}, fetch_list=[y])
    np.testing.assert_array_equal(got, reversed_)


def test_a_legacy_dlpack_producer_is_read():
    """A producer that knows only the legacy protocol (``__dlpack__(stream=None)``, no
    ``max_version``): NumPy falls back to its unversioned capsule."""

    class Legacy:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, stream=None):
            return self.array.__dlpack__()

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    x = np.arange(6, dtype=F32).reshape(2, 3)
    prog, y = copy_of()
    exe = pc.Executor()
    (got,) = exe.run(prog, feed={"x": Legacy(x)}, fetch_list=[y])
    np.testing.assert_array_equal(got, x)
    assert address(bound(exe, prog, {"x": Legacy(x)}, [y])) == address(x)


# -- pc.from_dlpack and pc.to_dlpack ---------------------------------------------------------------


def test_from_dlpack_keeps_memory_and_read_only():
    x = np.arange(4, dtype=F32)
    view = pc.from_dlpack(x)
    assert address(view) == address(x) and view.flags.writeable
    x.flags.writeable = False
    view = pc.from_dlpack(x)  # DLPack 1.0's capsule says read-only; NumPy keeps it so
    assert address(view) == address(x) and not view.flags.writeable


def test_to_dlpack_exports_a_capsule_of_the_same_memory():
    x = np.arange(4, dtype=F32)
    back = np.from_dlpack(_Capsule(pc.to_dlpack(x)))
    assert address(back) == address(x)
    x.flags.writeable = False  # only a versioned capsule can say read-only
    back = np.from_dlpack(_Capsule(pc.to_dlpack(x)))
    assert address(back) == address(x) and not back.flags.writeable


def test_bfloat16_arrays_cross_dlpack_both_ways():
    """NumPy has no bfloat16 of its own and refuses to export ml_dtypes' through DLPack:
    to_dlpack exports it, from_dlpack reads it back, same memory and bits."""
    x = np.array([1.5, -2.0, 3.25], ml_dtypes.bfloat16)
    with pytest.raises(BufferError):
        x.__dlpack__()
    back = pc.from_dlpack(_Capsule(pc.to_dlpack(x)))
    assert back.dtype == ml_dtypes.bfloat16 and address(back) == address(x)
    np.testing.assert_array_equal(back.view(np.uint16), x.view(np.uint16))


class _Capsule:
    """A capsule dressed as a host producer (NumPy's from_dlpack takes producers only)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: pc.from_dlpack([1, 2]), "from_dlpack's argument must have __dlpack__.*got list"),
        (lambda: pc.to_dlpack([1, 2]), "to_dlpack takes an array with __dlpack__.*got list"),
    ],
)
def test_from_and_to_dlpack_refuse_what_is_not_an_array(call, message):
    with pytest.raises(pc.FeedError, match=message):
        call()


# -- wrong feeds -----------------------------------------------------------------------------------


class Producer:
    """A DLPack producer in ``device``'s memory whose ``__dlpack__`` fails."""

    def __init__(self, device=(1, 0)):
        self.device = device

    def __dlpack__(self, **kwargs):
        raise RuntimeError("the producer is closed")

    def __dlpack_device__(self):
        if isinstance(self.device, Exception):
            raise self.device
        return self.device


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            Producer(),
            r"feed 'x' \(Producer\) cannot be read through DLPack: RuntimeError: the producer "
            r"is closed; variable 'x' is float32\[2, 3\]",
        ),
        (
            Producer(device=ValueError("gone")),
            r"feed 'x' \(Producer\) cannot be read through DLPack: its __dlpack_device__\(\) "
            r"gave no \(device type, index\) \(ValueError: gone\)",
        ),
        (
            Producer(device=(8, 0)),
            r"feed 'x' \(Producer\) is in metal:0 memory \(DLPack\), which no registered device "
            r"type reads \(these do: cpu, cuda\); variable 'x' is float32\[2, 3\]",
        ),
        (
            Producer(device=(99, 1)),
            r"is in device type 99:1 memory",
        ),
    ],
    ids=["raises", "device-raises", "metal", "unknown-device"],
)
def test_a_feed_dlpack_cannot_read_names_the_feed_and_what_was_expected(value, message):
    prog, y = copy_of()
    with pytest.raises(pc.FeedError, match=message):
        pc.Executor().run(prog, feed={"x": value}, fetch_list=[y])


def test_a_feed_in_gpu_memory_names_the_gpu_and_why_it_cannot_be_read():
    prog, y = copy_of()
    # (without CuPy or a GPU: not available here; with them: CuPy's reading fails)
    match = r"feed 'x' \(Producer\) (is in cuda:0 memory|cannot be read through DLPack by CuPy)"
    with pytest.raises(pc.FeedError, match=match):
        pc.Executor().run(prog, feed={"x": Producer(device=(2, 0))}, fetch_list=[y])


# -- PyTorch ---------------------------------------------------------------------------------------


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_a_torch_tensor_is_fed_without_a_copy(torch):
    prog, y = copy_of()
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    exe = pc.Executor()
    (got,) = exe.run(prog, feed={"x": t}, fetch_list=[y])
    np.testing.assert_array_equal(got, t.numpy())
    assert address(bound(exe, prog, {"x": t}, [y])) == t.data_ptr()
    plan = exe.prepare(prog, {"x": t}, [y])  # a prepared plan takes tensors too
    np.testing.assert_array_equal(plan.run({"x": t * 2}, pc.Scope())[0], t.numpy() * 2)


@pytest.mark.parametrize("dtype", ["bool", "float16", "bfloat16", "int64", "uint8"])
def test_torch_values_round_trip_bit_for_bit(torch, dtype):
    """Fed as tensors, fetched as arrays that torch.from_dlpack (or pc.to_dlpack, for
    bfloat16, which NumPy does not export) reads in place: the same bits, no copy."""
    prog, y = copy_of(dtype)
    t = torch.tensor([[0.0, 1.5, 2.25], [3.0, 100.0, -0.0]]).to(getattr(torch, dtype))
    exe = pc.Executor()
    (got,) = exe.run(prog, feed={"x": t}, fetch_list=[y], return_numpy=False)
    assert isinstance(got, np.ndarray) and got.dtype.name == dtype
    assert address(bound(exe, prog, {"x": t}, [y])) == t.data_ptr()
    back = torch.from_dlpack(pc.to_dlpack(got) if dtype == "bfloat16" else got)
    assert back.dtype == t.dtype and back.data_ptr() == address(got)
    assert torch.equal(back, t)


def test_non_contiguous_tensors_give_the_right_answers(torch):
    """Transposed and strided tensors: NumPy views them as they are; the runtime binds a
    C-contiguous copy."""
    prog, y = copy_of(shape=(3, 2))
    base = torch.arange(12, dtype=torch.float32).reshape(2, 6)
    for t in (base[:, :3].t(), base[:, ::2].t(), base.reshape(6, 2)[::2]):
        assert t.shape == (3, 2)
        (got,) = pc.Executor().run(prog, feed={"x": t}, fetch_list=[y])
        np.testing.assert_array_equal(got, t.contiguous().numpy())


def test_a_program_updating_a_fed_tensor_leaves_it_alone(torch):
    prog, y = updating_x()
    t = torch.zeros(2, 3)
    (got,) = pc.Executor().run(prog, feed={"x": t}, fetch_list=[y])
    np.testing.assert_array_equal(got, np.full((2, 3), 2, F32))
    assert torch.equal(t, torch.zeros(2, 3))


def test_a_tensor_that_requires_grad_is_refused_naming_the_fix(torch):
    prog, y = copy_of()
    t = torch.ones(2, 3, requires_grad=True)
    with pytest.raises(pc.FeedError, match=r"feed 'x' \(Tensor\) cannot be read.*detach\(\)"):
        pc.Executor().run(prog, feed={"x": t}, fetch_list=[y])
    (got,) = pc.Executor().run(prog, feed={"x": t.detach()}, fetch_list=[y])
    np.testing.assert_array_equal(got, np.ones((2, 3), F32))


@pytest.mark.parametrize(
    ("dtype", "message"),
    [
        ("float64", r"feed 'x' has dtype float64, but variable 'x' is float32 \(convert it to "),
        ("complex128", "feed 'x' has dtype complex128, but variable 'x' is float32"),
        ("float8_e4m3fn", "NumPy has no dtype for its float8_e4m3fn values; variable 'x' is"),
    ],
)
def test_a_tensor_of_another_dtype_is_refused_not_cast(torch, dtype, message):
    prog, y = copy_of()
    t = torch.ones(2, 3).to(getattr(torch, dtype))
    with pytest.raises(pc.FeedError, match=message):
        pc.Executor().run(prog, feed={"x": t}, fetch_list=[y])


def test_results_are_handed_to_torch_in_place_and_kept(torch):
    """return_numpy=False: torch.from_dlpack reads a result where it is, and the result's
    memory is not reused by later runs while the tensor holds it."""
    prog, y = copy_of()
    exe = pc.Executor()
    (first,) = exe.run(prog, feed={"x": torch.ones(2, 3)}, fetch_list=[y], return_numpy=False)
    held = torch.from_dlpack(first)
    assert held.data_ptr() == address(first)
    del first
    for k in range(2, 4):
        exe.run(prog, feed={"x": torch.full((2, 3), float(k))}, fetch_list=[y], return_numpy=False)
    assert torch.equal(held, torch.ones(2, 3))


def test_from_dlpack_reads_tensors_in_place(torch):
    t = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3).t()
    view = pc.from_dlpack(t)
    assert view.dtype == ml_dtypes.bfloat16 and address(view) == t.data_ptr()
    np.testing.assert_array_equal(view.astype(F32), t.float().numpy())


def test_jax_arrays_are_fed_bfloat16_included():
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.arange(6, dtype=jnp.bfloat16).reshape(2, 3)
    prog, y = copy_of("bfloat16")
    (got,) = pc.Executor().run(prog, feed={"x": x}, fetch_list=[y])
    np.testing.assert_array_equal(got.view(np.uint16), np.asarray(x).view(np.uint16))


# -- CUDA ------------------------------------------------------------------------------------------


@pytest.fixture
def cuda():
    reason = pc.CUDA.unavailable_reason(0)
    if reason is not None:
        pytest.skip(f"no usable CUDA device: {reason}")
    return pc.get_device("cuda:0")


@pytest.mark.gpu
def test_cupy_arrays_are_fed_and_fetched_in_place(cuda):
    import cupy

    prog, y = copy_of()
    x = cupy.arange(6, dtype=cupy.float32).reshape(2, 3)
    exe = pc.Executor(cuda)
    (got,) = exe.run(prog, feed={"x": x}, fetch_list=[y], return_numpy=False)
    assert isinstance(got, cupy.ndarray)
    cupy.testing.assert_array_equal(got, x)
    plan = exe.prepare(prog, {"x": x}, [y])
    assert plan.compiled and plan._runner.array("x").data.ptr == x.data.ptr
    view = pc.from_dlpack(got)
    assert isinstance(view, cupy.ndarray) and view.data.ptr == got.data.ptr


@pytest.mark.gpu
def test_a_cuda_program_updating_a_fed_array_leaves_it_alone(cuda):
    import cupy

    prog, y = updating_x()
    x = cupy.zeros((2, 3), cupy.float32)
    (got,) = pc.Executor(cuda).run(prog, feed={"x": x}, fetch_list=[y])
    np.testing.assert_array_equal(got, np.full((2, 3), 2, F32))
    assert int(cupy.count_nonzero(x)) == 0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_torch_cuda_tensors_are_fed_in_place_and_results_read_back(cuda, torch, dtype):
    """Viewed by CuPy on the executor's stream, bound as they are; results read back by
    torch.from_dlpack in place; a CPU executor copies them to the host."""
    import cupy

    if not torch.cuda.is_available():
        pytest.skip("this PyTorch has no CUDA")
    try:
        cupy.empty(1, numpy_dtype(dtype))
    except Exception as e:  # a CuPy without ml_dtypes' bfloat16
        pytest.skip(f"this CuPy has no {dtype}: {e}")
    prog, y = copy_of(dtype)
    t = torch.randn(2, 3, device="cuda").to(getattr(torch, dtype))
    exe = pc.Executor(cuda)
    (got,) = exe.run(prog, feed={"x": t}, fetch_list=[y], return_numpy=False)
    plan = exe.prepare(prog, {"x": t}, [y])
    assert plan.compiled and plan._runner.array("x").data.ptr == t.data_ptr()
    back = torch.from_dlpack(got)
    assert back.device.type == "cuda" and back.data_ptr() == got.data.ptr
    assert torch.equal(back, t)
    on_cpu = pc.Executor().run(prog, feed={"x": t}, fetch_list=[y])[0]  # moved to the host
    np.testing.assert_array_equal(pc.from_dlpack(t.cpu()).view(np.uint16), on_cpu.view(np.uint16))
