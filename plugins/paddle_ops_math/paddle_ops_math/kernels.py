"""The compiled kernel table (the manifest's kernel_module), with OpenBLAS loaded first.

`_C` links against scipy-openblas32's library and finds it through an rpath; loading it here
by absolute path first also covers layouts where that relative path does not hold (a
`--target` install, for one).
"""

import ctypes
import os

import scipy_openblas32

ctypes.CDLL(
    os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(fullname=True)),
    mode=ctypes.RTLD_GLOBAL,
)

from ._C import (  # noqa: E402
    KERNEL_ABI_VERSION,
    KERNEL_LAYOUT,
    built_with_cuda,
    cublas_unavailable_reason,
    cuda_architectures,
    kernels,
    threading_info,
)

__all__ = [
    "KERNEL_ABI_VERSION",
    "KERNEL_LAYOUT",
    "built_with_cuda",
    "cublas_unavailable_reason",
    "cuda_architectures",
    "kernels",
    "threading_info",
]
