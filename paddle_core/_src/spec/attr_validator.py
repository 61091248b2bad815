"""Attribute validation: a pydantic-validated TypedDict per op, built on first use from its
AttrProtos.

Types are checked strictly (``scale="2"`` and ``scale=True`` are errors, not 2.0 and 1.0;
NumPy scalars are accepted as the numbers they are), ranges become ``ge``/``gt``/``le``/``lt``
constraints, choices become ``Literal``s, unknown names are forbidden. Every failure is raised
as one ``AttrError`` naming the op, the attr, what was expected and what was given.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Required

import pydantic
from pydantic import BeforeValidator, ConfigDict, Field
from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from ...proto import framework_pb2 as pb
from ..base.errors import AttrError, did_you_mean, shown
from ..base.limits import MAX_LIST_ITEMS, take
from . import attrs as A
from .opdoc import expectation


def _is_bool(value: Any) -> bool:
    # NumPy's bool scalar is not a bool subclass; its class is numpy.bool_ ("bool" since NumPy 2).
    cls = type(value)
    return isinstance(value, bool) or (
        cls.__module__ == "numpy" and cls.__name__ in ("bool", "bool_")
    )


def _as_int(value: Any) -> int:
    if type(value) is int:
        return value
    if _is_bool(value) or isinstance(value, (str, bytes, float)):
        raise ValueError("not an int")
    try:
        return operator.index(value)  # int and NumPy integers
    except Exception:  # not an integer, or a hostile __index__
        raise ValueError("not an int") from None


def _as_float(value: Any) -> float:
    if type(value) is float:
        return value
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise ValueError("not a number")
    try:
        result = float(value)
    except OverflowError:  # an int beyond float's range
        raise ValueError("too large for a float") from None
    except Exception:  # a hostile __float__
        raise ValueError("not a number") from None
    # An integer a double cannot hold (beyond 2**53) is refused, not rounded: int64 fills
    # take their value from this double, and would silently hold a neighbour.
    if isinstance(value, numbers.Integral):
        try:
            exact = operator.index(value)
        except Exception:  # a hostile __index__
            raise ValueError("not a number") from None
        if int(result) != exact:
            raise ValueError("not exactly a float")
    return result


def _as_str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("not a str")
    return value


def _as_bool(value: Any) -> bool:
    if value is True or value is False:
        return value
    if not _is_bool(value):
        raise ValueError("not a bool")
    return bool(value)


def _as_block(value: Any) -> int:
    # What an OpDesc stores: the block's index. (Appending turns a Block into its index.)
    if type(value) is int and value >= 0:
        return value
    raise ValueError("not a Block")


def _as_list(value: Any) -> list:
    items = take(value, MAX_LIST_ITEMS)
    if items is None:
        raise ValueError("not a list")
    if len(items) > MAX_LIST_ITEMS:
        raise ValueError(f"more than {MAX_LIST_ITEMS} items")
    return items


_SCALAR = {
    pb.INT: (int, _as_int),
    pb.LONG: (int, _as_int),
    pb.FLOAT: (float, _as_float),
    pb.STRING: (str, _as_str),
    pb.BOOL: (bool, _as_bool),
    pb.BLOCK: (int, _as_block),
}


def _scalar_annotation(ap: pb.AttrProto, scalar_type: int) -> Any:
    python_type, coerce = _SCALAR[scalar_type]
    constraints: dict[str, float] = {}
    low, high = A.INT_LIMITS.get(scalar_type, (None, None))
    if low is not None:
        constraints.update(ge=low, le=high)
    if ap.HasField("min"):
        constraints["gt" if ap.min.exclusive else "ge"] = ap.min.value
        constraints.pop("ge" if ap.min.exclusive else "gt", None)
    if ap.HasField("max"):
        constraints["lt" if ap.max.exclusive else "le"] = ap.max.value
        constraints.pop("le" if ap.max.exclusive else "lt", None)
    if scalar_type == pb.FLOAT and (ap.HasField("min") or ap.HasField("max")):
        # A range's open side ends before infinity: (0, inf) refuses inf. A bound declared as
        # an inclusive infinity lets it in.
        constraints.setdefault("gt" if "ge" not in constraints else "ge", -math.inf)
        constraints.setdefault("lt" if "le" not in constraints else "le", math.inf)
    if ap.HasField("choices"):
        # Choices were checked against the range when the manifest loaded; they are the
        # whole constraint (and Literal takes no numeric constraints).
        allowed = tuple(A.from_attr_value(ap.choices))
        if scalar_type == pb.FLOAT:  # typing.Literal does not take floats
            python_type = Annotated[float, pydantic.AfterValidator(_member_of(frozenset(allowed)))]
        else:
            python_type = Literal[allowed]  # type: ignore[valid-type]
        constraints = {}
    return Annotated[python_type, BeforeValidator(coerce), Field(**constraints)]


def _beyond_width(ap: pb.AttrProto, item: Any) -> str:
    """ ", outside the 32-bit range [...]" for an integer its attr's type cannot hold; for an
    integer a float attr's double cannot hold exactly, the nearest double."""
    scalar_type = A.ELEMENT_TYPE.get(ap.type, ap.type)
    if _is_bool(item) or scalar_type not in (*A.INT_LIMITS, pb.FLOAT):
        return ""
    try:
        number = operator.index(item)
    except Exception:  # not an integer, or a hostile object whose __index__ raises
        return ""
    if scalar_type == pb.FLOAT:
        nearest = float(number) if abs(number) < 2**1024 else None
        if nearest is None or int(nearest) == number:
            return ""
        return f", which no double holds exactly (the nearest is {nearest!r})"
    low, high = A.INT_LIMITS[scalar_type]
    if low <= number <= high:
        return ""
    bits = 32 if scalar_type == pb.INT else 64
    return f", outside the {bits}-bit range [{low}, {high}]"


