"""Scope: where variable values live between and during runs.

A scope maps variable names to device buffers (NumPy arrays on CPU). Persistable variables
(parameters, optimizer state) stay in the user's scope across runs; lookups fall back to the
parent scope, so a child scope sees its parent's values. A run writes a persistable result
back where the variable lives: into the ancestor holding it, else into the scope it was given.

A scope also keeps what the programs run in it declare of their persistable variables (shape
and dtype), so that ``set_var`` refuses an array that cannot be one of them where it is set,
rather than at the next run.

Every write (``set_var``, ``update_var``: a run writing a persistable result) is stamped with
the next tick of one process-wide clock, ``CLOCK``. A cached result computed at tick T is
still good while none of the variables it read has a stamp above T: checking that costs a
dict lookup per variable, never a look at the arrays. Changing an array in place behind the
scope's back is not seen; set it again with ``set_var``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..base.errors import FeedError, ProgramError, did_you_mean, shown
from ..graph.variable import format_shape


class WriteClock:
    """Counts writes to every scope of the process; ``now`` is the stamp of the latest."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0

    def tick(self) -> int:
        self.now += 1
        return self.now


CLOCK = WriteClock()


class Scope:
    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self._values: dict[str, Any] = {}
        self._stamps: dict[str, int] = {}  # name -> CLOCK's tick when its value was last set
        self._random_runs = 0  # runs that drew random numbers here (kept by the root scope)
        # Kept by the root scope: (shape, dtype) of each persistable a program run here declares.
        self._declared: dict[str, tuple[tuple, str]] = {}

    def new_scope(self) -> Scope:
        """A child scope: reads fall back to this one; ``set_var`` writes stay in the child."""
        return Scope(self)

    def find_var(self, name: str) -> Any | None:
        """The value of ``name`` here or in an ancestor, or None."""
        if type(name) is not str:  # before hashing it: a hostile value could raise anything
            raise ProgramError(f"Scope.find_var: names are strings, got {shown(name)}")
        scope: Scope | None = self
        while scope is not None:
            value = scope._values.get(name)
            if value is not None:
                return value
            scope = scope.parent
        return None

    def get(self, name: str) -> Any:
        """Like ``find_var``, raising FeedError naming close matches when absent."""
        value = self.find_var(name)
        if value is None:
            raise FeedError(f"scope has no variable {name!r}{did_you_mean(name, list(self))}")
        return value

    def set_var(self, name: str, value: Any) -> None:
        """Set ``name`` in this scope (shadowing an ancestor's value). An array for a
        persistable variable that a program run in this scope tree declares must have its
        declared shape; what a program reads is checked in full when it runs."""
        if type(name) is not str or not name:
            raise ProgramError(f"Scope.set_var: names are non-empty strings, got {shown(name)}")
        declared = self._root()._declared.get(name)
        if declared is not None:
            _check_shape(name, value, *declared)
        self._values[name] = value
        self._stamps[name] = CLOCK.tick()

    def update_var(self, name: str, value: Any) -> None:
        """Set ``name`` in the scope holding it (this one or an ancestor), else in this one."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope._values:
                scope._values[name] = value
                scope._stamps[name] = CLOCK.tick()
                return
            scope = scope.parent
        self._values[name] = value
        self._stamps[name] = CLOCK.tick()

    def stamp(self, name: str) -> int:
        """The ``CLOCK`` tick of the write that gave ``name`` the value this scope sees (0 when
        it has none): a version number that grows whenever the value is set again."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope._values:
                return scope._stamps[name]
            scope = scope.parent
        return 0

    def declare(self, persistables: Mapping[str, tuple[tuple, str]]) -> None:
        """Remember the (shape, dtype) of each persistable variable a program run in this scope
        tree declares (the last program run wins a name two declare differently)."""
        self._root()._declared.update(persistables)

    def _root(self) -> Scope:
        root = self
        while root.parent is not None:
            root = root.parent
        return root

    @property
    def random_runs(self) -> int:
        """How many runs drew random numbers in this scope tree (its root's count): saved with
        a model, so that its random ops continue their streams where they left off."""
        return self._root()._random_runs

    @random_runs.setter
    def random_runs(self, count: int) -> None:
        self._root()._random_runs = count

    def next_random_run(self) -> int:
        """The counter a run drawing random numbers gives its random ops: how many such runs
        this scope tree saw before (kept by its root, so child scopes continue the stream)."""
        counter = self.random_runs
        self.random_runs = counter + 1
        return counter

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find_var(name) is not None

    def __iter__(self) -> Iterator[str]:
        """Names visible from this scope (own first, then ancestors')."""
        seen: set[str] = set()
        scope: Scope | None = self
        while scope is not None:
            for name in scope._values:
                if name not in seen:
                    seen.add(name)
                    yield name
            scope = scope.parent

    def __repr__(self) -> str:
        return f"<Scope: {len(self._values)} variables{' (child)' if self.parent else ''}>"


def _check_shape(name: str, value: Any, shape: tuple, dtype: str) -> None:
    """Refuse an array for persistable ``name`` whose shape is not its declared one, saying
    when it is the transpose (a PyTorch Linear's [out, in] weight set for fc's [in, out])."""
    got = getattr(value, "shape", None)
    if not isinstance(got, tuple) or got == shape:
        return  # (not an array: the run says what it needs)
    hint = ""
    if len(shape) == 2 and got == shape[::-1] and shape[0] != shape[1]:
        hint = (
            " (its transpose: set value.T; fc's weight is [in, out] where PyTorch's Linear has"
            " [out, in], and pc.layers.linear takes PyTorch's)"
        )
    raise FeedError(
        f"Scope.set_var: persistable variable {name!r} is declared {dtype}{format_shape(shape)}, "
        f"got an array of shape {list(got)}{hint}"
    )


_global_scope = Scope()


def global_scope() -> Scope:
    """The scope executors use when ``run`` is given none."""
    return _global_scope
