"""``paddle-ops new NAME``: write a third-party op package that builds and passes its tests.

The package is rendered from ``templates/op_package``: every file there ends in ``.tmpl``, and
``{{dist}}``, ``{{package}}``, ``{{plugin}}``, ``{{op}}``, ... in file names and contents are
replaced by the names derived from NAME (``gitignore`` becomes ``.gitignore``). The CUDA files
(``*_cuda.cu``) and the lines that start with ``{{cuda}}`` (their kernels in the manifest) are
written only with ``--cuda``; CMakeLists.txt builds whatever ``csrc/*_cuda.cu`` there are.
``examples/paddle_ops_example`` is what ``paddle-ops new paddle-ops-example --cuda`` writes.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from importlib.util import find_spec
from pathlib import Path

from ._src.base.errors import ConfigError
from ._src.base.runtime import KERNEL_ABI_VERSION
from ._version import __version__

_DIST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?\Z")  # PEP 508
_IDENT = re.compile(r"[a-z][a-z0-9_]*\Z")  # what the manifest allows in op types
_CUDA_ONLY = ("_cuda.cu.tmpl",)
_FIRST_PARTY_PREFIX = "paddle_ops_"  # paddle-ops-math is plugin "math": so is paddle-ops-foo "foo"


@dataclass(frozen=True)
class Names:
    """The names a package called NAME gets."""

    dist: str  # my-ops: the distribution (pip install my-ops)
    package: str  # my_ops: the import package
    plugin: str  # my_ops: the entry point's name, and the prefix of the package's op types
    op: str  # my_ops_cos: the op the package starts with

    @classmethod
    def of(cls, name: str) -> Names:
        if not _DIST_NAME.match(name):
            raise ConfigError(
                f"package name {name!r} is not a valid distribution name: use letters, digits "
                "and -, _ or . inside (e.g. my-ops)"
            )
        package = re.sub(r"[-_.]+", "_", name).lower()
        plugin = package.removeprefix(_FIRST_PARTY_PREFIX) or package
        if not _IDENT.match(package) or keyword.iskeyword(package):
            raise ConfigError(
                f"package name {name!r} gives the import name {package!r}, which is not a "
                "Python identifier starting with a letter: choose another name"
            )
        return cls(name, package, plugin, f"{plugin}_cos")

    def substitutions(self) -> dict[str, str]:
        major, minor = (int(p) for p in __version__.split(".")[:2])
        return {
            "{{dist}}": self.dist,
            "{{package}}": self.package,
            "{{plugin}}": self.plugin,
            "{{op}}": self.op,
            "{{PREFIX}}": self.package.upper(),
            "{{core_minor}}": f"{major}.{minor}",
            "{{requires_core}}": f">={major}.{minor},<{major}.{minor + 1}",
            "{{kernel_abi}}": str(KERNEL_ABI_VERSION),
        }


def new_package(name: str, directory: str | Path | None = None, *, cuda: bool = False) -> Path:
    """Write the package NAME into ``directory`` (default: ./NAME); returns its path.

    Refuses a directory that exists and is not empty, and an import name that an installed
    package already has (two distributions installing one package overwrite each other).
    """
    names = Names.of(name)
    target = Path(directory if directory is not None else name)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ConfigError(f"{target} already exists and is not empty: choose another directory")
    _refuse_taken_import_name(names.package)
    substitutions = names.substitutions()

    def render(text: str) -> str:
        # A line that starts with {{cuda}} is written only with --cuda; {{no_cuda}}, only without.
        keep, drop = ("{{cuda}}", "{{no_cuda}}") if cuda else ("{{no_cuda}}", "{{cuda}}")
        lines = text.splitlines(keepends=True)
        text = "".join(line.removeprefix(keep) for line in lines if not line.startswith(drop))
        for key, value in substitutions.items():
            text = text.replace(key, value)
        return text

    template = files(__package__).joinpath("templates", "op_package")
    try:
        for source, relative in _template_files(template):
            if relative.endswith(_CUDA_ONLY) and not cuda:
                continue
            relative = "." + relative if relative == "gitignore.tmpl" else relative
            path = target / render(relative.removesuffix(".tmpl"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(source.read_text(encoding="utf-8")), encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot write the package to {target}: {e.strerror or e}") from None
    return target


def _template_files(root: Traversable, prefix: str = "") -> list[tuple[Traversable, str]]:
    """(file, path relative to the template root) for every template file, sorted."""
    found: list[tuple[Traversable, str]] = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        relative = f"{prefix}{entry.name}"
        if entry.is_dir():
            found += _template_files(entry, relative + "/")
        elif entry.name.endswith(".tmpl"):
            found.append((entry, relative))
    return found


def _refuse_taken_import_name(package: str) -> None:
    spec = find_spec(package)
    if spec is not None:
        where = spec.origin or next(iter(spec.submodule_search_locations or []), "?")
        raise ConfigError(
            f"the import name {package!r} is taken by an installed package ({where}): choose "
            "another package name"
        )
