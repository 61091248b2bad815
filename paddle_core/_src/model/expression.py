"""Expression: a variable's value at one point of a model's net, computed when asked for.

An Expression holds the Variable and its *anchor*, the last op of the global block when it was
made: its value is the variable's after the ops up to the anchor (so an expression made before
an op rewrites its variable in place keeps meaning the earlier value). An expression of a
persistable variable (a parameter, optimizer state) has no anchor: its value is the scope's.

``value()`` asks the model, which runs the expression's subgraph and keeps the result with
the clock tick it was computed at; the result is served again while nothing it read changed.
"""

from __future__ import annotations

from typing import Any

from ..base.errors import ProgramError
from ..graph.arithmetic import Arithmetic, append_arithmetic
from ..graph.variable import Variable, format_shape


class Target:
    """What one expression asks of a subgraph: ``name``'s value after ``ops[:end]``, and the
    ops it must run whatever they write (a training step's updates)."""

    __slots__ = ("name", "end", "forced", "updates")

    def __init__(self, name: str, end: int, forced: tuple[int, ...] = (), updates: bool = False):
        self.name, self.end, self.forced, self.updates = name, end, forced, updates


class Expression(Arithmetic):
    """A value of a model's net: ``name()``, ``shape``, ``dtype``, and ``value(feed=None)``,
    computed by running only the ops it needs and recomputed only when a feed or a persistable
    value (a parameter) it depends on changed. Made by layers and ops called on a model's
    expressions (or with ``model=``), by their arithmetic (``2 * a + b``), and by
    ``Model.expression``."""

    __slots__ = ("model", "variable", "anchor", "_graph", "_value", "_clock", "_scope")
    _rank = 1  # (`variable + expression` is the expression's model's: see Arithmetic)

    def __init__(self, model: Any, variable: Variable, anchor: Any = None) -> None:
        self.model = model
        self.variable = variable
        self.anchor = anchor  # the last op before this value; None: the value in the scope
        self._graph: Any = None  # the Subgraph computing this expression alone
        self._value: Any = None  # the last value computed, with the clock tick before it
        self._clock = -1
        self._scope: Any = None

    def name(self) -> str:
        """The name of the variable this expression is a value of."""
        return self.variable.name

    @property
    def shape(self) -> tuple:
        """The declared shape (None for dimensions known only at run time)."""
        return self.variable.shape

    @property
    def dtype(self) -> str:
        return self.variable.dtype

    @property
    def ndim(self) -> int:
        return len(self.variable.shape)

    def value(self, feed: dict[Any, Any] | None = None) -> Any:
        """This expression's value as a read-only NumPy array.

        ``feed`` (data variables or their names -> arrays) is given to the model first, and
        stays fed for later calls. The ops this expression needs run only when no earlier
        result is still good: a feed it reads, or a persistable value it reads, changed since
        (stamped writes, never a look at the arrays), or the program did.
        """
        return self.model._value_of(self, feed)

    def _target(self, block: Any) -> Target:
        return Target(self.variable.name, _end(self, block))

    def _apply(self, op: str, operands: tuple) -> Expression:
        from .methods import model_of, unwrap  # (methods imports this module)

        model = model_of(operands)
        with model.guard():
            out = append_arithmetic(op, tuple(unwrap(v, model) for v in operands))
        return model.wrap(out)

    def __repr__(self) -> str:
        return (
            f"Expression({self.variable.name!r}, {self.variable.dtype}"
            f"{format_shape(self.variable.shape)})"
        )


class TrainStep(Expression):
    """What ``Model.minimize`` returns: one training step. Its value is the loss, as computed
    in the step (before the update); every ``value()`` or run that includes it runs the step:
    the loss's subgraph, backward and the updates. Never served from a cache."""

    __slots__ = ("loss", "updates", "optimizer")

    def __init__(self, model: Any, loss: Expression, updates: list[Any], optimizer: Any) -> None:
        super().__init__(model, loss.variable, loss.anchor)
        self.loss = loss
        self.updates = updates  # the update ops appended by minimize
        self.optimizer = optimizer

    def _target(self, block: Any) -> Target:
        forced = tuple(_index(block, op, "a parameter update of this step") for op in self.updates)
        return Target(self.variable.name, _end(self.loss, block), forced, updates=True)

    def __repr__(self) -> str:
        return (
            f"TrainStep(minimize {self.variable.name!r} with {type(self.optimizer).__name__}, "
            f"{len(self.updates)} updates)"
        )


def _end(expr: Expression, block: Any) -> int:
    """How many ops of ``block`` come before ``expr``'s value."""
    return 0 if expr.anchor is None else _index(block, expr.anchor, "the op it follows") + 1


def _index(block: Any, op: Any, what: str) -> int:
    try:
        return block.ops.index(op)  # Operators compare by identity
    except ValueError:
        raise ProgramError(
            f"{what} ({op.type!r}) is no longer in block {block.idx}: it was removed"
        ) from None


def as_variable(value: Any) -> Any:
    """``value``'s Variable if it is an Expression, else ``value`` itself."""
    return value.variable if isinstance(value, Expression) else value
