"""ONNX models in and out, through the mappings the installed plugins declare.

``pc.onnx.load(path)`` imports a model as an ordinary Program (run it, fine-tune it, save it);
``pc.onnx.export(program, path, feeds=..., fetches=...)`` writes one. Each ONNX node becomes
our ops, and each op an ONNX node, through the mapping of the plugin that provides the op
(``paddle-ops list --onnx``).
"""

from __future__ import annotations

from ._src.base.errors import OnnxError
from ._src.onnx.exporter import ExportOp, export
from ._src.onnx.importer import Imported, Node, load
from ._src.onnx.reader import dtype_name, element_type

__all__ = [
    "ExportOp",
    "Imported",
    "Node",
    "OnnxError",
    "dtype_name",
    "element_type",
    "export",
    "load",
]
