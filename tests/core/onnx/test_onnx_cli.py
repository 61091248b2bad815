"""`paddle-ops onnx check|convert`, `paddle-ops list --onnx` and `show`'s ONNX line, run as
subprocesses."""

from __future__ import annotations

import json

import numpy as np
from conftest import run_cli
from onnx_models import model, node, value

import paddle_core as pc


def write(path, *nodes, domains=None):
    m = model(list(nodes), [value("x", [2])], [value("y", [2])], domains=domains)
    path.write_bytes(m.SerializeToString())
    return str(path)


def test_check_lists_what_no_plugin_maps(tmp_path):
    bad = write(
        tmp_path / "bad.onnx",
        node("Relu", ["x"], ["a"]),
        node("Foo", ["a"], ["y"], domain="com.example", name="foo_1"),
        domains={"com.example": 1},
    )
    result = run_cli("onnx", "check", bad, check=1)
    assert "1 ONNX op no installed plugin maps" in result.stdout
    assert "com.example:Foo (opset 1): 1 node: 'foo_1'" in result.stdout
    report = json.loads(run_cli("onnx", "check", bad, "--json", check=1).stdout)
    assert report["missing"] == [{"op": "com.example:Foo (opset 1)", "nodes": "1 node: 'foo_1'"}]
    good = write(tmp_path / "good.onnx", node("Relu", ["x"], ["y"]))
    assert "every ONNX op it uses is mapped" in run_cli("onnx", "check", good).stdout
    result = run_cli("onnx", "check", str(tmp_path / "missing.onnx"), check=1)
    assert "cannot read the model" in result.stderr


def test_convert_saves_an_inference_model(tmp_path):
    path = write(tmp_path / "m.onnx", node("Relu", ["x"], ["y"]))
    out = tmp_path / "converted"
    assert "1 op saved to" in run_cli("onnx", "convert", path, "-o", str(out)).stdout
    program, feeds, fetches = pc.io.load_inference_model(out, scope=pc.Scope())
    assert feeds == ["x"]
    (y,) = pc.Executor("cpu").run(
        program, feed={"x": np.array([-1.0, 2.0], np.float32)}, fetch_list=fetches
    )
    np.testing.assert_array_equal(y, [0.0, 2.0])
    assert "-o" in run_cli("onnx", "convert", path, check=1).stderr


def test_list_onnx_and_show():
    rows = json.loads(run_cli("list", "--onnx", "--json").stdout)["onnx"]
    conv = next(r for r in rows if r["onnx_op"] == "Conv")
    assert conv["op"] == "conv2d" and conv["plugin"] == "nn" and conv["domain"] == "ai.onnx"
    text = run_cli("list", "--onnx").stdout
    assert "ONNX ops mapped by" in text and "Gemm" in text
    only_math = json.loads(run_cli("list", "--onnx", "--plugin", "math", "--json").stdout)
    assert {r["plugin"] for r in only_math["onnx"]} == {"math"}
    assert "onnx:       'Conv' (opset 11+)" in run_cli("show", "conv2d").stdout


def test_check_names_the_package_that_maps_a_missing_op(tmp_path):
    path = write(tmp_path / "conv.onnx", node("Softsign", ["x"], ["y"]))
    assert "every ONNX op it uses is mapped" not in run_cli("onnx", "check", path, check=1).stdout
    pool = write(tmp_path / "pool.onnx", node("GlobalMaxPool", ["x"], ["y"]))
    result = run_cli("onnx", "check", pool, env={"PADDLE_CORE_DISABLE": "nn"}, check=1)
    assert "GlobalMaxPool (opset 17): 1 node" in result.stdout
    assert "mapped by paddle-ops-nn, installed but not loaded" in result.stdout
