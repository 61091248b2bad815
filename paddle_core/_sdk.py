"""Where the kernel SDK lives, for plugin builds (header-only: nothing to link against)."""

from __future__ import annotations

import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def get_include() -> str:
    """The directory to add to the include path: ``#include <paddle_core/kernel.hpp>``."""
    return os.path.join(_HERE, "include")


def get_cmake_dir() -> str:
    """The directory holding ``paddle_coreConfig.cmake`` (``find_package(paddle_core)``)."""
    return os.path.join(_HERE, "cmake")
