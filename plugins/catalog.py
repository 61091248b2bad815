"""Catalogue the first-party plugins: distribution -> its directory and op types, as JSON.

    python plugins/catalog.py [--output catalog.json]

The core's build runs this (CMakeLists.txt) and ships the result, so that an unknown op can
name the package that provides it even when that package is not installed, and the command
that installs it from where the user is: the checkout the core was built from (``source``, the
directory holding this script; the core checks it still exists), a wheelhouse in it, or an
index. Adding an op to a plugin under plugins/ therefore changes no file of the core: the next
build of the core picks it up. tests/core/plugins/test_discovery.py checks the installed
catalog against the manifests.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent


def first_party_ops() -> dict[str, tuple[str, ...]]:
    """distribution -> sorted op types, read from each plugin's manifest file or directory."""
    return {name: ops for name, (_, ops, _) in first_party_plugins().items()}


def first_party_plugins() -> dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """distribution -> (its directory relative to the checkout, sorted op types, the sorted
    ONNX operators it imports: "Conv", or "domain:OpType" outside ONNX's default domain)."""
    from google.protobuf import text_format

    sys.path.insert(0, str(HERE.parent))  # the checkout's generated module (it needs protobuf)
    from paddle_core.proto import framework_pb2 as pb

    found = {}
    for pyproject in sorted(HERE.glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        ops: list[str] = []
        onnx: set[str] = set()
        for value in project["entry-points"]["paddle_core.plugins"].values():
            package, _, resource = value.partition(":")
            path = pyproject.parent / package.replace(".", "/") / resource
            for file in sorted(path.glob("*.pbtxt")) if path.is_dir() else [path]:
                manifest = text_format.Parse(file.read_text(), pb.PluginManifest())
                ops += [opdef.proto.type for opdef in manifest.ops]
                onnx |= {
                    m.op_type if m.domain in ("", "ai.onnx") else f"{m.domain}:{m.op_type}"
                    for opdef in manifest.ops
                    for m in opdef.onnx
                    if not m.export_only
                }
        directory = pyproject.parent.relative_to(HERE.parent).as_posix()
        found[project["name"]] = (directory, tuple(sorted(ops)), tuple(sorted(onnx)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", help="file to write (default: print)")
    args = parser.parse_args()
    catalog = {
        "source": str(HERE.parent),
        "packages": {
            name: {"directory": directory, "ops": list(ops), "onnx": list(onnx)}
            for name, (directory, ops, onnx) in first_party_plugins().items()
        },
    }
    text = json.dumps(catalog, indent=1, sort_keys=True) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
