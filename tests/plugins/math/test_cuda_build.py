"""paddle-ops-math's CUDA kernels without a GPU: built whenever a CUDA toolkit is here, declared
beside the CPU kernels (taking their dtypes), recorded exactly, listed as not built where they
were not, and a prepare that refuses host memory instead of faulting. The GPU results are
test_cuda_kernels.py's."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import ROOT, run_cli
from cuda_helpers import (
    check_built_with_cuda,
    check_kernel_record,
    cuda_compiler,
    kernel_dtypes,
    natives,
    parse,
    source_manifest,
)

import paddle_core as pc
from paddle_core._src.plugins.registry import get_registry
from paddle_core.proto import framework_pb2 as pb

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")
from paddle_ops_math import kernels as math_kernels

PLUGIN = ROOT / "plugins" / "paddle_ops_math"
# The core's own ops (add_n, fill_like): the plugin adds CUDA kernels for them too.
CORE_OPS = ROOT / "paddle_core" / "builtin" / "ops.pbtxt"

built = pytest.mark.skipif(
    not math_kernels.built_with_cuda(), reason="paddle-ops-math was built without CUDA"
)

# -- the declarations ----------------------------------------------------------------------------


def test_a_cuda_kernel_takes_its_cpu_kernels_dtypes():
    """Beside a CPU kernel, a CUDA kernel lists no dtypes of its own: it takes the op's CPU
    dtypes (and its class must handle them: loading checks). The core's add_n and fill_like,
    whose CPU kernels are the core's, are packs of their own."""
    declared = source_manifest(PLUGIN)
    own = {op: d for op, d in kernel_dtypes(declared, "cuda").items() if d}
    assert set(own) == {"fill_like"}  # its class takes more dtypes than the core's CPU kernel
    registry = get_registry()
    names = {pb.VarType.DataType.Name(d).lower() for d in own["fill_like"]}
    assert names == set(registry.op("fill_like").dtypes_for("cpu"))
    for op in natives(declared, "cuda"):
        if op in ("add_n", "fill_like"):
            continue
        info = registry.op(op)
        if math_kernels.built_with_cuda():
            assert info.dtypes_for("cuda") == info.dtypes_for("cpu"), op


def test_a_cuda_kernel_is_named_after_its_cpu_kernel():
    declared = source_manifest(PLUGIN)
    cpu = natives(declared, "cpu") | natives(parse(CORE_OPS), "cpu")
    for op, symbols in natives(declared, "cuda").items():
        assert symbols == [f"{name}_cuda" for name in cpu[op]]


