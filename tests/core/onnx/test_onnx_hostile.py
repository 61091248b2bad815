"""A model file is untrusted input: every malformed, inconsistent or overreaching one is an
OnnxError naming the node or tensor, never a crash, a hang, a read outside the model's
directory or an unbounded allocation."""

from __future__ import annotations

import os

import numpy as np
import pytest
from onnx_models import model, node, tensor, value

import paddle_core as pc
from paddle_core.proto import onnx_pb2 as P


def relu_model(**tweaks) -> P.ModelProto:
    """x + w -> Relu: a model with one initializer, to spoil."""
    return model(
        [node("Add", ["x", "w"], ["a"]), node("Relu", ["a"], ["y"])],
        [value("x", [4])],
        [value("y", [4])],
        [tensor("w", np.arange(4, dtype=np.float32))],
        **tweaks,
    )


def refused(m, match: str, **kwargs) -> pc.OnnxError:
    data = m.SerializeToString() if isinstance(m, P.ModelProto) else m
    with pytest.raises(pc.OnnxError, match=match) as e:
        pc.onnx.load(data, **kwargs)
    return e.value


def test_the_unspoilt_model_loads():
    (y,) = pc.onnx.load(relu_model().SerializeToString()).run({"x": -np.ones(4, np.float32)})
    np.testing.assert_array_equal(y, [0, 0, 1, 2])


def test_bytes_that_are_no_model():
    refused(b"\xff\xff\xff\xff not protobuf", "not an ONNX model: the protobuf cannot be parsed")
    refused(b"", "not an ONNX model: it has no graph")
    refused(relu_model().SerializeToString()[:-7], "not an ONNX model")


def test_not_a_path_or_bytes():
    with pytest.raises(pc.OnnxError, match="a model is a path or bytes, got int"):
        pc.onnx.load(3)
    with pytest.raises(pc.OnnxError, match="cannot read the model"):
        pc.onnx.load("/no/such/model.onnx")


def test_a_tensor_whose_data_disagrees_with_its_shape():
    m = relu_model()
    m.graph.initializer[0].raw_data = b"\0" * 12
    refused(m, r"initializer 'w': raw_data has 12 bytes, but 4 float32 values \[4\] take 16")
    m = relu_model()
    w = m.graph.initializer[0]
    w.ClearField("raw_data")
    w.float_data.extend([1.0, 2.0])
    refused(m, "initializer 'w': float_data has 2 values, its shape needs 4")


def test_dims_that_overflow_or_are_negative():
    m = relu_model()
    m.graph.initializer[0].dims[:] = [2**40, 2**40]
    refused(m, r"initializer 'w': \d+ bytes would take the model past its limit")
    m = relu_model()
    m.graph.initializer[0].dims[:] = [-4]
    refused(m, "initializer 'w': negative dimension")
    m = relu_model()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2**62
    refused(m, "graph input 'x': dimension 0 is 4611686018427387904")


def test_a_type_we_do_not_hold():
    m = relu_model()
    m.graph.initializer[0].data_type = P.TensorProto.STRING
    refused(m, "initializer 'w': STRING has no dtype here")
    m = relu_model()
    m.graph.initializer[0].data_type = 999
    refused(m, "initializer 'w': element type 999 has no dtype here")


def test_an_undefined_input_a_cycle_and_a_value_made_twice():
    m = relu_model()
    m.graph.node[1].input[0] = "nowhere"
    refused(m, "node 'Relu_y' \\(Relu\\): input 'nowhere' is not a graph input")
    cycle = model(
        [node("Relu", ["b"], ["a"], name="one"), node("Relu", ["a"], ["b"], name="two")],
        [value("x", [4])],
        [value("a", [4])],
    )
    refused(cycle, "the graph has a cycle through node 'one'")
    twice = model(
        [node("Relu", ["x"], ["a"]), node("Relu", ["x"], ["a"], name="again")],
        [value("x", [4])],
        [value("a", [4])],
    )
    refused(twice, "value 'a' is produced twice \\(node 'again'\\)")


def test_a_missing_output_and_a_missing_feed():
    m = relu_model()
    m.graph.output[0].name = "ghost"
    refused(m, "graph output 'ghost' is not computed by any node")
    imported = pc.onnx.load(relu_model().SerializeToString())
    with pytest.raises(pc.FeedError, match="'x'"):
        imported.run({})


