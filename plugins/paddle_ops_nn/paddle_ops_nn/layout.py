"""Layout propagation: a program pass that keeps oneDNN's blocked layout between the ops of a
plan that compute on it (``onednn_layout``, one of passes.py's; the planner calls it on its
private copy of a program, knowing what is fed and fetched).

oneDNN's convolution and pooling are fastest on its blocked layout nChw{b}c (the b channels of
a position adjacent; b = 8 with AVX2, 16 with AVX-512), and a conv2d on NCHW tensors converts
its input and output at every call. Within a chain of conv2d / batch_norm / activation /
pool2d ops (and their gradients) those conversions are wasted. The pass gives each value
computed and consumed inside such a chain a blocked twin, a hidden float32 variable
``<name>@nChw<b>c`` of shape [N, C / b, H, W, b] (the same bytes as the value, in another
order), and has the ops write and read the twins (their ``channel_block`` attr set to b).
A plan without gradients takes the layout oneDNN's inference convolutions read instead: on
AVX2 and later channels last (NHWC, their brgemm kernels), twins ``<name>@nhwc`` of shape
[N, 1, H, W, C] (channel_block -1; batch_norm only with is_test).

- conv2d writes a twin when a blockable op reads its result; pool2d and batch_norm when their
  x has one; an activation (relu, clip, ...), add_n or add when all its inputs have one, of
  one shape, being elementwise;
- a grad op runs blocked when its x or out_grad has a twin (batch_norm_grad: its x), and its
  x_grad takes x's layout, so the backward stays blocked where the forward was;
- ``reorder_layout`` converts at the edges: a twin back to its NCHW variable where that is
  fetched or read by any other op, so fetches and every other op see NCHW exactly as without
  the pass; a plain gradient to blocked where it reaches a blocked grad op; and a plain x that
  several of these ops read (an image read by a conv2d and by its gradient) once, before the
  first, where each would otherwise convert it.

Only float32 values with a known channel count that b divides get twins, and never a fed or
persistable variable or one written by more than one op. The pass runs for the CPU device,
where oneDNN computes (``paddle_ops_nn.onednn.is_enabled``) and propagation is on
(``paddle_ops_nn.onednn.set_layout_propagation``); both are read when a plan is prepared, so a
plan keeps its layouts. Results equal the unpropagated plan's up to the order of oneDNN's sums.
"""

from __future__ import annotations

from typing import Any, NamedTuple

NAME = "onednn_layout"


class Blockable(NamedTuple):
    """The activation slots of an op that computes on blocked tensors (channel_block)."""

    x: str  # the activation input (its layout is the op's choice when plain_x)
    out: str  # forward: the output, blocked when the op is; grad: the gradient input, likewise
    x_grad: str  # grad ops: the output that takes x's layout; "" for forward ops
    plain_x: bool  # whether x may stay NCHW while the op runs blocked


FORWARD = {
    "conv2d": Blockable("x", "out", "", True),
    "pool2d": Blockable("x", "out", "", True),
    "batch_norm": Blockable("x", "y", "", False),
}
GRAD = {
    "conv2d_grad": Blockable("x", "out_grad", "x_grad", True),
    "pool2d_grad": Blockable("x", "out_grad", "x_grad", True),
    "batch_norm_grad": Blockable("x", "y_grad", "x_grad", False),
}
# Ops that compute elementwise over inputs and outputs of one shape, so they run on blocked
# tensors as they are: the activations of this plugin and their gradients, the core's add_n
# (which sums gradients), and where every input has the same shape (no broadcasting) the math
# plugin's add (a residual connection) and clip (relu6 as ONNX writes it).
ACTIVATIONS = (
    "relu",
    "relu6",
    "hardswish",
    "hardsigmoid",
    "leaky_relu",
    "elu",
    "gelu",
    "softplus",
    "silu",
)
ELEMENTWISE = frozenset(
    {"add_n"} | {f"{a}{g}" for a in (*ACTIVATIONS, "add", "clip") for g in ("", "_grad")}
)


def wants(program: Any, device: Any) -> bool:
    """Whether the pass would rewrite ``program``: a conv2d, pool2d or batch_norm to run on
    oneDNN's blocked layout."""
    return _block(program, device) != 0


def transform(program: Any, device: Any, feed_names: list, fetch_names: list) -> None:
    """Blocked twins and their conversions in ``program``'s global block (module docstring)."""
    b = _block(program, device)
    if b:
        _Propagation(program.global_block(), b, set(feed_names)).run(set(fetch_names))


