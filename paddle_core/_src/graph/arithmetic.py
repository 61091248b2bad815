"""Python's operators on Variables (and on a model's Expressions): ``a + b`` appends ``add``.

``+ - * / // % ** @``, unary ``-`` and ``abs()`` append the ops ``add``, ``sub``, ``mul``,
``div``, ``mod``, ``pow``, ``matmul``, ``neg`` and ``abs`` (paddle-ops-math's), as the
generated functions in ``pc.ops`` do: to the current block. A Python or NumPy number beside a
tensor becomes a 0-d ``fill_constant`` of the tensor's dtype, broadcast by the op. Where that
would not compute what NumPy does, the operator is refused, saying what to write instead: a
float beside an integer tensor (``x_int32 * 2.5``, ``x_int32 * 2.0``: NumPy computes in
floats), ``/`` of integers (which ``div`` floors), ``//`` of floats, a number an integer
tensor's dtype cannot hold, a negative power of integers, arithmetic of bool tensors.
``==`` and the other comparisons stay Python's: variables are dict keys (feeds), so they
compare by identity; use ``pc.ops.equal`` and ``pc.ops.less``.
"""

from __future__ import annotations

import sys
from numbers import Integral, Real
from typing import Any

import numpy as np

from ..base.dtypes import INTEGER
from ..base.errors import OpInputError, shown


