"""paddle-ops-nn's CUDA kernels without a GPU: built whenever a CUDA toolkit is here, declared
beside the CPU kernels (taking their dtypes), recorded exactly, listed as not built where they
were not, and a prepare that refuses host memory instead of faulting. The GPU results are
test_nn_cuda_kernels.py's."""

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
    source_manifest,
)

import paddle_core as pc
from paddle_core._src.plugins.registry import get_registry

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")
from paddle_ops_nn import _kernels as nn_kernels

PLUGIN = ROOT / "plugins" / "paddle_ops_nn"

built = pytest.mark.skipif(
    not nn_kernels.built_with_cuda(), reason="paddle-ops-nn was built without CUDA"
)


# -- the declarations ----------------------------------------------------------------------------


# The ops with no CUDA kernel, and why: reorder_layout converts to and from oneDNN's blocked
# layout, which only the layout pass of CPU plans makes (paddle_ops_nn/layout.py); a CUDA plan
# keeps its tensors NCHW and never holds one. fingerprint is the filter cache pass's, which
# runs for oneDNN's convolutions (filter_cache.py). packed_attention and its gradient are the
# attention_packing pass's, which rewrites CPU plans only (attention_packing.py).
CPU_ONLY = {"reorder_layout", "fingerprint", "packed_attention", "packed_attention_grad"}


def test_every_nn_op_but_the_cpu_only_ones_has_cuda_kernels():
    declared = source_manifest(PLUGIN)
    ops = {o.proto.type for o in declared.ops}
    with_cuda = set(natives(declared, "cuda"))
    assert CPU_ONLY <= ops and not CPU_ONLY & with_cuda
    assert with_cuda == ops - CPU_ONLY


def test_a_cuda_kernel_takes_its_cpu_kernels_dtypes():
    declared = source_manifest(PLUGIN)
    assert not any(kernel_dtypes(declared, "cuda").values())  # none lists its own
    if nn_kernels.built_with_cuda():
        for op in natives(declared, "cuda"):
            info = get_registry().op(op)
            assert info.dtypes_for("cuda") == info.dtypes_for("cpu"), op


def test_a_cuda_kernel_is_named_after_its_cpu_kernel():
    declared = source_manifest(PLUGIN)
    cpu = natives(declared, "cpu")
    for op, symbols in natives(declared, "cuda").items():
        assert symbols == [f"{name}_cuda" for name in cpu[op]]


def test_the_ops_of_a_training_step_have_cuda_kernels():
    declared = set(natives(source_manifest(PLUGIN), "cuda"))
    step = {"relu", "relu_grad", "softmax_with_cross_entropy", "softmax_with_cross_entropy_grad"}
    assert step | {"adam", "sgd", "dropout", "uniform_random", "gaussian_random"} <= declared


# -- the build -----------------------------------------------------------------------------------


@pytest.mark.skipif(cuda_compiler() is None, reason="no CUDA toolkit (nvcc) here")
@pytest.mark.skipif(
    os.environ.get("PADDLE_OPS_NN_CUDA", "").upper() == "OFF",
    reason="PADDLE_OPS_NN_CUDA=OFF: a CPU-only build was asked for",
)
def test_a_toolkit_here_means_the_plugin_was_built_with_cuda():
    check_built_with_cuda(nn_kernels, "paddle-ops-nn")


def test_the_kernel_record_is_exactly_what_the_module_exports():
    check_kernel_record(nn_kernels, "nn")


@built
def test_paddle_ops_lists_the_cuda_ops(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # outside the checkout: the installed plugin only
    ops = json.loads(run_cli("list", "--device", "cuda", "--plugin", "nn", "--json").stdout)
    listed = {o["op"] for o in ops["ops"]}
    declared = source_manifest(PLUGIN)
    assert listed == set(natives(declared, "cuda"))
    # every nn op runs on the GPU, but those of the CPU's own layout pass
    assert listed == {o.proto.type for o in declared.ops} - CPU_ONLY


# -- prepare refuses host memory -----------------------------------------------------------------


class CudaKernelsOnCpu:
    """Binds CUDA kernels to CPU ops, so the runtime prepares them with host tensors."""

    def paddle_core_manifest(self):
        return """
            kernel_module: "paddle_ops_nn._kernels" kernel_abi: 1
            ops {
              proto {
                type: "relu_cuda_on_cpu" comment: "relu_cuda, bound to the CPU."
                inputs { name: "x" comment: "." } outputs { name: "out" comment: "." }
              }
              kernels { device: "cpu" dtypes: [FLOAT32] native: "relu_cuda" }
              shape_rule: "paddle_core.rules:unary"
            }
            ops {
              proto {
                type: "softmax_cuda_on_cpu" comment: "softmax_cuda, bound to the CPU."
                inputs { name: "x" comment: "." } outputs { name: "out" comment: "." }
                attrs { name: "axis" type: INT comment: "." default { i: -1 } }
              }
              kernels { device: "cpu" dtypes: [FLOAT32] native: "softmax_cuda" }
              shape_rule: "paddle_core.rules:unary"
            }
        """


def run_on_cpu(op: str, **inputs: np.ndarray) -> None:
    pc.register_plugin(CudaKernelsOnCpu(), name="nn_cuda_on_cpu")
    pc.testing.run_op(op, inputs)


@built
@pytest.mark.parametrize("op", ["relu_cuda_on_cpu", "softmax_cuda_on_cpu"])
def test_a_cuda_kernel_handed_host_memory_refuses_in_prepare(op):
    with pytest.raises(pc.KernelError, match=r"CUDA kernel got input tensor 0 on device type 1"):
        run_on_cpu(op, x=np.ones((2, 3), np.float32))


@built
def test_a_cuda_kernel_checks_shapes_as_the_cpu_kernel_does():
    # The shared check (softmax.hpp) runs first: the same message as the CPU kernel's.
    with pytest.raises(pc.KernelError, match=r"0-d: it has no class axis"):
        run_on_cpu("softmax_cuda_on_cpu", x=np.float32(1))
