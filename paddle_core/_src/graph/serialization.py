"""Saving and loading programs: files of ProgramDesc bytes (or text format, or JSON) <-> Program.

Loading reads data only: no plugin code runs. It checks that every op the program uses is
provided by a loaded plugin, and names the package to install for each one that is not (from
the provider each op recorded: see provenance.py).
"""

from __future__ import annotations

import os
import stat

from google.protobuf import json_format, text_format

from ...proto import framework_pb2 as pb
from ..base.errors import ProgramError, shown
from .desc import parse_program_desc, program_from_desc
from .program import Program

# The largest program file read: protobuf parses no message beyond 2 GiB.
MAX_PROGRAM_BYTES = 2**31 - 1


def checked_path(path: object, doing: str) -> str:
    """``path`` as text; ProgramError unless it is a str or os.PathLike naming one (an int
    would be taken by open() as a file descriptor: 0 is stdin)."""
    try:
        text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    except Exception:  # a __fspath__ that raises
        text = None
    if not isinstance(text, str) or not text or "\0" in text:
        raise ProgramError(
            f"cannot {doing}: the path must be a non-empty str or os.PathLike without NUL "
            f"characters, got {shown(path)}"
        )
    return text


def make_directory(dirname: object, doing: str) -> str:
    """``dirname`` (checked as ``checked_path`` does), created with its parents if need be;
    ProgramError naming it when that fails."""
    path = checked_path(dirname, doing)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise ProgramError(f"cannot {doing} to {path!r}: {e.strerror or e}") from None
    return path


def _format_of(path: str) -> str:
    """The file format a program path names by its suffix: "text", "json" or "binary"."""
    if path.endswith((".pbtxt", ".txt")):
        return "text"
    return "json" if path.endswith(".json") else "binary"


def save_program(program: Program, path: str | os.PathLike) -> None:
    """Write ``program`` to ``path``: protobuf binary, text format for ``.pbtxt``/``.txt``, or
    protobuf's JSON mapping for ``.json``."""
    if not isinstance(program, Program):
        raise ProgramError(f"save_program expects a Program, got {type(program).__name__}")
    path = checked_path(path, "save the program")
    desc = program.to_desc()
    form = _format_of(path)
    if form == "text":
        data = text_format.MessageToString(desc).encode("utf-8")
    elif form == "json":
        text = json_format.MessageToJson(desc, preserving_proto_field_name=True, indent=1)
        data = (text + "\n").encode("utf-8")
    else:
        data = desc.SerializeToString()
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        raise ProgramError(f"cannot save the program to {path!r}: {e.strerror}") from None


def load_program(path: str | os.PathLike, *, check_ops: bool = True) -> Program:
    """Read a program written by ``save_program``. Raises OpNotFoundError naming every op no
    loaded plugin provides, with the package to install (see ``Program.from_desc``);
    ``check_ops=False`` reads it all the same, to inspect or draw it (running it fails on those
    ops)."""
    path = checked_path(path, "load a program")
    try:
        # Only a regular file: a FIFO would block the open, /dev/zero never end.
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise ProgramError(f"cannot load a program from {path!r}: it is not a regular file")
        if info.st_size > MAX_PROGRAM_BYTES:
            raise ProgramError(
                f"cannot load a program from {path!r}: it holds {info.st_size} bytes, more "
                f"than a program can ({MAX_PROGRAM_BYTES})"
            )
        # The size stat gave, and one byte more to see a file still being written: a read of
        # the most a program may hold allocated all of it (2 GiB) up front, for every load.
        with open(path, "rb") as f:
            data = f.read(info.st_size + 1)
    except OSError as e:
        raise ProgramError(f"cannot load a program from {path!r}: {e.strerror}") from None
    if len(data) != info.st_size:
        raise ProgramError(
            f"cannot load a program from {path!r}: it changed while it was read "
            f"({info.st_size} bytes, then {len(data)})"
        )
    form = _format_of(path)
    if form == "text":
        desc = pb.ProgramDesc()
        try:
            text_format.Parse(data.decode("utf-8"), desc)
        except (text_format.ParseError, UnicodeDecodeError) as e:
            raise ProgramError(f"{path!r} is not a program in text format: {e}") from None
        return _program(desc, path, check_ops)
    if form == "json":
        desc = pb.ProgramDesc()
        try:
            json_format.Parse(data.decode("utf-8"), desc)
        except (json_format.ParseError, UnicodeDecodeError, RecursionError) as e:
            raise ProgramError(f"{path!r} is not a program in JSON: {e}") from None
        return _program(desc, path, check_ops)
    return _program(parse_program_desc(data, path), path, check_ops)


def _program(desc: pb.ProgramDesc, path: str, check_ops: bool) -> Program:
    """``desc`` as a Program; a structural problem names the file (a missing op's error
    names it already, with the package to install)."""
    try:
        if not check_ops:
            return program_from_desc(Program, desc)
        return Program.from_desc(desc, source=path)
    except ProgramError as e:
        if type(e) is not ProgramError:
            raise
        raise ProgramError(f"{path!r} holds no valid program: {e}") from None
