"""The global model: the default programs of the moment and the global scope. Layers called with
neither ``model=`` nor an expression build its programs (the default ones) and return
Variables; ``default_model()`` evaluates them.

It follows ``program_guard``: its programs are whichever are the defaults when it is asked,
its feeds belong to one main program (feeding another starts afresh), and it initialises
what a new startup program holds.
"""

from __future__ import annotations

from typing import Any

from ..graph import default_programs
from ..graph.program import Program
from ..run.scope import global_scope
from .expression import Expression
from .model import Model


class DefaultModel(Model):
    """The global model: the default programs of the moment and the global scope."""

    def _set_programs(self, main: Program | None, startup: Program | None) -> None:
        self._init_program: Program | None = None  # the startup program last initialised
        self._fed_program: Program | None = None  # the program the feeds are for

    @property
    def _main(self) -> Program:  # type: ignore[override]
        return default_programs.main

    @property
    def _startup(self) -> Program:  # type: ignore[override]
        return default_programs.startup

    def init(self) -> None:
        super().init()
        self._init_program = default_programs.startup

    def _start(self) -> None:
        if self._init_program is not default_programs.startup:
            self._init_version = -1  # another startup program: initialise what it holds
        super()._start()

    def feed(self, feed: dict[Any, Any]) -> None:
        if default_programs.main is not self._fed_program:  # feeds belong to one program
            self._feeds, self._feed_stamps, self._feed_specs = {}, {}, {}
            self._fed_program = default_programs.main
            self._feed_layout += 1
        super().feed(feed)

    def _value_of(self, expr: Expression, feed: dict | None = None) -> Any:
        if expr.variable.block.program is not default_programs.main:
            self._subgraph((expr,))  # raises: the expression is of another program
        if self._init_program is not default_programs.startup:
            self._init_version = -1
        return super()._value_of(expr, feed)

    def _evaluate(self, targets: tuple[Expression, ...]) -> list:
        for t in targets:
            if t.variable.block.program is not default_programs.main:
                self._subgraph((t,))  # raises: the expression is of another program
        return super()._evaluate(targets)


_default: DefaultModel | None = None


def default_model() -> Model:
    """The model of the default programs and the global scope (see the module docstring)."""
    global _default
    if _default is None:
        _default = DefaultModel(scope=global_scope())
    return _default
