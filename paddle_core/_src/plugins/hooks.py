"""Behavioural hooks (pluggy): kernel selection, device types, program passes; in-process plugins.

Discovery does not go through pluggy (see ``discovery``); hooks are for behaviour. Implementers
mark functions with ``paddle_core.hookimpl``. Installed plugins name a ``hooks_module`` in their
manifest, imported the first time the core calls hooks; notebooks and tests call
``register_plugin(obj)`` with an object (class instance or module) carrying hookimpls, and may
declare ops from it through ``paddle_core_manifest``.

The core's own defaults (CPU and CUDA devices, the default kernel choice) are registered the
same way, as the plugin "core".
"""

from __future__ import annotations

import importlib
from typing import Any

import pluggy
from google.protobuf import text_format

from ..._version import __version__
from ..base.cpu import CPU
from ..base.cuda import CUDA
from ..base.errors import PLUGIN_CODE_ERRORS, PluginError
from . import registry as R
from .discovery import PluginRecord, record_from_manifest

PROJECT = "paddle_core"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class HookSpecs:
    """The hooks plugins may implement."""

    @hookspec
    def paddle_core_manifest(self) -> Any:
        """Declare ops from an in-process plugin.

        Return manifest text (protobuf text format, as in a ``.pbtxt`` file) or a
        ``PluginManifest`` message. Bare rule and kernel names in it resolve to attributes of
        the plugin object. Only consulted by ``register_plugin``.
        """

    @hookspec(firstresult=True)
    def paddle_core_select_kernel(self, op: str, device: str, dtype: str, candidates: list) -> Any:
        """Choose the kernel for (op, device, dtype) at executor prepare time.

        ``candidates`` are ``KernelRef``s in conflict-rule order (possibly empty). Return one of
        them to decide, or None to let the next implementation decide. The core's default
        (``trylast``) returns the first candidate.
        """

    @hookspec
    def paddle_core_device_types(self) -> list:
        """Return ``Device`` subclasses this plugin provides (each with a unique ``type``)."""

    @hookspec
    def paddle_core_transform_program(
        self, program: Any, device: Any, feed_names: list, fetch_names: list
    ) -> None:
        """Rewrite ``program`` in place before it is prepared for ``device``, fed the variables
        ``feed_names`` and fetching ``fetch_names`` (an implementation takes the arguments it
        names, any of these four).

        Called on a private copy (never the user's program), before pruning and kernel
        selection, so a pass may change which ops the fetches need. Typical uses: fusion,
        layout changes, inserting device copies. A pass must leave each fetched variable, and
        each variable an op it did not rewrite reads, with the value the program gives it;
        fed variables are the caller's. It may insert ops (``Block.insert_op``) and rebind
        ops (``Block.rewrite_op``, which keeps an op's identity): ops it inserts count, for a
        value taken at a point of the program (``pc.Model``'s expressions), as part of the op
        of the program before them.
        """

    @hookspec
    def paddle_core_wants_transform(
        self, program: Any, device: Any, feed_names: list, fetch_names: list
    ) -> bool:
        """Whether this plugin's ``paddle_core_transform_program`` has anything to do for
        ``program`` (which it must not change here), with the same arguments.

        The planner copies a program for its passes only when one of them has something to
        do, so a pass that applies to few programs should say which: the copy costs about as
        much as the rest of planning. A plugin that implements the pass but not this hook is
        always given the copy.
        """


class CoreHooks:
    """The core's own hook implementations: registered like any plugin's."""

    @hookimpl(trylast=True)
    def paddle_core_select_kernel(self, op, device, dtype, candidates):
        return candidates[0] if candidates else None

    @hookimpl
    def paddle_core_device_types(self):
        return [CPU, CUDA]


def passes_apply(program: Any, device: Any, feed_names: list, fetch_names: list) -> bool:
    """Whether a ``paddle_core_transform_program`` pass may change ``program``: a plugin
    implementing it says so through ``paddle_core_wants_transform``, or does not say."""
    manager = plugin_manager()
    passes = {i.plugin_name for i in manager.hook.paddle_core_transform_program.get_hookimpls()}
    if not passes:
        return False
    asked = manager.hook.paddle_core_wants_transform
    if passes - {i.plugin_name for i in asked.get_hookimpls()}:
        return True
    return any(
        asked(program=program, device=device, feed_names=feed_names, fetch_names=fetch_names)
    )


_manager: pluggy.PluginManager | None = None
# Bumped whenever register_plugin/unregister_plugin change the hooks, so that executors drop
# plans prepared under the old ones (and in a child process after fork: run/executor.py).
generation = 0


def plugin_manager() -> pluggy.PluginManager:
    """The hook manager, with the core's hooks and every loaded plugin's hooks_module."""
    global _manager
    if _manager is None:
        _manager = pluggy.PluginManager(PROJECT)
        _manager.add_hookspecs(HookSpecs)
        _manager.register(CoreHooks(), name="core")
        R._rebuild_listeners.append(_register_hooks_modules)
        _register_hooks_modules()
    return _manager


def _register_hooks_modules() -> None:
    """Import and register each loaded plugin's hooks module; a failure is recorded against
    that plugin and the others go on."""
    manager = plugin_manager()
    for record in R.get_registry().records:
        if not record.hooks_module or not record.loaded:
            continue
        if manager.has_plugin(record.name):
            continue
        try:
            module = importlib.import_module(record.hooks_module)
            manager.register(module, name=record.name)
        except PLUGIN_CODE_ERRORS as e:
            message = f"hooks module {record.hooks_module!r} failed: {type(e).__name__}: {e}"
            if message not in record.runtime_errors:
                record.runtime_errors.append(message)


def register_plugin(plugin: object, name: str | None = None) -> str:
    """Register an in-process plugin (hookimpls, and ops via ``paddle_core_manifest``).

    Returns the name it was registered under. Ops it declares take precedence over installed
    plugins' ops of the same type (reported as a conflict). Raises PluginError if the name is
    taken or its manifest is invalid.
    """
    global generation
    manager = plugin_manager()
    name = name or getattr(plugin, "__name__", None) or type(plugin).__name__.lower()
    if manager.has_plugin(name) or name in R.get_registry().plugins:
        raise PluginError(f"a plugin named {name!r} is already registered", plugin=name)
    record = None
    impl = getattr(plugin, "paddle_core_manifest", None)
    if impl is not None:
        declared = impl()
        text = declared if isinstance(declared, str) else _to_text(declared)
        record = PluginRecord(name, namespace=plugin)
        record_from_manifest(record, [(text, f"<register_plugin {name!r}>")], __version__)
        if record.errors:
            raise PluginError(
                f"plugin {name!r} declares an invalid manifest: " + "; ".join(record.errors),
                plugin=name,
            )
    manager.register(plugin, name=name)
    generation += 1
    if record is not None:
        R.in_process.insert(0, record)
        R.reload_registry()
    return name


def unregister_plugin(name: str) -> None:
    """Remove an in-process plugin registered with ``register_plugin``."""
    global generation
    manager = plugin_manager()
    if manager.get_plugin(name) is None:
        raise PluginError(f"no in-process plugin named {name!r} is registered", plugin=name)
    manager.unregister(name=name)
    generation += 1
    before = len(R.in_process)
    R.in_process[:] = [r for r in R.in_process if r.name != name]
    if len(R.in_process) != before:
        R.reload_registry()


def _to_text(message: Any) -> str:
    return text_format.MessageToString(message)