def test_attributes_of_the_wrong_name_or_type():
    misspelt = model(
        [node("Softmax", ["x"], ["y"], axiz=1)], [value("x", [2, 3])], [value("y", [2, 3])]
    )
    e = refused(misspelt, r"attribute 'axiz' is not supported by op 'softmax'.*reads: axis")
    assert e.node == "Softmax_y"
    wrong_type = model(
        [node("Softmax", ["x"], ["y"], axis=1.5)], [value("x", [2, 3])], [value("y", [2, 3])]
    )
    refused(wrong_type, "attribute 'axis': 1.5 does not fit an attr of type INT")
    out_of_range = model(
        [node("Softmax", ["x"], ["y"], axis=7)], [value("x", [2, 3])], [value("y", [2, 3])]
    )
    refused(out_of_range, "node 'Softmax_y' \\(Softmax\\): ShapeError")


def test_an_input_the_op_does_not_take():
    m = model([node("Relu", ["x", "x"], ["y"])], [value("x", [4])], [value("y", [4])])
    refused(m, "input 1 is not supported by op 'relu'")


def test_a_model_over_the_limit(tmp_path):
    data = relu_model().SerializeToString()
    refused(data, f"the model is {len(data)} bytes, over the limit of 10", max_bytes=10)
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    with pytest.raises(pc.OnnxError, match=f"is {len(data)} bytes, over the limit of 10"):
        pc.onnx.load(path, max_bytes=10)
    refused(data, "would take the model past its limit", max_bytes=len(data) + 4)


def external(m: P.ModelProto, location: str, offset: int = 0, length: int = 16) -> P.ModelProto:
    w = m.graph.initializer[0]
    w.ClearField("raw_data")
    w.data_location = P.TensorProto.EXTERNAL
    for key, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        w.external_data.add(key=key, value=v)
    return m


def load_file(tmp_path, m: P.ModelProto):
    path = tmp_path / "model" / "m.onnx"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(m.SerializeToString())
    return pc.onnx.load(path)


def test_external_data_inside_the_directory_loads(tmp_path):
    (tmp_path / "model").mkdir()
    weights = np.arange(4, dtype=np.float32)
    (tmp_path / "model" / "w.bin").write_bytes(b"pad!" + weights.tobytes())
    imported = load_file(tmp_path, external(relu_model(), "w.bin", offset=4))
    np.testing.assert_array_equal(imported.scope.find_var("w"), weights)


@pytest.mark.parametrize("location", ["../secret.bin", "/etc/passwd", "a/../../secret.bin", ""])
def test_external_data_outside_the_directory_is_refused(tmp_path, location):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 16)
    with pytest.raises(pc.OnnxError, match="must be a relative path inside the model's directory"):
        load_file(tmp_path, external(relu_model(), location))


def test_external_data_through_a_symlink_leaving_the_directory(tmp_path):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 16)
    (tmp_path / "model").mkdir()
    os.symlink(tmp_path / "secret.bin", tmp_path / "model" / "w.bin")
    with pytest.raises(pc.OnnxError, match="leaves the model's directory"):
        load_file(tmp_path, external(relu_model(), "w.bin"))


def test_external_data_past_the_file_end_or_of_the_wrong_length(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "w.bin").write_bytes(b"\0" * 16)
    with pytest.raises(pc.OnnxError, match="at offset 8, 16 bytes, is past the end"):
        load_file(tmp_path, external(relu_model(), "w.bin", offset=8))
    with pytest.raises(pc.OnnxError, match="length 8, its dtype and shape take 16"):
        load_file(tmp_path, external(relu_model(), "w.bin", length=8))
    with pytest.raises(pc.OnnxError, match=r"cannot read external data 'gone\.bin'"):
        load_file(tmp_path, external(relu_model(), "gone.bin"))
    refused(external(relu_model(), "w.bin"), "external data needs the model loaded from a file")


def test_mutated_models_are_refused_or_run():
    """Random byte flips, cuts and splices of a valid model: each loads (and runs or raises
    an error of the core's), or is refused with an OnnxError. Nothing else escapes."""
    data = bytearray(relu_model().SerializeToString())
    rng = np.random.default_rng(0)
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(400):
        mutated = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(0, len(mutated)))
            kind = rng.integers(0, 3)
            if kind == 0:
                mutated[i] = int(rng.integers(0, 256))
            elif kind == 1:
                del mutated[i : i + int(rng.integers(1, 8))]
            else:
                mutated[i:i] = bytes(rng.integers(0, 256, int(rng.integers(1, 8)), dtype=np.uint8))
        try:
            imported = pc.onnx.load(bytes(mutated), max_bytes=1 << 20)
        except pc.OnnxError:
            outcomes["refused"] += 1
            continue
        outcomes["loaded"] += 1
        try:
            imported.run({name: np.ones(4, np.float32) for name in imported.inputs})
        except pc.PaddleCoreError:
            pass
    assert outcomes["refused"] > 100 and outcomes["loaded"] > 0, outcomes
