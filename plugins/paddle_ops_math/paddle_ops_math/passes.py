"""paddle-ops-math's program pass (the manifest's hooks_module): ``matmul_bias``.

In a CPU plan, a matmul whose out only an ``add`` of a bias reads takes the bias as its
``bias`` input and writes the add's out: a linear layer in one op. The kernel starts out as
the bias in every row and lets OpenBLAS add the product to it, where OpenBLAS would have
zeroed out first, so the bias costs no pass over out of its own (the add read and wrote all of
out again: 4% of a Transformer encoder's inference). The results agree to float32 rounding:
the bias joins the product's partial sums first rather than last (OpenBLAS sums long rows in
blocks). The bias is a float32 or float64 vector [N] (N: out's last dimension) that the add
broadcasts over every row, which nothing writes between the matmul and the add; values
fetched, fed, persistable or written twice are never fused away.

In a plan with gradients the add's gradient goes too: the add_grad that reads the product
(for its shape) becomes a ``sum`` of out's gradient over every axis but the last, the bias's
gradient (none where the bias wants none), and the matmul_grad reads out's gradient, which
the add_grad passed on unchanged as the product's. The product's gradient must have no other
reader: nothing is fused where the pair is not exactly a linear layer's forward and backward.

``set_pass_enabled("matmul_bias", False)`` switches it off for the plans prepared from then
on (a prepared plan keeps what it was prepared with), to compare results with and without it.
"""

from __future__ import annotations

from typing import Any

from paddle_core import ConfigError, hookimpl

NAME = "matmul_bias"
PASSES = (NAME,)
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
    return any(op.type == "matmul" for op in program.global_block().ops)


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

    def pairs(self) -> list[tuple[Any, Any, str, Any]]:
        """(matmul, add, bias, the add's add_grad or None) of each matmul the pass fuses its
        add into."""
        found = []
        for op in self.block.ops:
            if op.type == "matmul" and not op.input("bias"):
                add, grad = self._add(op)
                bias = add and self._bias(op, add)
                if bias:
                    found.append((op, add, bias, grad))
        return found

    def _add(self, matmul: Any) -> tuple[Any, Any]:
        """The one add reading matmul's out, which nothing else reads or keeps but that add's
        own add_grad (for its shape), and that add_grad; (None, None) where there is none."""
        (out,) = matmul.output("out")
        readers = self.readers.get(out, [])
        if len(self.writers.get(out, [])) != 1 or out in self.kept:
            return None, None
        adds = [op for op in readers if op.type == "add"]
        if self.block.var(out).persistable or len(adds) != 1:
            return None, None
        grads = [op for op in readers if op is not adds[0]]
        if not grads:
            return adds[0], None
        if len(grads) == 1 and self._is_linear_backward(matmul, adds[0], grads[0]):
            return adds[0], grads[0]
        return None, None

    def _is_linear_backward(self, matmul: Any, add: Any, grad: Any) -> bool:
        """Whether ``grad`` is ``add``'s add_grad and the product's gradient it writes (if
        any) goes to matmul's matmul_grad alone."""
        if grad.type != "add_grad" or any(
            grad.input(slot) != add.input(slot) for slot in ("x", "y")
        ):
            return False
        (out,) = matmul.output("out")
        product_grad = grad.output("x_grad" if add.input("x") == [out] else "y_grad")
        if not product_grad:
            return True
        (name,) = product_grad
        readers = self.readers.get(name, [])
        return (
            name not in self.kept
            and len(self.writers.get(name, [])) == 1
            and len(readers) == 1
            and readers[0].type == "matmul_grad"
            and readers[0].input("out_grad") == [name]
            and all(readers[0].input(slot) == matmul.input(slot) for slot in ("x", "y"))
        )

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
        # The bias the add reads must be there at the matmul: nothing writes it from the
        # matmul to the add (an optimizer updates a parameter bias after the backward pass).
        start, end = self.place[id(matmul)], self.place[id(add)]
        return other if not any(start <= i < end for i in self.writers.get(other, [])) else None

    def run(self) -> None:
        block = self.block
        fused: set[int] = set()
        for matmul, add, bias, grad in self.pairs():
            if id(add) in fused:  # (an add of two matmuls' outs: one of them takes it)
                continue
            fused.add(id(add))
            (result,) = add.output("out")
            block.remove_op(block.ops.index(add))
            block.rewrite_op(matmul, inputs={"bias": bias}, outputs={"out": result})
            if grad is not None:
                self._fuse_grad(matmul, add, bias, grad)

    def _fuse_grad(self, matmul: Any, add: Any, bias: str, grad: Any) -> None:
        """The add_grad becomes the bias's gradient, a sum of out's gradient over its rows,
        and the matmul_grad reads out's gradient in place of the product's."""
        block = self.block
        (out_grad,) = grad.input("out_grad")
        bias_slot = "x_grad" if add.input("x") == [bias] else "y_grad"
        product_slot = "y_grad" if bias_slot == "x_grad" else "x_grad"
        for name in grad.output(product_slot):
            (matmul_grad,) = self.readers[name]
            block.rewrite_op(matmul_grad, inputs={"out_grad": out_grad})
        at = block.ops.index(grad)
        block.remove_op(at)
        for name in grad.output(bias_slot):
            rank = len(block.var(out_grad).shape)
            axes = {"axes": list(range(rank - 1)), "noop_with_empty_axes": True}  # (as the rule's)
            block.insert_op(at, "sum", {"x": out_grad}, {"out": name}, axes)
