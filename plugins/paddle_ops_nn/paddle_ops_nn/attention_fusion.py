"""The attention_fusion pass: attention composed of ops, as an ONNX model holds it, becomes
one scaled_dot_product_attention in CPU plans.

Exporters write attention as ``matmul(softmax(matmul(q, kᵀ) [* c] [+ mask]), v)``: PyTorch's
two exporters scale q and kᵀ by √c each instead, and build kᵀ from k with a transpose of its
last two axes, reshapes of its leading ones and that scaling. That form holds the scores and
the probabilities [..., L, S] whole and passes over them three times more; the fused kernel
(FlashAttention-2's order) holds one tile of them, and computes the same products. The pass
matches the form backwards from the second matmul:

- out = matmul(p, v), p = softmax(s) over the last axis;
- s = [add(., mask)] of [mul or div by a scalar c] of matmul(q, b);
- b is k with transpose_y, or kᵀ: a transpose of k's last two axes, then reshapes that leave
  the last two axes alone and muls or divs by scalars, in any order.

It writes ``scaled_dot_product_attention(q', k', v, mask, scale=1)``: q' is q, mul'd or div'd by
c where the scores were; k' is k, reshaped and scaled as kᵀ was (so the scaling of q and k
stays as the model had it, and the kernel adds the mask as the add did). A row that every mask
value hides gives zeros instead of softmax's NaN. Values fetched, fed, persistable, read
twice or written twice are never fused away; neither is attention with a gradient (the
probabilities then have another reader).
"""

from __future__ import annotations

from typing import Any

NAME = "attention_fusion"
SCALES = ("mul", "div")
FLOATS = ("float32", "float64")


def wants(program: Any, device: Any) -> bool:
    """Whether ``program`` has composed attention the pass fuses."""
    return _applies(program, device) and bool(_Fusion(program.global_block(), set()).matches())


def transform(program: Any, device: Any, feed_names: list, fetch_names: list) -> None:
    if _applies(program, device):
        _Fusion(program.global_block(), set(feed_names) | set(fetch_names)).run()


def _applies(program: Any, device: Any) -> bool:
    return device.type == "cpu" and any(op.type == "softmax" for op in program.global_block().ops)


def _swaps_last_two(perm: list[int]) -> bool:
    n = len(perm)
    return n >= 2 and list(perm) == [*range(n - 2), n - 1, n - 2]


class _Match:
    """One composed attention: its ops and what the fused op reads."""

    def __init__(self, second: Any, softmax: Any, first: Any) -> None:
        self.second, self.softmax, self.first = second, softmax, first
        self.score_scale: Any = None  # the mul or div of the scores by a scalar
        self.mask_add: Any = None
        self.mask: str | None = None
        self.k: str = ""
        self.k_ops: list = []  # kᵀ's chain from k on: transpose, reshapes, scalings

    def ops(self) -> list:
        chain = [self.second, self.softmax, self.first, self.score_scale, self.mask_add]
        return [op for op in chain + self.k_ops if op is not None]


