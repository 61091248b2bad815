"""Element types: canonical names (NumPy's) and their protobuf enum values.

Names are the public currency ("float32"); the enum is only for the wire format. This module
imports neither NumPy nor protobuf at import time, so listing paths stay light. NumPy has no
bfloat16 of its own: ml_dtypes (a dependency) registers it, and ``numpy_dtype`` imports it
when a bfloat16 array is first made.
"""

from __future__ import annotations

from .errors import PaddleCoreError, did_you_mean, shown

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing would slow `paddle-ops list`
if TYPE_CHECKING:
    from typing import Any

# Canonical names, in VarType.DataType order (enum value = position + 1).
# tests/core/base/test_proto.py checks this against the generated enum.
DTYPES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "uint16",
    "uint32",
    "uint64",
)
_TO_ENUM = {name: i + 1 for i, name in enumerate(DTYPES)}
FLOATING = frozenset({"float16", "bfloat16", "float32", "float64"})
INTEGER = frozenset(name for name in DTYPES if "int" in name)
# The same names for people to read: by kind (bool, int, uint, float), then in enum order.
SHOWN_DTYPES = ", ".join(
    sorted(DTYPES, key=lambda n: (n != "bool", n in FLOATING, n.startswith("u"), _TO_ENUM[n]))
)


def to_enum(name: str) -> int:
    """The VarType.DataType value of a canonical dtype name."""
    return _TO_ENUM[name]


def from_enum(value: int) -> str:
    """The canonical name of a VarType.DataType value."""
    if not 1 <= value <= len(DTYPES):
        raise PaddleCoreError(f"unknown dtype enum value {value}")
    return DTYPES[value - 1]


def numpy_dtype(name: str) -> Any:
    """NumPy's dtype of a canonical name; bfloat16 is ml_dtypes'. Raises TypeError when NumPy
    cannot hold it (bfloat16 without ml_dtypes installed)."""
    import numpy as np  # (only where arrays are made: listing never needs NumPy)

    if name == "bfloat16":
        try:
            import ml_dtypes  # noqa: F401  (importing it registers bfloat16 with NumPy)
        except ImportError:
            raise TypeError(
                "NumPy has no bfloat16 without ml_dtypes (pip install ml_dtypes)"
            ) from None
    return np.dtype(name)


def canonical(dtype: Any) -> str:
    """Normalise a dtype given as a name, a NumPy dtype or a NumPy scalar type.

    Raises ``PaddleCoreError`` naming the supported dtypes for anything else.
    """
    if isinstance(dtype, str):
        if dtype in _TO_ENUM:
            return dtype
        name = dtype
    else:
        try:
            import numpy as np  # (only for non-str dtypes: listing never needs NumPy)

            name = np.dtype(dtype).name
        except Exception:  # not a dtype, or a hostile object
            name = shown(dtype)
        if name in _TO_ENUM:
            return name
    raise PaddleCoreError(
        f"unsupported dtype {name!r}{did_you_mean(name, DTYPES)}; supported: {SHOWN_DTYPES}"
    )


_NUMPY_NAMES: dict[Any, str] = {}


def name_of(dtype: Any) -> str:
    """The canonical name of a NumPy dtype object, or its NumPy name for others. A dtype of
    non-native byte order is none of ours: it gets its type string (">f4"), which no
    canonical name equals, so that no kernel reads its bytes as native ones.

    A dict lookup: NumPy's ``dtype.name`` is a Python property costing about 3 µs, which the
    executor would pay per feed per run.
    """
    name = _NUMPY_NAMES.get(dtype)
    if name is None:
        native = getattr(dtype, "isnative", True)
        name = _NUMPY_NAMES[dtype] = dtype.name if native else dtype.str
    return name


# Bytes per element, read off the names (the bits they end with; bool is a byte). The C side's
# pc_dtype_size (kernel_abi.h) is checked against this by tests/core/surface/test_sdk.py.
ITEMSIZE = {name: int(name.lstrip("abcdefghijklmnopqrstuvwxyz") or 8) // 8 for name in DTYPES}


def _int_range(name: str) -> tuple[int, int]:
    bits = 8 * ITEMSIZE[name]
    return (0, 2**bits - 1) if name.startswith("u") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


# The values each integer dtype holds, (lowest, highest).
INT_RANGE = {name: _int_range(name) for name in DTYPES if name in INTEGER}
