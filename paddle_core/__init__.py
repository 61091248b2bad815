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
    "Program": "_src.graph.program",
    "Block": "_src.graph.block",
    "Variable": "_src.graph.variable",
    "Parameter": "_src.graph.variable",
    "Operator": "_src.graph.operator",
    "Initializer": "_src.graph.variable",
    "program_guard": "_src.graph.program",
    "default_main_program": "_src.graph.program",
    "default_startup_program": "_src.graph.program",
    "data": "_src.graph.program",
    "save_program": "_src.graph.serialization",
    "load_program": "_src.graph.serialization",
    "draw_program": "_src.graph.draw",
    "render_program": "_src.graph.draw",
    "gradients": "_src.graph.backward",
    "append_backward": "_src.graph.backward",
    "GradContext": "_src.graph.backward",
    "ShapeContext": "_src.graph.shape_inference",
    "ParamAttr": "initializer",
    # running
    "Executor": "_src.run.executor",
    "PreparedProgram": "_src.run.prepared",
    # models and expressions
    "Model": "_src.model.model",
    "Expression": "_src.model.expression",
    "TrainStep": "_src.model.expression",
    "default_model": "_src.model.default_model",
    "load_model": "_src.model.model",
    "Scope": "_src.run.scope",
    "global_scope": "_src.run.scope",
    "Device": "_src.base.device",
    "CPU": "_src.base.cpu",
    "CUDA": "_src.base.cuda",
    "get_device": "_src.plugins.devices",
    "from_dlpack": "_src.plugins.devices",
    "to_dlpack": "_src.base.dlpack",
    # plugins
    "hookimpl": "_src.plugins.hooks",
    "hookspec": "_src.plugins.hooks",
    "register_plugin": "_src.plugins.hooks",
    "unregister_plugin": "_src.plugins.hooks",
    "get_registry": "_src.plugins.registry",
    "reload_registry": "_src.plugins.registry",
    "PluginConflictWarning": "_src.plugins.registry",
    "ConfigWarning": "_src.plugins.config",
    "ProviderMismatchWarning": "_src.graph.provenance",
    # the kernel SDK
    "get_include": "_sdk",
    "get_cmake_dir": "_sdk",
    # errors
    "PaddleCoreError": "_src.base.errors",
    "PluginError": "_src.base.errors",
    "ManifestError": "_src.base.errors",
    "OpNotFoundError": "_src.base.errors",
    "AttrError": "_src.base.errors",
    "OpInputError": "_src.base.errors",
    "ShapeError": "_src.base.errors",
    "KernelError": "_src.base.errors",
    "KernelNotFoundError": "_src.base.errors",
    "KernelLoadError": "_src.base.errors",
    "KernelRuntimeError": "_src.base.errors",
    "ProgramError": "_src.base.errors",
    "FeedError": "_src.base.errors",
    "DeviceError": "_src.base.errors",
    "ConfigError": "_src.base.errors",
    "OnnxError": "_src.base.errors",
    "DistributedError": "_src.base.errors",
}
# Public modules: the generated ops, the rules manifests name, the op-testing kit, training
# (layers, optimizers, initializers, saving models, data parallelism), the profiler.
_SUBMODULES = {
    "distributed",
    "initializer",
    "io",
    "layers",
    "onnx",
    "ops",
    "optimizer",
    "profiler",
    "rules",
    "testing",
}

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
    from . import (
        distributed,
        initializer,
        io,
        layers,
        onnx,
        ops,
        optimizer,
        profiler,
        rules,
        testing,
    )
    from ._sdk import get_cmake_dir, get_include
    from ._src.base.cpu import CPU
    from ._src.base.cuda import CUDA
    from ._src.base.device import Device
    from ._src.base.dlpack import to_dlpack
    from ._src.base.errors import (
        AttrError,
        ConfigError,
        DeviceError,
        DistributedError,
        FeedError,
        KernelError,
        KernelLoadError,
        KernelNotFoundError,
        KernelRuntimeError,
        ManifestError,
        OnnxError,
        OpInputError,
        OpNotFoundError,
        PaddleCoreError,
        PluginError,
        ProgramError,
        ShapeError,
    )
    from ._src.graph.backward import GradContext, append_backward, gradients
    from ._src.graph.block import Block
    from ._src.graph.draw import draw_program, render_program
    from ._src.graph.operator import Operator
    from ._src.graph.program import (
        Program,
        data,
        default_main_program,
        default_startup_program,
        program_guard,
    )
    from ._src.graph.provenance import ProviderMismatchWarning
    from ._src.graph.serialization import load_program, save_program
    from ._src.graph.shape_inference import ShapeContext
    from ._src.graph.variable import Initializer, Parameter, Variable
    from ._src.model.default_model import default_model
    from ._src.model.expression import Expression, TrainStep
    from ._src.model.model import Model, load_model
    from ._src.plugins.config import ConfigWarning
    from ._src.plugins.devices import from_dlpack, get_device
    from ._src.plugins.hooks import hookimpl, hookspec, register_plugin, unregister_plugin
    from ._src.plugins.registry import PluginConflictWarning, get_registry, reload_registry
    from ._src.run.executor import Executor
    from ._src.run.prepared import PreparedProgram
    from ._src.run.scope import Scope, global_scope
    from .initializer import ParamAttr
