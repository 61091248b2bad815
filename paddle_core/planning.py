"""Planning a run: which ops, which kernels, which concrete shapes.

Done once per (program version, feed signature, fetch list) by the executor:

1. prune to the ops the fetches need (the seeds' ``extract_subnet_from``), keeping ops that
   write persistable variables (their effect outlives the run) and never recomputing fed ones;
2. check that every input will be available (fed, computed earlier, or persistable);
3. select each op's kernel by (op, device, dtype) through the ``paddle_core_select_kernel``
   hook, falling back to a CPU kernel with copies when the device has none;
4. re-run the shape rules on the fed shapes, so every variable has a concrete shape and
   buffers can be planned.
"""

from __future__ import annotations

import warnings
from typing import Any

from .append import ShapeContext, TensorSpec, infer
from .errors import FeedError, KernelNotFoundError, ProgramError, ShapeError
from .framework import format_shape

_warned_fallbacks: set[tuple[str, str, str]] = set()


class Step:
    """One op of a plan: its kernel, decoded attrs, and the variables bound to its slots."""

    __slots__ = ("op", "info", "kernel", "fn", "attrs", "fallback", "inputs", "outputs")

    def __init__(self, op: Any, info: Any, kernel: Any, attrs: dict[str, Any], fallback: bool):
        self.op = op
        self.info = info
        self.kernel = kernel
        self.fn = kernel.load()  # a Python callable or a native kernel capsule
        self.attrs = attrs
        self.fallback = fallback  # a CPU kernel inside a non-CPU run: copy in and out
        # (slot, duplicable, variable names), in OpProto order; absent slots have no names.
        self.inputs = [(s.name, s.duplicable, op.inputs.get(s.name, [])) for s in info.proto.inputs]
        self.outputs = [
            (s.name, s.duplicable, op.outputs.get(s.name, [])) for s in info.proto.outputs
        ]

    def describe(self) -> str:
        """How errors name this step: "op 'add' (kernel 'add_f32' of plugin 'math')"."""
        return (
            f"op {self.op.type!r} (kernel {self.kernel.ref!r} of {self.kernel.plugin.label}, "
            f"{self.kernel.device}/{self.kernel.dtype})"
        )


class PlanSpec:
    """Everything a runner needs: steps, concrete shapes and where each value comes from."""

    def __init__(self, program: Any, feed_names: list[str], fetch_names: list[str]) -> None:
        self.program = program
        self.feed_names = feed_names
        self.fetch_names = fetch_names
        self.steps: list[Step] = []
        self.persistable_inputs: list[str] = []  # read from the scope
        self.persistable_outputs: list[str] = []  # written back to the scope
        self.shapes: dict[str, tuple[tuple, str]] = {}  # variable -> (concrete shape, dtype)


def plan(program: Any, device: Any, signature: tuple, fetch_names: list[str]) -> PlanSpec:
    """Plan a run of ``program`` on ``device`` for feeds ``signature`` ((name, shape, dtype),
    sorted by name) and ``fetch_names``."""
    from .hooks import plugin_manager
    from .registry import get_registry

    manager = plugin_manager()
    if manager.hook.paddle_core_transform_program.get_hookimpls():
        program = program.clone()  # passes rewrite a private copy, never the user's program
        manager.hook.paddle_core_transform_program(program=program, device=device)
    block = program.global_block()
    feed_names = [name for name, _, _ in signature]
    spec = PlanSpec(program, feed_names, fetch_names)
    spec.shapes = {name: (tuple(shape), dtype) for name, shape, dtype in signature}
    registry = get_registry()
    available = set(feed_names)
    for op in prune(block, fetch_names, set(feed_names)):
        for name in op.input_names:
            if name not in available:
                fed = ", ".join(feed_names) or "nothing"
                problem = (
                    f"op {op.type!r} needs variable {name!r}, which is neither fed nor computed "
                    f"by an earlier op; add it to feed (fed: {fed})"
                )
                _persistable_input(spec, block, name, problem)
                available.add(name)
        step = _step(registry, manager, block, op, device)
        _infer_concrete(step, spec.shapes)
        spec.steps.append(step)
        for name in op.output_names:
            available.add(name)
            var = block.find_var(name)
            if var is not None and var.persistable and name not in spec.persistable_outputs:
                spec.persistable_outputs.append(name)
    for name in fetch_names:
        if name not in available:
            problem = f"fetch {name!r} is neither fed nor computed by any op of the program"
            _persistable_input(spec, block, name, problem)
    return spec


