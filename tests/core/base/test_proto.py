"""The generated protobuf module matches protos/framework.proto, and the tables derived from it
(dtype names, attr value fields) match the generated enums."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from conftest import ROOT
from google.protobuf import descriptor_pb2

from paddle_core._src.base import dtypes
from paddle_core._src.spec import attrs
from paddle_core.proto import framework_pb2 as pb
from paddle_core.proto import onnx_pb2


def _generate_module():
    spec = importlib.util.spec_from_file_location("generate", ROOT / "protos" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("module", [pb, onnx_pb2], ids=["framework", "onnx"])
def test_generated_module_is_not_stale(tmp_path: Path, module) -> None:
    """Compiling the .proto now gives the same descriptor as the committed module.

    Compared as descriptors, not text, so a newer protoc with other formatting still passes;
    a changed field, message or enum fails. Regenerate with `python protos/generate.py`.
    """
    from grpc_tools import protoc

    generate = _generate_module()
    name = module.__name__.rsplit(".", 1)[1].removesuffix("_pb2")
    out = tmp_path / f"{name}.desc"
    assert protoc.main(generate.protoc_args(name, f"--descriptor_set_out={out}")) == 0
    fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]
    committed = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(committed)
    _drop_json_names(fresh.message_type)  # derived from field names; descriptor sets add them
    assert fresh == committed, f"{name}_pb2 is stale: run `python protos/generate.py`"


def _drop_json_names(messages) -> None:
    for message in messages:
        for field in message.field:
            field.ClearField("json_name")
        _drop_json_names(message.nested_type)


def test_descriptor_has_a_unique_pool_name() -> None:
    # Another project's "framework.proto" (PaddlePaddle ships one) must not clash in the pool.
    assert pb.DESCRIPTOR.name == "paddle_core/proto/framework.proto"
    assert pb.DESCRIPTOR.package == "paddle_core.framework"
    assert onnx_pb2.DESCRIPTOR.name == "paddle_core/proto/onnx.proto"
    assert onnx_pb2.DESCRIPTOR.package == "paddle_core.onnx"


def test_dtype_names_follow_the_enum() -> None:
    names = [v.name for v in pb.VarType.DataType.DESCRIPTOR.values if v.number != 0]
    assert [n.lower() for n in names] == list(dtypes.DTYPES)
    for name in dtypes.DTYPES:
        assert dtypes.from_enum(dtypes.to_enum(name)) == name
        assert pb.VarType.DataType.Name(dtypes.to_enum(name)) == name.upper()


def test_every_attr_type_has_a_value_field() -> None:
    types = [v.number for v in pb.AttrType.DESCRIPTOR.values if v.number != 0]
    assert sorted(attrs.VALUE_FIELD) == sorted(types)
    fields = {f.name for f in pb.AttrValue.DESCRIPTOR.fields}
    assert set(attrs.VALUE_FIELD.values()) <= fields
    assert set(attrs.DESCRIPTION) == set(attrs.VALUE_FIELD) == set(attrs.ANNOTATION)


def test_attr_values_round_trip_through_the_wire() -> None:
    samples = {
        pb.INT: -7,
        pb.FLOAT: 0.1,  # a double on the wire: Python floats survive exactly
        pb.STRING: "mean",
        pb.BOOL: True,
        pb.LONG: 2**40,
        pb.INTS: [1, -2, 3],
        pb.FLOATS: [0.5, 1e-9],
        pb.STRINGS: ["a", "b"],
        pb.BOOLS: [True, False],
        pb.BLOCK: 2,
        pb.LONGS: [2**40, -(2**63), 2**63 - 1],
    }
    for attr_type, value in samples.items():
        wire = attrs.to_attr_value(attr_type, value).SerializeToString()
        assert attrs.from_attr_value(pb.AttrValue.FromString(wire)) == value


def test_inferred_attr_types() -> None:
    infer = attrs.infer_attr_value
    assert infer(True).type == pb.BOOL
    assert infer(3).type == pb.INT
    assert infer(2**40).type == pb.LONG
    assert infer(1.5).type == pb.FLOAT
    assert infer("x").type == pb.STRING
    assert infer([1.0, 2.0]).type == pb.FLOATS
    assert infer([]).type == pb.INTS
    assert infer([1, 2]).type == pb.INTS
    assert infer([1, 2**40]).type == pb.LONGS
    assert attrs.from_attr_value(infer([1, -(2**63)])) == [1, -(2**63)]


def test_the_kernel_headers_attr_types_are_the_protos() -> None:
    """kernel_abi.h's PC_ATTR_* values, and kernel.hpp's names for them, follow AttrType."""
    import re

    from conftest import ROOT

    sdk = ROOT / "paddle_core" / "include" / "paddle_core"
    header = (sdk / "kernel_abi.h").read_text()
    found = dict(re.findall(r"PC_ATTR_([A-Z]+) = (\d+)", header))
    want = {v.name: str(v.number) for v in pb.AttrType.DESCRIPTOR.values if v.number != 0}
    assert found == want
    names = re.search(
        r"attr_type_name.*?names\[\] = \{(.*?)\};", (sdk / "kernel.hpp").read_text(), re.S
    )
    listed = re.findall(r'"([A-Z?]+)"', names.group(1))
    assert listed == ["?", *sorted(want, key=lambda n: int(want[n]))]


def test_element_sizes_are_numpys() -> None:
    import numpy as np

    for name in dtypes.DTYPES:
        if name != "bfloat16":  # NumPy has no bfloat16
            assert dtypes.ITEMSIZE[name] == np.dtype(name).itemsize, name
    assert dtypes.ITEMSIZE["bfloat16"] == 2


def test_op_roles_follow_the_enum() -> None:
    from paddle_core._src.graph.operator import ROLES

    assert [r.upper() for r in ROLES] == [v.name for v in pb.OpDesc.Role.DESCRIPTOR.values]
