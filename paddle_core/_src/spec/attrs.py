"""Attribute values: Python <-> AttrValue, and how each AttrType reads in messages and docs."""

from __future__ import annotations

from typing import Any

from ...proto import framework_pb2 as pb

# The AttrValue field that holds each type's value.
VALUE_FIELD: dict[int, str] = {
    pb.INT: "i",
    pb.FLOAT: "f",
    pb.STRING: "s",
    pb.BOOL: "b",
    pb.LONG: "l",
    pb.INTS: "ints",
    pb.FLOATS: "floats",
    pb.STRINGS: "strings",
    pb.BOOLS: "bools",
    pb.BLOCK: "block_idx",
    pb.LONGS: "longs",
}
LIST_TYPES = frozenset({pb.INTS, pb.LONGS, pb.FLOATS, pb.STRINGS, pb.BOOLS})
NUMERIC_TYPES = frozenset({pb.INT, pb.LONG, pb.FLOAT, pb.INTS, pb.LONGS, pb.FLOATS})
# The element type of each list type.
ELEMENT_TYPE: dict[int, int] = {
    pb.INTS: pb.INT,
    pb.LONGS: pb.LONG,
    pb.FLOATS: pb.FLOAT,
    pb.STRINGS: pb.STRING,
    pb.BOOLS: pb.BOOL,
}
# The values an integer type holds: INT and INTS elements are 32-bit, LONG and LONGS 64-bit.
INT_LIMITS: dict[int, tuple[int, int]] = {
    pb.INT: (-(2**31), 2**31 - 1),
    pb.LONG: (-(2**63), 2**63 - 1),
}
# The list field that holds the allowed values of each type's `choices`.
CHOICES_FIELD: dict[int, str] = {
    pb.INT: "ints",
    pb.LONG: "ints",
    pb.FLOAT: "floats",
    pb.STRING: "strings",
    pb.INTS: "ints",
    pb.LONGS: "longs",
    pb.FLOATS: "floats",
    pb.STRINGS: "strings",
}
# What a value of each type is, for error messages and docstrings.
DESCRIPTION: dict[int, str] = {
    pb.INT: "an int (32-bit)",
    pb.FLOAT: "a float",
    pb.STRING: "a str",
    pb.BOOL: "a bool",
    pb.LONG: "an int (64-bit)",
    pb.INTS: "a list of ints",
    pb.LONGS: "a list of ints (64-bit)",
    pb.FLOATS: "a list of floats",
    pb.STRINGS: "a list of str",
    pb.BOOLS: "a list of bools",
    pb.BLOCK: "a Block",
}
# Python annotations for generated stubs.
ANNOTATION: dict[int, str] = {
    pb.INT: "int",
    pb.FLOAT: "float",
    pb.STRING: "str",
    pb.BOOL: "bool",
    pb.LONG: "int",
    pb.INTS: "Sequence[int]",
    pb.LONGS: "Sequence[int]",
    pb.FLOATS: "Sequence[float]",
    pb.STRINGS: "Sequence[str]",
    pb.BOOLS: "Sequence[bool]",
    pb.BLOCK: "Block",
}


def type_name(attr_type: int) -> str:
    """ "FLOAT", "INTS"... for an AttrType value."""
    return pb.AttrType.Name(attr_type)


def set_fields(av: pb.AttrValue) -> list[str]:
    """Names of the value fields of ``av`` that hold something."""
    return [f.name for f, _ in av.ListFields() if f.name != "type"]


def from_attr_value(av: pb.AttrValue, attr_type: int | None = None) -> Any:
    """The Python value held by ``av`` (lists for list types), read as ``attr_type`` if given."""
    value = getattr(av, VALUE_FIELD[attr_type if attr_type is not None else av.type])
    return list(value) if not isinstance(value, (int, float, str, bool)) else value


def to_attr_value(attr_type: int, value: Any, out: pb.AttrValue | None = None) -> pb.AttrValue:
    """Store an already validated Python value of ``attr_type`` into an AttrValue."""
    av = pb.AttrValue() if out is None else out
    av.type = attr_type
    field = VALUE_FIELD[attr_type]
    if attr_type in LIST_TYPES:
        getattr(av, field).extend(value)
    else:
        setattr(av, field, value)
    return av


def render(value: Any) -> str:
    """A Python-literal rendering of an attribute value for docs and tables."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return f"{value:.1f}"
    return repr(value)


def infer_attr_value(value: Any, out: pb.AttrValue | None = None) -> pb.AttrValue:
    """Store a value with no declared type (e.g. initializer attrs), typed from the value.

    bool -> BOOL, int -> INT (LONG beyond 32 bits), float -> FLOAT, str -> STRING, and lists of
    one of those (ints: INTS, LONGS beyond 32 bits; an empty list is INTS). Anything else raises
    TypeError.
    """
    items = list(value) if isinstance(value, (list, tuple)) else None
    sample = value if items is None else (items[0] if items else 0)
    if isinstance(sample, bool):
        scalar = pb.BOOL
    elif isinstance(sample, int):
        low, high = INT_LIMITS[pb.INT]
        wide = any(not low <= v <= high for v in (items if items is not None else [value]))
        scalar = pb.LONG if wide else pb.INT
    elif isinstance(sample, float):
        scalar = pb.FLOAT
    elif isinstance(sample, str):
        scalar = pb.STRING
    else:
        raise TypeError(f"cannot store {type(sample).__name__} {sample!r} as an attribute value")
    if items is None:
        return to_attr_value(scalar, value, out)
    list_type = {element: list_type for list_type, element in ELEMENT_TYPE.items()}
    if any(type(v) is not type(sample) for v in items):
        raise TypeError(f"attribute list {value!r} mixes element types")
    return to_attr_value(list_type[scalar], items, out)


def describe_range(ap: pb.AttrProto) -> str:
    """Interval notation for an attr's bounds: "[0, 1)", "(0, inf)", "" when unbounded."""
    if not (ap.HasField("min") or ap.HasField("max")):
        return ""
    lo = f"{ap.min.value:g}" if ap.HasField("min") else "-inf"
    hi = f"{ap.max.value:g}" if ap.HasField("max") else "inf"
    left = "(" if not ap.HasField("min") or ap.min.exclusive else "["
    right = ")" if not ap.HasField("max") or ap.max.exclusive else "]"
    return f"{left}{lo}, {hi}{right}"
