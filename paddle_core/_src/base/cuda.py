"""The CUDA device: an NVIDIA GPU through CuPy, available when CuPy and a GPU are present."""

from __future__ import annotations

from typing import Any

from . import dlpack
from .device import Device
from .errors import FeedError, brief, counted

PC_DEVICE_CUDA = 2  # kernel_abi.h


def _cupy() -> Any:
    import cupy  # (optional: `pip install "paddle-core[cuda]"`; imported only when CUDA is used)

    return cupy


class CUDA(Device):
    """An NVIDIA GPU through CuPy (``pip install "paddle-core[cuda]"``)."""

    type = "cuda"
    kernel_device_type = PC_DEVICE_CUDA
    dlpack_device_types = frozenset({dlpack.KDL_CUDA, dlpack.KDL_CUDA_MANAGED})

    def __init__(self, index: int = 0) -> None:
        super().__init__(index)
        self._stream: Any = None

    @classmethod
    def unavailable_reason(cls, index: int) -> str | None:
        try:
            cupy = _cupy()
        except ImportError:
            return (
                "CuPy is not installed (pip install 'paddle-core[cuda]'; for a CUDA 12 driver, "
                "the cupy-cuda12x wheel)"
            )
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

    def current(self) -> Any:
        return _Current(self)

    def stream(self) -> int:
        return self.own_stream().ptr

    def own_stream(self) -> Any:
        """This device object's CuPy stream, made on first use: each executor has a device
        object of its own, so each executor's kernels and copies queue on a stream of their
        own. It is a blocking stream, ordered with work on CUDA's legacy default stream (where
        CuPy works unless told otherwise): arrays made there are ready before our kernels read
        them, and copies made there of our results wait for them."""
        if self._stream is None:
            cupy = _cupy()
            with cupy.cuda.Device(self.index):
                self._stream = cupy.cuda.Stream(non_blocking=False)
        return self._stream

    def holds(self, value: Any) -> bool:
        return type(value).__module__.startswith("cupy") and value.device.id == self.index

    def empty(self, shape: tuple, dtype: str) -> Any:
        cupy = _cupy()
        with cupy.cuda.Device(self.index):
            return cupy.empty(shape, dtype)

    def to_device(self, array: Any) -> Any:
        cupy = _cupy()
        with cupy.cuda.Device(self.index):
            return _contiguous(cupy, array)

    @classmethod
    def from_dlpack(cls, value: Any, what: str, expected: str = "") -> Any:
        """A CuPy view: ``cupy.from_dlpack`` hands the producer CuPy's current stream, on which
        the view is then ready (the producer orders its pending work before it)."""
        return _view(_cupy(), value, what, expected)

    def adopt(self, value: Any) -> Any:
        """CuPy arrays on this GPU as they are; other arrays in its memory (PyTorch, JAX,
        Numba: DLPack or ``__cuda_array_interface__``) as CuPy views of the same memory. A
        DLPack producer is handed this device's stream (``own_stream``), where the plan's
        kernels will read the view. None for anything else, and for an array CuPy cannot view:
        the copying path takes it (and says why, if it cannot either)."""
        if self.holds(value):
            return value
        cupy = _cupy()
        if dlpack.has_dlpack(value):
            try:
                kind, index = value.__dlpack_device__()
            except Exception:  # a broken producer: the copying path names it
                return None
            if kind not in self.dlpack_device_types or index != self.index:
                return None
            with cupy.cuda.Device(self.index), self.own_stream():
                try:
                    return cupy.from_dlpack(value)
                except Exception:  # a tensor that requires grad, a dtype CuPy lacks...
                    return None
        if hasattr(value, "__cuda_array_interface__"):
            try:
                with cupy.cuda.Device(self.index):
                    view = cupy.asarray(value)
            except (TypeError, ValueError, BufferError):  # an array CuPy cannot view: copy it
                return None
            return view if view.device.id == self.index else None
        return None

    def kernel_array(self, value: Any) -> Any:
        cupy = _cupy()
        with cupy.cuda.Device(self.index):  # NumPy arrays move; contiguous CuPy ones stay
            return _contiguous(cupy, value)

    def to_host(self, array: Any) -> Any:
        return _cupy().asnumpy(array)

    def synchronize(self) -> None:
        _cupy().cuda.Device(self.index).synchronize()


def _view(cupy: Any, value: Any, what: str, expected: str) -> Any:
    """``cupy.from_dlpack(value)``; a FeedError naming ``what`` if CuPy or the producer
    refuses (a tensor that requires grad, bfloat16 without ml_dtypes...)."""
    try:
        return cupy.from_dlpack(value)
    except Exception as e:
        raise FeedError(
            f"{what} ({type(value).__name__}) cannot be read through DLPack by CuPy: "
            f"{type(e).__name__}: {brief(str(e), 160)}{expected}"
        ) from None


def _contiguous(cupy: Any, value: Any) -> Any:
    """``value`` as a C-contiguous CuPy array on the current device: a NumPy array is copied
    there, a contiguous CuPy one stays. (Not ascontiguousarray: CuPy 14's takes CuPy arrays
    only and, like NumPy's, makes a 0-d array 1-d.)"""
    return cupy.asarray(value, order="C")


class _Current:
    """While a plan runs: its GPU is the thread's current device (kernels launch there) and its
    executor's stream is CuPy's current stream (feeds and allocations queue there too)."""

    def __init__(self, device: CUDA) -> None:
        self.device = device

    def __enter__(self) -> None:
        cupy = _cupy()
        self._gpu = cupy.cuda.Device(self.device.index)
        self._gpu.__enter__()
        self._stream = self.device.own_stream()
        self._stream.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._stream.__exit__(*exc)
        self._gpu.__exit__(*exc)
