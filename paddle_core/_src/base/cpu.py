"""The CPU device: host memory (NumPy arrays), always available."""

from __future__ import annotations

from typing import Any

from . import dlpack
from .device import Device
from .host import aligned_empty

PC_DEVICE_CPU = 1  # kernel_abi.h


class CPU(Device):
    """The host: NumPy arrays, always available."""

    type = "cpu"
    kernel_device_type = PC_DEVICE_CPU
    host_memory = True
    fallback = None  # nothing to fall back to: ops without a CPU kernel cannot run
    # Host memory, pinned host memory included (NumPy reads all three).
    dlpack_device_types = frozenset({dlpack.KDL_CPU, dlpack.KDL_CUDA_HOST, dlpack.KDL_ROCM_HOST})

    def __str__(self) -> str:
        return "cpu"

    @classmethod
    def unavailable_reason(cls, index: int) -> str | None:
        return None if index == 0 else "there is one CPU device, cpu:0"

    @classmethod
    def from_dlpack(cls, value: Any, what: str, expected: str = "") -> Any:
        return dlpack.host_view(value, what, expected)

    def adopt(self, value: Any) -> Any:
        """Other libraries' arrays in host memory (PyTorch, JAX: DLPack) as NumPy views of the
        same memory; None for anything else, and for an array NumPy cannot view: the copying
        path takes it (and says why, if it cannot either)."""
        if not dlpack.has_dlpack(value):
            return None
        try:
            if value.__dlpack_device__()[0] not in self.dlpack_device_types:
                return None
            return dlpack.host_view(value, "a feed")
        except Exception:  # a broken producer, a tensor that requires grad, a dtype NumPy lacks
            return None

    def holds(self, value: Any) -> bool:
        return type(value).__module__ == "numpy"

    def empty(self, shape: tuple, dtype: str) -> Any:
        return aligned_empty(shape, dtype)

    def to_device(self, array: Any) -> Any:
        return array

    def to_host(self, array: Any) -> Any:
        return array
