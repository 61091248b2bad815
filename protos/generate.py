"""Regenerate paddle_core/proto/framework_pb2.py(.pyi) from protos/framework.proto.

Run from anywhere: `python protos/generate.py`. Needs grpcio-tools (a test dependency), which
bundles protoc. tests/test_proto.py fails when the committed module no longer matches the .proto.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTOS = Path(__file__).resolve().parent
ROOT = PROTOS.parent
# The file is compiled under this virtual name so that the generated module is
# paddle_core.proto.framework_pb2 and its descriptor-pool entry cannot clash with another
# project's "framework.proto" (PaddlePaddle has one) loaded in the same process.
VIRTUAL = "paddle_core/proto/framework.proto"


def protoc_args(*outputs: str) -> list[str]:
    """Arguments for protoc compiling framework.proto with the given --*_out flags."""
    mapping = f"-I{VIRTUAL}={PROTOS / 'framework.proto'}"
    return ["protoc", mapping, *outputs, VIRTUAL]


def main() -> int:
    from grpc_tools import protoc

    status = protoc.main(protoc_args(f"--python_out={ROOT}", f"--pyi_out={ROOT}"))
    if status == 0:
        print(f"wrote {ROOT / 'paddle_core/proto/framework_pb2.py'} and .pyi")
    return status


if __name__ == "__main__":
    sys.exit(main())
