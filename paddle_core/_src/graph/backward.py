"""Backward: append to a program the ops that compute gradients.

``gradients(targets, inputs)`` walks the ops between ``inputs`` and ``targets`` in reverse and
asks each op's grad rule (named in its manifest) to append the ops computing its inputs'
gradients from its outputs' gradients. A variable used by several ops receives one partial
gradient per use; they are summed with ``add_n`` before the gradient flows further back,
except where the grad ops producing them can add into an accumulator (an output declared
``inplace`` with a dispensable input: ``slice_grad``'s ``x_grad_acc``, ``matmul_grad``'s
``y_grad_acc``): those are chained, each adding its part to the one before, so an unrolled
recurrence's weight gradient or its input's per-step slices fill one buffer in place.
``append_backward(loss)`` does this for every trainable parameter.

Gradients are kept per *version* of a variable: each op writing a variable makes a new
version, so for ``h = tanh(h)`` the gradient of the ``h`` that tanh wrote and that of the ``h``
it read are different values, summed separately. A grad op that needs a value a later op
rewrote in place (``h = square(h)`` needs the old ``h``) is refused, naming both ops.

Grad rules receive a ``GradContext``. Most ops use ``default_grad``: the op ``T`` has a grad op
``T_grad`` whose inputs are any of T's inputs and outputs (same slot names) plus
``<output>_grad`` slots, whose outputs are ``<input>_grad`` slots, and whose attrs are any of
T's. The grad op declares what it needs; ``default_grad`` wires it up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any

from ..base.errors import PLUGIN_CODE_ERRORS, OpNotFoundError, PaddleCoreError, ProgramError
from ..plugins.registry import get_registry
from .block import Block
from .operator import Operator, checked_attrs
from .variable import Parameter, Variable

GRAD_SUFFIX = "@GRAD"


class GradContext:
    """What a grad rule sees: the forward op, its outputs' gradients, and where to put its
    inputs' gradients (names; None where no gradient is needed or flows)."""

    def __init__(self, backward: _Backward, index: int, op: Operator, info: Any) -> None:
        self._backward = backward
        self._index = index  # the op's position among the forward ops
        self.op = op
        self.attrs = checked_attrs(op, info)  # as the op's kernel reads them
        self.block = backward.block  # where gradient ops go
        self._input_grads: dict[tuple[str, int], str | None] = {}
        # Forward values handed to the rule, and the version of each it stands for.
        self._values: dict[str, set[int]] = {}

    def input(self, slot: str) -> str | None:
        names = self.inputs(slot)
        return names[0] if names else None

    def inputs(self, slot: str) -> list[str]:
        names = list(self.op.inputs.get(slot, []))
        reads = self._backward.versions.reads[self._index]
        for name in names:
            self._values.setdefault(name, set()).add(reads[name])
        return names

    def output(self, slot: str) -> str | None:
        names = self.outputs(slot)
        return names[0] if names else None

    def outputs(self, slot: str) -> list[str]:
        names = list(self.op.outputs.get(slot, []))
        writes = self._backward.versions.writes[self._index]
        for name in names:
            self._values.setdefault(name, set()).add(writes[name])
        return names

    def output_grad(self, slot: str) -> str | None:
        """The gradient of output ``slot`` (None if no gradient flows back through it)."""
        grads = self.output_grads(slot)
        return grads[0] if grads else None

    def output_grads(self, slot: str) -> list[str | None]:
        writes = self._backward.versions.writes[self._index]
        return [self._backward.grad_of((n, writes[n])) for n in self.op.outputs.get(slot, [])]

    def input_grad(self, slot: str) -> str | None:
        """The name to write input ``slot``'s gradient into, or None if it is not needed."""
        grads = self.input_grads(slot)
        return grads[0] if grads else None

    def input_grads(self, slot: str) -> list[str | None]:
        names = self.op.inputs.get(slot, [])
        reads = self._backward.versions.reads[self._index]
        result = []
        for k, name in enumerate(names):
            key = (slot, k)
            if key not in self._input_grads:
                value = (name, reads[name])
                wanted = value in self._backward.reach
                self._input_grads[key] = self._backward.new_partial(value) if wanted else None
            result.append(self._input_grads[key])
        return result

    def unused_grad(self, name: str) -> str:
        """A name for a gradient of ``name`` that an op must produce but nothing needs (e.g.
        one input of a duplicable slot when only the others want gradients)."""
        return self._backward.new_partial((name, -1), discard=True)

    def zeros_like(self, name: str) -> str:
        """A new variable of zeros shaped like ``name`` (for gradients that do not flow)."""
        out = self._backward.fresh(f"{name}{GRAD_SUFFIX}@ZERO")
        # fill_like reads only the shape, which no version changes: no check needed.
        self._backward.block.append_op("fill_like", {"x": name}, {"out": out}, {"value": 0.0})
        return out

    def append_op(
        self,
        type: str,
        inputs: dict[str, Any],
        outputs: dict[str, Any],
        attrs: dict[str, Any] | None = None,
    ) -> Operator:
        """Append a gradient op; slots whose value is None (or all None) are left out, and
        outputs not given are created (for a helper op's intermediate result)."""
        inputs = _drop_none(inputs)
        for value in inputs.values():
            for name in value if isinstance(value, list) else [value]:
                self._check_available(type, getattr(name, "name", name))
        return self._backward.block.append_op(
            type, inputs, _drop_none(outputs) or None, attrs or {}
        )

    def _check_available(self, grad_type: str, name: str) -> None:
        """Refuse a grad op reading a forward value that a later op has overwritten."""
        versions = self._backward.versions
        final = versions.final.get(name, 0)
        for version in self._values.get(name, ()):
            if version == final:
                continue
            rewriter = versions.writer[(name, version + 1)]
            verb = "read" if version == versions.reads[self._index].get(name) else "wrote"
            raise ProgramError(
                f"op {grad_type!r} (the gradient of op {self.op.type!r}) needs {name!r} as "
                f"op {self.op.type!r} {verb} it, but op {rewriter.type!r} rewrites {name!r} in "
                f"place afterwards; {_remedy(rewriter, name)}"
            )


