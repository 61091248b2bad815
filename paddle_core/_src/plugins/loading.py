"""Loading plugin code on first use: rules and Python kernels by reference, native kernel tables.

A manifest names Python code as "module:function", or as "function" in a file that sets a
rules_module (discovery spells it in full) or on an in-process plugin's object; ``resolve``
imports it. A plugin's compiled module
exports ``KERNEL_ABI_VERSION``, ``KERNEL_LAYOUT`` and ``kernels() -> {symbol: capsule}`` (see
paddle_core/include/paddle_core/pybind.hpp). The first time one of its native kernels is
needed, the module is imported and checked once: the ABI version and struct layout against the
core's (``abi``), each capsule with the compiled runtime, the table against the manifest in
both directions, and each kernel's declaration of what it fits (slots, dtypes) against every op
the manifest binds it to.

Every failure is recorded against the plugin (``paddle-ops plugins`` shows it) and raised as
an error naming the plugin, what was being loaded and why; other plugins are unaffected. A
module that cannot be used at all makes every native kernel of the plugin unavailable; a
declared symbol the module does not export makes only the kernels naming it unavailable (the
plugin's ``missing_symbols``), the plugin's other ops run; so does a kernel bound to an op it
does not fit (``refused_kernels``), for that op. All are also noted in the on-disk index (when
``cache_dir`` is given), so that a later ``paddle-ops list`` marks the ops unavailable.
"""

from __future__ import annotations

import importlib

from ..base.errors import PLUGIN_CODE_ERRORS, KernelLoadError, PluginError
from ..base.threads import openmp_defaults
from . import abi, index_cache
from .discovery import PluginRecord, missing_symbols_reason

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing would slow `paddle-ops list`
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    # The OpProto of an op declared by another plugin (for kernel packs), or None.
    ProtoOf = Callable[[str], Any]


def resolve(plugin: PluginRecord, ref: str, what: str) -> Any:
    """Resolve "module:function", or "function" on an in-process plugin's object (discovery
    spells an installed plugin's bare names in full, with their file's rules_module).

    Failures are recorded against the plugin (shown by ``paddle-ops plugins``) and raised as
    PluginError naming the plugin, what was being resolved and why.
    """
    module_name, sep, attr = ref.rpartition(":")
    try:
        if sep or plugin.namespace is None:
            owner, where = importlib.import_module(module_name), repr(module_name)
        else:
            owner, where = plugin.namespace, f"the object registered as {plugin.name!r}"
    except PLUGIN_CODE_ERRORS as e:
        message = f"importing {module_name!r} raised {type(e).__name__}: {e}"
        _record(plugin, message)
        raise PluginError(
            f"cannot load the {what} from {plugin.label}: {message}", plugin=plugin.name
        ) from e
    try:
        found = getattr(owner, attr)
    except PLUGIN_CODE_ERRORS:  # absent, or a module __getattr__ that raises
        message = f"{where} has no {attr!r} (the {what})"
        _record(plugin, message)
        raise PluginError(f"{plugin.label}: {message}", plugin=plugin.name) from None
    if not callable(found):
        message = f"{where}.{attr} (the {what}) is a {type(found).__name__}, not a function"
        _record(plugin, message)
        raise PluginError(f"{plugin.label}: {message}", plugin=plugin.name)
    return found


