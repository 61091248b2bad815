"""Devices: where kernels run and where their buffers live.

``CPU`` is always available (NumPy buffers). ``CUDA`` is available when CuPy is installed and a
GPU is present (CuPy buffers and streams). Device plugins add types through the
``paddle_core_device_types`` hook; ``get_device("name:index")`` finds them all.
"""

from __future__ import annotations

from typing import Any

from .errors import DeviceError, did_you_mean


class Device:
    """A device type plus an index. Subclasses set ``type`` and implement the buffer moves."""

    type: str = ""

    def __init__(self, index: int = 0) -> None:
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise DeviceError(f"{self.type} device index must be an int >= 0, got {index!r}")
        self.index = index

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.index})"

    def __str__(self) -> str:
        return f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    @classmethod
    def unavailable_reason(cls, index: int) -> str | None:
        """Why device ``index`` of this type cannot be used here, or None if it can."""
        return None

    def holds(self, value: Any) -> bool:
        """Whether ``value`` is already a buffer of this device. The executor moves scope
        values that are not; device types whose buffers differ from the host's override this."""
        return True

    def to_device(self, array: Any) -> Any:
        """A host (NumPy) array as this device's buffer type."""
        raise NotImplementedError

    def to_host(self, array: Any) -> Any:
        """A buffer of this device as a NumPy array."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Wait for queued work on this device (no-op where work is synchronous)."""


class CPU(Device):
    """The host: NumPy arrays, always available."""

    type = "cpu"

    def __str__(self) -> str:
        return "cpu"

    @classmethod
    def unavailable_reason(cls, index: int) -> str | None:
        return None if index == 0 else "there is one CPU device, cpu:0"

    def holds(self, value: Any) -> bool:
        return type(value).__module__ == "numpy"

    def to_device(self, array: Any) -> Any:
        return array

    def to_host(self, array: Any) -> Any:
        return array


class CUDA(Device):
    """An NVIDIA GPU through CuPy (``pip install cupy-cuda12x``)."""

    type = "cuda"

    @classmethod
    def unavailable_reason(cls, index: int) -> str | None:
        try:
            import cupy
        except ImportError:
            return "CuPy is not installed (pip install cupy-cuda12x)"
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # no driver, no GPU
            return f"CUDA is not usable: {e}"
        if index >= count:
            return f"this machine has {count} CUDA device(s)"
        return None

    def holds(self, value: Any) -> bool:
        return type(value).__module__.startswith("cupy") and value.device.id == self.index

    def to_device(self, array: Any) -> Any:
        import cupy

        with cupy.cuda.Device(self.index):
            return cupy.asarray(array)

    def to_host(self, array: Any) -> Any:
        import cupy

        return cupy.asnumpy(array)

    def synchronize(self) -> None:
        import cupy

        cupy.cuda.Device(self.index).synchronize()


def device_types() -> dict[str, type[Device]]:
    """Every device type the core and plugins provide, by name."""
    from .hooks import plugin_manager

    types: dict[str, type[Device]] = {}
    for provided in plugin_manager().hook.paddle_core_device_types():
        for cls in provided:
            types.setdefault(cls.type, cls)
    return types


def get_device(spec: Any) -> Device:
    """A Device from a Device, "cpu", "cuda", "cuda:1"; DeviceError if unknown or unavailable."""
    if isinstance(spec, Device):
        device = spec
    elif isinstance(spec, str):
        name, _, index = spec.strip().lower().partition(":")
        if index and not index.isdigit():
            raise DeviceError(f"device {spec!r}: the index after ':' must be a number")
        if name == "cpu":
            device = CPU(int(index or 0))
        else:
            types = device_types()
            if name not in types:
                raise DeviceError(
                    f"unknown device {spec!r}{did_you_mean(name, types)}; "
                    f"known types: {', '.join(sorted(types))}"
                )
            device = types[name](int(index or 0))
    else:
        raise DeviceError(f"a device must be a Device or a string like 'cuda:0', got {spec!r}")
    reason = type(device).unavailable_reason(device.index)
    if reason:
        raise DeviceError(f"device {device} is not available: {reason}")
    return device
