"""Planning a run: which ops, which kernels, which concrete shapes.

Done once per (program version, feed signature, fetch list) by the executor:

1. prune to the ops the fetches need, keeping ops that write persistable variables (their
   effect outlives the run) and never recomputing fed ones;
2. check that every input will be available (fed, computed earlier, or persistable);
3. select each op's kernel by (op, device, dtype) through the ``paddle_core_select_kernel``
   hook, falling back to a kernel of the device's ``fallback`` type (CPU) when the device has
   none (with copies, unless both devices hold host memory), warned once;
4. re-run the shape rules on the fed shapes, so every variable has a concrete shape and
   buffers can be planned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..base.errors import (
    PLUGIN_CODE_ERRORS,
    FeedError,
    KernelNotFoundError,
    PluginError,
    ProgramError,
    ShapeError,
    counted,
    did_you_mean,
)
from ..base.warn import warn
from ..graph.operator import checked_attrs
from ..graph.shape_inference import ShapeContext, TensorSpec, check_spec, infer, shape_fits
from ..graph.variable import format_shape
from ..plugins.devices import get_device
from ..plugins.hooks import passes_apply, plugin_manager
from ..plugins.registry import KernelRef, get_registry
from .control import CONTROL_OPS, plan_sub_blocks

_warned_fallbacks: set[tuple[str, str, str]] = set()


class Step:
    """One op of a plan: its kernel, decoded attrs, and the variables bound to its slots."""

    __slots__ = (
        "op",
        "info",
        "kernel",
        "fn",
        "attrs",
        "device",
        "fallback",
        "inputs",
        "outputs",
        "random_key",
        "sub_specs",
    )

    def __init__(
        self,
        op: Any,
        info: Any,
        kernel: Any,
        attrs: Any,
        device: Any,
        fallback: bool,
        inputs: list,
        outputs: list,
    ):
        self.op = op
        self.info = info
        self.kernel = kernel
        self.fn = kernel.load()  # a Python callable or a native kernel capsule
        self.attrs = attrs
        self.device = device  # the device the kernel runs as
        # A kernel of the plan device's fallback type: its values move to and from the
        # fallback device (no copy where both hold host memory).
        self.fallback = fallback
        # (slot, duplicable, variable names), in OpProto order; absent slots have no names.
        self.inputs = inputs
        self.outputs = outputs
        self.random_key = 0  # for ops declared random: the op's key (set by plan)
        self.sub_specs: dict[str, PlanSpec] | None = None  # control flow: its blocks' plans

    def describe(self) -> str:
        """How errors name this step: "op 'add' (kernel 'add_f32' of plugin 'math')"."""
        return (
            f"op {self.op.type!r} (kernel {self.kernel.ref!r} of {self.kernel.plugin.label}, "
            f"{self.kernel.device}/{self.kernel.dtype})"
        )


def _slots(op: Any, side: str, bound: Any, protos: Any) -> list[tuple[str, bool, list[str]]]:
    """The op's variables per declared slot, checked against its OpProto.

    Ops appended through the API are always right; a loaded or edited program may not be,
    and a kernel handed the wrong number of tensors would read past its arguments.
    """
    declared = [p.name for p in protos]
    for slot in bound:
        if slot not in declared:
            raise ProgramError(
                f"op {op.type!r} has {side} slot {slot!r}, which its OpProto does not declare"
                f"{did_you_mean(slot, declared)}; its {side}s are: {', '.join(declared) or 'none'}"
            )
    slots = []
    for p in protos:
        names = list(bound.get(p.name, ()))
        if not names and not p.dispensable:
            raise ProgramError(f"op {op.type!r} is missing its required {side} {p.name!r}")
        if len(names) > 1 and not p.duplicable:
            raise ProgramError(
                f"op {op.type!r}: {side} {p.name!r} takes one variable, but the program binds "
                f"{len(names)} ({', '.join(names)})"
            )
        slots.append((p.name, p.duplicable, names))
    return slots


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
        self.random = False  # whether a step draws random numbers (the run counter moves)
        self.folded: list[str] = []  # feeds that are a prologue's results (folding.py)


def plan(
    program: Any,
    device: Any,
    signature: tuple,
    fetch_names: list[str],
    select: Callable[[Any, set[str]], list[Any]] | None = None,
    *,
    block_idx: int = 0,
    carried: frozenset[str] = frozenset(),
) -> PlanSpec:
    """Plan a run of ``program`` on ``device`` for feeds ``signature`` ((name, shape, dtype),
    sorted by name) and ``fetch_names``.

    ``select(block, fed, origins)`` picks the ops to run from the (possibly transformed)
    global block, in block order; by default ``prune``. ``origins`` is None where no pass
    rewrote the block, else each op's index in the program before the passes (None for an op
    a pass inserted). Ops keep the random keys of their places in the program before the
    passes whichever are picked: a pass changes no op's random numbers.

    ``block_idx`` plans a sub-block instead (control flow, ``control.py``: the program is
    then the outer plan's, already transformed); ``carried`` are fed variables its ops may
    write (a while body's loop-carried ones), at the shapes they are fed."""
    manager = plugin_manager()
    feed_names = [name for name, _, _ in signature]
    origins = None
    if block_idx == 0:
        program, origins = _transformed(manager, program, device, feed_names, fetch_names)
    block = program.block(block_idx)
    spec = PlanSpec(program, feed_names, fetch_names)
    spec.shapes = {name: (tuple(shape), dtype) for name, shape, dtype in signature}
    registry = get_registry()
    fallback = get_device(device.fallback) if device.fallback is not None else None
    fed = set(feed_names)
    available = set(fed)
    # Carried values are fed, but the ops writing them are needed all the same.
    if select is None:
        ops = prune(block, fetch_names, fed - carried)
    else:
        ops = select(block, set(fed), origins)
    feed_until = first_reads(block, fed - carried)
    index_of = {id(op): index for index, op in enumerate(block.ops)}
    place_of = _random_places(block, origins)
    for op in ops:
        _bind_inputs(spec, block, op, available)
        _check_fed_outputs(block, op, index_of[id(op)], feed_until)
        step = _step(registry, manager, op, device, fallback, spec.shapes)
        if step.info.draws(step.attrs):
            step.random_key = random_key(program.random_seed, block.idx, place_of[id(op)])
            spec.random = True
        if op.type in CONTROL_OPS:  # its blocks are planned too; they give its shapes
            step.sub_specs = plan_sub_blocks(step, spec.shapes, device, plan)
            spec.random = spec.random or any(s.random for s in step.sub_specs.values())
        else:
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


def _transformed(
    manager: Any, program: Any, device: Any, feed_names: list[str], fetch_names: list[str]
) -> tuple[Any, list[int | None] | None]:
    """``program`` after the program passes that have something to do (on a private copy: never
    the user's program), and each op's index before them (None where the ops are the same)."""
    if not _passes_apply(manager, program, device, feed_names, fetch_names):
        return program, None
    program = program.clone()
    before = {id(op): i for i, op in enumerate(program.global_block().ops)}
    hook = manager.hook.paddle_core_transform_program
    with _failures_named(hook):
        hook(program=program, device=device, feed_names=feed_names, fetch_names=fetch_names)
    origins = [before.get(id(op)) for op in program.global_block().ops]
    if origins == list(range(len(before))):
        return program, None  # (ops rebound in place, none inserted or removed)
    return program, origins


def _bind_inputs(spec: PlanSpec, block: Any, op: Any, available: set[str]) -> None:
    """Every input of ``op`` is fed or computed by an earlier op, or else a persistable value
    read from the scope; anything else names the variable and what was fed."""
    for name in op.input_names:
        if name not in available:
            listed = ", ".join(spec.feed_names) or "nothing"
            problem = (
                f"op {op.type!r} needs variable {name!r}, which is neither fed nor computed "
                f"by an earlier op; add it to feed (fed: {listed})"
            )
            _persistable_input(spec, block, name, problem)
            available.add(name)


def _check_fed_outputs(block: Any, op: Any, index: int, feed_until: dict[str, int]) -> None:
    """A fed variable that ``op`` (at ``index``) writes must be read before: the feed stands
    for this op's output otherwise, or a persistable value would be updated from a feed rather
    than from the scope."""
    for name in op.output_names:
        if name not in feed_until:
            continue
        var = block.find_var(name)
        if feed_until[name] > index or (var is not None and var.persistable):
            raise FeedError(
                f"variable {name!r} is fed, but op {op.type!r} (needed for the fetches) "
                "computes it before any op reads it; feed only variables no needed op "
                "computes first (set persistable values with scope.set_var)"
            )


def first_reads(block: Any, fed: set[str]) -> dict[str, int]:
    """For each fed variable, the index of the first op of ``block`` that reads it (the
    block's length if none does). A feed stands for the ops before that index that compute
    its variable: they are skipped (feeding an intermediate value). An op from there on that
    writes it updates the fed value (``x = x + 1``, a loop's carried variable), and runs."""
    first = dict.fromkeys(fed, len(block.ops))
    for index, op in enumerate(block.ops):
        for name in op.input_names:
            if name in fed and first[name] > index:
                first[name] = index
    return first


def prune(block: Any, fetch_names: list[str], fed: set[str]) -> list[Any]:
    """The ops needed for the fetches, in order, plus ops writing persistable variables (a
    fed variable: see ``first_reads``)."""
    feed_until = first_reads(block, fed)
    needed = set(fetch_names)
    kept = []
    for index in range(len(block.ops) - 1, -1, -1):
        op = block.ops[index]
        outputs = op.output_names
        persists = any((v := block.find_var(n)) is not None and v.persistable for n in outputs)
        if persists or any(n in needed and feed_until.get(n, -1) <= index for n in outputs):
            kept.append(op)
            needed.update(op.input_names)
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


def _step(registry: Any, manager: Any, op: Any, device: Any, fallback: Any, shapes: dict) -> Step:
    info = registry.op(op.type)
    attrs = checked_attrs(op, info)
    inputs = _slots(op, "input", op.inputs, info.proto.inputs)
    outputs = _slots(op, "output", op.outputs, info.proto.outputs)
    dtype = kernel_dtype(op, info, inputs, shapes)
    kernel = _select(registry, manager, op.type, device.type, dtype)
    runs_on = device
    if kernel is None and fallback is not None:
        kernel = _select(registry, manager, op.type, fallback.type, dtype)
        if kernel is not None:
            runs_on = fallback
            _warn_fallback(op.type, device, fallback, dtype)
    if kernel is None:
        have = "; ".join(f"{d} ({', '.join(info.dtypes_for(d))})" for d in info.devices)
        raise KernelNotFoundError(
            f"op {op.type!r} has no kernel for device {device.type} and dtype {dtype} "
            f"({info.plugin.label}); its kernels: {have or 'none'}",
            op=op.type,
        )
    return Step(op, info, kernel, attrs, runs_on, runs_on is not device, inputs, outputs)


def _warn_fallback(op: str, device: Any, fallback: Any, dtype: str) -> None:
    """Once per (op, device type, dtype) in a process."""
    if (op, device.type, dtype) in _warned_fallbacks:
        return
    _warned_fallbacks.add((op, device.type, dtype))
    copies = "" if device.host_memory and fallback.host_memory else " with copies"
    warn(
        f"op {op!r} has no {device.type} kernel for {dtype}; running it on "
        f"{fallback.type.upper()}{copies}",
        RuntimeWarning,
    )


def _select(registry: Any, manager: Any, op: str, device: str, dtype: str) -> Any:
    """The kernel the ``paddle_core_select_kernel`` hooks pick among the registered ones."""
    candidates = registry.kernel_candidates(op, device, dtype)
    hook = manager.hook.paddle_core_select_kernel
    with _failures_named(hook, f" for op {op!r} ({device}/{dtype})"):
        kernel = hook(op=op, device=device, dtype=dtype, candidates=candidates)
    if kernel is None or kernel in candidates:
        return kernel
    # A hook may pick a kernel outside the candidates (one it registered itself), but it must
    # be a kernel of this op for this device and dtype: anything else would run on the wrong
    # tensors.
    fits = isinstance(kernel, KernelRef) and (kernel.op, kernel.device, kernel.dtype) == (
        op,
        device,
        dtype,
    )
    if not fits:
        plugin = _hook_plugin(hook)
        raise PluginError(
            f"a paddle_core_select_kernel hook (of {plugin}) returned {kernel!r} for op "
            f"{op!r} ({device}/{dtype}); expected one of the candidates, or another KernelRef "
            "of this op, device and dtype",
            plugin=plugin,
        )
    return kernel


def _passes_apply(
    manager: Any, program: Any, device: Any, feed_names: list, fetch_names: list
) -> bool:
    """``passes_apply``, a failing ``paddle_core_wants_transform`` hook raised as the
    PluginError of its plugin."""
    with _failures_named(manager.hook.paddle_core_wants_transform):
        return passes_apply(program, device, feed_names, fetch_names)


@contextmanager
def _failures_named(hook: Any, where: str = "") -> Iterator[None]:
    """A plugin's implementation of ``hook`` failing in the block, raised as the PluginError
    of that plugin (``where``: what it was called for)."""
    try:
        yield
    except PLUGIN_CODE_ERRORS as e:
        plugin = _hook_plugin(hook, e)
        raise PluginError(
            f"plugin {plugin!r}'s {hook.name} hook failed{where}: {type(e).__name__}: {e}",
            plugin=plugin,
        ) from e


def _hook_plugin(hook: Any, error: BaseException | None = None) -> str:
    """The plugin whose implementation of ``hook`` raised ``error`` (found in its traceback),
    else the names of every plugin implementing it (the core's own default aside)."""
    impls = [i for i in hook.get_hookimpls() if i.plugin_name != "core"]
    by_code = {getattr(i.function, "__code__", None): i.plugin_name for i in impls}
    tb = error.__traceback__ if error is not None else None
    while tb is not None:
        if tb.tb_frame.f_code in by_code:
            return by_code[tb.tb_frame.f_code]
        tb = tb.tb_next
    return ", ".join(i.plugin_name for i in impls)


def kernel_dtype(op: Any, info: Any, inputs: list, shapes: dict[str, tuple[tuple, str]]) -> str:
    """The dtype that selects a kernel: as planned, that of the input the op's signature picks
    (``OpSignature.selecting_input``); for ops without inputs, the first output's declared
    dtype."""
    bound = {name: names for name, _, names in inputs if names}
    slot = info.signature().selecting_input(bound)
    if slot is not None:
        return shapes[bound[slot][0]][1]
    for name in op.output_names:
        return op.block.find_var(name).dtype
    raise ProgramError(f"op {op.type!r} has neither inputs nor outputs")


def _random_places(block: Any, origins: list[int | None] | None) -> dict[int, int]:
    """The place each op of ``block`` draws its random numbers by: its index in the program
    before the passes (the block's own where none ran). An op a pass inserted draws by a place
    after all of those, its index past their count: no two ops share a stream."""
    ops = block.ops
    if origins is None:
        return {id(op): index for index, op in enumerate(ops)}
    count = 1 + max((o for o in origins if o is not None), default=-1)
    return {
        id(op): origin if origin is not None else count + index
        for index, (op, origin) in enumerate(zip(ops, origins))
    }


def random_key(seed: int, block: int, index: int) -> int:
    """The key of the op at ``index`` of ``block`` for its random numbers: the program's seed
    and the op's place, mixed (splitmix64) so that neighbouring ops get unrelated streams."""
    x = (seed ^ (block << 48) ^ index) & _MASK64
    for _ in range(2):
        x = (x + 0x9E3779B97F4A7C15) & _MASK64
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
        x ^= x >> 31
    return x


_MASK64 = (1 << 64) - 1


def _infer_concrete(step: Step, shapes: dict[str, tuple[tuple, str]]) -> None:
    """Run the op's shape rule on concrete input shapes; record its outputs' shapes."""
    op = step.op
    inputs = {
        slot: [TensorSpec(n, *shapes[n]) for n in names] for slot, _, names in step.inputs if names
    }
    ctx = ShapeContext(op.type, inputs, step.attrs, [slot for slot, _, _ in step.outputs], op.block)
    infer(step.info, ctx)
    for slot, _, names in step.outputs:
        if not names:  # a dispensable output this op instance does not produce
            continue
        specs = ctx.outputs.get(slot, [])
        if len(specs) != len(names):
            raise ShapeError(
                f"op {op.type!r}: for the fed shapes its shape rule gives "
                f"{counted(len(specs), 'value')} for output {slot!r}, but the program has "
                f"{len(names)}",
                op=op.type,
            )
        for name, (shape, dtype) in zip(names, specs):
            if None in shape:
                raise ShapeError(
                    f"op {op.type!r}{ctx.describe_inputs()}: output {name!r} has no concrete "
                    f"shape ({dtype}{format_shape(shape)}) even for the fed shapes",
                    op=op.type,
                )
            check_spec(step.info, slot, shape, dtype)
            declared = op.block.find_var(name)
            if declared is not None and not (
                dtype == declared.dtype and shape_fits(shape, declared.shape)
            ):
                # The program's declarations are what users read and fetch by: a stale one
                # (edited behind the API) must not go unnoticed.
                raise ShapeError(
                    f"op {op.type!r}{ctx.describe_inputs()} gives {name!r} as "
                    f"{dtype}{format_shape(shape)} for the fed shapes, but the program declares "
                    f"it {declared.dtype}{format_shape(declared.shape)}",
                    op=op.type,
                )
            planned = shapes.get(name)
            if planned is not None and planned != (tuple(shape), dtype):
                # One buffer per variable: an op rewriting a variable must keep its size.
                raise ShapeError(
                    f"op {op.type!r}{ctx.describe_inputs()} writes {name!r} as "
                    f"{dtype}{format_shape(shape)}, but it is already "
                    f"{planned[1]}{format_shape(planned[0])} in this run",
                    op=op.type,
                )
            shapes[name] = (tuple(shape), dtype)
