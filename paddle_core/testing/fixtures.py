"""Opt-in pytest fixtures for op packages' tests: enable them in a ``conftest.py`` with

    pytest_plugins = ["paddle_core.testing.fixtures"]

``op_registry``
    The op registry, isolated for one test: whatever the test registers in-process
    (``paddle_core.register_plugin``, ``op_plugin``) is unregistered afterwards and the
    registry rebuilt, so no op or hook leaks into the next test.
``op_plugin``
    ``op_plugin(manifest_text, name=None, **functions) -> name`` registers an in-process
    plugin declaring the manifest's ops; bare rule and kernel names in the manifest resolve to
    ``functions`` (plain functions: a Python kernel ``def double_cpu(x): return 2 * x``).
    Unregistered when the test ends. For a kernel that misbehaves on purpose, or an op
    prototyped before its package exists.

Only pytest imports this module (paddle-core does not depend on pytest).
"""

from __future__ import annotations

import itertools
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest  # (a pytest plugin: loaded only by pytest, through pytest_plugins)

from .._src.plugins import hooks, loading, registry
from .._src.plugins.config import settings_inputs
from .._src.plugins.registry import Registry, reload_registry

_names = itertools.count(1)


def plugin_state() -> tuple:
    """What the registry and the hooks are built from, as a value that stays equal while a
    rebuild would give the same: the count of rebuilds and the hooks' generation (every
    ``register_plugin``, ``unregister_plugin`` and ``reload_registry`` moves one), loading's
    (a problem recorded against a plugin), the plugins registered with the hooks, the
    settings' inputs (PADDLE_CORE_* variables, the config file), and ``sys.path`` with each
    directory's modification time (installing or removing a distribution there moves it)."""
    path = []
    for entry in sys.path:
        try:
            path.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            path.append((entry, None))
    names = tuple(name for name, _ in hooks.plugin_manager().list_name_plugin())
    generations = registry.generation, hooks.generation, loading.generation
    return generations, names, settings_inputs(), tuple(path)


def isolated_plugins() -> Iterator[None]:
    """Around one test (a generator for a fixture to yield from): afterwards, unregister the
    in-process plugins the test registered, and rebuild the registry if the test changed
    anything it is built from (``plugin_state``). A test that changed nothing leaves the
    registry as it was, its ops resolved and kernels loaded, for the next test."""
    manager = hooks.plugin_manager()
    before = {name for name, _ in manager.list_name_plugin()}
    state = plugin_state()
    yield
    for name, _ in manager.list_name_plugin():
        if name not in before:
            hooks.unregister_plugin(name)
    if plugin_state() != state:
        reload_registry()


@pytest.fixture
def op_registry() -> Iterator[Registry]:
    """The registry, rebuilt now, and after the test without what the test registered (when
    the test changed anything it is built from: ``isolated_plugins``)."""
    rebuilt = reload_registry()
    isolated = isolated_plugins()
    next(isolated)
    yield rebuilt
    next(isolated, None)


@pytest.fixture
def op_plugin(op_registry: Registry) -> Callable[..., str]:
    """A function registering an in-process plugin from manifest text (see the module doc)."""

    def register(manifest: str, name: str | None = None, **functions: Any) -> str:
        name = name or f"test_plugin_{next(_names)}"
        plugin = types.SimpleNamespace(paddle_core_manifest=lambda: manifest, **functions)
        registered = hooks.register_plugin(plugin, name=name)
        return registered

    return register
