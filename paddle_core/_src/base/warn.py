"""Warnings attributed to the user's line, not to the core's.

``warnings.warn`` names the file and line ``stacklevel`` frames up; a fixed count breaks as soon
as a warning is reached by another path (a conflict found by ``register_plugin`` or by the
first ``pc.ops.<op>``, a device fallback found by ``run`` or ``prepare``). ``warn`` counts the
frames instead: it names the first caller outside the paddle_core package.
"""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn(message, category)``, pointing at the nearest caller outside paddle_core."""
    frame, level = sys._getframe(1), 2  # stacklevel 2 is warn's caller
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
