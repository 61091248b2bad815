"""The core's built files, for a paddle_core imported from a source checkout.

Installing paddle-core builds two files that its source tree does not hold: the compiled
runtime (``_src/base/_runtime*.so``) and the catalog of first-party ops
(``_src/plugins/catalog.json``). Python started at the root of a checkout imports the
checkout's ``paddle_core`` (the current directory comes first on ``sys.path``), which shadows
the installed one. Such a source tree takes the two files from the installed paddle-core when
it is the same version, so that the README's snippets run there too; when there is none,
``missing`` says exactly that, and what to do.
"""

from __future__ import annotations

import os

from ..._version import __version__

PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def installed_copy(folder: str, prefix: str) -> str | None:
    """The file of the installed paddle-core in ``folder`` (relative to the package, e.g.
    "_src/base") whose name starts with ``prefix``; None unless that paddle-core is the same
    version and lives somewhere else than this package."""
    dist = _installed()
    if dist is None or dist.version != __version__:
        return None
    for file in dist.files or []:
        if "/".join(file.parts[:-1]) == f"paddle_core/{folder}" and file.name.startswith(prefix):
            path = os.path.abspath(str(file.locate()))
            if os.path.isfile(path) and not path.startswith(PACKAGE + os.sep):
                return path
    return None


def missing(what: str) -> str:
    """Why ``what`` (a built file) is missing from this paddle_core, and what to do."""
    dist = _installed()
    if dist is None:
        found = "no paddle-core is installed to take it from"
    elif dist.version != __version__:
        found = (
            f"the installed paddle-core is {dist.version}, but this source is {__version__}; "
            "run Python from outside the checkout (or with `python -P`) to use the installed one"
        )
    else:
        found = "the installed paddle-core has none either (was its build interrupted?)"
    return (
        f"{what} is missing: paddle_core was imported from {PACKAGE}, a source tree, where "
        f"it is not built, and {found}. Install paddle-core from the checkout (`./dev demo`, "
        "or see docs/plugins.md)"
    )


def _installed():
    from importlib import metadata  # (~10 ms: only when a built file is missing)

    try:
        return metadata.distribution("paddle-core")
    except metadata.PackageNotFoundError:
        return None