def prune(block: Any, fetch_names: list[str], fed: set[str]) -> list[Any]:
    """The ops needed for the fetches, in order, plus ops writing persistable variables."""
    needed = set(fetch_names) - fed
    kept = []
    for op in reversed(block.ops):
        outputs = op.output_names
        persists = any((v := block.find_var(n)) is not None and v.persistable for n in outputs)
        if persists or any(n in needed for n in outputs):
            kept.append(op)
            needed.update(n for n in op.input_names if n not in fed)
    kept.reverse()
    return kept


def _persistable_input(spec: PlanSpec, block: Any, name: str, problem: str) -> None:
    """Record that ``name`` is read from the scope; raise ``problem`` unless it can be."""
    var = block.find_var(name)
    if var is None or not var.persistable:
        raise FeedError(problem)
    if None in var.shape:
        raise ProgramError(
            f"persistable variable {name!r} is declared {var.dtype}{format_shape(var.shape)}; "
            "persistable variables need fully known shapes"
        )
    spec.persistable_inputs.append(name)
    spec.shapes[name] = (var.shape, var.dtype)


def _step(registry: Any, manager: Any, block: Any, op: Any, device: Any) -> Step:
    info = registry.op(op.type)
    attrs = op.attrs if op.attr_types is info.attr_types else info.validator().validate(op.attrs)
    dtype = kernel_dtype(block, op)
    kernel = _select(registry, manager, op.type, device.type, dtype)
    fallback = False
    if kernel is None and device.type != "cpu":
        kernel = _select(registry, manager, op.type, "cpu", dtype)
        fallback = kernel is not None
        if fallback and (op.type, device.type, dtype) not in _warned_fallbacks:
            _warned_fallbacks.add((op.type, device.type, dtype))
            warnings.warn(
                f"op {op.type!r} has no {device.type} kernel for {dtype}; "
                "running it on CPU with copies",
                RuntimeWarning,
                stacklevel=6,  # the caller of Executor.run or .prepare
            )
    if kernel is None:
        have = "; ".join(f"{d} ({', '.join(info.dtypes_for(d))})" for d in info.devices)
        raise KernelNotFoundError(
            f"op {op.type!r} has no kernel for device {device.type} and dtype {dtype} "
            f"({info.plugin.label}); its kernels: {have or 'none'}",
            op=op.type,
        )
    return Step(op, info, kernel, attrs, fallback)


def _select(registry: Any, manager: Any, op: str, device: str, dtype: str) -> Any:
    candidates = registry.kernel_candidates(op, device, dtype)
    return manager.hook.paddle_core_select_kernel(
        op=op, device=device, dtype=dtype, candidates=candidates
    )


def kernel_dtype(block: Any, op: Any) -> str:
    """The dtype that selects a kernel: the first input's, or the first output's for sources."""
    for name in op.input_names or op.output_names:
        return block.find_var(name).dtype
    raise ProgramError(f"op {op.type!r} has neither inputs nor outputs")


def _infer_concrete(step: Step, shapes: dict[str, tuple[tuple, str]]) -> None:
    """Run the op's shape rule on concrete input shapes; record its outputs' shapes."""
    op = step.op
    inputs = {
        slot: [TensorSpec(n, *shapes[n]) for n in names] for slot, _, names in step.inputs if names
    }
    ctx = ShapeContext(op.type, inputs, step.attrs, [slot for slot, _, _ in step.outputs])
    infer(step.info, ctx)
    for slot, _, names in step.outputs:
        if not names:  # a dispensable output this op instance does not produce
            continue
        specs = ctx.outputs.get(slot, [])
        if len(specs) != len(names):
            raise ShapeError(
                f"op {op.type!r}: for the fed shapes its shape rule gives {len(specs)} "
                f"value(s) for output {slot!r}, but the program has {len(names)}",
                op=op.type,
            )
        for name, (shape, dtype) in zip(names, specs):
            if None in shape:
                raise ShapeError(
                    f"op {op.type!r}{ctx.describe_inputs()}: output {name!r} has no concrete "
                    f"shape ({dtype}{format_shape(shape)}) even for the fed shapes",
                    op=op.type,
                )
            shapes[name] = (tuple(shape), dtype)
