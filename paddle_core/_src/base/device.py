"""The device interface: what the core asks of a place where kernels run and buffers live.

A device type is a ``Device`` subclass, registered through the ``paddle_core_device_types``
hook (the core's own CPU and CUDA come through it too); ``paddle_core.get_device("name:index")``
finds them all. Planning, prepared programs and the compiled runtime ask a device what they
need and never test its name:

- ``kernel_device_type``, ``index``, ``stream()`` and ``current()``: how the runtime hands the
  device to a kernel (``pc_tensor.device_type`` / ``device_index``, ``pc_context.stream``, the
  thread's current device while a plan runs);
- ``host_memory``: its buffers are NumPy arrays, so the compiled run loop can bind them;
- ``fallback``: the device type whose kernels run an op this device has none for (with copies
  through ``to_host`` / ``to_device``), or None;
- ``empty``, ``to_device``, ``to_host``, ``holds``, ``host_copy``, ``synchronize``,
  ``kernel_array``, ``kernel_copy``, ``adopt``: buffers. The compiled runtime binds NumPy arrays
  (``host_memory``) or arrays exposing ``__cuda_array_interface__`` (a device's own memory,
  CuPy's for CUDA);
- ``dlpack_device_types`` and ``from_dlpack``: which other libraries' arrays (DLPack) are in
  its memory, and how to view one as its buffer without a copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import DeviceError, FeedError
from .host import aligned_empty, host_array


class Device:
    """A device type plus an index. Subclasses set ``type`` and implement the buffer moves."""

    type: str = ""
    # The PC_DEVICE_* value kernels see (kernel_abi.h); plugin device types use their own
    # values from PC_DEVICE_FIRST_PLUGIN on.
    kernel_device_type: int = 0
    host_memory: bool = False
    fallback: str | None = "cpu"
    # The DLPack device types (DLDeviceType values, ``dlpack.py``) whose memory this device
    # type's buffers are: ``from_dlpack`` views such an array, ``pc.from_dlpack`` and feeds
    # find the device type through them. Empty: it reads no other library's arrays.
    dlpack_device_types: frozenset[int] = frozenset()

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

    @classmethod
    def host_copy(cls, value: Any) -> Any:
        """A NumPy copy of ``value`` if it is a buffer of this device type, else None (lets
        the executor accept feeds that live on any registered device)."""
        return None

    @classmethod
    def from_dlpack(cls, value: Any, what: str, expected: str = "") -> Any:
        """``value`` (an array with ``__dlpack__`` in memory of one of
        ``dlpack_device_types``) as a buffer of this device type, of the same memory; a
        FeedError naming ``what`` (with ``expected`` appended) when it cannot be."""
        raise FeedError(f"{what}: device type {cls.type!r} reads no DLPack arrays{expected}")

    @classmethod
    def is_available(cls, index: int = 0) -> bool:
        """Whether device ``index`` of this type can be used here; never raises."""
        try:
            return cls.unavailable_reason(index) is None
        except Exception:  # a broken driver or library: not available, and no traceback
            return False

    def current(self) -> Any:
        """A context manager that makes this device the calling thread's current one while a
        plan runs (where kernels launch on "the current device"), or None; one per run."""
        return None

    def stream(self) -> int:
        """The stream handle kernels enqueue work on (``pc_context.stream``); 0 for none."""
        return 0

    def holds(self, value: Any) -> bool:
        """Whether ``value`` is already a buffer of this device. The executor moves scope
        values that are not; device types whose buffers differ from the host's override this."""
        return True

    def empty(self, shape: tuple, dtype: str) -> Any:
        """An uninitialised C-contiguous buffer of this device, its data aligned to 64 bytes
        at least (plans carve views at multiples of 64 bytes from one such buffer)."""
        return self.to_device(aligned_empty(shape, dtype))

    def adopt(self, value: Any) -> Any:
        """``value`` as a buffer of this device without a copy, when it is an array already
        in this device's memory (a feed given as a device array, another library's through
        DLPack); else None (the executor then converts or copies it, or says why not). Here:
        a device array held by a device type whose buffers are not NumPy arrays."""
        return value if not self.host_memory and self.holds(value) else None

    def kernel_array(self, value: Any) -> Any:
        """``value`` (a NumPy array, or a buffer of this device) as a native kernel binds it:
        a C-contiguous, aligned array in this device's memory."""
        if self.host_memory:
            return host_array(value)
        moves = isinstance(value, np.ndarray) or not self.holds(value)
        return self.to_device(value) if moves else value

    def kernel_copy(self, value: Any) -> Any:
        """``kernel_array(value)`` in memory of its own: what a plan binds for a fed variable
        its ops write, so that the caller's array is never written."""
        if self.host_memory:  # (astype always copies)
            return value.astype(value.dtype.newbyteorder("="), order="C")
        if isinstance(value, np.ndarray) or not self.holds(value):
            return self.to_device(value)  # a move is a copy
        return self.kernel_array(value.copy())

    def to_device(self, array: Any) -> Any:
        """A host (NumPy) array as this device's buffer type."""
        raise NotImplementedError

    def to_host(self, array: Any) -> Any:
        """A buffer of this device as a NumPy array."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Wait for queued work on this device (no-op where work is synchronous)."""