def _block(program: Any, device: Any) -> int:
    """The channel block to propagate in ``program`` (-1: channels last), or 0 where the pass
    has nothing to do. A plan without gradients takes the layout of oneDNN's inference
    convolutions, channels last on AVX2 (2-10x faster than nChw8c where images are small)."""
    if device.type != "cpu":
        return 0  # oneDNN computes the CPU kernels only
    ops = program.global_block().ops
    if not any(op.type in FORWARD for op in ops):
        return 0
    from . import onednn  # (the compiled module: only for programs with a conv, pool or norm)

    if not onednn.propagates_layouts():
        return 0
    if any(op.type in GRAD for op in ops):
        return onednn.channel_block()
    return onednn.inference_block()


class _Propagation:
    """One pass over a block: which values get twins, and the ops and conversions that follow."""

    def __init__(self, block: Any, b: int, fed: set[str]) -> None:
        self.block, self.b, self.fed = block, b, fed
        self.writers: dict[str, int] = {}
        self.readers: dict[str, list[tuple[str, str]]] = {}  # name -> [(op type, slot)]
        for op in block.ops:
            for name in op.output_names:
                self.writers[name] = self.writers.get(name, 0) + 1
            for slot, names in op.inputs.items():
                for name in names:
                    self.readers.setdefault(name, []).append((op.type, slot))
        self.twin: dict[str, str] = {}  # variable -> its blocked twin, written by its writer
        self.converted: dict[str, str] = {}  # NCHW variable -> a blocked copy (a reorder)
        self.plain_needed: set[str] = set()  # twinned variables something reads as NCHW

    def run(self, fetched: set[str]) -> None:
        ops: list[Any] = []
        for op in list(self.block.ops):
            ops += self._rewrite(op)
            ops.append(op)
        # Twins back to their NCHW variables where those are read or fetched, right after the
        # op writing the twin (what an op the pass did not rewrite reads is there as before).
        back: dict[str, list[str]] = {}
        for name in self.plain_needed | (fetched & self.twin.keys()):
            back.setdefault(self.twin[name], []).append(name)
        self.block.ops[:] = [
            placed
            for op in ops
            for placed in [op]
            + [self._reorder(op, t, name, 0) for t in op.output_names for name in back.get(t, ())]
        ]

    # -- deciding ------------------------------------------------------------------------

    def _fits(self, name: str) -> bool:
        """Whether ``name`` can be blocked: float32 [N, C, H, W] with b dividing C."""
        var = self.block.find_var(name)
        return (
            var is not None
            and var.dtype == "float32"
            and len(var.shape) == 4
            and var.shape[1] is not None
            and var.shape[1] > 0
            and var.shape[1] % max(self.b, 1) == 0  # (channels last: any count)
        )

    def _eligible(self, name: str) -> bool:
        """Whether ``name`` may get a twin: it fits, and its writer is the run's only source of
        it (not fed, not persistable, one writer)."""
        return (
            self._fits(name)
            and not self.block.var(name).persistable
            and name not in self.fed
            and self.writers.get(name) == 1
        )

    def _read_blocked(self, name: str) -> bool:
        """Whether an op that computes on blocked tensors reads ``name`` as an activation."""
        return any(
            (op_type in FORWARD and slot == FORWARD[op_type].x) or op_type in ELEMENTWISE
            for op_type, slot in self.readers.get(name, ())
        )

    def _stable(self, name: str) -> bool:
        """Whether ``name`` holds one value all through the run (fed or only read, or written
        once before it is read), so that one conversion of it serves every reader."""
        writes = self.writers.get(name, 0)
        return writes == 0 or (writes == 1 and not self.block.var(name).persistable)

    def _shared(self, name: str) -> bool:
        """Whether several blockable ops read ``name`` as their x (a fed image read by a conv2d
        and its gradient): one conversion then serves them all."""
        specs = {**FORWARD, **GRAD}
        uses = [t for t, slot in self.readers.get(name, ()) if t in specs and specs[t].x == slot]
        return len(uses) > 1 and self._fits(name) and self._stable(name)

    # -- rewriting -----------------------------------------------------------------------

    def _rewrite(self, op: Any) -> list[Any]:
        """Rebind ``op`` to blocked tensors where it runs blocked; returns the conversions to
        place before it."""
        spec = FORWARD.get(op.type) or GRAD.get(op.type)
        if spec is not None:
            return self._blockable(op, spec)
        if op.type in ELEMENTWISE:
            ins, outs = op.input_names, op.output_names
            shapes = {tuple(self.block.var(n).shape) for n in ins + outs}
            if (
                ins
                and all(n in self.twin for n in ins)
                and all(map(self._eligible, outs))
                and len(shapes) == 1  # no broadcasting: the same element everywhere
            ):
                self.block.rewrite_op(
                    op,
                    inputs={s: [self.twin[n] for n in ns] for s, ns in op.inputs.items()},
                    outputs={s: [self._new_twin(n) for n in ns] for s, ns in op.outputs.items()},
                )
                return []
        return self._plain(op)

    def _plain(self, op: Any) -> list[Any]:
        """``op`` as it is: it reads NCHW values."""
        self.plain_needed.update(n for n in op.input_names if n in self.twin)
        return []

    def _blockable(self, op: Any, spec: Blockable) -> list[Any]:
        """A conv2d, pool2d or batch_norm, or one of their gradients (module docstring)."""
        (x,) = op.input(spec.x)
        grad = bool(spec.x_grad)
        outs = op.input(spec.out) if grad else op.output(spec.out)
        if (
            op.attrs["channel_block"]  # the program's own choice
            or (self.b < 0 and op.type == "batch_norm" and not op.attrs["is_test"])
            or len(outs) != 1
            or self.block.var(x).dtype != "float32"
            or not self._fits(outs[0])
        ):
            return self._plain(op)
        (out,) = outs
        if grad:
            runs = x in self.twin or (spec.plain_x and out in self.twin)
        else:
            starts = op.type == "conv2d" and self._read_blocked(out)
            runs = (x in self.twin or starts) and self._eligible(out)
        x_grads = op.output(spec.x_grad) if grad else []
        # Where x comes from, blocked: its twin, or one conversion shared by its readers.
        source = self.twin.get(x) or (x if x in self.converted or self._shared(x) else None)
        if source is not None and x_grads and not self._eligible(x_grads[0]):
            source = None  # x_grad takes x's layout, and it has to stay NCHW
        if not runs or (source is None and not spec.plain_x):
            return self._plain(op)
        before: list[Any] = []
        inputs: dict[str, Any] = {}
        outputs: dict[str, Any] = {}
        if source == x:
            inputs[spec.x], before = self._to_blocked(x, op)
        elif source is not None:
            inputs[spec.x] = source
        if grad:
            if out in self.twin:
                inputs[spec.out] = self.twin[out]
            else:  # a gradient arriving as NCHW (from an op of another kind, or fed)
                inputs[spec.out], conversion = self._to_blocked(out, op)
                before += conversion
            if x_grads and source is not None:
                outputs[spec.x_grad] = [self._new_twin(x_grads[0])]
        else:
            outputs[spec.out] = [self._new_twin(out)]
        plain = [n for n in op.input_names if n not in (x, out)] + ([x] if source is None else [])
        self.plain_needed.update(n for n in plain if n in self.twin)
        self.block.rewrite_op(op, inputs=inputs, outputs=outputs, attrs={"channel_block": self.b})
        return before

    # -- building ------------------------------------------------------------------------

    def _name(self, name: str) -> str:
        return self.block.free_name(f"{name}@nhwc" if self.b < 0 else f"{name}@nChw{self.b}c")

    def _new_twin(self, name: str) -> str:
        self.twin[name] = self._name(name)
        return self.twin[name]

    def _to_blocked(self, name: str, consumer: Any) -> tuple[str, list[Any]]:
        """A blocked copy of NCHW ``name`` and the conversion to place before ``consumer``
        (none where one made for an earlier reader serves: ``name`` holds one value)."""
        made = self.converted.get(name)
        if made is not None:
            return made, []
        copy = self._name(name)
        if self._stable(name):
            self.converted[name] = copy
        return copy, [self._reorder(consumer, name, copy, self.b)]

    def _reorder(self, beside: Any, x: str, out: str, b: int) -> Any:
        """A reorder_layout op (x to out, in channel_block b) in ``beside``'s role, made outside
        the block's list of ops (the caller places it)."""
        block = self.block
        op = block.insert_op(
            len(block.ops), "reorder_layout", {"x": x}, {"out": out}, {"channel_block": b}
        )
        block.ops.pop()
        op.role = beside.role
        return op
