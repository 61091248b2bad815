"""A model on disk: a directory holding its programs and the values of its persistable
variables, which ``Model.save`` writes and ``pc.load_model`` / ``Model.load`` read.

    main.pb      the main program (a ProgramDesc)
    startup.pb   the startup program
    values.npz   every persistable value the scope holds: parameters, and the optimizer's
                 state and step counters, so that training resumes exactly

Reading checks every value against its declared shape and dtype before any is set.
"""

from __future__ import annotations

import os
from typing import Any

from ..base.errors import FeedError
from ..graph.program import Program
from ..graph.serialization import load_program, save_program
from ..graph.variable import Parameter
from ..run.scope import Scope
from ..run.values import load_values as load_npz
from ..run.values import save_values

MAIN, STARTUP, VALUES = "main.pb", "startup.pb", "values.npz"


def save(main: Program, startup: Program, scope: Scope, dirname: str | os.PathLike) -> None:
    """Write ``main``, ``startup`` and the persistable values of ``main`` (from ``scope``)
    to ``dirname``; every parameter must have a value."""
    names = []
    for var in main.global_block().vars.values():
        if not var.persistable:
            continue
        if var.name in scope:
            names.append(var.name)
        elif isinstance(var, Parameter):
            raise FeedError(
                f"parameter {var.name!r} has no value yet; run the model (or model.init()) "
                "before saving it"
            )
    os.makedirs(dirname, exist_ok=True)
    save_program(main, os.path.join(dirname, MAIN))
    save_program(startup, os.path.join(dirname, STARTUP))
    save_values(os.path.join(dirname, VALUES), names, scope)


def load_programs(dirname: str | os.PathLike) -> tuple[Program, Program]:
    """The main and startup programs saved in ``dirname``."""
    return load_program(os.path.join(dirname, MAIN)), load_program(os.path.join(dirname, STARTUP))


def load_values(main: Program, scope: Scope, dirname: str | os.PathLike) -> Any:
    """Set ``main``'s persistable values in ``scope`` from ``dirname``: every parameter must
    be there; other persistable values (the optimizer's state) are set where present."""
    block = main.global_block()
    persistables = [v for v in block.vars.values() if v.persistable]
    optional = {v.name for v in persistables if not isinstance(v, Parameter)}
    names = [v.name for v in persistables]
    return load_npz(os.path.join(dirname, VALUES), block, names, scope, optional)
