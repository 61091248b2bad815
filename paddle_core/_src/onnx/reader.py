"""Reading an ONNX file as untrusted input: the model, its tensors and their external data.

Nothing here trusts the file. The model is parsed by protobuf (a malformed one is an error, and
protobuf bounds nesting); a tensor's bytes must agree with its dtype and shape before anything is
allocated, and every allocation counts against one budget (``max_bytes``); external data may be
read only from files inside the model's own directory (no absolute paths, no "..", no symlink
leaving it), within each file's length. Each refusal is an OnnxError naming the tensor.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from ...proto import onnx_pb2 as onnx
from ..base.dtypes import numpy_dtype
from ..base.errors import OnnxError, brief

# The largest model read by default: protobuf's own limit on one message (external data, read
# separately, counts against the same budget).
MAX_BYTES = 2**31 - 1

T = onnx.TensorProto
# ONNX element type -> NumPy's dtype name; the others (strings, complex, 4- and 8-bit floats)
# have no dtype of ours.
DTYPES = {
    T.FLOAT: "float32",
    T.UINT8: "uint8",
    T.INT8: "int8",
    T.UINT16: "uint16",
    T.INT16: "int16",
    T.INT32: "int32",
    T.INT64: "int64",
    T.BOOL: "bool",
    T.FLOAT16: "float16",
    T.DOUBLE: "float64",
    T.UINT32: "uint32",
    T.UINT64: "uint64",
    T.BFLOAT16: "bfloat16",
}
ELEMENT_TYPES = {name: code for code, name in DTYPES.items()}
# The repeated field holding a tensor's values when it has no raw_data (ONNX's rules: the small
# types and the 16-bit floats' bit patterns travel in int32_data).
_TYPED_FIELD = {
    T.FLOAT: "float_data",
    T.DOUBLE: "double_data",
    T.INT64: "int64_data",
    T.UINT32: "uint64_data",
    T.UINT64: "uint64_data",
}
_BITS16 = {T.FLOAT16: "uint16", T.BFLOAT16: "uint16"}


def element_type_name(code: int) -> str:
    try:
        return T.DataType.Name(code)
    except ValueError:
        return f"element type {code}"


def dtype_name(code: int, node: Any = None) -> str:
    """Our dtype for an ONNX element type (Cast's `to`), for rules; an error names ``node``."""
    return dtype_of(code, node.label if node is not None else "element type")


def element_type(dtype: str) -> int:
    """The ONNX element type of our dtype (for export rules: Cast's `to`)."""
    if dtype not in ELEMENT_TYPES:
        raise OnnxError(f"dtype {dtype!r} has no ONNX element type here")
    return ELEMENT_TYPES[dtype]


def dtype_of(code: int, what: str) -> str:
    """Our dtype name for an ONNX element type, or an OnnxError naming ``what``."""
    if code not in DTYPES:
        raise OnnxError(
            f"{what}: {element_type_name(code)} has no dtype here (supported: "
            f"{', '.join(T.DataType.Name(c) for c in DTYPES)})"
        )
    return DTYPES[code]


class Budget:
    """Bytes the model may still make us hold; each tensor takes its share before it exists."""

    def __init__(self, limit: int) -> None:
        self.limit = self.left = limit

    def take(self, nbytes: int, what: str) -> None:
        if nbytes > self.left:
            raise OnnxError(
                f"{what}: {nbytes} bytes would take the model past its limit of {self.limit} "
                "bytes (pc.onnx.load's max_bytes)"
            )
        self.left -= nbytes


def read_model(source: Any, max_bytes: int = MAX_BYTES) -> tuple[onnx.ModelProto, Path | None]:
    """Parse a model from a path or bytes; return it with the directory its external data may
    come from (None for bytes: such a model may not name external data)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, base = bytes(source), None
        if len(data) > max_bytes:
            raise OnnxError(f"the model is {len(data)} bytes, over the limit of {max_bytes}")
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            size = path.stat().st_size
            if not path.is_file():
                raise OnnxError(f"{str(path)!r} is not a file")
            if size > max_bytes:
                raise OnnxError(f"{str(path)!r} is {size} bytes, over the limit of {max_bytes}")
            data = path.read_bytes()
        except OSError as e:
            raise OnnxError(f"cannot read the model {str(path)!r}: {e.strerror or e}") from None
        base = path.resolve().parent
    else:
        raise OnnxError(
            f"a model is a path or bytes, got {type(source).__name__} (an onnx.ModelProto: "
            "pass model.SerializeToString())"
        )
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError, or its recursion limit
        raise OnnxError(f"not an ONNX model: the protobuf cannot be parsed ({e})") from None
    if not model.HasField("graph"):
        raise OnnxError("not an ONNX model: it has no graph")
    return model, base


def tensor_array(
    tensor: onnx.TensorProto, what: str, budget: Budget, base: Path | None
) -> np.ndarray:
    """A TensorProto's values as an array, each size checked against the dtype and shape
    before anything is read or allocated."""
    what = f"{what} {brief(tensor.name)!r}" if tensor.name else what
    dtype = np.dtype(numpy_dtype(dtype_of(tensor.data_type, what)))
    shape = list(tensor.dims)
    if any(d < 0 for d in shape):
        raise OnnxError(f"{what}: negative dimension in {shape}")
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    budget.take(nbytes, what)
    if tensor.HasField("segment"):
        raise OnnxError(f"{what}: segmented tensors are not supported")
    if tensor.data_location == T.EXTERNAL:
        raw = _external(tensor, what, nbytes, base)
    elif tensor.HasField("raw_data"):
        raw = tensor.raw_data
        if len(raw) != nbytes:
            raise OnnxError(
                f"{what}: raw_data has {len(raw)} bytes, but {count} {dtype.name} values "
                f"{shape} take {nbytes}"
            )
    else:
        return _typed_values(tensor, what, dtype, count).reshape(shape)
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def _typed_values(tensor: onnx.TensorProto, what: str, dtype: np.dtype, count: int) -> np.ndarray:
    field = _TYPED_FIELD.get(tensor.data_type, "int32_data")
    values = getattr(tensor, field)
    if len(values) != count:
        raise OnnxError(f"{what}: {field} has {len(values)} values, its shape needs {count}")
    if tensor.data_type in _BITS16:
        bits = np.array(values, dtype=np.int64)
        if bits.size and (bits.min() < 0 or bits.max() > 0xFFFF):
            raise OnnxError(f"{what}: a 16-bit float's bit pattern is out of range")
        return bits.astype(np.uint16).view(dtype)
    try:
        return np.array(values, dtype=np.int64 if field == "int32_data" else None).astype(dtype)
    except OverflowError:
        raise OnnxError(f"{what}: a value does not fit {dtype.name}") from None


def _external(tensor: onnx.TensorProto, what: str, nbytes: int, base: Path | None) -> bytes:
    """The bytes of an external tensor, read only from a file inside ``base``."""
    info = {entry.key: entry.value for entry in tensor.external_data}
    if base is None:
        raise OnnxError(f"{what}: external data needs the model loaded from a file, not bytes")
    location = info.get("location", "")
    parts = Path(location).parts
    if not location or Path(location).is_absolute() or ".." in parts or "\0" in location:
        raise OnnxError(
            f"{what}: external data location {brief(location)!r} must be a relative path inside "
            "the model's directory"
        )
    path = (base / location).resolve()
    if not path.is_relative_to(base):
        raise OnnxError(
            f"{what}: external data location {brief(location)!r} leaves the model's directory "
            "(through a symlink)"
        )
    try:
        offset = int(info.get("offset", "0"))
        length = int(info.get("length", str(nbytes)))
    except ValueError:
        raise OnnxError(f"{what}: external data offset and length must be integers") from None
    if length != nbytes:
        raise OnnxError(f"{what}: external data length {length}, its dtype and shape take {nbytes}")
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if offset < 0 or offset + length > size:
                raise OnnxError(
                    f"{what}: external data at offset {offset}, {length} bytes, is past the end "
                    f"of {location!r} ({size} bytes)"
                )
            f.seek(offset)
            return f.read(length)
    except OSError as e:
        raise OnnxError(f"{what}: cannot read external data {location!r}: {e.strerror}") from None
