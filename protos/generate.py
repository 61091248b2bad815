"""Regenerate paddle_core/proto/framework_pb2.py and onnx_pb2.py (and their .pyi) from
protos/framework.proto and protos/onnx.proto.

Run from anywhere: `python protos/generate.py`. Needs grpcio-tools (a test dependency), which
bundles protoc. tests/core/base/test_proto.py fails when a committed module no longer matches
its .proto.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTOS = Path(__file__).resolve().parent
ROOT = PROTOS.parent
# Each file is compiled under a virtual name so that the generated module is
# paddle_core.proto.<name>_pb2 and its descriptor-pool entry cannot clash with another project's
# "framework.proto" (PaddlePaddle has one) or "onnx.proto" loaded in the same process.
FILES = ("framework", "onnx")


def virtual(name: str) -> str:
    return f"paddle_core/proto/{name}.proto"


def protoc_args(name: str, *outputs: str) -> list[str]:
    """Arguments for protoc compiling protos/<name>.proto with the given --*_out flags."""
    mapping = f"-I{virtual(name)}={PROTOS / f'{name}.proto'}"
    return ["protoc", mapping, *outputs, virtual(name)]


def main() -> int:
    from grpc_tools import protoc

    for name in FILES:
        status = protoc.main(protoc_args(name, f"--python_out={ROOT}", f"--pyi_out={ROOT}"))
        if status != 0:
            return status
        print(f"wrote {ROOT / f'paddle_core/proto/{name}_pb2.py'} and .pyi")
    return 0


if __name__ == "__main__":
    sys.exit(main())
