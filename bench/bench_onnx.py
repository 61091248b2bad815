"""Imported ONNX models: inference here beside ONNX Runtime and PyTorch, on the same file.

Each network is written in PyTorch (bench/networks.py: the ONNX model tests' definitions,
random weights), exported with torch.onnx.export (its TorchScript exporter), imported with
pc.onnx.load and run by an Executor; ONNX Runtime runs the same file (default optimisations:
batch norm folded, conv and activation fused, its CPU layouts) and PyTorch the module (eval,
no_grad). One and two threads, medians of interleaved rounds, each timed call after
timing.SETTLE untimed ones of the same library (no library's call shares its cores with the
threads another's left spinning). Also the import time of resnet18 (target: under 1 s).
bench_models.py runs the same networks built with our layers instead.

    python bench/bench_onnx.py [--rounds 9] [--threads 1 2] [--models resnet18_224 ...]
    (pip install torch==2.13.0 onnxruntime; the speed targets against ONNX Runtime are the
    performance issue's: this prints the figures)
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import networks
import timing
from networks import CONFIGS
from timing import optional

import paddle_core as pc


def export(torch, name: str, directory: Path):
    """(the PyTorch module, its input, the ONNX file) for one configuration."""
    module, x = networks.torch_network(torch, name)
    path = directory / f"{name}.onnx"
    networks.export_onnx(torch, module, x, path)
    return module, x, path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--models", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    args = parser.parse_args()
    timing.banner(__doc__)
    torch, ort = optional("torch"), optional("onnxruntime")
    if torch is None:
        return  # the networks are PyTorch's, exported here
    with tempfile.TemporaryDirectory() as tmp:
        files = {name: export(torch, name, Path(tmp)) for name in args.models}
        if "resnet18_224" in files:
            start = time.perf_counter()
            pc.onnx.load(files["resnet18_224"][2])
            print(f"import of resnet18: {time.perf_counter() - start:.3f} s (target: under 1 s)")
        print(
            f"{'model':14} {'threads':>7} {'ours ms':>9} {'ORT ms':>9} {'torch ms':>9} "
            f"{'ours/ORT':>9} {'ours/torch':>10}"
        )
        for name, (module, x, path) in files.items():
            imported = pc.onnx.load(path)
            for threads in args.threads:
                calls = timed_calls(torch, ort, module, x, imported, path, threads)
                ms = {
                    k: t * 1e3
                    for k, t in timing.interleaved(
                        calls, args.rounds, settle=timing.SETTLE, warmup_seconds=1.0
                    ).items()
                }
                ort_ms = ms.get("ort", math.nan)
                print(
                    f"{name:14} {threads:7d} {ms['ours']:9.2f} {ort_ms:9.2f} {ms['torch']:9.2f} "
                    f"{ms['ours'] / ort_ms:8.2f}x {ms['ours'] / ms['torch']:9.2f}x"
                )


def timed_calls(torch, ort, module, x, imported, path: Path, threads: int) -> dict:
    """One inference each: ours (the imported program), ONNX Runtime's, PyTorch's."""
    feed = {imported.inputs[0]: x.numpy()}
    exe = pc.Executor(num_threads=threads)
    fetch = imported.outputs
    calls = {
        "ours": lambda: exe.run(imported.program, feed=feed, fetch_list=fetch, scope=imported.scope)
    }
    if ort is not None:
        session = networks.ort_session(ort, path, threads)
        calls["ort"] = lambda: session.run(None, feed)

    def eager():
        torch.set_num_threads(threads)
        with torch.no_grad():
            module(x)

    calls["torch"] = eager
    return calls


if __name__ == "__main__":
    main()
