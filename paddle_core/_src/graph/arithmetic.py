"""Python's operators on Variables (and on a model's Expressions): ``a + b`` appends ``add``.

``+ - * / // % ** @``, unary ``-`` and ``abs()`` append the ops ``add``, ``sub``, ``mul``,
``div``, ``mod``, ``pow``, ``matmul``, ``neg`` and ``abs`` (paddle-ops-math's), as the
generated functions in ``pc.ops`` do: to the current block. A Python or NumPy number beside a
tensor becomes a 0-d ``fill_constant`` of the tensor's dtype, broadcast by the op. Where that
would change the number (``x_int32 * 2.5``), or where the op would not do what Python's
operator does (``/`` of integers, which ``div`` floors; ``//`` of floats), the operator is
refused, saying what to write instead. ``==`` and the other comparisons stay Python's:
variables are dict keys (feeds), so they compare by identity; use ``pc.ops.equal`` and
``pc.ops.less``.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

from ..base.dtypes import INTEGER
from ..base.errors import OpInputError, shown


class Arithmetic:
    """The operators; ``_apply(op, operands)`` appends the op (the class says where)."""

    __slots__ = ()
    # NumPy defers to these: `array * x` comes here (and is refused), where it would otherwise
    # make an object array of one op per element.
    __array_ufunc__ = None

    def _apply(self, op: str, operands: tuple) -> Any:
        raise NotImplementedError

    def _binary(self, op: str, symbol: str, left: Any, right: Any) -> Any:
        other = right if left is self else left
        if not isinstance(other, (Arithmetic, Real)):
            raise OpInputError(
                f"{_operand(left)} {symbol} {_operand(right)}: the operands of '{symbol}' are "
                f"variables and numbers, not {type(other).__name__} (an array: feed it "
                "through a data variable)",
                op=op,
            )
        dtype = self.dtype  # type: ignore[attr-defined]
        integer = dtype in INTEGER or dtype == "bool"
        wrong = {"/": integer, "//": not integer}.get(symbol, False)
        if wrong or (integer and isinstance(other, Real) and not float(other).is_integer()):
            raise OpInputError(_refusal(symbol, left, right, dtype), op=op)
        return self._apply(op, (left, right))

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
        return self._apply("neg", (self,))

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return self._apply("abs", (self,))


def _refusal(symbol: str, left: Any, right: Any, dtype: str) -> str:
    shown = f"{_operand(left)} {symbol} {_operand(right)}"
    if symbol == "/":
        return (
            f"{shown}: '/' of integers would floor them (the op div does, as NumPy's // "
            "does); cast to a float dtype first (pc.ops.cast), or write // for the floor"
        )
    if symbol == "//":
        return f"{shown}: '//' of floats is not offered; write pc.ops.floor(a / b)"
    number = left if isinstance(left, Real) else right
    return (
        f"{shown}: {number!r} is no {dtype} value, and a number takes the tensor's dtype; "
        "cast the tensor to a float dtype first (pc.ops.cast)"
    )


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
    dtype = next(v for v in operands if not isinstance(v, Real)).dtype
    values = []
    for value in operands:  # a number: a 0-d constant of the tensor's dtype
        if isinstance(value, Real):
            attrs = {"shape": [], "dtype": dtype, "value": value}
            _, outs = append(block, registry.op("fill_constant"), {}, attrs)
            value = outs["out"][0]
        values.append(value)
    info = registry.op(op)
    inputs = {slot.name: value for slot, value in zip(info.proto.inputs, values)}
    _, outs = append(block, info, inputs, {})
    return outs[info.proto.outputs[0].name][0]
