"""CUDA: a toy program on `cuda:0`. The toy plugin has no CUDA kernels, so its ops fall back to
CPU with copies; results still come back as NumPy arrays. Skipped without CuPy or a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("fresh_warnings")]


@pytest.fixture
def cuda():
    reason = pc.CUDA.unavailable_reason(0)
    if reason is not None:
        pytest.skip(f"no usable CUDA device: {reason}")
    return pc.get_device("cuda:0")


def test_toy_program_on_cuda_falls_back_to_cpu_kernels(cuda):
    import cupy

    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 3], dtype="float32")
        w = pc.data("w", shape=[3, 2], dtype="float32")
        h = pc.ops.toy_matmul(pc.ops.toy_scale(x, scale=2.0, bias=-1.0), w)
        out = pc.ops.toy_reduce(pc.ops.toy_relu(h), axes=[1], reduction="sum")
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((4, 3)).astype(np.float32)
    wv = rng.standard_normal((3, 2)).astype(np.float32)
    want = np.maximum((xv * 2 - 1) @ wv, 0).sum(axis=1)

    exe = pc.Executor("cuda:0")
    assert exe.device == cuda
    with pytest.warns(RuntimeWarning, match="no cuda kernel for float32; running it on CPU"):
        (got,) = exe.run(prog, feed={"x": xv, "w": wv}, fetch_list=[out])
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, want, rtol=1e-5)

    # CuPy arrays are accepted as feeds; return_numpy=False leaves results on the device
    (on_device,) = exe.run(
        prog, feed={"x": cupy.asarray(xv), "w": wv}, fetch_list=[out], return_numpy=False
    )
    assert isinstance(on_device, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(on_device), want, rtol=1e-5)


def test_arrays_of_other_gpu_libraries_are_fed_through_dlpack(cuda):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this PyTorch has no CUDA")
    import cupy

    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 3], dtype="float32")
        out = pc.ops.toy_relu(x)
    xt = torch.randn(4, 3, device="cuda")
    assert isinstance(cuda.adopt(xt), cupy.ndarray)  # a view of the same memory
    assert cuda.adopt(xt).data.ptr == xt.data_ptr()
    with pytest.warns(RuntimeWarning, match="no cuda kernel"):
        (got,) = pc.Executor(cuda).run(prog, feed={"x": xt}, fetch_list=[out], return_numpy=False)
    np.testing.assert_allclose(torch.from_dlpack(got).cpu().numpy(), xt.relu().cpu().numpy())
