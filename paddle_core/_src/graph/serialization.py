"""Saving and loading programs: files of ProgramDesc bytes (or text format) <-> Program.

Loading reads data only: no plugin code runs. It checks that every op the program uses is
provided by a loaded plugin, and names the package to install for each one that is not (from
the provider each op recorded: see provenance.py).
"""

from __future__ import annotations

import os

from google.protobuf import text_format

from ...proto import framework_pb2 as pb
from ..base.errors import ProgramError
from .desc import parse_program_desc
from .program import Program


def _text_path(path: str | os.PathLike) -> bool:
    return os.fspath(path).endswith((".pbtxt", ".txt"))


def save_program(program: Program, path: str | os.PathLike) -> None:
    """Write ``program`` to ``path``: protobuf binary, or text format for ``.pbtxt``/``.txt``."""
    desc = program.to_desc()
    if _text_path(path):
        data = text_format.MessageToString(desc).encode("utf-8")
    else:
        data = desc.SerializeToString()
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        raise ProgramError(
            f"cannot save the program to {os.fspath(path)!r}: {e.strerror}"
        ) from None


def load_program(path: str | os.PathLike) -> Program:
    """Read a program written by ``save_program``. Raises OpNotFoundError naming every op no
    loaded plugin provides, with the package to install (see ``Program.from_desc``)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ProgramError(
            f"cannot load a program from {os.fspath(path)!r}: {e.strerror}"
        ) from None
    if _text_path(path):
        desc = pb.ProgramDesc()
        try:
            text_format.Parse(data.decode("utf-8"), desc)
        except (text_format.ParseError, UnicodeDecodeError) as e:
            raise ProgramError(
                f"{os.fspath(path)!r} is not a program in text format: {e}"
            ) from None
        return Program.from_desc(desc, source=os.fspath(path))
    return Program.from_desc(parse_program_desc(data, os.fspath(path)), source=os.fspath(path))
