"""Executor dispatch cost: a program of 1000 chained adds on 16-element float32 tensors.

Steady state (the plan is prepared once), per op: ours (pc.Executor on CPU, the compiled run
loop calling native kernels) beside NumPy (np.add with out=), PyTorch eager (x + y) and ONNX
Runtime (the same 1000-node graph, one thread), all measured in this run. The tensors are
tiny, so this measures the per-op overhead of each system, not arithmetic.
Target: at most 0.25 µs per op.

    python bench/bench_dispatch.py [--ops 1000] [--repeat 200]
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import optional, steady

import paddle_core as pc


def ours(ops: int, a: np.ndarray, b: np.ndarray):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [16], "float32")
        y = pc.data("y", [16], "float32")
        for _ in range(ops):
            x = pc.ops.add(x, y)
    exe = pc.Executor("cpu", num_threads=1)
    feed = {"x": a, "y": b}
    exe.run(prog, feed=feed, fetch_list=[x])
    assert exe.prepare(prog, feed, [x]).compiled, "the plan must run in the compiled loop"
    (out,) = exe.run(prog, feed=feed, fetch_list=[x])
    np.testing.assert_array_equal(out, numpy_chain(ops, a, b)())  # the same 1000 roundings
    return lambda: exe.run(prog, feed=feed, fetch_list=[x])


def numpy_chain(ops: int, a: np.ndarray, b: np.ndarray):
    buffers = [np.empty_like(a) for _ in range(ops)]

    def run():
        x = a
        for out in buffers:
            x = np.add(x, b, out=out)
        return x

    return run


def torch_chain(ops: int, a: np.ndarray, b: np.ndarray):
    torch = optional("torch")
    if torch is None:
        return None
    torch.set_num_threads(1)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)

    def run():
        x = ta
        for _ in range(ops):
            x = x + tb
        return x

    return run


def onnxruntime_chain(ops: int, a: np.ndarray, b: np.ndarray):
    ort, onnx = optional("onnxruntime"), optional("onnx")
    if ort is None or onnx is None:
        return None
    TensorProto, helper = onnx.TensorProto, onnx.helper

    nodes = [
        helper.make_node("Add", ["x" if i == 0 else f"t{i}", "y"], [f"t{i + 1}"])
        for i in range(ops)
    ]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [16]) for n in ("x", "y")],
        [helper.make_tensor_value_info(f"t{ops}", TensorProto.FLOAT, [16])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = min(model.ir_version, 10)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    # Keep all 1000 nodes: constant folding or fusion would measure less than a 1000-op graph.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    feed = {"x": a, "y": b}
    return lambda: session.run(None, feed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a = rng.standard_normal(16).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    systems = {"paddle-core": ours, "NumPy np.add(out=)": numpy_chain}
    systems["PyTorch 2.13 eager"] = torch_chain
    systems["ONNX Runtime"] = onnxruntime_chain
    results = {}
    for name, make in systems.items():
        run = make(args.ops, a, b)
        if run is not None:  # None: a package it needs is missing
            results[name] = steady(run, args.repeat) / args.ops * 1e6
    base = results["paddle-core"]
    print(
        f"{'system':22} {'µs/op':>8} {'vs paddle-core':>15}   ({args.ops} chained adds of 16 floats)"
    )
    for name, value in results.items():
        print(f"{name:22} {value:8.3f} {value / base:14.2f}x")
    print("\ntarget: paddle-core <= 0.25 µs/op (a ratio above 1 means paddle-core is faster)")


if __name__ == "__main__":
    main()
