"""Batch norm folding: in a CPU plan without gradients, a batch_norm (is_test) of a conv2d's
out becomes part of the convolution, whose filter and bias absorb it:

    s = scale / sqrt(variance + epsilon)            (per output channel)
    filter' = filter * s,  bias' = (bias - mean) * s + shift

computed by ops of the math plugin that read only parameters, which the core's constant
folding runs once per change of them (folding.py), not on every run. The plan then has one op
less per convolution and a conv2d the fusion pass can give the activation that follows. The
results differ from the unfolded plan's by float32 rounding (about 1e-6 relatively), as ONNX
Runtime's and PyTorch's folding does. A batch_norm is folded where nothing else reads its
conv2d's out or its other outputs, none is fetched, and its statistics are not being trained.
"""

from __future__ import annotations

from typing import Any

NAME = "fold_batch_norm"


def wants(program: Any, device: Any) -> bool:
    return bool(_Folding(program, device, set()).pairs())


def transform(program: Any, device: Any, feed_names: list, fetch_names: list) -> None:
    folding = _Folding(program, device, set(fetch_names) | set(feed_names))
    for conv, norm in folding.pairs():
        folding.fold(conv, norm)


class _Folding:
    def __init__(self, program: Any, device: Any, kept: set[str]) -> None:
        self.block = program.global_block()
        self.device, self.kept = device, kept
        self.readers: dict[str, int] = {}
        self.writers: dict[str, int] = {}
        for op in self.block.ops:
            for name in op.input_names:
                self.readers[name] = self.readers.get(name, 0) + 1
            for name in op.output_names:
                self.writers[name] = self.writers.get(name, 0) + 1

    def pairs(self) -> list[tuple[Any, Any]]:
        """(conv2d, batch_norm) pairs to fold."""
        ops = self.block.ops
        if self.device.type != "cpu" or any(op.type.endswith("_grad") for op in ops):
            return []
        writer = {name: op for op in ops if op.type == "conv2d" for name in op.output_names}
        found = []
        for norm in ops:
            if norm.type != "batch_norm" or not norm.attrs["is_test"]:
                continue
            (x,) = norm.input("x")
            conv = writer.get(x)
            if conv is not None and self._foldable(conv, norm, x):
                found.append((conv, norm))
        return found

    def _foldable(self, conv: Any, norm: Any, x: str) -> bool:
        block = self.block
        own = {n for slot in ("scale", "bias", "mean", "variance") for n in norm.input(slot)}
        (y,) = norm.output("y")
        others = [n for n in norm.output_names if n != y and n not in own]
        return (
            not conv.attrs["channel_block"]
            and not conv.attrs["fuse_activation"]
            and not conv.input("residual")
            and block.var(conv.input("filter")[0]).dtype in ("float32", "float64")
            and self.readers.get(x) == 1
            and self.writers.get(x) == 1
            and x not in self.kept
            and not block.var(x).persistable
            and all(self.readers.get(n, 0) == 0 and n not in self.kept for n in others)
            # no op but the norm itself (its running statistics in place) writes its inputs
            and all(self.writers.get(n, 0) == (n in norm.output_names) for n in own)
        )

    def fold(self, conv: Any, norm: Any) -> None:
        block = self.block
        index = block.ops.index(conv)
        made = 0

        def op(type_: str, inputs: dict, **attrs: Any) -> str:
            nonlocal index, made
            out = self.block.free_name(f"{norm.output('y')[0]}@fold{made}")
            block.insert_op(index, type_, inputs, {"out": out}, attrs).role = conv.role
            index, made = index + 1, made + 1
            return out

        (filter_,) = conv.input("filter")
        (gamma,), (beta,) = norm.input("scale"), norm.input("bias")
        (mean,), (variance,) = norm.input("mean"), norm.input("variance")
        shifted = op("scale", {"x": variance}, scale=1.0, bias=norm.attrs["epsilon"])
        s = op("mul", {"x": gamma, "y": op("rsqrt", {"x": shifted})})
        k = block.var(filter_).shape[0]
        folded_filter = op("mul", {"x": filter_, "y": op("reshape", {"x": s}, shape=[k, 1, 1, 1])})
        bias = conv.input("bias")
        centred = (
            op("sub", {"x": bias[0], "y": mean}) if bias else op("scale", {"x": mean}, scale=-1.0)
        )
        folded_bias = op("add", {"x": op("mul", {"x": centred, "y": s}), "y": beta})
        block.remove_op(block.ops.index(norm))
        block.rewrite_op(
            conv,
            inputs={"filter": folded_filter, "bias": folded_bias},
            outputs={"out": norm.output("y")},
        )