def references(manifest: Any) -> list[tuple[str, str]]:
    """(reference, what it is) for every rule and Python kernel a manifest names."""
    used = []
    for opdef in manifest.ops:
        op = opdef.proto.type
        used += [(opdef.shape_rule, f"shape rule of op {op!r}")]
        used += [(opdef.grad_rule, f"grad rule of op {op!r}")] if opdef.grad_rule else []
        used += [(opdef.random_rule, f"random rule of op {op!r}")] if opdef.random_rule else []
        used += [(k.python, f"{k.device} kernel of op {op!r}") for k in opdef.kernels if k.python]
        for mapping in opdef.onnx:
            what = f"ONNX {mapping.op_type} of op {op!r}"
            for ref, kind in ((mapping.import_rule, "import"), (mapping.export_rule, "export")):
                used += [(ref, f"{kind} rule of {what}")] if ref else []
            for a in mapping.attrs:
                for ref, kind in ((a.rule, "rule"), (a.export_rule, "export rule")):
                    used += [(ref, f"{kind} of attr {a.name!r} of {what}")] if ref else []
    for pack in manifest.kernel_packs:
        used += [
            (k.python, f"{k.device} kernel of op {pack.op!r}") for k in pack.kernels if k.python
        ]
    return used


def resolve_all(plugin: PluginRecord) -> None:
    """Resolve every rule and Python kernel the plugin's manifest names, as first use would;
    each failure is recorded against the plugin (``runtime_errors``)."""
    for ref, what in references(plugin.manifest()):
        try:
            resolve(plugin, ref, what)
        except PluginError:
            pass  # recorded by resolve


# Moves whenever loading records a problem against a plugin (its record changes in place):
# test fixtures compare it to tell whether a test left the registry as it found it.
generation = 0


def _record(plugin: PluginRecord, message: str) -> None:
    global generation
    if message not in plugin.runtime_errors:
        plugin.runtime_errors.append(message)
        generation += 1


def load_python(plugin: PluginRecord, op: str, device: str, ref: str) -> Any:
    try:
        return resolve(plugin, ref, f"{device} kernel of op {op!r}")
    except PluginError as e:
        raise KernelLoadError(str(e), op=op) from e.__cause__


def load_native(
    plugin: PluginRecord, op: str, symbol: str, cache_dir: str | None, proto_of: ProtoOf
) -> Any:
    """The capsule of native kernel ``symbol`` for ``op``; KernelLoadError if it cannot be used
    (``proto_of`` gives the ops of other plugins that the plugin's kernel packs name)."""
    table = kernel_table(plugin, op, cache_dir, proto_of)
    try:
        capsule = table[symbol]
    except KeyError:
        reason = missing_symbols_reason(plugin.kernel_module, [symbol])
        raise KernelLoadError(f"op {op!r} cannot run: {plugin.label}: {reason}", op=op) from None
    why = plugin.refusal(op, symbol)
    if why:
        raise KernelLoadError(f"op {op!r} cannot run: {plugin.label}: {why}", op=op)
    return capsule


def kernel_table(
    plugin: PluginRecord, op: str, cache_dir: str | None, proto_of: ProtoOf
) -> dict[str, Any]:
    """The plugin's checked kernel table (imported and checked once per process)."""
    cached = _tables.get(id(plugin))
    if cached is not None and cached[0] is plugin:
        return cached[1]
    table = _load_table(plugin, op, cache_dir, proto_of)
    _tables[id(plugin)] = (plugin, table)
    return table


def _remember(
    plugin: PluginRecord,
    problem: str,
    missing: list[str],
    refused: list[list[str]],
    cache_dir: str | None,
) -> None:
    """Set the plugin's kernel problem, missing symbols and refused kernels here and in the
    on-disk index."""
    global generation
    generation += 1
    plugin.kernel_problem, plugin.missing_symbols = problem, missing
    plugin.refused_kernels = refused
    if cache_dir is not None and plugin.namespace is None:
        module = _module_file(plugin)
        index_cache.note_kernel_problem(cache_dir, plugin, problem, module, missing, refused)


def _module_file(plugin: PluginRecord) -> str:
    """Where the plugin's kernel module lives ("" if that cannot be told)."""
    import importlib.util  # (only when a kernel problem is noted: off the listing path)

    try:
        spec = importlib.util.find_spec(plugin.kernel_module)
    except PLUGIN_CODE_ERRORS:  # its package fails to import: the problem itself
        return ""
    return (spec.origin or "") if spec is not None else ""


