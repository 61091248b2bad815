"""First-party op packages: which one provides an op that is not installed, and how to install it.

The core's build writes catalog.json beside this module from the manifests under plugins/
(plugins/catalog.py), so adding an op to a first-party plugin changes no file of the core; a
test checks the installed catalog against the manifests. It holds, per distribution, its op
types and its directory in the checkout the core was built from (``source``). A core run from
a source checkout uses the installed core's catalog, if any.

``install_command`` names a command that works where the user is. The first-party packages
are not on an index yet; a core built from a checkout that still exists is pointed back at it:

1. a wheelhouse ``<checkout>/dist`` (``./dev wheels``) holding the package:
   ``pip install --find-links dist paddle-ops-nn``;
2. one holding the core's wheel only (the plain-pip install of docs/plugins.md):
   ``pip install --find-links dist ./plugins/paddle_ops_nn``, which builds the plugin;
3. no wheelhouse: build the core's wheel into one first, then as 2.

Without the checkout (a core installed from an index or a wheelhouse somewhere else), the
plain ``pip install paddle-ops-nn``, from the index or wheelhouse the core came from.
"""

from __future__ import annotations

import glob
import json
import os
import shlex

from ..base import built
from .config import normalize


def _load() -> dict:
    path = os.path.join(os.path.dirname(__file__), "catalog.json")
    if not os.path.exists(path):  # a source tree: the installed paddle-core's, if any
        path = built.installed_copy("_src/plugins", "catalog.json") or path
    try:
        with open(path, "rb") as f:
            data = json.load(f)
        return data if isinstance(data.get("packages"), dict) else {}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


_CATALOG = _load()
SOURCE: str = _CATALOG.get("source", "")
KNOWN_PACKAGES: dict[str, tuple[str, ...]] = {
    name: tuple(entry["ops"]) for name, entry in _CATALOG.get("packages", {}).items()
}
# distribution -> the ONNX operators its mappings import ("Conv", "com.example:MyOp")
ONNX_OPS: dict[str, tuple[str, ...]] = {
    name: tuple(entry.get("onnx", ())) for name, entry in _CATALOG.get("packages", {}).items()
}
DIRECTORIES: dict[str, str] = {
    name: entry["directory"] for name, entry in _CATALOG.get("packages", {}).items()
}
# Normalized name -> the catalog's spelling: a saved program records the spelling of the
# installed distribution's metadata, which may differ ("paddle_ops_nn").
_spelled = {normalize(name): name for name in DIRECTORIES}


def provider_of(op: str) -> str | None:
    """The first-party distribution that provides ``op``, or None."""
    for package, ops in KNOWN_PACKAGES.items():
        if op in ops:
            return package
    return None


def provider_of_onnx(name: str) -> str | None:
    """The first-party distribution mapping ONNX operator ``name`` ("Conv", or
    "domain:OpType"), or None."""
    for package, names in ONNX_OPS.items():
        if name in names:
            return package
    return None


def install_command(package: str, minimum: str = "") -> str:
    """A shell command installing ``package`` from where the user is: a first-party one from
    the checkout the core was built from (when it still exists: its wheel in dist/ from
    ``./dev wheels``, or its project directory, which builds against the paddle-core installed
    here), else from an index. A ``minimum`` version makes it ask for that version or newer
    (``'my-ops>=0.1'``), except where it builds the checkout's own project, which is what the
    checkout holds."""
    package = _spelled.get(normalize(package), package)
    requirement = shlex.quote(f"{package}>={minimum}") if minimum else package
    directory = DIRECTORIES.get(package)
    if (
        not SOURCE
        or not directory
        or not os.path.isfile(os.path.join(SOURCE, directory, "pyproject.toml"))
    ):
        return f"pip install {requirement}"
    if _wheels(package):
        return f"pip install --find-links {_shown(os.path.join(SOURCE, 'dist'))} {requirement}"
    return f"pip install {_shown(os.path.join(SOURCE, directory), local=True)}"


def _wheels(package: str) -> list[str]:
    name = package.replace("-", "_")
    return glob.glob(os.path.join(glob.escape(SOURCE), "dist", f"{name}-*.whl"))


def _shown(path: str, *, local: bool = False) -> str:
    """``path`` as the user would type it: relative inside the current directory, starting
    with "./" for a ``local`` project (so that pip takes it for one)."""
    relative = os.path.relpath(path)
    if relative.startswith(".."):
        return path
    return "./" + relative if local and relative != "." else relative


def rebuild_command(distribution: str) -> str:
    """A command rebuilding installed ``distribution`` against the installed paddle-core: from
    the directory it was installed from (pip records it), else from its source distribution.
    Its build finds the SDK of the installed paddle-core by itself, with pip's build isolation
    on (docs/writing-op-plugins.md, "How the build finds the SDK")."""
    rebuild = "pip install --force-reinstall --no-deps"
    if not distribution:
        return f"{rebuild} <the plugin's project directory>"
    source = _installed_from(distribution)
    if source is None and distribution in DIRECTORIES and SOURCE:  # a first-party package
        candidate = os.path.join(SOURCE, DIRECTORIES[distribution])
        source = candidate if os.path.isdir(candidate) else None
    if source is not None:
        return f"{rebuild} {_shown(source, local=True)}"
    return f"{rebuild} --no-binary {distribution} {distribution}"


def _installed_from(distribution: str) -> str | None:
    """The local directory ``distribution`` was installed from (PEP 610), if any."""
    # (importlib.metadata, urllib: only for a rebuild hint, off the listing path)
    import importlib.metadata
    from urllib.parse import unquote, urlparse

    try:
        data = json.loads(
            importlib.metadata.distribution(distribution).read_text("direct_url.json") or ""
        )
        url = urlparse(data["url"])
    except (importlib.metadata.PackageNotFoundError, ValueError, KeyError, TypeError):
        return None
    path = unquote(url.path)
    return path if url.scheme == "file" and "dir_info" in data and os.path.isdir(path) else None
