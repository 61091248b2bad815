"""Regenerate paddle_core/_src/plugins/catalog.py from the first-party plugins' manifests.

    python plugins/update_catalog.py

The catalog lets an unknown op name the package to install; tests/test_discovery.py fails
when it no longer matches the manifests under plugins/.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
CATALOG = HERE.parent / "paddle_core" / "_src" / "plugins" / "catalog.py"
BEGIN, END = "KNOWN_PACKAGES: dict[str, tuple[str, ...]] = {", "}\n"


def first_party_ops() -> dict[str, tuple[str, ...]]:
    """distribution -> sorted op types, read from each plugin's manifest file or directory."""
    from google.protobuf import text_format

    try:
        from paddle_core.proto import framework_pb2 as pb
    except ImportError:  # paddle-core not installed: use the checkout's generated module
        sys.path.insert(0, str(HERE.parent))
        from paddle_core.proto import framework_pb2 as pb

    found = {}
    for pyproject in sorted(HERE.glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        ops: list[str] = []
        for value in project["entry-points"]["paddle_core.plugins"].values():
            package, _, resource = value.partition(":")
            path = pyproject.parent / package.replace(".", "/") / resource
            for file in sorted(path.glob("*.pbtxt")) if path.is_dir() else [path]:
                manifest = text_format.Parse(file.read_text(), pb.PluginManifest())
                ops += [opdef.proto.type for opdef in manifest.ops]
        found[project["name"]] = tuple(sorted(ops))
    return found


def render(packages: dict[str, tuple[str, ...]]) -> str:
    lines = [BEGIN]
    for name, ops in packages.items():
        lines.append(f"    {name!r}: (")
        lines += [f"        {op!r}," for op in ops]
        lines.append("    ),")
    return "\n".join(lines) + "\n" + END


def main() -> None:
    text = CATALOG.read_text()
    start = text.index(BEGIN)
    end = text.index(END, start) + len(END)
    CATALOG.write_text(text[:start] + render(first_party_ops()) + text[end:])
    print(f"updated {CATALOG}")


if __name__ == "__main__":
    main()