class _Fusion:
    """Who reads and writes each value, found once (an imported model has thousands of ops)."""

    def __init__(self, block: Any, kept: set[str]) -> None:
        self.block, self.kept = block, kept
        self.readers: dict[str, int] = {}
        self.writers: dict[str, list[Any]] = {}
        for op in block.ops:
            for name in op.input_names:
                self.readers[name] = self.readers.get(name, 0) + 1
            for name in op.output_names:
                self.writers.setdefault(name, []).append(op)

    def _writer(self, name: str) -> Any:
        """The op writing ``name``, where ``name`` is an intermediate value of one writer and
        one reader, neither kept nor persistable; else None."""
        writers = self.writers.get(name, [])
        var = self.block.find_var(name)
        if (
            len(writers) != 1
            or self.readers.get(name) != 1
            or name in self.kept
            or var is None
            or var.persistable
        ):
            return None
        return writers[0]

    def _scalar(self, name: str) -> bool:
        var = self.block.find_var(name)
        return var is not None and all(d == 1 for d in var.shape)

    def _scaled(self, op: Any) -> str | None:
        """What op multiplies or divides by a scalar, where it does so (mul either way round,
        div of it by the scalar); else None."""
        if op.type not in SCALES:
            return None
        (x,), (y,) = op.input("x"), op.input("y")
        if op.type == "mul" and self._scalar(x):
            x, y = y, x
        return x if self._scalar(y) and not self._scalar(x) else None

    def _leads_to_product(self, name: str) -> bool:
        """Whether ``name`` is a product's (the scores'), perhaps scaled."""
        op = self._writer(name)
        if op is not None and op.type in SCALES and self._scaled(op) is not None:
            op = self._writer(self._scaled(op))
        return op is not None and op.type == "matmul"

    # -- matching ------------------------------------------------------------------------------

    def matches(self) -> list[_Match]:
        found = []
        for op in self.block.ops:
            if op.type == "matmul" and not op.input("bias"):
                match = self._match(op)
                if match is not None:
                    found.append(match)
        return found

    def _match(self, second: Any) -> _Match | None:
        if second.attrs["transpose_x"] or second.attrs["transpose_y"]:
            return None
        softmax = self._writer(second.input("x")[0])
        if softmax is None or softmax.type != "softmax":
            return None
        (scores,) = softmax.input("x")
        var = self.block.var(scores)
        if softmax.attrs["axis"] not in (-1, len(var.shape) - 1) or var.dtype not in FLOATS:
            return None
        match = _Match(second, softmax, None)
        op = self._writer(scores)
        if op is not None and op.type == "add":
            inner = [n for n in op.input_names if self._leads_to_product(n)]
            if len(inner) != 1 or self.block.var(inner[0]).shape != self.block.var(scores).shape:
                return None
            (mask,) = [n for n in op.input_names if n != inner[0]] or [None]
            if mask is None or self.block.var(mask).dtype != self.block.var(scores).dtype:
                return None
            match.mask_add, match.mask = op, mask
            op = self._writer(inner[0])
        if op is not None and op.type in SCALES:
            product = self._scaled(op)
            if product is None:
                return None
            match.score_scale = op
            op = self._writer(product)
        if op is None or op.type != "matmul" or op.input("bias") or op.attrs["transpose_x"]:
            return None
        match.first = op
        if not self._keys(match) or not self._fits(match):
            return None
        return match

    def _keys(self, match: _Match) -> bool:
        """Finds k and kᵀ's chain from it."""
        first = match.first
        (b,) = first.input("y")
        if first.attrs["transpose_y"]:
            match.k = b
            return True
        chain = []
        while True:
            op = self._writer(b)
            if op is None:
                return False
            if op.type == "transpose" and _swaps_last_two(op.attrs["perm"]):
                (match.k,) = op.input("x")
                match.k_ops = [op, *reversed(chain)]
                return True
            if op.type == "reshape":
                before = self.block.var(op.input("x")[0]).shape
                after = self.block.var(op.output("out")[0]).shape
                shape = op.attrs["shape"]
                if len(before) < 2 or before[-2:] != after[-2:] or min(shape[-2:], default=0) < 1:
                    return False
                (b,) = op.input("x")
            elif self._scaled(op) is not None:
                b = self._scaled(op)
            else:
                return False
            chain.append(op)

    def _fits(self, match: _Match) -> bool:
        """Whether q, k and v have one rank and the same leading dimensions, as the fused op
        takes them (it broadcasts only the mask)."""
        shape = self.block.var
        (q,), (v,) = match.first.input("x"), match.second.input("y")
        k = list(shape(match.k).shape)
        if not match.first.attrs["transpose_y"]:  # k's shape is kᵀ's chain's, reversed
            for op in match.k_ops[1:]:
                if op.type == "reshape":
                    k = [*shape(op.output("out")[0]).shape[:-2], *k[-2:]]
        q, v = shape(q).shape, shape(v).shape
        return len(q) == len(k) == len(v) >= 2 and q[:-2] == tuple(k[:-2]) == v[:-2]

    # -- rewriting -----------------------------------------------------------------------------

    def run(self) -> None:
        for match in self.matches():
            self._fuse(match)

    def _fuse(self, match: _Match) -> None:
        block = self.block
        at = block.ops.index(match.second)
        role = match.second.role

        def insert(type_: str, inputs: dict, attrs: dict | None = None) -> str:
            nonlocal at
            out = self.block.free_name(f"{match.second.output('out')[0]}@{type_}")
            block.insert_op(at, type_, inputs, {"out": out}, attrs).role = role
            at += 1
            return out

        (q,) = match.first.input("x")
        if match.score_scale is not None:  # (q k^T) c = (q c) k^T
            op = match.score_scale
            (scalar,) = [n for n in op.input_names if self._scalar(n)]
            q = insert(op.type, {"x": q, "y": scalar})
        k = match.k
        for op in match.k_ops[1:]:  # kᵀ's reshapes and scalings, on k
            if op.type == "reshape":
                shape = list(op.attrs["shape"])
                shape[-2:] = shape[-1], shape[-2]
                k = insert("reshape", {"x": k}, {"shape": shape})
            else:
                (scalar,) = [n for n in op.input_names if self._scalar(n)]
                k = insert(op.type, {"x": k, "y": scalar})
        inputs = {"q": q, "k": k, "v": match.second.input("y")[0]}
        if match.mask is not None:
            inputs["attn_mask"] = match.mask
        lse = self.block.free_name(f"{match.second.output('out')[0]}@logsumexp")
        outputs = {"out": match.second.output("out")[0], "logsumexp": lse}
        block.insert_op(
            at, "scaled_dot_product_attention", inputs, outputs, {"scale": 1.0}
        ).role = role
        for op in match.ops():
            block.remove_op(block.ops.index(op))
