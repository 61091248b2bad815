"""paddle-core: a plugin-based operator ecosystem.

Ops come from installed plugins (``paddle-ops list``); build programs with the generated API in
``paddle_core.ops`` and run them with an ``Executor``::

    import numpy as np
    import paddle_core as pc

    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", shape=[None, 4], dtype="float32")
        y = pc.ops.scale(x, scale=2.0, bias=1.0)
    (out,) = pc.Executor("cpu").run(prog, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[y])

Public names are re-exported here and imported on first use, so that ``import paddle_core``
(and the ``paddle-ops`` CLI) stays fast.
"""

from __future__ import annotations

from importlib import import_module

from ._version import __version__

# public name -> module that defines it
_EXPORTS = {
    # programs
    "Program": "framework",
    "Block": "framework",
    "Variable": "framework",
    "Parameter": "framework",
    "Operator": "framework",
    "Initializer": "framework",
    "program_guard": "framework",
    "default_main_program": "framework",
    "default_startup_program": "framework",
    "data": "framework",
    "save_program": "serialization",
    "load_program": "serialization",
    "gradients": "backward",
    "append_backward": "backward",
    "GradContext": "backward",
    # running
    "Executor": "executor",
    "PreparedProgram": "executor",
    "Scope": "scope",
    "global_scope": "scope",
    "Device": "device",
    "CPU": "device",
    "CUDA": "device",
    "get_device": "device",
    # plugins
    "hookimpl": "hooks",
    "hookspec": "hooks",
    "register_plugin": "hooks",
    "unregister_plugin": "hooks",
    "get_registry": "registry",
    "reload_registry": "registry",
    "PluginConflictWarning": "registry",
    "ShapeContext": "append",
    # the kernel SDK
    "get_include": "sdk",
    "get_cmake_dir": "sdk",
    # errors
    "PaddleCoreError": "errors",
    "PluginError": "errors",
    "ManifestError": "errors",
    "OpNotFoundError": "errors",
    "AttrError": "errors",
    "OpInputError": "errors",
    "ShapeError": "errors",
    "KernelError": "errors",
    "KernelNotFoundError": "errors",
    "KernelLoadError": "errors",
    "KernelRuntimeError": "errors",
    "ProgramError": "errors",
    "FeedError": "errors",
    "DeviceError": "errors",
    "ConfigError": "errors",
}
_SUBMODULES = {"ops", "shape_rules", "testing"}

__all__ = sorted([*_EXPORTS, *_SUBMODULES, "__version__"])


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        value = getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'paddle_core' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


TYPE_CHECKING = False  # (not typing.TYPE_CHECKING: importing typing costs start-up time)
if TYPE_CHECKING:  # let type checkers and editors see the lazy names
    from . import ops, shape_rules, testing
    from .append import ShapeContext
    from .backward import GradContext, append_backward, gradients
    from .device import CPU, CUDA, Device, get_device
    from .errors import (
        AttrError,
        ConfigError,
        DeviceError,
        FeedError,
        KernelError,
        KernelLoadError,
        KernelNotFoundError,
        KernelRuntimeError,
        ManifestError,
        OpInputError,
        OpNotFoundError,
        PaddleCoreError,
        PluginError,
        ProgramError,
        ShapeError,
    )
    from .executor import Executor, PreparedProgram
    from .framework import (
        Block,
        Initializer,
        Operator,
        Parameter,
        Program,
        Variable,
        data,
        default_main_program,
        default_startup_program,
        program_guard,
    )
    from .hooks import hookimpl, hookspec, register_plugin, unregister_plugin
    from .registry import PluginConflictWarning, get_registry, reload_registry
    from .scope import Scope, global_scope
    from .sdk import get_cmake_dir, get_include
    from .serialization import load_program, save_program
