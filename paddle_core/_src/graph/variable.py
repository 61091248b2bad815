"""Variables: named tensor slots of a block, parameters, and how a parameter gets its first value.

Shapes are tuples with ``None`` for dimensions unknown until run time (``-1`` in descs); dtypes
are canonical names ("float32").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import dtypes as D
from ..base.errors import PaddleCoreError, ProgramError, shown
from ..base.limits import MAX_RANK, as_dim, shape_problem, take
from ..spec.attrs import infer_attr_value
from .arithmetic import Arithmetic, append_arithmetic

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: these modules build on this one
    from .block import Block
    from .operator import Operator
    from .program import Program

Shape = tuple  # tuple[int | None, ...]


def valid_shape(shape: Sequence[int | None] | None, what: str) -> Shape:
    """A shape as a tuple (None for unknown dimensions); ProgramError naming ``what``."""
    if shape is None:
        return ()
    given = shape
    shape = take(shape, MAX_RANK)
    if shape is None:
        raise ProgramError(f"{what}: shape must be a list of ints or None, got {shown(given)}")
    if len(shape) > MAX_RANK:  # before looking at each dimension
        try:
            count = str(len(given))
        except Exception:  # an iterator
            count = f"more than {MAX_RANK}"
        raise ProgramError(
            f"{what}: shape has {count} dimensions; at most {MAX_RANK} are supported"
        )
    dims = tuple(as_dim(d) for d in shape)
    if None in dims:
        raise ProgramError(
            f"{what}: dimensions must be ints >= 0, or None / -1 for unknown; got {shown(shape)}"
        )
    dims = tuple(None if d == -1 else d for d in dims)
    problem = shape_problem(dims)
    if problem:
        raise ProgramError(f"{what}: shape {list(shape)} {problem}")
    return dims


def valid_dtype(dtype: Any, what: str) -> str:
    """A dtype's canonical name; ProgramError naming ``what``."""
    try:
        return D.canonical(dtype)
    except PaddleCoreError as e:
        raise ProgramError(f"{what}: {e}") from None


def format_shape(shape: Shape) -> str:
    """ "[?, 4]", as messages and ``print(program)`` show shapes."""
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


class Variable(Arithmetic):
    """A named tensor slot in a block. ``op`` is the operator that last wrote it, if any.
    Python's arithmetic operators append ops (``x * 2 + y``: see graph/arithmetic.py)."""

    __slots__ = (
        "block",
        "name",
        "shape",
        "dtype",
        "op",
        "_persistable",
        "is_data",
        "stop_gradient",
    )

    def __init__(
        self,
        block: Block,
        name: str,
        shape: Shape,
        dtype: str,
        *,
        persistable: bool = False,
        is_data: bool = False,
        stop_gradient: bool = False,
    ) -> None:
        self.block = block
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.op: Operator | None = None
        self._persistable = persistable
        self.is_data = is_data
        self.stop_gradient = stop_gradient

    @property
    def persistable(self) -> bool:
        """Whether the value lives in the scope across runs (parameters, optimizer state)."""
        return self._persistable

    @persistable.setter
    def persistable(self, value: bool) -> None:
        self._persistable = bool(value)
        self.block.program._version += 1  # plans differ: the value now comes from the scope

    @property
    def program(self) -> Program:
        return self.block.program

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _apply(self, op: str, operands: tuple) -> Variable:
        return append_arithmetic(op, operands)

    def __repr__(self) -> str:
        return f"Variable({self.name!r}, shape={format_shape(self.shape)}, dtype={self.dtype!r})"

    def _describe(self) -> str:
        flags = [
            label
            for label, on in (
                ("data", self.is_data),
                ("persistable", self.persistable),
                ("no grad", self.stop_gradient and not self.is_data),
            )
            if on
        ]
        flagged = f"  ({', '.join(flags)})" if flags else ""
        return f"var {self.name} : {self.dtype}{format_shape(self.shape)}{flagged}"

    def to_desc(self, desc: Any) -> None:
        desc.name = self.name
        desc.dtype = D.to_enum(self.dtype)
        desc.shape.extend(-1 if d is None else d for d in self.shape)
        desc.persistable = self.persistable
        desc.is_data = self.is_data
        desc.stop_gradient = self.stop_gradient


class Initializer:
    """How a parameter gets its first value: an op type and its attrs (e.g. fill_constant)."""

    __slots__ = ("op", "attrs")

    def __init__(self, op: str, **attrs: Any) -> None:
        self.op = op
        self.attrs = attrs

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.attrs.items())
        return f"Initializer({self.op!r}{args})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Initializer) and (self.op, self.attrs) == (other.op, other.attrs)


class Parameter(Variable):
    """A persistable, trainable variable; always lives in the global block.

    A parameter is never an op's computed output (``op`` stays None): initializers and
    optimizers update it in place.
    """

    __slots__ = ("trainable", "initializer", "optimize_attrs")

    def __init__(
        self,
        block: Block,
        name: str,
        shape: Shape,
        dtype: str,
        *,
        trainable: bool = True,
        initializer: Initializer | None = None,
        optimize_attrs: dict[str, Any] | None = None,
    ):
        super().__init__(block, name, shape, dtype, persistable=True)
        self.trainable = trainable
        self.initializer = initializer
        self.optimize_attrs = dict(optimize_attrs or {})

    def __repr__(self) -> str:
        return f"Parameter({self.name!r}, shape={format_shape(self.shape)}, dtype={self.dtype!r})"

    def _describe(self) -> str:
        text = f"param {self.name} : {self.dtype}{format_shape(self.shape)}"
        text += "" if self.trainable else "  (frozen)"
        if self.initializer is not None:
            text += f"  init={self.initializer.op}({attrs_text(self.initializer.attrs)})"
        return text

    def to_desc(self, desc: Any) -> None:
        super().to_desc(desc)
        info = desc.parameter
        info.trainable = self.trainable
        if self.initializer is not None:
            info.initializer = self.initializer.op
            for name, value in self.initializer.attrs.items():
                infer_attr_value(value, info.initializer_attrs.add(name=name).value)
        for name, value in self.optimize_attrs.items():
            infer_attr_value(value, info.optimize_attrs.add(name=name).value)


def attrs_text(attrs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in attrs.items())
