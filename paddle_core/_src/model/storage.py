"""A model on disk: a directory holding its programs and the values of its persistable
variables, which ``Model.save`` writes and ``pc.load_model`` / ``Model.load`` read.

    main.pb      the main program (a ProgramDesc)
    startup.pb   the startup program
    values.npz   every persistable value the scope holds: parameters, and the optimizer's
                 state and step counters; and the count of the scope's runs that drew random
                 numbers (RANDOM_RUNS), so that training resumes exactly, dropout included

Reading checks every value against its declared shape and dtype before any is set.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..base.errors import FeedError, ProgramError
from ..graph.program import Program
from ..graph.serialization import checked_path, load_program, make_directory, save_program
from ..graph.variable import Parameter
from ..run.scope import Scope
from ..run.values import load_values as load_npz
from ..run.values import read_archive, save_values

MAIN, STARTUP, VALUES = "main.pb", "startup.pb", "values.npz"
RANDOM_RUNS = "paddle_core:random_runs"  # a key no variable's name takes


def save(main: Program, startup: Program, scope: Scope, dirname: str | os.PathLike) -> None:
    """Write ``main``, ``startup`` and the persistable values of ``main`` (from ``scope``)
    to ``dirname``; every parameter must have a value."""
    names = _saved_names(main, scope, "run the model (or model.init()) before saving it")
    dirname = make_directory(dirname, "save the model")
    save_program(main, os.path.join(dirname, MAIN))
    save_program(startup, os.path.join(dirname, STARTUP))
    _save(names, scope, os.path.join(dirname, VALUES))


def save_persistables(main: Program, scope: Scope, path: str | os.PathLike) -> None:
    """Write the persistable values of ``main`` (from ``scope``) and its count of random runs
    to the ``.npz`` file ``path``; every parameter must have a value."""
    _save(_saved_names(main, scope, "run the startup program before saving"), scope, path)


def _saved_names(main: Program, scope: Scope, remedy: str) -> list[str]:
    """The persistable variables of ``main`` that ``scope`` holds: every parameter must."""
    names = []
    for var in main.global_block().vars.values():
        if not var.persistable:
            continue
        if var.name in scope:
            names.append(var.name)
        elif isinstance(var, Parameter):
            raise FeedError(f"parameter {var.name!r} has no value yet; {remedy}")
    return names


def _save(names: list[str], scope: Scope, path: str | os.PathLike) -> None:
    save_values(path, names, scope, {RANDOM_RUNS: np.array(scope.random_runs, np.int64)})


def load_programs(dirname: str | os.PathLike) -> tuple[Program, Program]:
    """The main and startup programs saved in ``dirname``."""
    dirname = checked_path(dirname, "load a model")
    return load_program(os.path.join(dirname, MAIN)), load_program(os.path.join(dirname, STARTUP))


def load_values(main: Program, scope: Scope, dirname: str | os.PathLike) -> Any:
    """Set ``main``'s persistable values in ``scope`` from ``dirname``: every parameter must
    be there; other persistable values (the optimizer's state) are set where present."""
    return load_persistables(
        main, scope, os.path.join(checked_path(dirname, "load a model"), VALUES)
    )


def load_persistables(main: Program, scope: Scope, path: str | os.PathLike) -> Any:
    """Set ``main``'s persistable values in ``scope`` from the ``.npz`` file ``path`` (as
    ``save_persistables`` wrote it), and the scope's count of random runs."""
    block = main.global_block()
    persistables = [v for v in block.vars.values() if v.persistable]
    optional = {v.name for v in persistables if not isinstance(v, Parameter)}
    names = [v.name for v in persistables]
    arrays = read_archive(path)
    runs = arrays.get(RANDOM_RUNS)
    if runs is None or runs.shape != () or runs.dtype != np.int64:
        raise ProgramError(
            f"{os.fspath(path)!r} holds no count of random runs: it was not written by "
            "save_persistables or Model.save (save_params writes parameters only: read it with "
            "load_params)"
        )
    loaded = load_npz(path, block, names, scope, optional, arrays=arrays)
    scope.random_runs = int(runs)
    return loaded
