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
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest  # (a pytest plugin: loaded only by pytest, through pytest_plugins)

from .._src.plugins import hooks
from .._src.plugins.registry import Registry, reload_registry

_names = itertools.count(1)


@pytest.fixture
def op_registry() -> Iterator[Registry]:
    """The registry, rebuilt now and again after the test without what the test registered."""
    manager = hooks.plugin_manager()
    before = {name for name, _ in manager.list_name_plugin()}
    yield reload_registry()
    for name, _ in manager.list_name_plugin():
        if name not in before:
            hooks.unregister_plugin(name)
    reload_registry()


@pytest.fixture
def op_plugin(op_registry: Registry) -> Callable[..., str]:
    """A function registering an in-process plugin from manifest text (see the module doc)."""

    def register(manifest: str, name: str | None = None, **functions: Any) -> str:
        name = name or f"test_plugin_{next(_names)}"
        plugin = types.SimpleNamespace(paddle_core_manifest=lambda: manifest, **functions)
        registered = hooks.register_plugin(plugin, name=name)
        return registered

    return register
