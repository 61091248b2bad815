"""paddle-ops-math's program pass (the manifest's hooks_module): ``matmul_bias``.

In a CPU plan without gradients (an evaluation clone, a loaded or imported inference model),
a matmul whose out only an ``add`` of a bias reads takes the bias as its ``bias`` input and
writes the add's out: a linear layer in one op. The kernel starts out as the bias in every
row and lets OpenBLAS add the product to it, where OpenBLAS would have zeroed out first, so
the bias costs no pass over out of its own (the add read and wrote all of out again: 4% of a
Transformer encoder's inference). The results agree to float32 rounding: the bias joins the
product's partial sums first rather than last (OpenBLAS sums long rows in blocks). The bias
is a float32 or float64 vector [N] (N: out's last dimension) that the add broadcasts over
every row, computed before the matmul or a parameter; values fetched, fed, persistable or
written twice are never fused away.

``set_pass_enabled("matmul_bias", False)`` switches it off for the plans prepared from then
on (a prepared plan keeps what it was prepared with), to compare results with and without it.
"""

from __future__ import annotations

from typing import Any

from paddle_core import ConfigError, hookimpl

NAME = "matmul_bias"
PASSES = (NAME,)
GRAD_SUFFIX = "_grad"
_disabled: set[str] = set()


def set_pass_enabled(name: str, enabled: bool) -> bool:
    """Switch pass ``name`` on or off; returns whether it was on."""
    if name not in PASSES:
        raise ConfigError(
            f"paddle-ops-math has no pass {name!r}; its passes are {', '.join(PASSES)}"
        )
    was = name not in _disabled
    (_disabled.discard if enabled else _disabled.add)(name)
    return was


@hookimpl
def paddle_core_wants_transform(program: Any, device: Any) -> bool:
    """Whether the pass would fuse a bias into some matmul of ``program``."""
    return _applies(program, device) and bool(_Fusion(program.global_block(), set()).pairs())


@hookimpl
def paddle_core_transform_program(program: Any, device: Any, feed_names: list, fetch_names: list):
    if _applies(program, device):
        _Fusion(program.global_block(), set(feed_names) | set(fetch_names)).run()


def _applies(program: Any, device: Any) -> bool:
    if NAME in _disabled or device.type != "cpu":
        return False
    ops = program.global_block().ops
    return any(op.type == "matmul" for op in ops) and not any(
        op.type.endswith(GRAD_SUFFIX) for op in ops
    )


class _Fusion:
    """Who reads and writes each value, found once (an imported model has thousands of ops)."""

    def __init__(self, block: Any, kept: set[str]) -> None:
        self.block, self.kept = block, kept
        self.readers: dict[str, list[Any]] = {}
        self.writers: dict[str, list[int]] = {}  # name -> the places of its writers
        self.place = {id(op): index for index, op in enumerate(block.ops)}
        for index, op in enumerate(block.ops):
            for name in op.input_names:
                self.readers.setdefault(name, []).append(op)
            for name in op.output_names:
                self.writers.setdefault(name, []).append(index)

    def pairs(self) -> list[tuple[Any, Any, str]]:
        """(matmul, add, bias) of each matmul the pass fuses its add into."""
        found = []
        for op in self.block.ops:
            if op.type == "matmul" and not op.input("bias"):
                add = self._add(op)
                bias = add and self._bias(op, add)
                if bias:
                    found.append((op, add, bias))
        return found

    def _add(self, matmul: Any) -> Any:
        """The one add reading matmul's out, which nothing else reads or keeps; else None."""
        (out,) = matmul.output("out")
        readers = self.readers.get(out, [])
        if len(readers) != 1 or len(self.writers.get(out, [])) != 1 or out in self.kept:
            return None
        if self.block.var(out).persistable or readers[0].type != "add":
            return None
        return readers[0]

    def _bias(self, matmul: Any, add: Any) -> str | None:
        """The add's other operand where it is a bias of matmul's out: [N], one float dtype."""
        block = self.block
        (out,) = matmul.output("out")
        (x,), (y,) = add.input("x"), add.input("y")
        other = y if x == out else x
        if other == out:
            return None
        value, bias = block.var(out), block.var(other)
        (y_operand,) = matmul.input("y")
        shape = tuple(value.shape)
        if (
            bias.dtype not in ("float32", "float64")
            or bias.dtype != value.dtype
            or len(block.var(y_operand).shape) < 2
            or not shape
            or shape[-1] is None
            or tuple(bias.shape) != (shape[-1],)
        ):
            return None
        at = self.place[id(matmul)]
        return other if all(i < at for i in self.writers.get(other, [])) else None

    def run(self) -> None:
        block = self.block
        fused: set[int] = set()
        for matmul, add, bias in self.pairs():
            if id(add) in fused:  # (an add of two matmuls' outs: one of them takes it)
                continue
            fused.add(id(add))
            (result,) = add.output("out")
            block.remove_op(block.ops.index(add))
            block.rewrite_op(matmul, inputs={"bias": bias}, outputs={"out": result})
