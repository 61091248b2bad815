"""The attention_packing pass: in a CPU plan, a self-attention's attention reads q, k and v
where its projection wrote them, and writes its output where the output projection reads it.

``multi_head_attention`` (and a model written as PyTorch's) splits the projection P [B, L,
3 * H * E] into q, k and v, reshapes each to [B, L, H, E] and transposes it to [B, H, L, E] for
scaled_dot_product_attention, then transposes the output back to [B, L, H, E]: a split and
four transposes that copy every value once more (3-6% of a Transformer encoder's inference).
The pass replaces that chain with one ``packed_attention`` of P reshaped to [B, L, 3, H, E]
(a reshape moves nothing), whose kernel reads each head's rows where they lie. It computes
the same numbers in the same order, and draws the same dropout mask.

In a plan with gradients, the gradient's chain goes too: the transpose of out's gradient,
scaled_dot_product_attention_grad, the transposes and reshapes of q's, k's and v's gradients
and the concat of the three become one ``packed_attention_grad`` writing P's gradient. Where
any value of either chain has another reader, is fetched, fed, persistable or written twice,
nothing is packed.
"""

from __future__ import annotations

from typing import Any

NAME = "attention_packing"
ATTENTION = "scaled_dot_product_attention"
HEADS_FIRST = [0, 2, 1, 3]  # [B, L, H, E] <-> [B, H, L, E]


def wants(program: Any, device: Any) -> bool:
    """Whether ``program`` has a self-attention the pass packs."""
    return _applies(program, device) and bool(_Packing(program.global_block(), set()).chains())


def transform(program: Any, device: Any, feed_names: list, fetch_names: list) -> None:
    if _applies(program, device):
        _Packing(program.global_block(), set(feed_names) | set(fetch_names)).run()


def _applies(program: Any, device: Any) -> bool:
    return device.type == "cpu" and any(op.type == ATTENTION for op in program.global_block().ops)


class _Chain:
    """The ops of one attention's chain, forward (``split``, ``reshapes``, ``transposes``,
    ``attention``, ``back``) and backward (``grad`` and the ops around it, or none)."""

    def __init__(self, split: Any, reshapes: list, transposes: list, attention: Any, back: Any):
        self.split, self.reshapes, self.transposes = split, reshapes, transposes
        self.attention, self.back = attention, back
        self.grad: Any = None
        self.grad_in: Any = None  # the transpose of out's gradient
        self.grad_transposes: list = []
        self.grad_reshapes: list = []
        self.concat: Any = None

    def forward_ops(self) -> list:
        return [self.split, *self.reshapes, *self.transposes, self.attention, self.back]

    def backward_ops(self) -> list:
        if self.grad is None:
            return []
        return [self.grad_in, self.grad, *self.grad_transposes, *self.grad_reshapes, self.concat]


