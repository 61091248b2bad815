"""Saving and loading trained models.

- ``save_params(path, program, scope)`` writes the values of the program's parameters from
  ``scope`` to ``path`` as a NumPy ``.npz`` archive: one array per parameter, by name.
  ``load_params`` reads one back into a scope, checking every array against the parameter's
  declared shape and dtype first (nothing is loaded unless all fit).
- ``save_persistables(path, program, scope)`` writes every persistable value instead: the
  parameters, the optimizer's state (moments, beta powers, velocities), the learning-rate
  step counter, and the scope's count of random runs (dropout's masks). ``load_persistables``
  reads them back, so training resumes exactly where it stopped (a checkpoint).
- ``save_inference_model(dirname, feed_names, targets, program, scope)`` writes what running
  the model needs: ``model.pb`` (the program's evaluation clone, pruned to the ops that compute
  ``targets`` from the feeds; a ProgramDesc), ``params.npz`` (the persistable values that
  program reads) and ``model.json`` (the feed and fetch names). ``load_inference_model``
  returns (program, feed names, fetch variables) with the values in a scope: a fresh process
  with the plugins installed runs it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from . import distributed
from ._src.base.errors import ProgramError, shown
from ._src.graph.program import Program, default_main_program
from ._src.graph.serialization import checked_path, load_program, make_directory, save_program
from ._src.graph.variable import Variable
from ._src.model import storage
from ._src.run.executor import Executor
from ._src.run.planning import prune
from ._src.run.scope import Scope, global_scope
from ._src.run.values import load_values, save_values

__all__ = [
    "load_inference_model",
    "load_params",
    "load_persistables",
    "save_inference_model",
    "save_params",
    "save_persistables",
]

MODEL, PARAMS, META = "model.pb", "params.npz", "model.json"


def save_params(
    path: str | os.PathLike, program: Program | None = None, scope: Scope | None = None
) -> None:
    """Write ``program``'s parameters' values (from ``scope``) to ``path`` (``.npz``)."""
    program, scope = _program_and_scope("save_params", program, scope, path)
    save_values(path, [p.name for p in program.all_parameters()], scope)


def load_params(
    path: str | os.PathLike, program: Program | None = None, scope: Scope | None = None
) -> None:
    """Read parameters written by ``save_params`` into ``scope``: every one of ``program``'s
    parameters must be in the file, with its declared shape and dtype."""
    program, scope = _program_and_scope("load_params", program, scope, path)
    names = [p.name for p in program.all_parameters()]
    load_values(path, program.global_block(), names, scope)


def save_persistables(
    path: str | os.PathLike, program: Program | None = None, scope: Scope | None = None
) -> None:
    """Write every persistable value of ``program`` (from ``scope``) to ``path`` (``.npz``), as a
    checkpoint to resume training from: the parameters, the optimizer's state, the step
    counter and the scope's count of random runs. In a distributed run rank 0 writes it and
    every rank returns once it is written."""
    program, scope = _program_and_scope("save_persistables", program, scope, path)
    if distributed.world_size() == 1:
        storage.save_persistables(program, scope, path)
        return
    try:  # every rank holds the same values: rank 0 writes them, the others wait for it
        if distributed.rank() == 0:
            storage.save_persistables(program, scope, path)
    finally:
        distributed.barrier()


def load_persistables(
    path: str | os.PathLike, program: Program | None = None, scope: Scope | None = None
) -> None:
    """Read a checkpoint written by ``save_persistables`` into ``scope``: every parameter of
    ``program`` must be in the file with its declared shape and dtype (nothing is set
    otherwise); the optimizer's state is set where the file has it."""
    program, scope = _program_and_scope("load_persistables", program, scope, path)
    storage.load_persistables(program, scope, path)


