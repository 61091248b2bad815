"""Values on disk: a scope's arrays written to and read from a NumPy ``.npz`` archive, by name.

Reading checks every array against its variable's declared shape and dtype before any is set,
so a file that does not fit changes nothing. ``pc.io`` (parameters, inference models) and
``pc.Model`` (``save`` / ``load``) both keep their values this way.
"""

from __future__ import annotations

import os
import zipfile
from typing import Any

import numpy as np

from ..base.dtypes import name_of
from ..base.errors import FeedError, ProgramError
from ..graph.variable import Parameter, format_shape
from .scope import Scope


def _kind(block: Any, name: str) -> str:
    return "parameter" if isinstance(block.find_var(name), Parameter) else "variable"


def save_values(
    path: str | os.PathLike, names: list[str], scope: Scope, extra: dict | None = None
) -> None:
    """Write the values of ``names`` in ``scope`` to ``path``, and the arrays of ``extra``
    under their keys; every name must have a value."""
    values = dict(extra or {})
    for name in names:
        value = scope.find_var(name)
        if value is None:
            raise FeedError(
                f"parameter {name!r} has no value in the scope; run the startup program (and "
                "train) before saving"
            )
        values[name] = np.asarray(value)
    try:
        with open(path, "wb") as f:
            np.savez(f, **values)
    except OSError as e:
        raise ProgramError(f"cannot save parameters to {os.fspath(path)!r}: {e.strerror}") from None


def load_values(
    path: str | os.PathLike,
    block: Any,
    names: list[str],
    scope: Scope,
    optional: set[str] | frozenset[str] = frozenset(),
    *,
    arrays: dict[str, np.ndarray] | None = None,
) -> list[str]:
    """Set ``names`` in ``scope`` from ``path`` (or from ``arrays``, already read from it),
    each checked against its variable in ``block`` before any is set; names in ``optional``
    may be absent from the file. Return those set."""
    if arrays is None:
        arrays = read_archive(path)
    for name in names:
        if name not in arrays:
            if name in optional:
                continue
            raise FeedError(f"{os.fspath(path)!r} has no value for {_kind(block, name)} {name!r}")
        var, value = block.var(name), arrays[name]
        if value.shape != var.shape or name_of(value.dtype) != var.dtype:
            raise FeedError(
                f"{_kind(block, name)} {name!r} is declared {var.dtype}{format_shape(var.shape)}, "
                f"but {os.fspath(path)!r} holds {value.dtype}{list(value.shape)} for it"
            )
    loaded = [name for name in names if name in arrays]
    for name in loaded:
        scope.set_var(name, np.ascontiguousarray(arrays[name]))
    return loaded


def read_archive(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The named arrays of the ``.npz`` file ``path``; ProgramError naming it if unreadable."""
    try:
        loaded = np.load(path, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):  # (one .npy array)
            raise ValueError("it holds one array, not an .npz archive of named arrays")
        with loaded as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:  # missing, truncated, corrupt
        reason = str(e) or type(e).__name__
        if isinstance(e, ValueError) and "allow_pickle" in reason:  # (not for parameters)
            reason = "it is not an .npz archive of arrays"
        raise ProgramError(f"cannot read parameters from {os.fspath(path)!r}: {reason}") from None
    return arrays
