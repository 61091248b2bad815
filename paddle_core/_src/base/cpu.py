"""The CPU device: host memory (NumPy arrays), always available."""

from __future__ import annotations

from typing import Any

from .device import Device
from .host import aligned_empty

PC_DEVICE_CPU = 1  # kernel_abi.h


class CPU(Device):
    """The host: NumPy arrays, always available."""

    type = "cpu"
    kernel_device_type = PC_DEVICE_CPU
    host_memory = True
    fallback = None  # nothing to fall back to: ops without a CPU kernel cannot run

    def __str__(self) -> str:
        return "cpu"

    @classmethod
    def unavailable_reason(cls, index: int) -> str | None:
        return None if index == 0 else "there is one CPU device, cpu:0"

    def holds(self, value: Any) -> bool:
        return type(value).__module__ == "numpy"

    def empty(self, shape: tuple, dtype: str) -> Any:
        return aligned_empty(shape, dtype)

    def to_device(self, array: Any) -> Any:
        return array

    def to_host(self, array: Any) -> Any:
        return array