def _remedy(rewriter: Any, name: str) -> str:
    """What to do about ``rewriter`` overwriting ``name`` before its gradient reads it."""
    if rewriter.role == "optimize":  # (an update appended by an earlier minimize)
        return (
            "it updates a parameter for an earlier minimize(), and a program's gradients are "
            "taken before its updates: minimize once (of the sum of the losses, if several); "
            "a loaded model's program holds its updates already, and model.run() runs one "
            "training step"
        )
    if rewriter.type == "while_block":  # (the block form updates its carried variables)
        return (
            "the While block form updates its loop variables in place; for gradients, write "
            "the loop with pc.control_flow.while_loop, whose results are new variables"
        )
    return (
        f"give op {rewriter.type!r} an output of its own (e.g. {name + '_1'!r}) so that the "
        "value stays available"
    )


def _drop_none(slots: dict[str, Any]) -> dict[str, Any]:
    kept = {}
    for slot, value in slots.items():
        if isinstance(value, (list, tuple)):
            if any(v is not None for v in value):
                kept[slot] = list(value)
        elif value is not None:
            kept[slot] = value
    return kept


def default_grad(ctx: GradContext) -> None:
    """The grad rule of most ops: append ``<op>_grad``, wired by slot names (see module doc)."""
    op = ctx.op
    grad_type = f"{op.type}_grad"
    try:
        grad_info = get_registry().op(grad_type)
    except OpNotFoundError as e:
        raise ProgramError(
            f"op {op.type!r} names default_grad as its grad rule, but its grad op "
            f"{grad_type!r} is missing: {e}"
        ) from None
    inputs: dict[str, Any] = {}
    for slot in grad_info.proto.inputs:
        name = slot.name
        base = name.removesuffix("_grad")
        if name != base and base in op.outputs:
            grads = ctx.output_grads(base)
            names = ctx.outputs(base)
            value = [g if g is not None else ctx.zeros_like(n) for g, n in zip(grads, names)]
        elif name in op.inputs:
            value = ctx.inputs(name)
        elif name in op.outputs:
            value = ctx.outputs(name)
        else:
            continue  # an optional input the forward op did not use
        inputs[name] = value if slot.duplicable else value[0]
    outputs: dict[str, Any] = {}
    for slot in grad_info.proto.outputs:
        base = slot.name.removesuffix("_grad")
        if base in op.inputs:
            grads = ctx.input_grads(base)
            if any(g is not None for g in grads):
                if None in grads:  # a duplicable slot where only some inputs need gradients
                    names = ctx.inputs(base)
                    grads = [ctx.unused_grad(n) if g is None else g for g, n in zip(grads, names)]
                outputs[slot.name] = grads if slot.duplicable else grads[0]
    if not outputs:
        return
    declared = {a.name for a in grad_info.proto.attrs}
    attrs = {k: v for k, v in op.attrs.items() if k in declared}
    ctx.append_op(grad_type, inputs, outputs, attrs)


