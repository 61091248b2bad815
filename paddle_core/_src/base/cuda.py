"""The CUDA device: an NVIDIA GPU through CuPy, available when CuPy and a GPU are present."""

from __future__ import annotations

from typing import Any

from .device import Device
from .errors import counted

PC_DEVICE_CUDA = 2  # kernel_abi.h


def _cupy() -> Any:
    import cupy  # (optional: `pip install cupy-cuda12x`; imported only when CUDA is used)

    return cupy


class CUDA(Device):
    """An NVIDIA GPU through CuPy (``pip install cupy-cuda12x``)."""

    type = "cuda"
    kernel_device_type = PC_DEVICE_CUDA

    @classmethod
    def unavailable_reason(cls, index: int) -> str | None:
        try:
            cupy = _cupy()
        except ImportError:
            return "CuPy is not installed (pip install cupy-cuda12x)"
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # no driver, no GPU
            return f"CUDA is not usable: {e}"
        if index >= count:
            return f"this machine has {counted(count, 'CUDA device')}"
        return None

    @classmethod
    def host_copy(cls, value: Any) -> Any:
        if not type(value).__module__.startswith("cupy"):
            return None
        return value.get()

    def stream(self) -> int:
        cupy = _cupy()
        with cupy.cuda.Device(self.index):
            return cupy.cuda.get_current_stream().ptr

    def holds(self, value: Any) -> bool:
        return type(value).__module__.startswith("cupy") and value.device.id == self.index

    def empty(self, shape: tuple, dtype: str) -> Any:
        cupy = _cupy()
        with cupy.cuda.Device(self.index):
            return cupy.empty(shape, dtype)

    def to_device(self, array: Any) -> Any:
        cupy = _cupy()
        with cupy.cuda.Device(self.index):
            return cupy.ascontiguousarray(array)

    def kernel_array(self, value: Any) -> Any:
        cupy = _cupy()
        with cupy.cuda.Device(self.index):  # NumPy arrays move; contiguous CuPy ones stay
            return cupy.ascontiguousarray(value)

    def to_host(self, array: Any) -> Any:
        return _cupy().asnumpy(array)

    def synchronize(self) -> None:
        _cupy().cuda.Device(self.index).synchronize()
