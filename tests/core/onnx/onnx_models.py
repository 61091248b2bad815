"""Small ONNX models written with the core's own copy of the ONNX schema (no `onnx` package
needed): tensors, values, nodes and whole models as bytes."""

from __future__ import annotations

from typing import Any

import numpy as np

from paddle_core.proto import onnx_pb2 as P

ELEMENT = {
    "float32": P.TensorProto.FLOAT,
    "float64": P.TensorProto.DOUBLE,
    "int64": P.TensorProto.INT64,
    "int32": P.TensorProto.INT32,
    "bool": P.TensorProto.BOOL,
}


def tensor(name: str, array: Any) -> P.TensorProto:
    array = np.asarray(array)
    return P.TensorProto(
        name=name,
        dims=array.shape,
        data_type=ELEMENT[str(array.dtype)],
        raw_data=array.tobytes(),
    )


def value(name: str, shape: list, dtype: str = "float32") -> P.ValueInfoProto:
    """A tensor value; a str in shape is a symbolic dimension (dim_param)."""
    v = P.ValueInfoProto(name=name)
    v.type.tensor_type.elem_type = ELEMENT[dtype]
    for d in shape:
        dim = v.type.tensor_type.shape.dim.add()
        if isinstance(d, str):
            dim.dim_param = d
        else:
            dim.dim_value = d
    return v


def node(op_type: str, inputs: list[str], outputs: list[str], **attrs: Any) -> P.NodeProto:
    """A node; attrs typed by their Python value (int, float, str, list of ints/floats, array)."""
    domain = attrs.pop("domain", "")
    n = P.NodeProto(op_type=op_type, input=inputs, output=outputs, domain=domain)
    n.name = attrs.pop("name", f"{op_type}_{outputs[0]}")
    for key, v in attrs.items():
        a = n.attribute.add(name=key)
        if isinstance(v, bool) or isinstance(v, int):
            a.type, a.i = P.AttributeProto.INT, int(v)
        elif isinstance(v, float):
            a.type, a.f = P.AttributeProto.FLOAT, v
        elif isinstance(v, str):
            a.type, a.s = P.AttributeProto.STRING, v.encode()
        elif isinstance(v, P.GraphProto):
            a.type = P.AttributeProto.GRAPH
            a.g.CopyFrom(v)
        elif isinstance(v, np.ndarray):
            a.type = P.AttributeProto.TENSOR
            a.t.CopyFrom(tensor("", v))
        elif all(isinstance(x, int) for x in v):
            a.type = P.AttributeProto.INTS
            a.ints.extend(v)
        else:
            a.type = P.AttributeProto.FLOATS
            a.floats.extend(v)
    return n


def model(
    nodes: list,
    inputs: list,
    outputs: list,
    initializers: list = (),
    opset: int = 17,
    domains: dict | None = None,
) -> P.ModelProto:
    m = P.ModelProto(ir_version=8, producer_name="paddle-core tests")
    m.opset_import.add(domain="", version=opset)
    for domain, version in (domains or {}).items():
        m.opset_import.add(domain=domain, version=version)
    m.graph.name = "g"
    m.graph.node.extend(nodes)
    m.graph.input.extend(inputs)
    m.graph.output.extend(outputs)
    m.graph.initializer.extend(initializers)
    return m


def graph(nodes: list, inputs: list, outputs: list, name: str = "body") -> P.GraphProto:
    """A subgraph (If's branch, Loop's body)."""
    g = P.GraphProto(name=name)
    g.node.extend(nodes)
    g.input.extend(inputs)
    g.output.extend(outputs)
    return g