def test_the_cuda_dtypes_are_the_cpu_kernels_once_recorded():
    """Discovery fills the dtypes from the build's record: add's CUDA kernel takes every
    number, as its CPU kernel does, or is listed as not built."""
    record = get_registry().plugins["math"]
    numbers = ["float32", "float64", "float16", "bfloat16"]
    numbers += [f"{sign}int{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64)]
    (add,) = [o for o in record.ops if o["type"] == "add"]
    if math_kernels.built_with_cuda():
        assert ["cuda", numbers, "native", "add_cuda"] in add["kernels"]
    else:
        assert ["cpu", numbers, "native", "add"] in add["kernels"]
        assert [k for k in add["kernels"] if k[0] == "cuda"] == []
        (why,) = [u[3] for u in record.unbuilt if u[:3] == ["add", "cuda", "add_cuda"]]
        assert why.startswith("not built: the plugin's build compiled no cuda kernels")


# -- the build -----------------------------------------------------------------------------------


@pytest.mark.skipif(cuda_compiler() is None, reason="no CUDA toolkit (nvcc) here")
@pytest.mark.skipif(
    os.environ.get("PADDLE_OPS_MATH_CUDA", "").upper() == "OFF",
    reason="PADDLE_OPS_MATH_CUDA=OFF: a CPU-only build was asked for",
)
def test_a_toolkit_here_means_the_plugin_was_built_with_cuda():
    check_built_with_cuda(math_kernels, "paddle-ops-math")


def test_the_kernel_record_is_exactly_what_the_module_exports():
    check_kernel_record(math_kernels, "math")


@built
def test_paddle_ops_lists_the_cuda_ops(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # outside the checkout: the installed plugin only
    listed = run_cli("list", "--device", "cuda").stdout.split()
    for op in ("add", "equal", "exp", "sigmoid", "add_grad", "add_n", "fill_like", "matmul", "sum"):
        assert op in listed
    for op in ("transpose", "concat", "split", "slice", "expand", "broadcast_to_grad"):
        assert op in listed
    # --plugin lists the plugin's own ops: not the core's, though math gives them CUDA kernels.
    ops = json.loads(run_cli("list", "--device", "cuda", "--plugin", "math", "--json").stdout)
    core = {o.proto.type for o in parse(CORE_OPS).ops}
    with_cuda = set(natives(source_manifest(PLUGIN), "cuda"))
    assert {o["op"] for o in ops["ops"]} == with_cuda - core
    assert with_cuda & core == {"add_n", "fill_like"}


# -- prepare refuses host memory -----------------------------------------------------------------


class CudaKernelsOnCpu:
    """Binds CUDA kernels to CPU ops, so the runtime prepares them with host tensors."""

    def paddle_core_manifest(self):
        return """
            kernel_module: "paddle_ops_math.kernels" kernel_abi: 1
            ops {
              proto {
                type: "add_cuda_on_cpu" comment: "add_cuda, bound to the CPU."
                inputs { name: "x" comment: "." } inputs { name: "y" comment: "." }
                outputs { name: "out" comment: "." }
              }
              kernels { device: "cpu" dtypes: [FLOAT32] native: "add_cuda" }
              shape_rule: "paddle_core.rules:elementwise"
            }
            ops {
              proto {
                type: "exp_cuda_on_cpu" comment: "exp_cuda, bound to the CPU."
                inputs { name: "x" comment: "." } outputs { name: "out" comment: "." }
              }
              kernels { device: "cpu" dtypes: [FLOAT32] native: "exp_cuda" }
              shape_rule: "paddle_core.rules:unary"
            }
            ops {
              proto {
                type: "matmul_cuda_on_cpu" comment: "matmul_cuda, bound to the CPU."
                inputs { name: "x" comment: "." } inputs { name: "y" comment: "." }
                outputs { name: "out" comment: "." }
                attrs { name: "transpose_x" type: BOOL comment: "." default { b: false } }
                attrs { name: "transpose_y" type: BOOL comment: "." default { b: false } }
              }
              kernels { device: "cpu" dtypes: [FLOAT32] native: "matmul_cuda" }
              shape_rule: "paddle_ops_math.rules.matmul:matmul_shape"
            }
        """


def run_on_cpu(op: str, **inputs: np.ndarray) -> None:
    pc.register_plugin(CudaKernelsOnCpu(), name="cuda_on_cpu")
    pc.testing.run_op(op, inputs)


@built
@pytest.mark.parametrize("op", ["add_cuda_on_cpu", "exp_cuda_on_cpu"])
def test_a_cuda_kernel_handed_host_memory_refuses_in_prepare(op):
    x = np.ones((2, 3), np.float32)
    inputs = {"x": x, "y": x} if op.startswith("add") else {"x": x}
    with pytest.raises(pc.KernelError, match=r"CUDA kernel got input tensor 0 on device type 1"):
        run_on_cpu(op, **inputs)


@built
def test_a_broadcast_over_more_dims_than_the_cuda_kernel_walks_is_refused():
    # Alternating broadcast dims merge with no neighbour: 9 dims after merging.
    x = np.ones((2, 1) * 4 + (2,), np.float32)
    y = np.ones((1, 2) * 4 + (1,), np.float32)
    with pytest.raises(pc.KernelError, match=r"needs 9 dimensions after merging.* at most 8"):
        run_on_cpu("add_cuda_on_cpu", x=x, y=y)


# -- cuBLAS, loaded at run time --------------------------------------------------------------------


def test_cublas_availability_is_reported():
    reason = math_kernels.cublas_unavailable_reason()
    if not math_kernels.built_with_cuda():
        assert reason == "paddle-ops-math was built without CUDA kernels"
    elif reason is not None:
        assert "pip install nvidia-cublas" in reason and "libcublas.so.13" in reason


@built
def test_without_cublas_a_cuda_matmul_says_what_to_install_in_prepare():
    if math_kernels.cublas_unavailable_reason() is None:
        pytest.skip("cuBLAS loads here")
    x = np.ones((2, 3), np.float32)
    with pytest.raises(pc.KernelError, match=r"could not be loaded.*pip install nvidia-cublas"):
        run_on_cpu("matmul_cuda_on_cpu", x=x, y=x.T.copy())


@built
def test_with_cublas_a_cuda_matmul_handed_host_memory_refuses_in_prepare():
    if math_kernels.cublas_unavailable_reason() is not None:
        pytest.skip("no cuBLAS here")
    x = np.ones((2, 3), np.float32)
    with pytest.raises(pc.KernelError, match=r"CUDA kernel got input tensor 0 on device type 1"):
        run_on_cpu("matmul_cuda_on_cpu", x=x, y=x.T.copy())
