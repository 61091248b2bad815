"""The kernel table the core loads (the manifest's ``kernel_module``): the compiled ``_C``.

``_C`` links OpenBLAS and (where built with it) oneDNN. OpenBLAS is loaded here by the path
scipy-openblas32 gives, which covers every layout (a ``pip install --target`` too). oneDNN's
wheel puts ``libdnnl.so.3`` in the environment's ``lib/``, where ``_C``'s rpath finds it in a
virtual environment or a user install; where it does not (``--target``), it is loaded by the path
the wheel's metadata gives, before ``_C`` is imported again: only then, since that lookup costs
tens of milliseconds.

``cublas_unavailable_reason()`` says why the CUDA kernels of lstm and gru cannot load cuBLAS
(what to install), or None when they can.
"""

from __future__ import annotations

import ctypes
import os

import scipy_openblas32

ctypes.CDLL(
    os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(fullname=True)),
    mode=ctypes.RTLD_GLOBAL,
)

try:
    from ._C import (
        KERNEL_ABI_VERSION,
        KERNEL_LAYOUT,
        built_with_cuda,
        cublas_unavailable_reason,
        cuda_architectures,
        kernels,
    )
except ImportError as e:
    if "libdnnl" not in str(e):
        raise

    def _preload_onednn() -> None:
        import importlib.metadata

        files = importlib.metadata.distribution("onednn-cpu-gomp").files or []
        for file in files:
            if file.name == "libdnnl.so.3":
                ctypes.CDLL(str(file.locate()), mode=ctypes.RTLD_GLOBAL)
                return
        raise ImportError("the onednn-cpu-gomp package has no libdnnl.so.3; reinstall it")

    _preload_onednn()
    from ._C import (
        KERNEL_ABI_VERSION,
        KERNEL_LAYOUT,
        built_with_cuda,
        cublas_unavailable_reason,
        cuda_architectures,
        kernels,
    )

__all__ = [
    "KERNEL_ABI_VERSION",
    "KERNEL_LAYOUT",
    "built_with_cuda",
    "cublas_unavailable_reason",
    "cuda_architectures",
    "kernels",
]
