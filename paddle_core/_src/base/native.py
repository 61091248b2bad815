"""The core's compiled half, ``_runtime`` (built from runtime.cpp), and the kernel ABI it speaks.

``_runtime`` is a leaf (it imports nothing of ours) that two layers need: plugin loading checks
each kernel capsule against the ABI with it, and prepared programs run their plans in its loop.
It is imported on first use, so listing ops never loads it.
"""

from __future__ import annotations

import os
from typing import Any

from .errors import PaddleCoreError

KERNEL_ABI_VERSION = 1  # PADDLE_CORE_KERNEL_ABI_VERSION in include/paddle_core/kernel_abi.h


def runtime() -> Any:
    """The compiled runtime module, or a clear error when this paddle_core was never built."""
    try:
        from . import _runtime  # (a compiled module: loaded on first use, off the listing path)
    except ImportError as e:
        raise PaddleCoreError(
            f"paddle-core's compiled runtime is missing from {os.path.dirname(__file__)}: "
            "this looks like a source checkout on sys.path; install paddle-core "
            "(`./dev test` or `pip install .`) and run from outside the checkout"
        ) from e
    return _runtime
