"""The core is a stack of layers: every import points down, and nothing imports in a circle.

Reads every module of paddle_core's source (AST, nothing imported) and checks:

- an import of one of our modules never reaches a layer above its own (the layers are listed
  in paddle_core/_src/__init__.py and docs/architecture.md);
- the module-level imports among our modules have no cycle (within a layer either);
- an import inside a function says why in a comment (it only defers a heavy or optional
  dependency off the listing path);
- the core imports only the standard library, its declared dependencies and itself: never a
  plugin.
"""

from __future__ import annotations

import ast
import functools
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = ROOT / "paddle_core"
LAYERS = ("base", "spec", "plugins", "graph", "run", "model", "onnx", "surface")
BASE_MODULES = {"paddle_core._version", "paddle_core.proto"}  # leaves outside _src
# Imported only when needed: cupy when a CUDA device is used, pytest by the opt-in fixtures
# (paddle_core.testing.fixtures), which only pytest loads.
OPTIONAL = {"cupy", "pytest"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    parts = module.split(".")
    if parts[:2] == ["paddle_core", "_src"] and len(parts) > 2:
        return LAYERS.index(parts[2])
    if any(module == m or module.startswith(m + ".") for m in BASE_MODULES):
        return 0
    return LAYERS.index("surface")


class Import:
    """One import statement: where it is, what it names, and how it runs."""

    def __init__(self, path: Path, node: ast.AST, target: str, deferred: bool, typing_only: bool):
        self.path, self.line, self.target = path, node.lineno, target
        self.deferred = deferred  # inside a function
        self.typing_only = typing_only  # inside `if TYPE_CHECKING:`

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


@functools.cache
def _modules() -> dict[str, Path]:
    return {
        module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "framework_pb2" not in p.name
    }


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> list[str]:
    """Absolute module names an ImportFrom loads (a submodule per name where names are ones)."""
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = package[: len(package) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    known = _modules()
    found = [f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in known]
    return found or [source]


def _imports(module: str, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[Import] = []

    def visit(node: ast.AST, deferred: bool, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(path, child, alias.name, deferred, typing_only))
            elif isinstance(child, ast.ImportFrom):
                for target in _resolve(module, path, child):
                    found.append(Import(path, child, target, deferred, typing_only))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, True, typing_only)
            elif isinstance(child, ast.If) and ast.unparse(child.test) == "TYPE_CHECKING":
                visit(child, deferred, True)
            else:
                visit(child, deferred, typing_only)

    visit(tree, False, False)
    return found


def _all_imports() -> list[tuple[str, Import]]:
    return [(m, imp) for m, p in _modules().items() for imp in _imports(m, p)]


def _ours(target: str) -> bool:
    return target == "paddle_core" or target.startswith("paddle_core.")


def test_the_source_tree_is_found() -> None:
    modules = _modules()
    assert len(modules) > 30
    assert {layer_of(m) for m in modules} == set(range(len(LAYERS)))  # every layer has modules


def test_imports_only_point_down() -> None:
    upward = [
        f"{imp.where()}: {module} ({LAYERS[layer_of(module)]}) imports {imp.target} "
        f"({LAYERS[layer_of(imp.target)]})"
        for module, imp in _all_imports()
        if _ours(imp.target) and layer_of(imp.target) > layer_of(module)
    ]
    assert not upward, "imports reaching a layer above their own:\n" + "\n".join(upward)


def test_module_level_imports_have_no_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for module, imp in _all_imports():
        if _ours(imp.target) and not imp.deferred and not imp.typing_only:
            graph.setdefault(module, set()).add(imp.target)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := walk(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state and (cycle := walk(start)):
            pytest.fail("modules import each other in a circle: " + " -> ".join(cycle))


def _says_why(lines: list[str], line: int) -> bool:
    """A comment on the import's line, or on its own line just above the group of imports."""
    if "#" in lines[line - 1]:
        return True
    above = line - 2
    while above >= 0 and (
        not lines[above].strip() or lines[above].strip().startswith(("import ", "from "))
    ):
        above -= 1
    return above >= 0 and lines[above].strip().startswith("#")


def test_imports_inside_functions_say_why() -> None:
    silent = []
    for _, imp in _all_imports():
        lines = imp.path.read_text(encoding="utf-8").splitlines()
        if imp.deferred and not _says_why(lines, imp.line):
            silent.append(f"{imp.where()}: {lines[imp.line - 1].strip()}")
    assert not silent, (
        "imports inside functions must say on their line why they are deferred "
        "(a heavy dependency kept off the listing path):\n" + "\n".join(silent)
    )


def test_the_core_imports_no_plugin_and_nothing_undeclared() -> None:
    with open(ROOT / "pyproject.toml", "rb") as f:
        declared = tomllib.load(f)["project"]["dependencies"]
    names = {
        d.split(">")[0].split("=")[0].split("<")[0].strip().replace("-", "_") for d in declared
    }
    allowed = {"google" if n == "protobuf" else n for n in names} | OPTIONAL | {"paddle_core"}
    foreign = [
        f"{imp.where()}: {imp.target}"
        for _, imp in _all_imports()
        if (top := imp.target.split(".")[0]) not in allowed
        and top not in sys.stdlib_module_names
        and top != "__future__"
    ]
    assert not foreign, "the core imports what it does not declare:\n" + "\n".join(foreign)
