"""The compiled kernel table (the manifest's kernel_module), with OpenBLAS loaded first.

`_C` links against scipy-openblas32's library and finds it through an rpath; loading it here
by absolute path first also covers layouts where that relative path does not hold (a
`--target` install, for one).

Importing it also hands the jobs of every other OpenBLAS already loaded (NumPy's own) to the
kernels' OpenMP pool, so that the process has one pool (docs/writing-op-plugins.md,
"Threads"): `PADDLE_OPS_MATH_SHARE_BLAS=0` leaves them their own threads. Libraries loaded
later keep theirs until `share_blas_pool()` is called.
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
    share_blas_pool,
    threading_info,
)

shared_blas = [] if os.environ.get("PADDLE_OPS_MATH_SHARE_BLAS") == "0" else share_blas_pool()

__all__ = [
    "KERNEL_ABI_VERSION",
    "KERNEL_LAYOUT",
    "built_with_cuda",
    "cublas_unavailable_reason",
    "cuda_architectures",
    "kernels",
    "share_blas_pool",
    "shared_blas",
    "threading_info",
]
