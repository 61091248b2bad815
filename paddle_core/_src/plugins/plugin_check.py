"""``paddle-ops validate``: check a plugin project or an installed distribution, as a whole.

Every check is the one the core runs when it discovers and loads a plugin: the manifest's
(``discovery.record_from_manifest``: schema, declarations, defaults against ranges and
choices, finite bounds, op naming), the compiled module's (``loading.check_module``: ABI,
struct layout, kernel capsules; ``loading.refused_kernels``: what each kernel declares it fits
against the ops the manifest binds it to) and the rules' (``loading.resolve``). Loading runs them
lazily and forgives what it can run without; validate runs them all at once and is strict:
a declared kernel the module lacks (loading only marks its ops unavailable) and a kernel the
module exports but the manifest does not declare (a warning when loading) are problems.

For a project directory the manifest is the project's own (flat or ``src/`` layout), and the
compiled module and rules are those of the installed distribution of the project's name: an
author runs ``pip install .`` then ``paddle-ops validate .``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from pathlib import Path
from typing import Any

from ..._version import __version__
from ..base.errors import PLUGIN_CODE_ERRORS, counted
from ..spec.manifest import naming_warnings
from . import abi, loading
from .discovery import (
    GROUP,
    PluginRecord,
    is_first_party,
    missing_symbols_reason,
    read_entry_point,
    read_manifest,
    record_from_manifest,
)
from .registry import get_registry


class Report:
    """What validate found: problems (exit 1), warnings, and per plugin a summary."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.plugins: list[dict[str, Any]] = []

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "ok": not self.problems,
            "problems": self.problems,
            "warnings": self.warnings,
            "plugins": self.plugins,
        }


def validate(target: str) -> Report:
    """Validate a project directory (one holding pyproject.toml) or an installed distribution."""
    report = Report(target)
    path = Path(target)
    if path.name == "pyproject.toml" and _exists(path.is_file):
        path = path.parent
    if _exists(path.is_dir) and _exists((path / "pyproject.toml").is_file):
        _validate_project(report, path)
    elif _exists(path.is_dir):
        report.problems.append(
            "no pyproject.toml here; expected a plugin project directory or the name of an "
            "installed distribution"
        )
    elif os.sep in target or target.startswith("."):
        report.problems.append("no such directory; expected a plugin project directory")
    else:
        _validate_distribution(report, target)
    return report


def _exists(check: Any) -> bool:
    """``path.is_dir()`` or ``is_file()``, False where the path cannot even be looked at (a
    name too long for the file system)."""
    try:
        return check()
    except OSError:
        return False


def _validate_project(report: Report, path: Path) -> None:
    import tomllib  # (only for validate)

    try:
        with open(path / "pyproject.toml", "rb") as f:
            project = tomllib.load(f).get("project", {})
    except (OSError, tomllib.TOMLDecodeError) as e:
        report.problems.append(f"pyproject.toml cannot be read: {e}")
        return
    name = project.get("name", "")
    entry_points = project.get("entry-points", {}).get(GROUP, {})
    if not name or not entry_points:
        report.problems.append(
            f'pyproject.toml has no [project] name or no [project.entry-points."{GROUP}"] '
            'entry; expected one naming the manifest, e.g. my_ops = "my_ops:manifest"'
        )
        return
    records = []
    for plugin, value in sorted(entry_points.items()):
        record = PluginRecord(plugin, distribution=name, entry_point=value)
        try:
            parts = read_manifest(record, _project_manifest(path, value))
        except (OSError, ValueError, UnicodeDecodeError) as e:
            report.problems.append(f"plugin {plugin!r}: {e}")
            continue
        record_from_manifest(record, parts, __version__)
        _add_manifest_findings(report, record)
        records.append(record)
    try:
        installed = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        report.problems.append(
            f"{name} is not installed, so its compiled kernels and rules cannot be checked; "
            f"install the project first (pip install {path}), then validate again"
        )
        return
    for record in records:
        found = _installed_record(installed, record.name)
        if record.errors:
            continue  # the manifest's problems come first
        if found is None:
            report.problems.append(
                f"plugin {record.name!r}: the installed {name} {installed.version} does not "
                f"provide it; reinstall the project (pip install {path}), then validate again"
            )
        elif found.errors or not _same_manifest_files(record, found):
            report.problems.append(
                f"plugin {record.name!r}: the installed {name} {installed.version} was built "
                f"from another manifest than {path}'s; reinstall the project (pip install "
                f"{path}), then validate again"
            )
        else:
            _check_code(report, found)


def _same_manifest_files(project: PluginRecord, installed: PluginRecord) -> bool:
    """Whether the installed manifest holds the project's manifest files, unchanged."""
    by_name = {Path(f).name: Path(f) for f in installed.manifest_files}
    return len(by_name) == len(project.manifest_files) and all(
        Path(f).name in by_name and by_name[Path(f).name].read_bytes() == Path(f).read_bytes()
        for f in project.manifest_files
    )


def _project_manifest(path: Path, value: str) -> Path:
    """The manifest an entry-point value names, in a project's flat or src/ layout."""
    package, sep, resource = (part.strip() for part in value.partition(":"))
    if not sep or not package or not resource:
        raise ValueError(f"entry point value {value!r} must look like 'package:manifest.pbtxt'")
    tried = []
    for root in (path, path / "src"):
        candidate = root.joinpath(*package.split(".")) / resource
        if candidate.exists():
            return candidate
        tried.append(str(candidate))
    raise ValueError(f"entry point {value!r}: no manifest at {' or '.join(tried)}")


