"""DLPack: arrays of other libraries (PyTorch, JAX, CuPy, NumPy) read without a copy.

NumPy's ``from_dlpack`` reads a host producer's capsule, asking for DLPack 1.0's versioned one
(which can say read-only) and falling back to the legacy one, and CuPy's reads a GPU
producer's, handing it the consumer's stream. What neither library does is done here, on the
capsule before NumPy sees it: NumPy has no bfloat16, so a bfloat16 capsule is relabelled
uint16 (same bits, same layout) and the array viewed back as ml_dtypes' bfloat16; and NumPy
exports no bfloat16 array, so ``to_dlpack`` exports its uint16 view and relabels the capsule.
Only the dtype field of the producer's struct is read or written, never its memory.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .dtypes import numpy_dtype
from .errors import FeedError, brief

# DLDeviceType (dlpack.h): where the memory of a tensor is.
KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_HOST = 3  # pinned host memory: host-readable
KDL_ROCM_HOST = 11
KDL_CUDA_MANAGED = 13
DEVICE_NAMES = {
    1: "cpu",
    2: "cuda",
    3: "cuda_host",
    4: "opencl",
    7: "vulkan",
    8: "metal",
    9: "vpi",
    10: "rocm",
    11: "rocm_host",
    12: "ext_dev",
    13: "cuda_managed",
    14: "oneapi",
    15: "webgpu",
    16: "hexagon",
    17: "maia",
}

# DLDataTypeCode (dlpack.h): the kind of an element; with its bits, a dtype.
KDL_INT, KDL_UINT, KDL_FLOAT, KDL_BFLOAT, KDL_COMPLEX, KDL_BOOL = 0, 1, 2, 4, 5, 6
_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque", 4: "bfloat", 5: "complex", 6: "bool"}
# Codes whose name says their bits (DLPack 1.1's low-precision floats).
_FULL_NAMES = {
    7: "float8_e3m4",
    8: "float8_e4m3",
    9: "float8_e4m3b11fnuz",
    10: "float8_e4m3fn",
    11: "float8_e4m3fnuz",
    12: "float8_e5m2",
    13: "float8_e5m2fnuz",
    14: "float8_e8m0fnu",
    15: "float6_e2m3fn",
    16: "float6_e3m2fn",
    17: "float4_e2m1fn",
}


class _DataType(ctypes.Structure):  # DLDataType
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):  # DLTensor, up to its dtype (what is read here)
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
    ]


class _Versioned(ctypes.Structure):  # DLManagedTensorVersioned, up to its DLTensor
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _Tensor),
    ]


# A legacy capsule holds a DLManagedTensor, whose DLTensor comes first.
LEGACY, VERSIONED = b"dltensor", b"dltensor_versioned"
_capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", ctypes.pythonapi)
)
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


def _dtype_field(capsule: Any) -> _DataType | None:
    """The DLDataType inside an unconsumed DLPack capsule (a view of the producer's struct), or
    None for anything else (a used capsule, a DLPack major version this layout is not)."""
    if type(capsule).__name__ != "PyCapsule":
        return None
    name = _capsule_name(capsule)
    if name not in (LEGACY, VERSIONED):
        return None
    address = _capsule_pointer(capsule, name)
    if not address:
        return None
    if name == LEGACY:
        return _Tensor.from_address(address).dtype
    managed = _Versioned.from_address(address)
    return managed.dl_tensor.dtype if managed.major == 1 else None


def describe_dtype(code: int, bits: int, lanes: int) -> str:
    """A DLPack dtype as people read it: "bfloat16", "complex32", "float8_e4m3fn", "float32x4"."""
    if code in _FULL_NAMES:
        name = _FULL_NAMES[code]
    elif code in _CODE_NAMES:
        name = f"{_CODE_NAMES[code]}{bits}"
    else:
        name = f"type code {code} of {bits} bits"
    return name if lanes == 1 else f"{name}x{lanes}"


class _Relabelled:
    """A producer seen through a consumer's ``from_dlpack``: each capsule it exports is passed
    on with a bfloat16 dtype relabelled uint16, and its dtype noted (for error messages)."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.dtype: tuple[int, int, int] | None = None
        self.bfloat16 = False

    def __dlpack_device__(self) -> Any:
        return self.value.__dlpack_device__()

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        capsule = self.value.__dlpack__(*args, **kwargs)
        field = _dtype_field(capsule)
        if field is not None:
            self.dtype = (field.code, field.bits, field.lanes)
            if self.dtype == (KDL_BFLOAT, 16, 1):
                field.code = KDL_UINT
                self.bfloat16 = True
        return capsule


# The DLPack dtypes NumPy reads as (code, bits, lanes); bfloat16 is relabelled before it looks.
_NUMPY_READS = {
    *((code, bits, 1) for code in (KDL_INT, KDL_UINT) for bits in (8, 16, 32, 64)),
    *((KDL_FLOAT, bits, 1) for bits in (16, 32, 64)),
    (KDL_COMPLEX, 64, 1),
    (KDL_COMPLEX, 128, 1),
    (KDL_BOOL, 8, 1),
}


def host_view(value: Any, what: str, expected: str = "") -> np.ndarray:
    """``value`` (an object with ``__dlpack__`` whose memory the host reads) as a NumPy array of
    the same memory: read-only if the producer says so (or cannot: NumPy views legacy capsules
    read-only), bfloat16 as ml_dtypes' bfloat16.

    A FeedError says why it cannot be: the producer's own reason (PyTorch's for a tensor that
    requires grad) or the dtype NumPy lacks, naming ``what`` (``"feed 'x'"``), with
    ``expected`` (what would do) appended."""
    producer = _Relabelled(value)
    try:
        array = np.from_dlpack(producer)
        if producer.bfloat16:
            array = array.view(numpy_dtype("bfloat16"))
    except Exception as e:  # the producer's __dlpack__ refused, NumPy cannot read the dtype...
        unreadable = producer.dtype not in _NUMPY_READS and not producer.bfloat16
        if producer.dtype is not None and unreadable:
            reason = f"NumPy has no dtype for its {describe_dtype(*producer.dtype)} values"
        else:
            reason = f"{type(e).__name__}: {brief(str(e), 160)}"
        raise FeedError(
            f"{what} ({type(value).__name__}) cannot be read through DLPack: {reason}{expected}"
        ) from None
    return array


def dlpack_device(value: Any, what: str) -> tuple[int, int]:
    """``value.__dlpack_device__()``, checked: (DLDeviceType, device index). A FeedError naming
    ``what`` if it raises or answers anything else."""
    try:
        kind, index = value.__dlpack_device__()
        kind, index = int(kind), int(index)  # (an IntEnum: PyTorch's DLDeviceType)
    except Exception as e:
        raise FeedError(
            f"{what} ({type(value).__name__}) cannot be read through DLPack: its "
            f"__dlpack_device__() gave no (device type, index) ({type(e).__name__}: "
            f"{brief(str(e), 160)})"
        ) from None
    return kind, index


def to_dlpack(array: Any) -> Any:
    """A DLPack capsule of ``array``'s memory, no copy (``array``: a NumPy array, a CuPy array,
    anything with ``__dlpack__``). The legacy capsule, which every consumer reads; a read-only
    NumPy array gets a DLPack 1.0 versioned one, the only kind that can say read-only. NumPy
    bfloat16 arrays export too (NumPy's own ``__dlpack__`` refuses them).

    The capsule can be consumed once (``torch.from_dlpack(capsule)``); it keeps ``array``'s
    memory alive until then, or until it is dropped.
    """
    if not hasattr(array, "__dlpack__"):
        raise FeedError(
            f"to_dlpack takes an array with __dlpack__ (NumPy, CuPy...), got {type(array).__name__}"
        )
    bfloat16 = isinstance(array, np.ndarray) and array.dtype.name == "bfloat16"
    exported = array.view(np.uint16) if bfloat16 else array
    readonly = isinstance(array, np.ndarray) and not array.flags.writeable
    try:
        capsule = exported.__dlpack__(max_version=(1, 0)) if readonly else exported.__dlpack__()
    except Exception as e:  # a dtype or layout the exporter refuses, an unready array
        raise FeedError(
            f"to_dlpack: {type(array).__name__} {getattr(array, 'dtype', '')} cannot be "
            f"exported ({type(e).__name__}: {brief(str(e), 160)})"
        ) from None
    if bfloat16:
        field = _dtype_field(capsule)
        if field is None or (field.code, field.bits) != (KDL_UINT, 16):
            raise FeedError("to_dlpack: NumPy exported a bfloat16 array's capsule unreadably")
        field.code = KDL_BFLOAT
    return capsule


def device_name(kind: int, index: int) -> str:
    """A DLPack device as people read it: "cuda:0", "metal:0", "device type 99:0"."""
    return f"{DEVICE_NAMES.get(kind, f'device type {kind}')}:{index}"


def has_dlpack(value: Any) -> bool:
    """Whether ``value`` speaks DLPack (both methods: the protocol needs both)."""
    return hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__")
