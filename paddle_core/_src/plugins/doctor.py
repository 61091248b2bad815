"""Checking plugins for real: import their code, and find what ``paddle-ops doctor`` reports.

Listing never imports plugin code; ``paddle-ops plugins`` and ``doctor`` do, on purpose, so that
a rules module that raises, a missing kernel symbol or a failing hooks module shows up before a
program needs it. Problems are recorded against each plugin, as on first use.
"""

from __future__ import annotations

from typing import Any

from ..._version import __version__
from ..base.errors import KernelLoadError
from . import hooks, loading
from .config import normalize, thread_setting
from .discovery import PluginRecord
from .registry import Registry, discover


def check_plugin_code(record: PluginRecord, registry: Registry) -> None:
    """Import a loaded plugin's modules and resolve every name its manifest declares; problems
    are recorded against it (``record.problems``)."""
    if not record.loaded:
        return
    loading.resolve_all(record)
    manifest = record.manifest()
    natives = [o.proto.type for o in manifest.ops if any(k.native for k in o.kernels)]
    natives += [p.op for p in manifest.kernel_packs if any(k.native for k in p.kernels)]
    if natives:
        try:  # imports the module, checks its ABI, its table and what its kernels fit
            cache_dir = registry.settings.cache_dir
            loading.kernel_table(record, natives[0], cache_dir, registry.proto_of)
        except KernelLoadError:
            pass  # recorded as the plugin's kernel problem
    if record.hooks_module:
        hooks.plugin_manager()  # imports hooks modules, recording failures


def report(registry: Registry) -> dict[str, Any]:
    """Problems (exit 1) and warnings found across plugins, conflicts, kernels and the index."""
    problems: list[str] = []
    warnings: list[str] = list(registry.settings_warnings)
    threads_problem = thread_setting()[1]  # (the executor warns of it at its first run)
    warnings += [threads_problem] if threads_problem else []
    for record in registry.records:
        check_plugin_code(record, registry)
        if record.status in ("broken", "partial"):
            problems += [f"{record.label}: {p}" for p in record.problems]
        warnings += [f"{record.label}: {w}" for w in record.warnings]
    for conflict in registry.conflicts:
        (warnings if conflict.preferred else problems).append(conflict.describe())
    for info in registry.ops.values():
        if not info.kernels:
            problems.append(f"op {info.type!r} ({info.plugin.label}) declares no kernel")
    for record in registry.records:
        for pack in record.kernel_packs if record.loaded else []:
            if pack["op"] not in registry.ops:
                warnings.append(
                    f"{record.label} has kernels for op {pack['op']!r}, which no plugin declares"
                )
    for key, wanted in registry.settings.prefer.items():
        op = key.split(":", 1)[0]
        providers = {
            normalize(p.name) for p in registry.records if any(s["type"] == op for s in p.ops)
        }
        providers |= {
            normalize(p.distribution)
            for p in registry.records
            if any(s["type"] == op for s in p.ops)
        }
        if normalize(wanted) not in providers:
            warnings.append(f"preference {key}={wanted}: no such plugin provides op {op!r}")
    stale = False
    if registry.settings.cache_dir is not None and not registry.settings.no_plugins:
        cached = [_discovered(r) for r in registry.records if r.namespace is None]
        fresh = discover(registry.settings, rescan=True)
        stale = cached != [_discovered(r) for r in fresh]
        if stale:
            problems.append("the plugin index was stale; it has been rebuilt")
    return {
        "core_version": __version__,
        "problems": problems,
        "warnings": warnings,
        "stale_index": stale,
    }


def _discovered(record: PluginRecord) -> dict[str, Any]:
    """What discovery found about a plugin, without what running it added (kernel problems
    and warnings found while loading its kernels)."""
    found = record.to_json()
    found.pop("kernel_problem", None)
    found.pop("warnings", None)
    return found
