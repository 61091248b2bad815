"""Appending an op to a block: the one path every op takes, from the generated API or
``Block.append_op``.

In order: attrs are validated (pydantic), inputs are checked against the OpProto's slots, the
op's shape rule infers output shapes and dtypes, outputs are created (or the given ones updated),
and only then is an Operator added. Any failure raises before the block changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base.errors import (
    KernelNotFoundError,
    OpInputError,
    ShapeError,
    counted,
    did_you_mean,
    shown,
)
from .operator import Operator, block_indices, check_sub_blocks
from .shape_inference import ShapeContext, check_spec, infer
from .variable import Parameter, Variable, format_shape

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: blocks build on appending
    from .block import Block


def append(
    block: Block,
    info: Any,
    inputs: dict[str, Any],
    attrs: dict[str, Any],
    outputs: dict[str, Any] | None = None,
    *,
    position: int | None = None,
    name: str | None = None,
) -> tuple[Operator, dict[str, list[Variable]]]:
    """Validate and append (or insert at ``position``) one op of registry entry ``info``;
    return the Operator and its output variables by slot."""
    if name is not None and (type(name) is not str or not name):
        raise OpInputError(
            f"op {info.type!r}: name must be a non-empty string (it names the outputs), got "
            f"{type(name).__name__} {shown(name)}",
            op=info.type,
        )
    if type(inputs) is not dict or (outputs is not None and type(outputs) is not dict):
        _check_mappings(info, inputs, outputs)
    sig = info._signature or info.signature()
    if sig.block_attrs:
        attrs = block_indices(info.type, attrs, sig.block_attrs, block.program)
    attrs = sig.validate(attrs)
    if sig.block_attrs:
        check_sub_blocks(info.type, attrs, sig.block_attrs, block)
    in_vars, in_names = _bind_inputs(block, info, sig, inputs)
    ctx = ShapeContext(info.type, in_vars, attrs, sig.output_slots, block)
    infer(info, ctx)
    _check_kernel_dtype(info, sig, in_vars, ctx)
    out_vars, out_names = _bind_outputs(block, info, sig, ctx.outputs, outputs, name)
    op = Operator(
        block,
        info.type,
        in_names,
        out_names,
        attrs,
        sig.attr_types,
        block.program.op_role,
        info.provider,
    )
    for vs in out_vars.values():
        for v in vs:
            if type(v) is not Parameter:
                v.op = op
    if position is None:
        block.ops.append(op)
    else:
        block.ops.insert(position, op)
    block.program._version += 1
    return op, out_vars


def _check_mappings(info: Any, inputs: Any, outputs: Any) -> None:
    for what, given in (("inputs", inputs), ("outputs", outputs)):
        if type(given) is not dict and given is not None and not isinstance(given, Mapping):
            raise OpInputError(
                f"op {info.type!r}: {what} must be a dict of slot name -> Variable (or list "
                f"of Variables), got {type(given).__name__} {shown(given)}",
                op=info.type,
            )


def _check_kernel_dtype(info: Any, sig: Any, in_vars: dict, ctx: ShapeContext) -> None:
    """Refuse now, not when the program runs, an op whose kernel-selecting dtype (the first
    input's, or kernel_dtype_input's, or for ops without inputs the first output's) no kernel
    the op declares takes, on any device: exp of an int32 x. A dtype some device lacks is
    still planned (and refused, or run elsewhere) per device."""
    if not sig.kernel_dtypes:
        return  # no kernels declared: nothing to hold the dtype to
    slot = sig.always_selecting or sig.selecting_input([s for s, vs in in_vars.items() if vs])
    if slot is not None:
        var = in_vars[slot][0]
        if var.dtype in sig.kernel_dtypes:
            return
        dtype, what = var.dtype, f"input {slot!r} ({var.name!r}) is {var.dtype}"
    else:
        out_slot = next((s for s in sig.output_slots if ctx.outputs.get(s)), None)
        if out_slot is None:
            return
        dtype = ctx.outputs[out_slot][0][1]
        if dtype in sig.kernel_dtypes:
            return
        what = f"output {out_slot!r} is {dtype}"
    have = "; ".join(f"{d} ({', '.join(info.dtypes_for(d))})" for d in info.devices)
    raise KernelNotFoundError(
        f"op {info.type!r} has no kernel for dtype {dtype} on any device: {what} "
        f"({info.plugin.label}); its kernels: {have}",
        op=info.type,
    )


def _bind_inputs(
    block: Block, info: Any, sig: Any, given: dict[str, Any]
) -> tuple[dict[str, list[Variable]], dict[str, list[str]]]:
    """The input variables by slot, and their names (the op's inputs)."""
    op_type = info.type
    bound: dict[str, list[Variable]] = {}
    names: dict[str, list[str]] = {}
    for slot, duplicable, dispensable, comment in sig.inputs:
        value = given.get(slot)
        if value is None:
            if not dispensable:
                detail = f" ({comment.rstrip('.')})" if comment else ""
                raise OpInputError(f"op {op_type!r} requires input {slot!r}{detail}", op=op_type)
            continue
        if type(value) is Variable and (value.block is block or value.block.idx == 0):
            if value.block.program is not block.program:
                raise OpInputError(
                    f"op {op_type!r}: input {slot!r} is variable {value.name!r} of another program",
                    op=op_type,
                )
            bound[slot] = [value]  # the common case: one variable of this block or the global one
            names[slot] = [value.name]
            continue
        if duplicable:
            values = value if isinstance(value, (list, tuple)) else [value]
            if not values and not dispensable:
                raise OpInputError(
                    f"op {op_type!r}: input {slot!r} needs at least one variable", op=op_type
                )
            bound[slot] = vars_ = [_to_var(block, op_type, slot, v) for v in values]
        elif isinstance(value, (list, tuple)):
            raise OpInputError(
                f"op {op_type!r}: input {slot!r} takes one variable, got a "
                f"{type(value).__name__} of {len(value)}",
                op=op_type,
            )
        else:
            bound[slot] = vars_ = [_to_var(block, op_type, slot, value)]
        names[slot] = [v.name for v in vars_]
    if len(given) > len(bound):
        for key, value in given.items():
            if key not in sig.input_names and value is not None:
                slots = [s[0] for s in sig.inputs]
                raise OpInputError(
                    f"op {op_type!r} has no input {shown(key)}{did_you_mean(key, slots)}; "
                    f"its inputs are: {', '.join(slots) or 'none'}",
                    op=op_type,
                )
    return bound, names


def _to_var(block: Block, op_type: str, slot: str, value: Any) -> Variable:
    if isinstance(value, Variable):
        if value.block.program is block.program and block.find_var(value.name) is value:
            return value
        raise OpInputError(
            f"op {op_type!r}: input {slot!r} is variable {value.name!r} of another program or "
            f"of a block not enclosing block {block.idx}",
            op=op_type,
        )
    if isinstance(value, str):
        return block.var(value)
    raise OpInputError(
        f"op {op_type!r}: input {slot!r} must be a Variable (or a variable name), "
        f"got {type(value).__name__}",
        op=op_type,
    )


def _bind_outputs(
    block: Block,
    info: Any,
    sig: Any,
    specs: dict[str, list[tuple[tuple, str]]],
    given: dict[str, Any] | None,
    name: str | None,
) -> tuple[dict[str, list[Variable]], dict[str, list[str]]]:
    """The output variables by slot (created, or the given ones updated), and their names."""
    op_type = info.type
    for slot, _, dispensable in sig.outputs:
        if slot not in specs and not dispensable:
            raise ShapeError(
                f"op {op_type!r}: its shape rule did not set required output {slot!r} "
                f"(a bug in {info.plugin.label})",
                op=op_type,
            )
    for slot, slot_specs in specs.items():
        for shape, dtype in slot_specs:
            check_spec(info, slot, shape, dtype)
    if given is not None:
        out = _given_outputs(block, info, sig, specs, given)
        return out, {slot: [v.name for v in vs] for slot, vs in out.items()}
    if name is None and len(specs) == 1:  # the common case, one output: a quarter less time
        ((slot, slot_specs),) = specs.items()
        if len(slot_specs) == 1:
            ((shape, dtype),) = slot_specs
            var_name = f"{block.program.unique_name(op_type)}.{slot}"
            block.vars[var_name] = var = _fresh_var(block, op_type, var_name, shape, dtype)
            return {slot: [var]}, {slot: [var_name]}
    base = name or block.program.unique_name(op_type)
    single = name is not None and len(specs) == 1 and len(next(iter(specs.values()))) == 1
    out: dict[str, list[Variable]] = {}
    names: dict[str, list[str]] = {}
    for slot, slot_specs in specs.items():
        many = len(slot_specs) > 1
        out[slot] = created = []
        names[slot] = created_names = []
        for i, (shape, dtype) in enumerate(slot_specs):
            var_name = name if single else (f"{base}.{slot}_{i}" if many else f"{base}.{slot}")
            created.append(_fresh_var(block, op_type, var_name, shape, dtype))
            created_names.append(var_name)
    for created in out.values():  # none is added to the block unless all names are free
        for var in created:
            block.vars[var.name] = var
    return out, names


def _fresh_var(block: Block, op_type: str, name: str, shape: tuple, dtype: str) -> Variable:
    """A new output variable (not yet in the block), its name free."""
    if name in block.vars:
        raise OpInputError(f"op {op_type!r}: a variable named {name!r} already exists", op=op_type)
    return Variable(block, name, shape, dtype)


def _given_outputs(
    block: Block, info: Any, sig: Any, specs: dict, given: dict[str, Any]
) -> dict[str, list[Variable]]:
    """Bind caller-provided outputs (``Block.append_op(outputs=...)``) and set their shapes."""
    op_type = info.type
    names = sig.output_slots
    for key in given:
        if key not in names:
            raise OpInputError(
                f"op {op_type!r} has no output {shown(key)}{did_you_mean(key, names)}",
                op=op_type,
            )
    dispensable = {slot for slot, _, optional in sig.outputs if optional}
    bound = []
    for slot, slot_specs in list(specs.items()):
        value = given.get(slot)
        if value is None and slot in dispensable:  # not requested: the op will not produce it
            del specs[slot]
            continue
        targets = value if isinstance(value, (list, tuple)) else [value]
        if value is None or len(targets) != len(slot_specs):
            raise OpInputError(
                f"op {op_type!r}: output {slot!r} needs {counted(len(slot_specs), 'variable')}",
                op=op_type,
            )
        for target, spec in zip(targets, slot_specs):
            if not isinstance(target, (Variable, str)):
                raise OpInputError(
                    f"op {op_type!r}: output {slot!r} must be a Variable or a name, "
                    f"got {type(target).__name__}",
                    op=op_type,
                )
            if isinstance(target, Variable) and block.find_var(target.name) is not target:
                raise OpInputError(
                    f"op {op_type!r}: output {slot!r} is variable {target.name!r} of another "
                    f"program or of a block not enclosing block {block.idx}",
                    op=op_type,
                )
            bound.append((slot, target, spec))
    resolved = []
    for slot, target, (shape, dtype) in bound:  # check every target before changing any
        var = target if isinstance(target, Variable) else block.find_var(target)
        if var is not None:
            shape = _refine(op_type, slot, var, shape, dtype)
        resolved.append((slot, target, var, shape, dtype))
    out: dict[str, list[Variable]] = {slot: [] for slot in specs}
    for slot, target, var, shape, dtype in resolved:
        if var is None:
            var = block.create_var(target, shape, dtype)
        var.shape, var.dtype = shape, dtype
        out[slot].append(var)
    return out


def _refine(op_type: str, slot: str, var: Variable, shape: tuple, dtype: str) -> tuple:
    """The shape an existing output variable takes: its own, with unknown dimensions filled in
    from the inferred one. A different dtype or a contradicting dimension is a ShapeError."""
    same_rank = len(var.shape) == len(shape)
    if (
        var.dtype != dtype
        or not same_rank
        or any(a is not None and b is not None and a != b for a, b in zip(var.shape, shape))
    ):
        raise ShapeError(
            f"op {op_type!r} would write output {slot!r} as {dtype}{format_shape(shape)} into "
            f"variable {var.name!r}, declared {var.dtype}{format_shape(var.shape)}",
            op=op_type,
        )
    return tuple(a if a is not None else b for a, b in zip(var.shape, shape))