class Arithmetic:
    """The operators; ``_apply(op, operands)`` appends the op (the class says where)."""

    __slots__ = ()
    # NumPy defers to these: `array * x` comes here (and is refused), where it would otherwise
    # make an object array of one op per element.
    __array_ufunc__ = None
    # Between two kinds, the higher rank's operator appends: `variable + expression` is the
    # expression's model's (Expression ranks above Variable).
    _rank = 0

    def _apply(self, op: str, operands: tuple) -> Any:
        raise NotImplementedError

    def _binary(self, op: str, symbol: str, left: Any, right: Any) -> Any:
        other = right if left is self else left
        if isinstance(other, Arithmetic) and other._rank > self._rank:
            return NotImplemented  # (Python calls the other operand's reflected operator)
        dtype = self.dtype  # type: ignore[attr-defined]
        number = None if isinstance(other, Arithmetic) else _number(other)
        if number is None and not isinstance(other, Arithmetic):
            problem = (
                f"the operands of '{symbol}' are variables and numbers, not "
                f"{type(other).__name__} (an array: feed it through a data variable)"
            )
        else:
            problem = _problem(symbol, dtype, number, left is self)
        if problem:
            raise OpInputError(f"{_operand(left)} {symbol} {_operand(right)}: {problem}", op=op)
        if number is not None:  # (a float tensor's number rounds to it, as NumPy's does)
            other = number if dtype in INTEGER else float(number)
        return self._apply(op, (self, other) if left is self else (other, self))

    def _unary(self, op: str, symbol: str) -> Any:
        if self.dtype == "bool":  # type: ignore[attr-defined]
            raise OpInputError(f"{symbol}{_operand(self)}: {_BOOL}", op=op)
        return self._apply(op, (self,))

    def __add__(self, other: Any) -> Any:
        return self._binary("add", "+", self, other)

    def __radd__(self, other: Any) -> Any:
        return self._binary("add", "+", other, self)

    def __sub__(self, other: Any) -> Any:
        return self._binary("sub", "-", self, other)

    def __rsub__(self, other: Any) -> Any:
        return self._binary("sub", "-", other, self)

    def __mul__(self, other: Any) -> Any:
        return self._binary("mul", "*", self, other)

    def __rmul__(self, other: Any) -> Any:
        return self._binary("mul", "*", other, self)

    def __truediv__(self, other: Any) -> Any:
        return self._binary("div", "/", self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return self._binary("div", "/", other, self)

    def __floordiv__(self, other: Any) -> Any:
        return self._binary("div", "//", self, other)  # (div floors integers, as NumPy's //)

    def __rfloordiv__(self, other: Any) -> Any:
        return self._binary("div", "//", other, self)

    def __mod__(self, other: Any) -> Any:
        return self._binary("mod", "%", self, other)

    def __rmod__(self, other: Any) -> Any:
        return self._binary("mod", "%", other, self)

    def __pow__(self, other: Any, modulo: Any = None) -> Any:
        return NotImplemented if modulo is not None else self._binary("pow", "**", self, other)

    def __rpow__(self, other: Any) -> Any:
        return self._binary("pow", "**", other, self)

    def __matmul__(self, other: Any) -> Any:
        return self._binary("matmul", "@", self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return self._binary("matmul", "@", other, self)

    def __neg__(self) -> Any:
        return self._unary("neg", "-")

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return self._unary("abs", "abs ")


_BOOL = (
    "arithmetic of bool tensors is not offered; cast to an int or float dtype first (pc.ops.cast)"
)


def _number(value: Any) -> int | float | None:
    """A Python or NumPy number as int (bools as 0 and 1) or float; None for anything else."""
    if isinstance(value, (Integral, np.bool_)):  # (bool is an Integral; NumPy's is not)
        return int(value)
    if isinstance(value, Real):
        return float(value)
    return None


def _problem(symbol: str, dtype: str, number: int | float | None, tensor_left: bool) -> str:
    """Why ``tensor symbol number`` (or ``number symbol tensor``; number None: another tensor)
    is not computed, or ""."""
    if dtype == "bool":
        return _BOOL
    integer = dtype in INTEGER
    if symbol == "/" and integer:
        return (
            "'/' of integers would floor them (the op div does, as NumPy's // does); cast to a "
            "float dtype first (pc.ops.cast), or write // for the floor"
        )
    if symbol == "//" and not integer:
        return "'//' of floats is not offered; write pc.ops.floor(a / b)"
    if number is None:
        return ""
    if symbol == "@":
        return "'@' multiplies matrices, not a matrix by a number; write *"
    if integer and isinstance(number, float):
        return (
            f"{number!r} is a float, and a number takes the tensor's dtype ({dtype}), where "
            "NumPy would compute in floats; cast the tensor to a float dtype first (pc.ops.cast)"
        )
    if integer:
        info = np.iinfo(dtype)
        if not info.min <= number <= info.max:
            return (
                f"{shown(number)} does not fit the tensor's dtype {dtype} [{info.min}, {info.max}]"
            )
        if abs(number) > 2**53:  # (fill_constant's value is a double)
            return f"{number} is beyond 2**53, where a constant is no longer exact; feed it"
        if symbol == "**" and tensor_left and number < 0:
            return (
                "a negative power of integers is a fraction; cast the tensor to a float dtype "
                "first (pc.ops.cast)"
            )
    elif isinstance(number, int) and abs(number) > sys.float_info.max:  # (compared exactly)
        return f"{shown(number)} is beyond the range of float64"
    return ""


def _operand(value: Any) -> str:
    if not isinstance(value, Arithmetic):
        return shown(value)
    name = value.name() if callable(value.name) else value.name  # (Expression.name())
    return f"{name!r} ({value.dtype})"


def append_arithmetic(op: str, operands: tuple) -> Any:
    """Append ``op`` over ``operands`` (Variables and numbers: at least one Variable) to the
    current block; its output Variable."""
    # (append and program import variable.py, which imports this module)
    from ..plugins.registry import get_registry
    from .append import append
    from .program import default_main_program

    registry, block = get_registry(), default_main_program().current_block()
    dtype = next(v for v in operands if isinstance(v, Arithmetic)).dtype
    values = []
    for value in operands:  # a number: a 0-d constant of the tensor's dtype
        if not isinstance(value, Arithmetic):
            attrs = {"shape": [], "dtype": dtype, "value": value}
            _, outs = append(block, registry.op("fill_constant"), {}, attrs)
            value = outs["out"][0]
        values.append(value)
    info = registry.op(op)
    inputs = {slot.name: value for slot, value in zip(info.proto.inputs, values)}
    _, outs = append(block, info, inputs, {})
    return outs[info.proto.outputs[0].name][0]