def save_inference_model(
    dirname: str | os.PathLike,
    feed_names: Sequence[str],
    targets: Sequence[Variable],
    program: Program | None = None,
    scope: Scope | None = None,
) -> Program:
    """Write the model computing ``targets`` from ``feed_names`` to directory ``dirname``;
    return the pruned program it holds."""
    program, scope = _program_and_scope("save_inference_model", program, scope, dirname)
    feed_names, fetch_names = _names("feed_names", feed_names), _names("targets", targets)
    inference = _pruned(program.clone(for_test=True), list(feed_names), fetch_names)
    dirname = make_directory(dirname, "save the inference model")
    save_program(inference, os.path.join(dirname, MODEL))
    block = inference.global_block()
    used = {n for op in block.ops for n in op.input_names}
    persistables = [v.name for v in block.vars.values() if v.persistable and v.name in used]
    save_values(os.path.join(dirname, PARAMS), persistables, scope)
    with open(os.path.join(dirname, META), "w", encoding="utf-8") as f:
        json.dump({"feed": list(feed_names), "fetch": fetch_names}, f, indent=1)
    return inference


def load_inference_model(
    dirname: str | os.PathLike, scope: Scope | None = None
) -> tuple[Program, list[str], list[Variable]]:
    """(program, feed names, fetch variables) of a model saved by ``save_inference_model``,
    its values loaded into ``scope`` (default: the global scope)."""
    _, scope = _program_and_scope("load_inference_model", None, scope, dirname)
    try:
        with open(os.path.join(dirname, META), encoding="utf-8") as f:
            meta = json.load(f)
        feed, fetch = list(meta["feed"]), list(meta["fetch"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ProgramError(f"{os.fspath(dirname)!r} holds no saved inference model: {e}") from None
    program = load_program(os.path.join(dirname, MODEL))
    block = program.global_block()
    persistables = [v.name for v in block.vars.values() if v.persistable]
    load_values(
        os.path.join(dirname, PARAMS),
        block,
        persistables,
        scope,
        optional=set(persistables),
    )
    return program, feed, [block.var(name) for name in fetch]


def _program_and_scope(
    call: str, program: object, scope: object, path: object
) -> tuple[Program, Scope]:
    """``program`` and ``scope``, or the defaults for None; ProgramError for anything else,
    for a path that is none, and for an Executor anywhere (Paddle fluid's functions took one;
    these take none)."""
    for what, value in (("path", path), ("program", program), ("scope", scope)):
        if isinstance(value, Executor):
            raise ProgramError(
                f"{call}(): {what} must not be an Executor (these functions take none), got "
                f"{shown(value)}"
            )
    checked_path(path, f"run {call}()")
    for what, value, kind in (("program", program, Program), ("scope", scope, Scope)):
        if value is not None and not isinstance(value, kind):
            raise ProgramError(
                f"{call}(): {what} must be a {kind.__name__} or None, got "
                f"{type(value).__name__} {shown(value)}"
            )
    return program or default_main_program(), scope or global_scope()  # type: ignore[return-value]


def _names(what: str, given: object) -> list[str]:
    """Variable names from a list of names or Variables; ProgramError for anything else (a
    lone string would otherwise be read as its characters)."""
    items = None
    if not isinstance(given, (str, bytes, Variable)):
        try:
            items = list(given)  # type: ignore[call-overload]
        except TypeError:
            pass
    if items is None or not all(isinstance(i, (str, Variable)) for i in items):
        raise ProgramError(
            f"save_inference_model(): {what} must be a list of variable names or Variables, "
            f"got {type(given).__name__} {shown(given)}"
        )
    return [i.name if isinstance(i, Variable) else i for i in items]


def _pruned(program: Program, feed_names: list[str], fetch_names: list[str]) -> Program:
    """``program`` (a copy) with only the ops computing ``fetch_names`` from ``feed_names``,
    and only the variables those ops use."""
    block = program.global_block()
    for name in [*feed_names, *fetch_names]:
        block.var(name)  # a ProgramError naming close matches for an unknown name
    kept = prune(block, fetch_names, set(feed_names))
    block.ops = kept
    used = {n for op in kept for n in op.input_names + op.output_names} | set(feed_names)
    used |= set(fetch_names)
    for name in [n for n in block.vars if n not in used]:
        del block.vars[name]
    program._version += 1
    return program
