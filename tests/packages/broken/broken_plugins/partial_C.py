"""Stands in for a compiled module that lacks a kernel its manifest declares: it exports one
real kernel (paddle-core's own fill_like, with the core's ABI and layout) and not the other."""

from paddle_core._src.base.runtime import compiled_runtime

_runtime = compiled_runtime()
KERNEL_ABI_VERSION = _runtime.KERNEL_ABI_VERSION
KERNEL_LAYOUT = _runtime.KERNEL_LAYOUT


def kernels():
    return {"fill_like": _runtime.kernels()["fill_like"]}