def _installed_record(dist: Any, plugin: str) -> PluginRecord | None:
    for ep in dist.entry_points:
        if ep.group == GROUP and ep.name == plugin:
            return read_entry_point(ep, __version__)
    return None


def _validate_distribution(report: Report, name: str) -> None:
    try:
        dist = importlib.metadata.distribution(_distribution_of_plugin(name) or name)
    except importlib.metadata.PackageNotFoundError:
        report.problems.append(
            "no distribution of this name is installed (nor is it a project directory); "
            "expected an installed plugin distribution, e.g. paddle-ops-math, or a path"
        )
        return
    entry_points = sorted((ep for ep in dist.entry_points if ep.group == GROUP), key=_name)
    if not entry_points:
        report.problems.append(
            f'{dist.name} {dist.version} registers no entry point in group "{GROUP}"; '
            "expected one naming its manifest"
        )
    for ep in entry_points:
        record = read_entry_point(ep, __version__)
        _add_manifest_findings(report, record)
        if not record.errors:
            _check_code(report, record)


def _distribution_of_plugin(name: str) -> str | None:
    """The distribution of the installed plugin called ``name`` (nn: paddle-ops-nn), so that
    validate takes the names `paddle-ops list` shows; None where no plugin is called that."""
    for ep in importlib.metadata.entry_points(group=GROUP):
        if ep.name == name and ep.dist is not None:
            return ep.dist.name
    return None


def _name(ep: Any) -> str:
    return ep.name


def _add_manifest_findings(report: Report, record: PluginRecord) -> None:
    report.problems += [f"plugin {record.name!r}: {e}" for e in record.errors]
    report.warnings += [f"plugin {record.name!r}: {w}" for w in record.warnings]
    if record.manifest_b64 and not is_first_party(record.distribution):  # it parsed
        names = naming_warnings(record.manifest(), record.name)
        report.warnings += [f"plugin {record.name!r}: {w}" for w in names]


def _check_code(report: Report, record: PluginRecord) -> None:
    """Import what the manifest names, as loading does, and note what is wrong."""
    where = f"plugin {record.name!r}"
    loading.resolve_all(record)
    report.problems += [f"{where}: {e}" for e in record.runtime_errors]
    report.problems += [
        f"{where}: op {op!r}: {device} kernel {symbol!r}: {why}"
        for op, device, symbol, why in record.faults
    ]
    if record.hooks_module:
        try:
            importlib.import_module(record.hooks_module)
        except PLUGIN_CODE_ERRORS as e:
            report.problems.append(
                f"{where}: its hooks module {record.hooks_module!r} failed to import: "
                f"{type(e).__name__}: {e}"
            )
    declared = loading.declared_symbols(record)
    summary = {
        "name": record.name,
        "distribution": record.distribution,
        "version": record.version,
        "ops": len(record.ops),
        "native_kernels": len(declared),
        "layout": "",
    }
    report.plugins.append(summary)
    if not declared:
        return
    table, problem, undeclared = loading.check_module(record)
    if problem:
        report.problems.append(f"{where}: {problem}")
        return
    module = importlib.import_module(record.kernel_module)
    summary["layout"] = abi.fingerprint_id(module.KERNEL_LAYOUT)  # (checked by check_module)
    missing = sorted(declared - set(table))
    if missing:
        report.problems.append(f"{where}: " + missing_symbols_reason(record.kernel_module, missing))
    # The registry (built only for kernel packs naming another plugin's ops) has their protos.
    refused = loading.refused_kernels(record, table, lambda op: get_registry().proto_of(op))
    report.problems += [f"{where}: op {op!r}: {why}" for op, _, why in refused]
    unchecked = sorted(s for s, capsule in table.items() if not abi.declares_fit(capsule))
    if unchecked:
        one = len(unchecked) == 1
        report.warnings.append(
            f"{where}: {counted(len(unchecked), 'kernel')} {'declares' if one else 'declare'} no "
            f"slots or dtypes, so the ops bound to {'it' if one else 'them'} are not checked "
            f"against {'it' if one else 'them'}: {', '.join(unchecked)}; declare them in each "
            "kernel class (kernel.hpp: `static constexpr pc::Signature signature`, "
            "`using DTypes`)"
        )
    if undeclared:
        one = len(undeclared) == 1
        report.problems.append(
            f"{where}: its compiled module {record.kernel_module!r} exports "
            f"{'kernel' if one else 'kernels'} {', '.join(map(repr, undeclared))} that the "
            "manifest does not declare; expected a `kernels { ... native: ... }` entry for "
            f"{'it' if one else 'each'} (or stop exporting {'it' if one else 'them'})"
        )


def summary_line(report: Report) -> str:
    """One line saying what was validated."""
    parts = []
    for p in report.plugins:
        kernels = counted(p["native_kernels"], "native kernel")
        code = f", {kernels}, layout {p['layout']}" if p["layout"] else ""
        parts.append(f"plugin {p['name']!r}: {counted(p['ops'], 'op')}{code}")
    return f"ok: {'; '.join(parts) or 'nothing to check'} (paddle-core {__version__})"
