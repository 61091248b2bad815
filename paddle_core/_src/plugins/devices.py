"""The device registry: every device type the core and plugins provide, and device strings.

Device types come through the ``paddle_core_device_types`` hook, the core's own CPU and CUDA
included, so a plugin adds one without touching the core. ``get_device("name:index")`` finds
any of them.
"""

from __future__ import annotations

from typing import Any

from ..base.device import Device
from ..base.errors import DeviceError, did_you_mean
from . import hooks


def device_types() -> dict[str, type[Device]]:
    """Every registered device type, by name (the first registration of a name wins)."""
    types: dict[str, type[Device]] = {}
    for provided in hooks.plugin_manager().hook.paddle_core_device_types():
        for cls in provided:
            types.setdefault(cls.type, cls)
    return types


def get_device(spec: Any) -> Device:
    """A Device from a Device, "cpu", "cuda", "cuda:1"; DeviceError if unknown or unavailable."""
    if isinstance(spec, Device):
        device = spec
    elif isinstance(spec, str):
        name, colon, index = spec.strip().lower().partition(":")
        if colon and not (index.isascii() and index.isdigit()):
            raise DeviceError(f"device {spec!r}: the index after ':' must be a number")
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
        raise DeviceError(f"device {device.type}:{device.index} is not available: {reason}")
    return device


def host_copy(value: Any) -> Any:
    """A NumPy copy of a buffer of any registered device type, or None if none claims it."""
    for device_type in device_types().values():
        copy = device_type.host_copy(value)
        if copy is not None:
            return copy
    return None