def no_grad(ctx: GradContext) -> None:
    """The grad rule of an op whose outputs are constant in its inputs (argmax, full_like):
    gradients stop there, as for a constant. ``paddle-ops list`` shows it as "zero"."""


class _Versions:
    """Which version of each variable every forward op reads and writes.

    A variable is at version 0 until an op writes it; each write makes the next version. The
    value a variable holds once the forward ops have run is its ``final`` version.
    """

    def __init__(self, ops: list[Operator]) -> None:
        current: dict[str, int] = {}
        self.reads: list[dict[str, int]] = []
        self.writes: list[dict[str, int]] = []
        self.writer: dict[tuple[str, int], Operator] = {}
        for op in ops:
            self.reads.append({n: current.get(n, 0) for n in op.input_names})
            written = {}
            for name in op.output_names:
                current[name] = written[name] = current.get(name, 0) + 1
                self.writer[(name, current[name])] = op
            self.writes.append(written)
        self.final = current

    def first(self, name: str) -> int:
        """The version of ``name`` that its first user sees: 0 if it is read before any op
        writes it (fed, a parameter), else the first version written."""
        for reads, writes in zip(self.reads, self.writes):
            if name in reads:
                return reads[name]
            if name in writes:
                return writes[name]
        return 0


Value = tuple[str, int]  # a variable at a version


class _Backward:
    """The state of one gradients() call."""

    def __init__(self, block: Block, versions: _Versions, reach: set[Value]) -> None:
        self.block = block
        self.versions = versions
        self.reach = reach  # values whose gradients are wanted
        self.partials: dict[Value, list[str]] = {}
        # The grad ops this call appends, by the variables they write (filled as needed).
        self._scanned = len(block.ops)
        self._producer: dict[str, tuple[int, Operator]] = {}

    def fresh(self, base: str) -> str:
        name, n = base, 0
        while self.block.find_var(name) is not None:
            n += 1
            name = f"{base}@{n}"
        return name

    def new_partial(self, value: Value, discard: bool = False) -> str:
        """A name for one more partial gradient of ``value`` (``discard``: computed, unused)."""
        var = value[0]
        name = self.fresh(f"{var}{GRAD_SUFFIX}" + ("@UNUSED" if discard else ""))
        if not discard:
            self.partials.setdefault(value, []).append(name)
        self._reserve(name, var)
        return name

    def _reserve(self, name: str, like: str) -> None:
        # Create the variable now so that a second partial allocated before the first is
        # written gets a different name.
        var = self.block.find_var(like)
        self.block.create_var(name, var.shape, var.dtype)

    def grad_of(self, value: Value) -> str | None:
        """The full gradient of ``value``: its partials summed (once), or None if it has none."""
        partials = self.partials.get(value)
        if not partials:
            return None
        if len(partials) > 1:
            partials[:] = self._chain(partials)
        if len(partials) > 1:
            # Into a new variable: a partial may be the caller's seed (target_gradients), and
            # an op writing its own input is an in-place update the executor must copy around.
            var = value[0]
            total = self.fresh(f"{var}{GRAD_SUFFIX}")
            self._reserve(total, var)
            self.block.append_op("add_n", {"xs": partials}, {"out": total})
            partials[:] = [total]
        return partials[0]

    def _chain(self, partials: list[str]) -> list[str]:
        """Chain the partials whose grad ops take an accumulator for them, in block order
        (each op adds into the one before it: the memory planner gives them one buffer);
        return the partials left to sum: the others and the chain's last."""
        chain, ops = [], set()
        for found in sorted(filter(None, map(self._accumulator, partials))):
            if id(found[2]) not in ops:  # (an op reading its own output is no chain)
                ops.add(id(found[2]))
                chain.append(found)
        if len(chain) < 2:
            return partials
        for (_, before, _, _), (_, _, op, slot) in pairwise(chain):
            op.inputs[slot] = [before]
        self.block.program._version += 1
        inside = {name for _, name, _, _ in chain[:-1]}
        return [name for name in partials if name not in inside]

    def _accumulator(self, name: str) -> tuple[int, str, Operator, str] | None:
        """(position, name, op, slot) when partial ``name`` is written by a grad op of this
        call through an output declared ``inplace`` with a dispensable input left empty."""
        ops = self.block.ops
        for position in range(self._scanned, len(ops)):
            for written in ops[position].output_names:
                self._producer[written] = (position, ops[position])
        self._scanned = len(ops)
        if name not in self._producer:
            return None  # a seed, or the sum of an earlier chain
        position, op = self._producer[name]
        proto = get_registry().op(op.type).proto
        inputs = {slot.name: slot for slot in proto.inputs}
        for out in proto.outputs:
            acc = inputs.get(out.inplace)
            if (
                op.outputs.get(out.name) == [name]
                and acc is not None
                and acc.dispensable
                and not op.inputs.get(acc.name)
            ):
                return position, name, op, acc.name
        return None


