"""The fusion pass: in a CPU plan without gradients, a conv2d's residual add and activation
become part of the convolution (oneDNN post-ops), instead of ops that read and write the whole
activation once more each.

A conv2d whose out only an ``add`` reads, the other operand of one shape with it and computed
before the conv2d, takes that operand as its ``residual`` and writes the add's out (the
residual connection of ResNet's and MobileNetV2's blocks); only within the layout pass's chain
(a blocked or channels-last out), where the residual is in the layout oneDNN computes out in.
Then a conv2d whose out only an activation reads writes the activation's out, with
``fuse_activation``: relu, relu6 and clip (clip to [min, max]), leaky_relu. Both compute the
same numbers as the ops they replace (a sum, then the same comparisons). Values fetched,
persistable or written twice are never fused away.
"""

from __future__ import annotations

from typing import Any

NAME = "onednn_fusion"
GRAD_SUFFIX = "_grad"


def _activation(op: Any) -> tuple[str, float, float] | None:
    """(fuse_activation, fuse_alpha, fuse_beta) computing ``op``, or None."""
    if op.type == "relu":
        return "relu", 0.0, 0.0
    if op.type == "relu6":
        return "clip", 0.0, op.attrs["threshold"]
    if op.type == "clip":
        return "clip", op.attrs["min"], op.attrs["max"]
    if op.type == "leaky_relu":
        return "leaky_relu", op.attrs["alpha"], 0.0
    return None


def wants(program: Any, device: Any) -> bool:
    """Whether a conv2d of ``program`` is followed by something the pass fuses."""
    return _applies(program, device) and any(_Fusion(program.global_block(), set()).candidates())


def transform(program: Any, device: Any, feed_names: list, fetch_names: list) -> None:
    if _applies(program, device):
        _Fusion(program.global_block(), set(fetch_names) | set(feed_names)).run()


def _applies(program: Any, device: Any) -> bool:
    if device.type != "cpu":
        return False
    ops = program.global_block().ops
    if not any(op.type == "conv2d" for op in ops) or any(
        op.type.endswith(GRAD_SUFFIX) for op in ops
    ):
        return False
    from . import onednn  # (the compiled module: only for programs with a convolution)

    return onednn.is_enabled()


class _Fusion:
    """Who reads and writes each value, found once (an imported model has thousands of ops)
    and kept up to date as ops fuse."""

    def __init__(self, block: Any, kept: set[str]) -> None:
        self.block, self.kept = block, kept
        self.readers: dict[str, list[Any]] = {}
        self.writers: dict[str, list[int]] = {}  # name -> the places of its writers
        self.place = {id(op): index for index, op in enumerate(block.ops)}  # (order kept)
        for index, op in enumerate(block.ops):
            for name in op.input_names:
                self.readers.setdefault(name, []).append(op)
            for name in op.output_names:
                self.writers.setdefault(name, []).append(index)

    def _reader(self, name: str) -> Any:
        """The one op reading ``name``, which one op writes and nothing keeps; else None."""
        readers = self.readers.get(name, [])
        if len(readers) != 1 or len(self.writers.get(name, [])) != 1 or name in self.kept:
            return None
        return None if self.block.var(name).persistable else readers[0]

    def _residual(self, conv: Any, add: Any) -> str | None:
        """The operand of ``add`` other than the conv2d's out, where the conv2d can take it."""
        (out,) = conv.output("out")
        (x,), (y,) = add.input("x"), add.input("y")
        other = y if x == out else x
        if other == out or not conv.attrs["channel_block"]:
            return None
        block = self.block
        shape = block.var(out).shape
        if tuple(block.var(other).shape) != tuple(shape) or None in shape[1:]:
            return None
        at = self.place[id(conv)]
        return other if all(i < at for i in self.writers.get(other, [])) else None

    def candidates(self) -> list[Any]:
        return [
            op
            for op in self.block.ops
            if op.type == "conv2d"
            and not op.attrs["fuse_activation"]
            and not op.input("residual")
            and self._next(op) is not None
        ]

    def _next(self, conv: Any) -> Any:
        (out,) = conv.output("out")
        op = self._reader(out)
        if op is None:
            return None
        if op.type == "add" and not conv.input("residual") and self._residual(conv, op):
            return op
        return op if _activation(op) is not None else None

    def run(self) -> None:
        for conv in self.candidates():
            self._fuse(conv)

    def _fuse(self, conv: Any) -> None:
        block = self.block
        while (op := self._next(conv)) is not None and not conv.attrs["fuse_activation"]:
            if op.type == "add":
                residual = self._residual(conv, op)
                inputs = {"residual": residual}
                attrs: dict[str, Any] = {}
            else:
                act, alpha, beta = _activation(op)
                inputs = {}
                attrs = {"fuse_activation": act, "fuse_alpha": alpha, "fuse_beta": beta}
            (old,), (new,) = conv.output("out"), op.output("out")
            block.remove_op(block.ops.index(op))
            block.rewrite_op(conv, inputs=inputs, outputs={"out": new}, attrs=attrs)
            # The maps, as they are now: op gone, conv writing op's out and reading residual.
            for name in op.input_names:
                self.readers[name].remove(op)
            self.writers[new] = [self.place[id(conv)]]
            del self.writers[old]
            if inputs:
                self.readers[residual].append(conv)
