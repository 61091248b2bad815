"""Loading kernels on first use: Python callables, and native kernels from a plugin's `_C`.

A plugin's compiled module exports ``KERNEL_ABI_VERSION`` and ``kernels() -> {symbol:
capsule}`` (see paddle_core/include/paddle_core/pybind.hpp). The first time one of its native
kernels is needed, the module is imported and checked once: the ABI version against the
core's, and the table against the manifest in both directions. Any failure is recorded
against the plugin (``paddle-ops plugins`` shows it) and raised as KernelLoadError naming the
plugin, the module and what is wrong; other plugins are unaffected.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from .discovery import PluginRecord
from .errors import KernelLoadError, PluginError
from .manifest import KERNEL_ABI_VERSION


def load_python(plugin: PluginRecord, op: str, device: str, ref: str) -> Any:
    from .registry import resolve

    try:
        return resolve(plugin, ref, f"{device} kernel of op {op!r}")
    except PluginError as e:
        raise KernelLoadError(str(e), op=op) from e.__cause__


def load_native(plugin: PluginRecord, op: str, symbol: str) -> Any:
    """The capsule of native kernel ``symbol``; KernelLoadError if it cannot be used."""
    table = kernel_table(plugin, op)
    try:
        return table[symbol]
    except KeyError:
        raise KernelLoadError(
            f"op {op!r}: {plugin.label}'s module {plugin.kernel_module!r} has no kernel "
            f"{symbol!r} (it exports {len(table)})",
            op=op,
        ) from None


def kernel_table(plugin: PluginRecord, op: str) -> dict[str, Any]:
    """The plugin's checked kernel table (imported and checked once per process)."""
    cached = _tables.get(id(plugin))
    if cached is not None and cached[0] is plugin:
        return cached[1]
    table = _load_table(plugin, op)
    _tables[id(plugin)] = (plugin, table)
    if plugin.kernel_problem:  # an earlier process (or discovery) found a problem: gone now
        _remember(plugin, "")
    return table


def _remember(plugin: PluginRecord, problem: str) -> None:
    """Set the plugin's kernel problem here and in the on-disk index."""
    from . import index_cache
    from .registry import get_registry

    plugin.kernel_problem = problem
    cache_dir = get_registry().settings.cache_dir
    if cache_dir is not None and plugin.namespace is None:
        index_cache.note_kernel_problem(cache_dir, plugin, problem, _module_file(plugin))


def _module_file(plugin: PluginRecord) -> str:
    """Where the plugin's kernel module lives ("" if that cannot be told)."""
    try:
        spec = importlib.util.find_spec(plugin.kernel_module)
    except Exception:  # its package fails to import: the problem itself
        return ""
    return (spec.origin or "") if spec is not None else ""


_tables: dict[int, tuple[PluginRecord, dict[str, Any]]] = {}


def _fail(plugin: PluginRecord, op: str, problem: str) -> KernelLoadError:
    if plugin.kernel_problem != problem:
        _remember(plugin, problem)
    return KernelLoadError(f"op {op!r} cannot run: {plugin.label}: {problem}", op=op)


def _load_table(plugin: PluginRecord, op: str) -> dict[str, Any]:
    from . import __version__
    from .prepared import compiled_runtime

    _runtime = compiled_runtime()

    name = plugin.kernel_module
    try:
        module = importlib.import_module(name)
    except Exception as e:
        raise _fail(
            plugin, op, f"its compiled module {name!r} failed to import: {type(e).__name__}: {e}"
        ) from e
    abi = getattr(module, "KERNEL_ABI_VERSION", None)
    if abi != KERNEL_ABI_VERSION:
        raise _fail(
            plugin,
            op,
            f"its compiled module {name!r} was built for kernel ABI {abi}, but paddle-core "
            f"{__version__} speaks kernel ABI {KERNEL_ABI_VERSION}; reinstall the plugin "
            "built against this paddle-core",
        )
    try:
        table = dict(module.kernels())
    except Exception as e:
        raise _fail(plugin, op, f"{name}.kernels() failed: {type(e).__name__}: {e}") from e
    for symbol, capsule in table.items():
        try:
            abi, size, exported, has_run = _runtime.kernel_info(capsule)
        except Exception as e:
            raise _fail(plugin, op, f"kernel {symbol!r} is not a kernel capsule: {e}") from e
        too_small = size < _runtime.KERNEL_STRUCT_SIZE
        if abi != KERNEL_ABI_VERSION or exported != symbol or not has_run or too_small:
            raise _fail(
                plugin,
                op,
                f"kernel {symbol!r} is malformed (ABI {abi}, name {exported!r}, struct size "
                f"{size}, run {'set' if has_run else 'missing'})",
            )
    declared = _declared_symbols(plugin)
    missing = sorted(declared - set(table))
    if missing:
        raise _fail(
            plugin, op, f"its manifest declares native kernels {name!r} does not export: "
            + ", ".join(missing),
        )  # fmt: skip
    undeclared = sorted(set(table) - declared)
    if undeclared:  # harmless for running, but the manifest is out of date: report it
        warning = f"{name!r} exports kernels its manifest does not declare: " + ", ".join(
            undeclared
        )
        if warning not in plugin.warnings:
            plugin.warnings.append(warning)
    return table


def _declared_symbols(plugin: PluginRecord) -> set[str]:
    manifest = plugin.manifest()
    kernels = [k for opdef in manifest.ops for k in opdef.kernels]
    kernels += [k for pack in manifest.kernel_packs for k in pack.kernels]
    return {k.native for k in kernels if k.WhichOneof("impl") == "native"}