def gradients(
    targets: Variable | Sequence[Variable],
    inputs: Variable | Sequence[Variable],
    target_gradients: Variable | Sequence[Variable | None] | None = None,
    no_grad_set: Iterable[Variable | str] | None = None,
) -> list[Variable | None]:
    """Append the ops computing d(sum of targets)/d(input) for each input; return the gradient
    variables (None for an input the targets do not depend on).

    ``target_gradients`` seed the targets' gradients (default: ones); ops are appended to the
    targets' global block. Variables marked ``stop_gradient`` (other than the requested
    inputs), as data variables are by default, and those in ``no_grad_set`` (Variables or
    names) block the flow.
    """
    targets = [targets] if isinstance(targets, (Variable, str)) else list(targets)
    inputs = [inputs] if isinstance(inputs, (Variable, str)) else list(inputs)
    if not targets or not inputs:
        raise ProgramError("gradients() needs at least one target and one input")
    for v in [*targets, *inputs]:
        if not isinstance(v, Variable):
            raise ProgramError(
                f"gradients(): {v!r} is not a Variable but {type(v).__name__} (pass the "
                "variables themselves, e.g. what pc.data or an op returned)"
            )
    block = targets[0].block.program.global_block()
    for v in [*targets, *inputs]:
        if v.block.program is not block.program:
            raise ProgramError(f"gradients(): {v!r} is not a variable of the targets' program")
    seeds: list[Variable | None]
    if target_gradients is None:
        seeds = [None] * len(targets)
    else:
        seeds = (
            [target_gradients] if isinstance(target_gradients, Variable) else list(target_gradients)
        )
        if len(seeds) != len(targets):
            raise ProgramError("gradients(): target_gradients must match targets one to one")
    with block.program.role_guard("backward"):
        forward = list(block.ops)
        versions = _Versions(forward)
        blocked = _names(block, no_grad_set or (), "no_grad_set")
        starts = {(v.name, versions.first(v.name)) for v in inputs if v.name not in blocked}
        reach = _reachable(block, versions, starts, blocked)
        backward = _Backward(block, versions, reach)
        final = {t.name: (t.name, versions.final.get(t.name, 0)) for t in targets}
        for target, seed in zip(targets, seeds):
            if seed is None:
                name = backward.new_partial(final[target.name])
                block.append_op("fill_like", {"x": target}, {"out": name}, {"value": 1.0})
            else:
                backward.partials.setdefault(final[target.name], []).append(seed.name)
        _apply_rules(forward, backward, set(final.values()))
        grads = [backward.grad_of((v.name, versions.first(v.name))) for v in inputs]
    return [block.var(name) if name is not None else None for name in grads]


def _apply_rules(forward: list[Operator], backward: _Backward, targets: set[Value]) -> None:
    """Ask the grad rule of each op between the reachable values and ``targets`` (last first)
    to append its gradient ops."""
    registry = get_registry()
    versions = backward.versions
    for index in _between(versions, backward.reach, targets):
        op = forward[index]
        written = versions.writes[index].items()
        if not any(backward.partials.get(value) for value in written):
            continue
        info = registry.op(op.type)
        rule = info.grad_rule()
        if rule is None:
            raise ProgramError(
                f"op {op.type!r} ({', '.join(op.output_names)}) is not differentiable (its "
                "plugin declares no grad rule), but gradients must flow through it"
            )
        try:
            rule(GradContext(backward, index, op, info))
        except PaddleCoreError:
            raise
        except PLUGIN_CODE_ERRORS as e:  # a bug in the rule surfaces as our error, naming the op
            raise ProgramError(
                f"op {op.type!r} ({', '.join(op.output_names)}): its grad rule raised "
                f"{type(e).__name__}: {e}"
            ) from e


