"""Loading plugin code on first use: rules and Python kernels by reference, native kernel tables.

A manifest names Python code as "function" (in the plugin's rules module, or on an in-process
plugin's object) or "module:function"; ``resolve`` imports it. A plugin's compiled module
exports ``KERNEL_ABI_VERSION`` and ``kernels() -> {symbol: capsule}`` (see
paddle_core/include/paddle_core/pybind.hpp). The first time one of its native kernels is
needed, the module is imported and checked once: the ABI version against the core's, each
capsule with the compiled runtime, and the table against the manifest in both directions.

Every failure is recorded against the plugin (``paddle-ops plugins`` shows it) and raised as
an error naming the plugin, what was being loaded and why; other plugins are unaffected. A
kernel problem is also noted in the on-disk index (when ``cache_dir`` is given), so that a
later ``paddle-ops list`` marks the plugin's ops unavailable.
"""

from __future__ import annotations

import importlib

from ..._version import __version__
from ..base import native
from ..base.errors import KernelLoadError, PluginError
from . import index_cache
from .discovery import PluginRecord

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing would slow `paddle-ops list`
if TYPE_CHECKING:
    from typing import Any


def resolve(plugin: PluginRecord, ref: str, what: str) -> Any:
    """Resolve "function" (in the plugin's rules module or object) or "module:function".

    Failures are recorded against the plugin (shown by ``paddle-ops plugins``) and raised as
    PluginError naming the plugin, what was being resolved and why.
    """
    module_name, sep, attr = ref.rpartition(":")
    try:
        if sep:
            owner, where = importlib.import_module(module_name), repr(module_name)
        elif plugin.namespace is not None:
            owner, where = plugin.namespace, f"the object registered as {plugin.name!r}"
        else:
            module_name = plugin.rules_module
            owner, where = importlib.import_module(module_name), repr(module_name)
    except Exception as e:
        message = f"importing {module_name!r} raised {type(e).__name__}: {e}"
        _record(plugin, message)
        raise PluginError(
            f"cannot load the {what} from {plugin.label}: {message}", plugin=plugin.name
        ) from e
    try:
        return getattr(owner, attr)
    except AttributeError:
        message = f"{where} has no {attr!r} (the {what})"
        _record(plugin, message)
        raise PluginError(f"{plugin.label}: {message}", plugin=plugin.name) from None


def _record(plugin: PluginRecord, message: str) -> None:
    if message not in plugin.runtime_errors:
        plugin.runtime_errors.append(message)


def load_python(plugin: PluginRecord, op: str, device: str, ref: str) -> Any:
    try:
        return resolve(plugin, ref, f"{device} kernel of op {op!r}")
    except PluginError as e:
        raise KernelLoadError(str(e), op=op) from e.__cause__


def load_native(plugin: PluginRecord, op: str, symbol: str, cache_dir: str | None) -> Any:
    """The capsule of native kernel ``symbol``; KernelLoadError if it cannot be used."""
    table = kernel_table(plugin, op, cache_dir)
    try:
        return table[symbol]
    except KeyError:
        raise KernelLoadError(
            f"op {op!r}: {plugin.label}'s module {plugin.kernel_module!r} has no kernel "
            f"{symbol!r} (it exports {len(table)})",
            op=op,
        ) from None


def kernel_table(plugin: PluginRecord, op: str, cache_dir: str | None) -> dict[str, Any]:
    """The plugin's checked kernel table (imported and checked once per process)."""
    cached = _tables.get(id(plugin))
    if cached is not None and cached[0] is plugin:
        return cached[1]
    table = _load_table(plugin, op, cache_dir)
    _tables[id(plugin)] = (plugin, table)
    if plugin.kernel_problem:  # an earlier process (or discovery) found a problem: gone now
        _remember(plugin, "", cache_dir)
    return table


def _remember(plugin: PluginRecord, problem: str, cache_dir: str | None) -> None:
    """Set the plugin's kernel problem here and in the on-disk index."""
    plugin.kernel_problem = problem
    if cache_dir is not None and plugin.namespace is None:
        index_cache.note_kernel_problem(cache_dir, plugin, problem, _module_file(plugin))


def _module_file(plugin: PluginRecord) -> str:
    """Where the plugin's kernel module lives ("" if that cannot be told)."""
    import importlib.util  # (only when a kernel problem is noted: off the listing path)

    try:
        spec = importlib.util.find_spec(plugin.kernel_module)
    except Exception:  # its package fails to import: the problem itself
        return ""
    return (spec.origin or "") if spec is not None else ""


_tables: dict[int, tuple[PluginRecord, dict[str, Any]]] = {}


def _load_table(plugin: PluginRecord, op: str, cache_dir: str | None) -> dict[str, Any]:
    def fail(problem: str) -> KernelLoadError:
        if plugin.kernel_problem != problem:
            _remember(plugin, problem, cache_dir)
        return KernelLoadError(f"op {op!r} cannot run: {plugin.label}: {problem}", op=op)

    runtime = native.runtime()
    name = plugin.kernel_module
    try:
        module = importlib.import_module(name)
    except Exception as e:
        raise fail(f"its compiled module {name!r} failed to import: {type(e).__name__}: {e}") from e
    abi = getattr(module, "KERNEL_ABI_VERSION", None)
    if abi != native.KERNEL_ABI_VERSION:
        raise fail(
            f"its compiled module {name!r} was built for kernel ABI {abi}, but paddle-core "
            f"{__version__} speaks kernel ABI {native.KERNEL_ABI_VERSION}; reinstall the plugin "
            "built against this paddle-core"
        )
    try:
        table = dict(module.kernels())
    except Exception as e:
        raise fail(f"{name}.kernels() failed: {type(e).__name__}: {e}") from e
    for symbol, capsule in table.items():
        try:
            abi, size, exported, has_run = runtime.kernel_info(capsule)
        except Exception as e:
            raise fail(f"kernel {symbol!r} is not a kernel capsule: {e}") from e
        too_small = size < runtime.KERNEL_V1_SIZE  # ABI 1's first layout; later ones grow
        if abi != native.KERNEL_ABI_VERSION or exported != symbol or not has_run or too_small:
            raise fail(
                f"kernel {symbol!r} is malformed (ABI {abi}, name {exported!r}, struct size "
                f"{size}, run {'set' if has_run else 'missing'})"
            )
    declared = _declared_symbols(plugin)
    missing = sorted(declared - set(table))
    if missing:
        raise fail(
            f"its manifest declares native kernels {name!r} does not export: " + ", ".join(missing)
        )
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
