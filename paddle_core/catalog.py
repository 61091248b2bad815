"""First-party op packages, so that an unknown op can name the package to install.

Maps distribution -> op types. tests/test_catalog.py checks it against the manifests under
plugins/, so it cannot drift from what those packages really ship.
"""

from __future__ import annotations

KNOWN_PACKAGES: dict[str, tuple[str, ...]] = {}


def provider_of(op: str) -> str | None:
    """The first-party distribution that provides ``op``, or None."""
    for package, ops in KNOWN_PACKAGES.items():
        if op in ops:
            return package
    return None
