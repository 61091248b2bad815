"""The on-disk plugin index: discovery's result, reused while the installed plugins are unchanged.

The index is valid while all of these hold (checked with a few ``stat`` calls, no scanning):

- the same core version, Python and ``sys.path`` (in order);
- for every ``sys.path`` directory whose mtime moved, the same ``*.dist-info``/``*.egg-info``
  entries with the same mtimes (pip recreates these on install, upgrade and removal, and a
  new or removed distribution changes its directory's mtime);
- every plugin's manifest file (and manifest directory), and the record of its build
  (kernels.json), has the same size and mtime (editable installs edit in place).

One file per interpreter and resolved ``sys.path`` (so ``python -c`` and a console script,
whose first path entries differ, do not evict each other), under the cache directory. Writes
are atomic (temporary file + rename); an unwritable cache directory just means no caching.

Beside the indexes, one file remembers kernel problems found at run time (a compiled module
that fails to import or speaks another ABI), which discovery cannot see without importing
it: ``paddle-ops list`` in a later process reports them whatever its ``sys.path``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import zlib

from .discovery import PluginRecord

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing would slow `paddle-ops list`
if TYPE_CHECKING:
    from typing import Any

FORMAT = 4  # 4: records hold the kernel record and the kernels not built
PROBLEMS_FILE = "kernel-problems.json"


def search_path() -> list[str]:
    """``sys.path`` with the current directory ("") spelled out, as discovery will see it."""
    return [p or os.getcwd() for p in sys.path]


def index_file(cache_dir: str) -> str:
    env = "\0".join([sys.executable, *search_path()]).encode()
    return os.path.join(cache_dir, f"index-{zlib.crc32(env):08x}.json")


def load(cache_dir: str, core_version: str) -> list[PluginRecord] | None:
    """The cached records if the index is still valid, else None."""
    data = _read(index_file(cache_dir))
    try:
        if data is None or not _valid(data, core_version):
            return None
        return [PluginRecord.from_json(r) for r in data["plugins"]]
    except Exception:  # a damaged or foreign file: rebuilt by the caller
        return None


def _read(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def store(cache_dir: str, core_version: str, records: list[PluginRecord]) -> None:
    """Write the index for ``records``; silently skipped if the cache is not writable."""
    data = {
        "format": FORMAT,
        "core": core_version,
        "python": sys.version,
        "paths": [[p, _mtime(p), _dists(p)] for p in search_path()],
        # Every manifest file, a manifest directory itself (its mtime moves when files are
        # added or removed), and the kernel record of each build.
        "manifests": {
            path: _file_state(path)
            for r in records
            for path in dict.fromkeys([r.manifest_path, *r.manifest_files, r.kernel_record])
            if path
        },
        "plugins": [r.to_json() for r in records],
    }
    _write(index_file(cache_dir), data)


def _write(path: str, data: dict[str, Any]) -> None:
    """Write the index atomically (temporary file + rename); skip if unwritable."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _valid(data: dict[str, Any], core_version: str) -> bool:
    if data.get("format") != FORMAT or data.get("core") != core_version:
        return False
    if data.get("python") != sys.version:
        return False
    paths = data.get("paths", [])
    if [p[0] for p in paths] != search_path():
        return False
    for entry, mtime, dists in paths:
        if _mtime(entry) != mtime and _dists(entry) != dists:
            return False
    return all(_file_state(f) == state for f, state in data.get("manifests", {}).items())


def _mtime(entry: str) -> int | None:
    try:
        return os.stat(entry).st_mtime_ns
    except OSError:
        return None


def _dists(entry: str) -> dict[str, int]:
    """Distribution metadata directories in a sys.path entry, with their mtimes."""
    found = {}
    try:
        with os.scandir(entry) as it:
            for e in it:
                if e.name.endswith((".dist-info", ".egg-info")):
                    found[e.name] = e.stat().st_mtime_ns
    except OSError:
        pass  # a zip file or a missing directory: its mtime alone tracks it
    return found


def _file_state(path: str) -> list[int] | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def note_kernel_problem(
    cache_dir: str,
    plugin: PluginRecord,
    problem: str,
    module: str,
    missing: list[str],
    refused: list[list[str]] | None = None,
) -> None:
    """Remember (or, with "" and nothing ``missing`` or ``refused``, forget) why ``plugin``'s
    kernels cannot be used: the ``problem`` of its whole module, the declared symbols it is
    ``missing``, or the kernels ``refused`` for ops they do not fit ([op, symbol, why]). The
    note holds for this distribution and version, installed where its manifest is (another
    environment's copy is another build), while the kernel ``module`` file is unchanged, so a
    rebuilt or reinstalled plugin gets a fresh try. Skipped if the cache is unwritable."""
    path = os.path.join(cache_dir, PROBLEMS_FILE)
    notes = _read(path) or {}
    key = _problem_key(plugin)
    if problem or missing or refused:
        notes[key] = {
            "problem": problem,
            "missing": missing,
            "refused": refused or [],
            "module": [module, _file_state(module)],
            "manifest": plugin.manifest_path,
        }
    elif notes.pop(key, None) is None:
        return
    _write(path, notes)


def apply_kernel_problems(cache_dir: str, records: list[PluginRecord]) -> None:
    """Give records the kernel problems earlier processes noted and that still hold."""
    notes = _read(os.path.join(cache_dir, PROBLEMS_FILE))
    if not notes:
        return
    for record in records:
        note = notes.get(_problem_key(record))
        try:
            module, state = note["module"]
            here = note["manifest"] == record.manifest_path
            if here and not record.kernel_problem and _file_state(module) == state:
                problem = str(note["problem"])
                missing = [str(s) for s in note.get("missing", ())]
                refused = [[str(part) for part in r] for r in note.get("refused", ())]
                if any(len(r) != 3 for r in refused):
                    continue
                record.kernel_problem, record.missing_symbols = problem, missing
                record.refused_kernels = refused
        except (TypeError, KeyError, ValueError):
            continue  # no note, or a damaged one


def _problem_key(plugin: PluginRecord) -> str:
    return f"{plugin.distribution} {plugin.version} {plugin.name}"