def _member_of(allowed: frozenset):
    def check(value: Any) -> Any:
        if value not in allowed:
            raise ValueError("not one of the choices")
        return value

    return check


def annotation(ap: pb.AttrProto) -> Any:
    """The pydantic type of one attribute."""
    element = A.ELEMENT_TYPE.get(ap.type)
    if element is None:
        return _scalar_annotation(ap, ap.type)
    return Annotated[list[_scalar_annotation(ap, element)], BeforeValidator(_as_list)]


MAX_SEEN = 256  # validated attrs kept per op type
_EXACT = frozenset({bool, int, str})  # types whose equal values validate alike


def _exact_key(given: Any, count: int) -> tuple | None:
    """``given``, a dict of ``count`` attrs (every attr of the op), as a key that only attrs
    validating to the same values share: each value with its type, a float with its sign
    (0.0 == -0.0); None where a value is of another type (a list, a NumPy scalar) or
    ``given`` is something else."""
    if type(given) is not dict or len(given) != count:
        return None
    key = []
    for name, value in given.items():
        kind = value.__class__
        if kind is float:
            key.append((name, kind, value, math.copysign(1.0, value)))
        elif kind in _EXACT:
            key.append((name, kind, value))
        else:
            return None
    return tuple(key)


class AttrValidator:
    """Validates the attrs of one op type: ``validate(dict) -> dict`` with defaults filled in."""

    def __init__(self, info: Any) -> None:
        self.op = info.type
        self.protos = {ap.name: ap for ap in info.proto.attrs}
        self._names = list(self.protos)
        # A TypedDict validates into a dict, at half a model's cost per op appended; defaults
        # are filled in from this template, in the protos' order (a required attr's None is
        # always replaced, since the validator insists on it).
        defaults = info.attr_defaults
        self._template = {name: defaults.get(name) for name in self._names}
        self._list_defaults = tuple(n for n in self._names if isinstance(defaults.get(n), list))
        fields = {
            ap.name: annotation(ap) if ap.name in defaults else Required[annotation(ap)]
            for ap in info.proto.attrs
        }
        schema = TypedDict(f"{info.type}_attrs", fields, total=False)  # type: ignore[operator]
        schema.__pydantic_config__ = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
        self._validate = pydantic.TypeAdapter(schema).validator.validate_python
        # Every attr's value as the generated API gives them -> the validated attrs: a program
        # appends the same op with the same attrs many times (an imported model, a layer per
        # block), and pydantic's 1-2 µs are a tenth of an append.
        self._seen: dict[tuple, dict[str, Any]] = {}
        self.block_attrs = tuple(ap.name for ap in info.proto.attrs if ap.type == pb.BLOCK)

    def validate(self, given: dict[str, Any]) -> dict[str, Any]:
        key = _exact_key(given, len(self._names))
        if key is not None:
            seen = self._seen.get(key)
            if seen is not None:
                return seen.copy()
        validated = self._validated(given)
        if key is not None and len(self._seen) < MAX_SEEN:
            self._seen[key] = validated.copy()
        return validated

    def _validated(self, given: dict[str, Any]) -> dict[str, Any]:
        if type(given) is not dict and not isinstance(given, Mapping):
            raise AttrError(
                f"op {self.op!r}: attrs must be a dict of attr name -> value, got "
                f"{type(given).__name__} {shown(given)}",
                op=self.op,
                attr="",
            )
        for name in given:
            if type(name) is not str:
                raise AttrError(
                    f"op {self.op!r}: attr names must be strings, got "
                    f"{type(name).__name__} {shown(name)}; its attrs are: "
                    f"{', '.join(self._names)}",
                    op=self.op,
                    attr=shown(name),
                )
        try:
            validated = self._validate(given)
        except pydantic.ValidationError as e:
            raise self._error(e, given) from None
        if len(validated) == len(self._names):  # every attr given, as the generated API does
            return validated  # (in the protos' order: the validator's fields are in it)
        values = self._template.copy()
        values.update(validated)
        for name in self._list_defaults:  # each op its own list: a default is never shared
            if name not in validated:
                values[name] = list(values[name])
        return values

    def _error(self, error: pydantic.ValidationError, given: dict[str, Any]) -> AttrError:
        first = error.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "?"
        if first["type"] == "extra_forbidden":
            known = ", ".join(self._names) or "none"
            return AttrError(
                f"op {self.op!r} has no attr {name!r}{did_you_mean(name, self._names)}; "
                f"its attrs are: {known}",
                op=self.op,
                attr=name,
            )
        ap = self.protos[name]
        if first["type"] == "missing":
            return AttrError(
                f"op {self.op!r}, attr {name!r}: a value is required ({expectation(ap)})",
                op=self.op,
                attr=name,
            )
        value = item = given.get(name)
        got = f"{type(value).__name__} {shown(value)}"
        if ap.type in A.LIST_TYPES and len(first["loc"]) > 1:
            index = first["loc"][1]
            item = first["input"]  # the element as given (``value`` may be a set or an iterator)
            got += f" (item {index}: {type(item).__name__} {shown(item)})"
        got += _beyond_width(ap, item)
        hint = ""
        if ap.HasField("choices") and isinstance(value, str):
            hint = did_you_mean(value, A.from_attr_value(ap.choices))
        return AttrError(
            f"op {self.op!r}, attr {name!r}: expected {expectation(ap)}, got {got}{hint}",
            op=self.op,
            attr=name,
        )
