"""The device registry: every device type the core and plugins provide, and device strings.

Device types come through the ``paddle_core_device_types`` hook, the core's own CPU and CUDA
included, so a plugin adds one without touching the core. ``get_device("name:index")`` finds
any of them.
"""

from __future__ import annotations

from typing import Any

from ..base import dlpack
from ..base.device import Device
from ..base.errors import PLUGIN_CODE_ERRORS, DeviceError, FeedError, did_you_mean, shown
from . import hooks
from .registry import get_registry


def device_types() -> dict[str, type[Device]]:
    """Every registered device type, by name (the first registration of a name wins). A hook
    implementation that raises or returns anything but Device subclasses is left out and
    recorded against its plugin (``paddle-ops plugins`` shows it): the other devices work."""
    types: dict[str, type[Device]] = {}
    hook = hooks.plugin_manager().hook.paddle_core_device_types
    for impl in reversed(hook.get_hookimpls()):  # pluggy's call order
        try:
            provided = list(impl.function())
            ok = all(isinstance(c, type) and issubclass(c, Device) for c in provided)
            problem = "" if ok else f"returned {shown(provided)}, not a list of Device classes"
        except PLUGIN_CODE_ERRORS as e:
            provided, problem = [], f"raised {type(e).__name__}: {e}"
        if problem:
            _record(impl.plugin_name, f"its paddle_core_device_types hook {problem}")
            continue
        for cls in provided:
            types.setdefault(cls.type, cls)
    return types


def _record(plugin: str, problem: str) -> None:
    record = get_registry().plugins.get(plugin)
    if record is not None and problem not in record.runtime_errors:
        record.runtime_errors.append(problem)


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
        raise DeviceError(f"a device must be a Device or a string like 'cuda:0', got {shown(spec)}")
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


def from_dlpack(array: Any) -> Any:
    """``array`` (a PyTorch tensor, a JAX or CuPy array, anything with ``__dlpack__``) as a
    buffer of the device type whose memory it is in, without a copy: a NumPy array for host
    memory, a CuPy array for a GPU's (ready on CuPy's current stream, which the producer is
    handed). A NumPy view is writeable only where the producer's DLPack 1.0 capsule says so
    (NumPy views a legacy capsule, which cannot say, read-only); bfloat16 arrives as ml_dtypes'
    bfloat16.

    A FeedError says why not: ``__dlpack__`` refused (PyTorch: a tensor that requires grad),
    a dtype NumPy lacks, memory no registered device type reads, or one not available here.
    """
    what = "from_dlpack's argument"
    if not dlpack.has_dlpack(array):
        raise FeedError(
            f"{what} must have __dlpack__ and __dlpack_device__ (a PyTorch tensor, a JAX, "
            f"CuPy or NumPy array), got {type(array).__name__}"
        )
    owner, _ = _dlpack_owner(array, what, "")
    return owner.from_dlpack(array, what)


def dlpack_host_array(value: Any, what: str, expected: str = "") -> Any:
    """``value`` (with ``__dlpack__``) as a NumPy array: a view of host memory, else a copy
    of the memory of the registered device type that reads it. FeedErrors name ``what`` and
    end with ``expected``."""
    owner, index = _dlpack_owner(value, what, expected)
    array = owner.from_dlpack(value, what, expected)
    return array if owner.host_memory else owner(index).to_host(array)


def _dlpack_owner(value: Any, what: str, expected: str) -> tuple[type[Device], int]:
    """The device type whose memory ``value`` (DLPack) is in, available here, and the index."""
    kind, index = dlpack.dlpack_device(value, what)
    types = device_types().values()
    owner = next((t for t in types if kind in t.dlpack_device_types), None)
    where = dlpack.device_name(kind, index)
    if owner is None:
        readers = ", ".join(sorted(t.type for t in types if t.dlpack_device_types))
        raise FeedError(
            f"{what} ({type(value).__name__}) is in {where} memory (DLPack), which no "
            f"registered device type reads (these do: {readers}){expected}"
        )
    if not owner.host_memory:  # (pinned host memory says which GPU, yet the host reads it)
        try:
            reason = owner.unavailable_reason(index)
        except Exception as e:  # a broken driver or library
            reason = f"{type(e).__name__}: {e}"
        if reason:
            raise FeedError(
                f"{what} ({type(value).__name__}) is in {where} memory (DLPack), but device "
                f"{owner.type}:{index} is not available here: {reason}{expected}"
            )
    return owner, index