def block_gradients(
    block: Block, seeds: dict[str, list[str]], wanted: Sequence[str]
) -> dict[str, str | None]:
    """Append to ``block`` the ops computing the gradients of ``wanted`` (variables its ops
    read, usually its parents') from ``seeds``: gradients of values its ops compute, as they
    stand after its ops (variable -> its gradient variables, summed). Returns each wanted
    variable's gradient name, None where none flows. Control-flow grad rules use it inside the
    blocks that compute their gradients."""
    forward = list(block.ops)
    versions = _Versions(forward)
    starts = {(name, versions.first(name)) for name in wanted}
    backward = _Backward(block, versions, _reachable(block, versions, starts, ()))
    targets = set()
    for name, grads in seeds.items():
        value = (name, versions.final.get(name, 0))
        backward.partials.setdefault(value, []).extend(grads)
        targets.add(value)
    _apply_rules(forward, backward, targets)
    return {name: backward.grad_of((name, versions.first(name))) for name in wanted}


def append_backward(
    loss: Variable,
    parameter_list: Iterable[Parameter | str] | None = None,
    no_grad_set: Iterable[Variable | str] | None = None,
    loss_grad: Variable | None = None,
) -> list[tuple[Parameter, Variable]]:
    """Append the ops computing d(loss)/d(parameter) for every trainable parameter (or those
    of ``parameter_list``, Parameters or names), except those in ``no_grad_set`` (through
    which no gradient flows either); return (parameter, gradient) pairs for the parameters the
    loss depends on. ``loss_grad`` seeds the chain rule instead of ones (a scaled loss)."""
    if not isinstance(loss, Variable):
        raise ProgramError(f"append_backward(): the loss must be a Variable, got {loss!r}")
    block = loss.block.program.global_block()
    blocked = _names(block, no_grad_set or (), "no_grad_set")
    if parameter_list is None:
        parameters = [p for p in block.program.all_parameters() if p.trainable]
    else:
        names = _names(block, parameter_list, "parameter_list")
        parameters = [block.var(n) for n in names]
        for p in parameters:
            if not isinstance(p, Parameter):
                raise ProgramError(
                    f"append_backward(): {p.name!r} in parameter_list is not a Parameter"
                )
    parameters = [p for p in parameters if p.name not in blocked]
    if not parameters:
        return []
    seeds = None if loss_grad is None else [loss_grad]
    grads = gradients([loss], parameters, target_gradients=seeds, no_grad_set=blocked)
    return [(p, g) for p, g in zip(parameters, grads) if g is not None]


def _names(block: Block, items: Iterable[Variable | str], what: str) -> list[str]:
    """Variable names of ``items`` (Variables or names), each a variable of ``block``."""
    if isinstance(items, (str, Variable)):
        raise ProgramError(f"{what} must be a collection of Variables or names, got {items!r}")
    names = []
    for item in items:
        name = item.name if isinstance(item, Variable) else item
        if not isinstance(name, str) or block.find_var(name) is None:
            raise ProgramError(f"{what}: {item!r} is not a variable of the program")
        names.append(name)
    return list(dict.fromkeys(names))


def _reachable(
    block: Block, versions: _Versions, start: set[Value], blocked: Iterable[str]
) -> set[Value]:
    """Values that depend on ``start`` (through ops, not through stop_gradient variables nor
    the ``blocked`` ones)."""
    reach = set(start)
    blocked = set(blocked)
    for reads, writes in zip(versions.reads, versions.writes):
        if any(value in reach for value in reads.items()):
            for name, version in writes.items():
                var = block.find_var(name)
                if var is not None and not var.stop_gradient and name not in blocked:
                    reach.add((name, version))
    return reach


def _between(versions: _Versions, reach: set[Value], targets: set[Value]) -> list[int]:
    """Positions of the ops on a path from the reachable values to the targets, last first."""
    needed = set(targets)
    chosen = []
    for index in reversed(range(len(versions.reads))):
        reads, writes = versions.reads[index], versions.writes[index]
        if any(v in needed for v in writes.items()) and any(v in reach for v in reads.items()):
            chosen.append(index)
            needed.update(reads.items())
    return chosen
