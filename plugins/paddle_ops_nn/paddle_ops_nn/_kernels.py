"""The kernel table the core loads (the manifest's ``kernel_module``): the compiled ``_C``.

``_C`` links oneDNN, whose wheel puts ``libdnnl.so.3`` in the environment's ``lib/``, where
``_C``'s rpath finds it in a virtual environment or a user install. Where it does not (``pip
install --target``), the library is loaded by the path the wheel's metadata gives, before
``_C`` is imported again; only then, since that lookup costs tens of milliseconds.
"""

from __future__ import annotations

try:
    from ._C import KERNEL_ABI_VERSION, kernels
except ImportError as e:
    if "libdnnl" not in str(e):
        raise

    def _preload_onednn() -> None:
        import ctypes
        import importlib.metadata

        files = importlib.metadata.distribution("onednn-cpu-gomp").files or []
        for file in files:
            if file.name == "libdnnl.so.3":
                ctypes.CDLL(str(file.locate()), mode=ctypes.RTLD_GLOBAL)
                return
        raise ImportError("the onednn-cpu-gomp package has no libdnnl.so.3; reinstall it")

    _preload_onednn()
    from ._C import KERNEL_ABI_VERSION, kernels

__all__ = ["KERNEL_ABI_VERSION", "kernels"]