class _Packing:
    """Who reads and writes each value, found once (an imported model has thousands of ops)."""

    def __init__(self, block: Any, kept: set[str]) -> None:
        self.block, self.kept = block, kept
        self.readers: dict[str, list[Any]] = {}
        self.writers: dict[str, list[Any]] = {}
        for op in block.ops:
            for name in op.input_names:
                self.readers.setdefault(name, []).append(op)
            for name in op.output_names:
                self.writers.setdefault(name, []).append(op)

    # -- matching ------------------------------------------------------------------------------

    def chains(self) -> list[_Chain]:
        found = []
        for op in self.block.ops:
            if op.type == ATTENTION:
                chain = self._forward(op)
                if chain is not None and self._backward(chain):
                    found.append(chain)
        return found

    def _only(self, name: str, type_: str, readers: int = 1) -> Any:
        """The op of type ``type_`` that writes ``name``, where ``name`` is an intermediate
        value: one writer, ``readers`` readers, neither kept nor persistable; else None."""
        writers = self.writers.get(name, [])
        if (
            len(writers) != 1
            or writers[0].type != type_
            or len(self.readers.get(name, [])) != readers
            or name in self.kept
            or self.block.var(name).persistable
        ):
            return None
        return writers[0]

    def _reader(self, name: str, type_: str) -> Any:
        """The one reader of ``name`` of type ``type_``, or None."""
        found = [op for op in self.readers.get(name, []) if op.type == type_]
        return found[0] if len(found) == 1 else None

    def _forward(self, attention: Any) -> _Chain | None:
        """attention's chain where q, k and v come from one split, reshaped and transposed."""
        grads = [op for op in self.readers.get(attention.input("q")[0], []) if op is not attention]
        readers = 1 + len(grads)  # q, k, v and out are also read by the attention's gradient
        transposes, reshapes, sources = [], [], []
        for slot in ("q", "k", "v"):
            transpose = self._only(attention.input(slot)[0], "transpose", readers)
            reshape = transpose and self._only(transpose.input("x")[0], "reshape")
            if not reshape or transpose.attrs["perm"] != HEADS_FIRST:
                return None
            (source,) = reshape.input("x")
            split = self._only(source, "split")
            if split is None:
                return None
            transposes.append(transpose)
            reshapes.append(reshape)
            sources.append(source)
        split = self.writers[sources[0]][0]
        (out,) = attention.output("out")
        back = self._reader(out, "transpose")
        if (
            split.output("outs") != sources
            or not self._splits_in_three(split)
            or not all(self._to_heads(r) for r in reshapes)
            or len({tuple(self.block.var(r.output("out")[0]).shape[2:]) for r in reshapes}) != 1
            or back is None
            or back.attrs["perm"] != HEADS_FIRST
            or self._only(out, ATTENTION, readers) is None
            or len(grads) > 1
        ):
            return None
        return _Chain(split, reshapes, transposes, attention, back)

    def _splits_in_three(self, split: Any) -> bool:
        """Whether split cuts a [B, L, 3 * D] value into three [B, L, D] along its last axis."""
        shape = self.block.var(split.input("x")[0]).shape
        return (
            len(shape) == 3
            and split.attrs["axis"] in (2, -1)
            and len(split.output("outs")) == 3
            and shape[2] is not None
            and (not split.attrs["sections"] or len(set(split.attrs["sections"])) == 1)
        )

    def _to_heads(self, reshape: Any) -> bool:
        """Whether reshape takes [B, L, D] to [B, L, H, E], B and L kept."""
        before = self.block.var(reshape.input("x")[0]).shape
        after = self.block.var(reshape.output("out")[0]).shape
        kept = reshape.attrs["shape"][:2]
        return (
            len(after) == 4
            and None not in after[2:]
            and after[2] * after[3] == before[2]
            and all(a == 0 or (a == d and d is not None) for a, d in zip(kept, before[:2]))
        )

    def _backward(self, chain: _Chain) -> bool:
        """Fills chain's backward ops where the attention has a gradient; False where it has
        one that is not this chain's mirror image."""
        attention = chain.attention
        (q,) = attention.input("q")
        grads = [op for op in self.readers.get(q, []) if op is not attention]
        if not grads:
            return True
        (grad,) = grads
        same = ("q", "k", "v", "attn_mask")
        if (
            grad.type != ATTENTION + "_grad"
            or any(grad.input(slot) != attention.input(slot) for slot in same)
            or grad.input("out") != attention.output("out")
            or grad.input("logsumexp") != attention.output("logsumexp")
            or grad.input("rng_state") != attention.output("rng_state")
            or not all(grad.output(slot) for slot in ("q_grad", "k_grad", "v_grad"))
        ):
            return False
        grad_in = self._only(grad.input("out_grad")[0], "transpose")
        if grad_in is None or grad_in.attrs["perm"] != HEADS_FIRST:
            return False
        transposes, reshapes, pieces = [], [], []
        for slot in ("q_grad", "k_grad", "v_grad"):
            (name,) = grad.output(slot)
            if self._only(name, grad.type) is None:
                return False
            (transpose,) = self.readers[name]
            if transpose.type != "transpose" or transpose.attrs["perm"] != HEADS_FIRST:
                return False
            (moved,) = transpose.output("out")
            if self._only(moved, "transpose") is None:
                return False
            (reshape,) = self.readers[moved]
            (piece,) = reshape.output("out")
            if reshape.type != "reshape" or self._only(piece, "reshape") is None:
                return False
            transposes.append(transpose)
            reshapes.append(reshape)
            pieces.append(piece)
        (concat,) = self.readers[pieces[0]]
        if (
            concat.type != "concat"
            or concat.input("xs") != pieces
            or concat.attrs["axis"] not in (2, -1)
            or concat.output("out")[0] in self.kept
        ):
            return False
        chain.grad, chain.grad_in, chain.concat = grad, grad_in, concat
        chain.grad_transposes, chain.grad_reshapes = transposes, reshapes
        return True

    # -- rewriting -----------------------------------------------------------------------------

    def run(self) -> None:
        for chain in self.chains():
            self._pack(chain)

    def _pack(self, chain: _Chain) -> None:
        """The attention becomes packed_attention of the projection reshaped (in place: it
        keeps its random numbers), its gradient packed_attention_grad; the rest goes."""
        block, attention = self.block, chain.attention
        heads, size = block.var(chain.reshapes[0].output("out")[0]).shape[2:]
        (projection,) = chain.split.input("x")
        packed = self.block.free_name(f"{projection}@packed")
        block.insert_op(
            block.ops.index(attention),
            "reshape",
            {"x": projection},
            {"out": packed},
            {"shape": [0, 0, 3, heads, size]},
        ).role = attention.role
        mask = dict(zip(["attn_mask"], attention.input("attn_mask")))  # (none, or the one)
        outputs = {"out": chain.back.output("out"), "logsumexp": attention.output("logsumexp")}
        if attention.output("rng_state"):
            outputs["rng_state"] = attention.output("rng_state")
        block.rewrite_op(
            attention,
            {"qkv": packed, **mask},
            outputs,
            dict(attention.attrs),
            new_type="packed_attention",
        )
        if chain.grad is not None:
            self._pack_grad(chain, packed, mask)
        for op in chain.forward_ops() + chain.backward_ops():
            if op is not attention and op is not chain.grad:
                block.remove_op(block.ops.index(op))

    def _pack_grad(self, chain: _Chain, packed: str, mask: dict) -> None:
        block, grad = self.block, chain.grad
        inputs = {
            "qkv": packed,
            "out": chain.back.output("out")[0],
            "logsumexp": grad.input("logsumexp")[0],
            "out_grad": chain.grad_in.input("x")[0],
            **mask,
        }
        if grad.input("rng_state"):
            (inputs["rng_state"],) = grad.input("rng_state")
        packed_grad = self.block.free_name(f"{packed}@GRAD")
        block.rewrite_op(
            grad,
            inputs,
            {"qkv_grad": packed_grad},
            dict(grad.attrs),
            new_type="packed_attention_grad",
        )
        (projection_grad,) = chain.concat.output("out")
        width = block.var(projection_grad).shape[2]
        block.insert_op(
            block.ops.index(grad) + 1,
            "reshape",
            {"x": packed_grad},
            {"out": projection_grad},
            {"shape": [0, 0, width]},
        ).role = grad.role