_tables: dict[int, tuple[PluginRecord, dict[str, Any]]] = {}


def _load_table(
    plugin: PluginRecord, op: str, cache_dir: str | None, proto_of: ProtoOf
) -> dict[str, Any]:
    def fail(problem: str) -> KernelLoadError:
        if plugin.kernel_problem != problem or plugin.missing_symbols or plugin.refused_kernels:
            _remember(plugin, problem, [], [], cache_dir)
        return KernelLoadError(f"op {op!r} cannot run: {plugin.label}: {problem}", op=op)

    table, problem, undeclared = check_module(plugin)
    if problem:
        raise fail(problem)
    if undeclared:  # harmless for running, but the manifest is out of date: report it
        warning = f"{plugin.kernel_module!r} exports kernels its manifest does not declare: " + (
            ", ".join(undeclared)
        )
        if warning not in plugin.warnings:
            plugin.warnings.append(warning)
    missing = sorted(declared_symbols(plugin) - set(table))  # only their ops are unavailable
    refused = refused_kernels(plugin, table, proto_of)  # unavailable for the ops they misfit
    news = (plugin.kernel_problem, plugin.missing_symbols, plugin.refused_kernels)
    if news != ("", missing, refused):  # for the index
        _remember(plugin, "", missing, refused, cache_dir)
    return table


def check_module(plugin: PluginRecord) -> tuple[dict[str, Any], str, list[str]]:
    """Import the plugin's compiled module and check it: (its kernel table, the problem that
    makes the whole module unusable or "", the symbols it exports that the manifest does not
    declare). Shared by loading and ``paddle-ops validate``."""
    name = plugin.kernel_module
    try:
        with openmp_defaults():
            module = importlib.import_module(name)
    except PLUGIN_CODE_ERRORS as e:
        return {}, f"its compiled module {name!r} failed to import: {type(e).__name__}: {e}", []
    problem = abi.module_problem(module, name, plugin.distribution)
    if problem:
        return {}, problem, []
    try:
        table = dict(module.kernels())
    except PLUGIN_CODE_ERRORS as e:
        return {}, f"{name}.kernels() failed: {type(e).__name__}: {e}", []
    for symbol, capsule in table.items():
        problem = abi.capsule_problem(symbol, capsule, plugin.distribution)
        if problem:
            return {}, problem, []
    return table, "", sorted(set(table) - declared_symbols(plugin))


def refused_kernels(
    plugin: PluginRecord, table: dict[str, Any], proto_of: ProtoOf | None
) -> list[list[str]]:
    """[op, symbol, why] for each kernel of ``table`` that the plugin's manifest binds to an op
    it does not fit, by the kernel's own declaration (``abi.signature_problem``). The ops of
    kernel packs come from the manifest or, declared by another plugin, from ``proto_of``."""
    manifest = plugin.manifest()
    protos = {opdef.proto.type: opdef.proto for opdef in manifest.ops}
    bound = [(opdef.proto.type, k) for opdef in manifest.ops for k in opdef.kernels]
    bound += [(pack.op, k) for pack in manifest.kernel_packs for k in pack.kernels]
    refused = []
    for op, k in bound:
        if k.WhichOneof("impl") != "native" or k.native not in table:
            continue
        proto = protos.get(op) or (proto_of(op) if proto_of is not None else None)
        if proto is None:  # an op no loaded plugin declares: nothing binds the kernel to it
            continue
        why = abi.signature_problem(k.native, table[k.native], proto, k.dtypes)
        if why:
            refused.append([op, k.native, why])
    return refused


def declared_symbols(plugin: PluginRecord) -> set[str]:
    """The native kernel symbols the plugin's manifest names."""
    manifest = plugin.manifest()
    kernels = [k for opdef in manifest.ops for k in opdef.kernels]
    kernels += [k for pack in manifest.kernel_packs for k in pack.kernels]
    return {k.native for k in kernels if k.WhichOneof("impl") == "native"}
