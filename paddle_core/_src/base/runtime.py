"""The core's compiled runtime, ``_runtime`` (built from runtime.cpp), and the kernel ABI it
speaks.

``_runtime`` is a leaf (it imports nothing of ours) that two layers need: plugin loading checks
each kernel capsule against the ABI with it, and prepared programs run their plans in its loop.
It is imported on first use, so listing ops never loads it.
"""

from __future__ import annotations

import sys
from typing import Any

from . import built
from .errors import PaddleCoreError

KERNEL_ABI_VERSION = 1  # PADDLE_CORE_KERNEL_ABI_VERSION in include/paddle_core/kernel_abi.h


def compiled_runtime() -> Any:
    """The compiled runtime module: this package's, or for a source tree the installed
    paddle-core's (``built``); a clear error when neither exists."""
    try:
        from . import _runtime  # (a compiled module: loaded on first use, off the listing path)
    except ImportError as e:
        path = built.installed_copy("_src/base", "_runtime.")
        if path is None:
            raise PaddleCoreError(built.missing("paddle-core's compiled runtime")) from e
        return _load(f"{__package__}._runtime", path)
    return _runtime


def _load(name: str, path: str) -> Any:
    """Import the extension module at ``path`` as ``name``."""
    import importlib.util  # (only for a source tree)

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module
