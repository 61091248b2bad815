"""First-party op packages, so that an unknown op can name the package to install.

``KNOWN_PACKAGES`` maps distribution -> op types. The core's build writes it, as catalog.json
beside this module, from the manifests under plugins/ (plugins/catalog.py), so adding an op to
a first-party plugin changes no file of the core; a test checks the installed catalog against
the manifests. A core run from a source checkout uses the installed core's catalog, if any.
"""

from __future__ import annotations

import json
import os

from ..base import built


def _load() -> dict[str, tuple[str, ...]]:
    path = os.path.join(os.path.dirname(__file__), "catalog.json")
    if not os.path.exists(path):  # a source tree: the installed paddle-core's, if any
        path = built.installed_copy("_src/plugins", "catalog.json") or path
    try:
        with open(path, "rb") as f:
            return {package: tuple(ops) for package, ops in json.load(f).items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


KNOWN_PACKAGES: dict[str, tuple[str, ...]] = _load()


def provider_of(op: str) -> str | None:
    """The first-party distribution that provides ``op``, or None."""
    for package, ops in KNOWN_PACKAGES.items():
        if op in ops:
            return package
    return None
