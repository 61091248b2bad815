"""ONNX models in and out, through the mappings the installed plugins declare.

``pc.onnx.load(path)`` imports a model as an ordinary Program (run it, fine-tune it, save it);
each ONNX node becomes our ops through the mapping of the plugin that provides them
(``paddle-ops list --onnx``).
"""

from __future__ import annotations

from ._src.base.errors import OnnxError
from ._src.onnx.importer import Imported, Node, load
from ._src.onnx.reader import dtype_name

__all__ = ["Imported", "Node", "OnnxError", "dtype_name", "load"]
