"""Host memory as kernels get it: C-contiguous NumPy arrays with 64-byte aligned data."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .dtypes import numpy_dtype

ALIGNMENT = 64  # bytes; the kernel ABI promises it for buffers the core allocates


def aligned_empty(shape: tuple, dtype: str, raw: Any = None) -> Any:
    """An uninitialised C-contiguous array whose data is 64-byte aligned (carved from ``raw``,
    a uint8 array of at least nbytes + 64 bytes, when given)."""
    dt = numpy_dtype(dtype) if isinstance(dtype, str) else np.dtype(dtype)
    nbytes = math.prod(shape) * dt.itemsize
    if raw is None:
        raw = np.empty(nbytes + ALIGNMENT, np.uint8)
    offset = -raw.ctypes.data % ALIGNMENT
    return raw[offset : offset + nbytes].view(dt).reshape(shape)


def host_array(array: Any) -> Any:
    """``array`` itself if kernels can take it as it is (C-contiguous, aligned, native byte
    order), else such a copy. 0-d arrays stay 0-d, which np.ascontiguousarray does not do."""
    flags = array.flags
    if flags.c_contiguous and flags.aligned and array.dtype.isnative:
        return array
    return array.astype(array.dtype.newbyteorder("="), order="C")
