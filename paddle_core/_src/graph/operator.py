"""Operator: one op in a block, its slots bound to variable names and its validated attrs."""

from __future__ import annotations

from typing import Any

from ..base.errors import AttrError, ProgramError, did_you_mean, shown
from ..plugins.registry import Provider, get_registry
from ..spec.attrs import to_attr_value
from .variable import attrs_text

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: blocks build on operators
    from .block import Block

# What an op is for, in OpDesc.Role order: computing the model, its gradients, or updating its
# parameters. An evaluation program keeps "forward" ops only.
ROLES = ("forward", "backward", "optimize")


class OpAttrs(dict):
    """An op's attrs: a dict that refuses changes, since a plan prepared for the old values
    would go on running them. ``Operator.set_attr`` changes one the safe way."""

    # No __init__ of its own: dict's constructor makes one (each appended op does), and the op
    # sets op_type.
    __slots__ = ("op_type",)

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise ProgramError(
            f"op {self.op_type!r}: attrs are read-only; change one with "
            "op.set_attr(name, value), which re-validates it and has executors plan again"
        )

    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    update = pop = popitem = clear = setdefault = _refuse  # type: ignore[assignment]


class Operator:
    """One op in a block: its type, the variable names bound to each slot, and its attrs."""

    __slots__ = ("block", "type", "inputs", "outputs", "attrs", "attr_types", "role", "provider")

    def __init__(
        self,
        block: Block,
        type: str,
        inputs: dict[str, list[str]],
        outputs: dict[str, list[str]],
        attrs: dict[str, Any],
        attr_types: dict[str, int],
        role: str,
        provider: Provider,
    ) -> None:
        self.block = block
        self.type = type
        self.inputs = inputs  # slot -> variable names
        self.outputs = outputs
        # Validated Python values, every declared attr; read-only, since a plan prepared for
        # the old values would go on running them: change one with set_attr.
        self.attrs = OpAttrs(attrs)
        self.attrs.op_type = type
        self.attr_types = attr_types  # attr -> AttrType (shared with the op's registry entry)
        self.role = role  # one of ROLES
        # Who provided the op's type when it was appended (a loaded op keeps what its program
        # recorded).
        self.provider = provider

    def input(self, slot: str) -> list[str]:
        return self.inputs.get(slot, [])

    def output(self, slot: str) -> list[str]:
        return self.outputs.get(slot, [])

    def attr(self, name: str) -> Any:
        if type(name) is not str:  # before hashing it: a hostile key could raise anything
            raise ProgramError(f"op {self.type!r}: attr names are strings, got {shown(name)}")
        try:
            return self.attrs[name]
        except KeyError:
            raise ProgramError(
                f"op {self.type!r} has no attr {name!r}{did_you_mean(name, self.attrs)}"
            ) from None

    def set_attr(self, name: str, value: Any) -> None:
        """Change one attr: validated like at append time, then the shapes and dtypes of this
        op's outputs and of everything downstream in its block inferred again and updated, and
        the program's version moves on so executors plan again. Raises AttrError naming the op
        and attr, or ShapeError naming the op that no longer fits; then nothing has changed."""
        from .reinfer import reinfer_from  # (builds on shape inference, which builds on this)

        self.attr(name)  # a ProgramError naming close matches for an unknown attr
        sig = get_registry().op(self.type).signature()
        attrs = {**self.attrs, name: value}
        if sig.block_attrs:
            attrs = block_indices(self.type, attrs, sig.block_attrs, self.block.program)
        attrs = sig.validate(attrs)
        if sig.block_attrs:
            check_sub_blocks(self.type, attrs, sig.block_attrs, self.block)
        for var_name, (shape, dtype) in reinfer_from(self, attrs).items():
            var = self.block.var(var_name)
            var.shape, var.dtype = shape, dtype
        self.attrs = OpAttrs(attrs)
        self.attrs.op_type = self.type
        self.attr_types = sig.attr_types
        self.block.program._version += 1

    @property
    def input_names(self) -> list[str]:
        return [n for names in self.inputs.values() for n in names]

    @property
    def output_names(self) -> list[str]:
        return [n for names in self.outputs.values() for n in names]

    def __repr__(self) -> str:
        return f"<Operator {self._describe()}>"

    def _describe(self) -> str:
        """``out_var = type(slot=var, ...)  {attrs}``, as ``print(program)`` shows ops."""
        inputs = ", ".join(
            f"{s}={names[0]}" if len(names) == 1 else f"{s}=[{', '.join(names)}]"
            for s, names in self.inputs.items()
        )
        attrs = f"  {{{attrs_text(self.attrs)}}}" if self.attrs else ""
        role = f"  [{self.role}]" if self.role != "forward" else ""
        return f"{', '.join(self.output_names)} = {self.type}({inputs}){attrs}{role}"

    def to_desc(self, desc: Any) -> None:
        desc.type = self.type
        desc.role = ROLES.index(self.role)
        for slot, names in self.inputs.items():
            desc.inputs.add(name=slot, vars=names)
        for slot, names in self.outputs.items():
            desc.outputs.add(name=slot, vars=names)
        for name, value in self.attrs.items():
            to_attr_value(self.attr_types[name], value, desc.attrs.add(name=name).value)
        p = desc.provider
        p.plugin, p.distribution, p.version = self.provider


def block_indices(op_type: str, attrs: dict[str, Any], names: tuple, program: Any) -> dict:
    """``attrs`` with the BLOCK attrs ``names`` that hold blocks of ``program`` turned into
    block indices, which is what OpDescs store (validation takes indices only). A block of
    another program is an AttrError; anything else is left for validation to judge."""
    converted = dict(attrs)
    for name in names:
        value = attrs.get(name)
        idx, owner = getattr(value, "idx", None), getattr(value, "program", None)
        if type(idx) is not int or owner is None:
            continue
        if owner is program and 0 <= idx < len(program.blocks) and program.blocks[idx] is value:
            converted[name] = idx
        else:
            raise AttrError(
                f"op {op_type!r}, attr {name!r}: block {idx} belongs to another program",
                op=op_type,
                attr=name,
            )
    return converted


def check_sub_blocks(op_type: str, attrs: dict[str, Any], names: Any, block: Any) -> None:
    """Each BLOCK attr ``names`` of an op in ``block`` must index a block of the program whose
    parent is ``block`` (a sub-block sees the op's block's variables, through its parent
    chain): an index that does not exist, the op's own block, or another block's child is an
    AttrError naming the op, its block and the attr."""
    program = block.program
    for name in names:
        idx = attrs.get(name)
        if idx is None:
            continue
        where = f"op {op_type!r} in block {block.idx}, attr {name!r}"
        if idx >= len(program.blocks):
            raise AttrError(
                f"{where}: block {idx} does not exist (the program has {len(program.blocks)})",
                op=op_type,
                attr=name,
            )
        if idx == block.idx:
            raise AttrError(
                f"{where}: an op cannot hold its own block {idx}", op=op_type, attr=name
            )
        if program.blocks[idx].parent_idx != block.idx:
            raise AttrError(
                f"{where}: block {idx} is a child of block {program.blocks[idx].parent_idx}, "
                f"not of block {block.idx} (create it with program.create_block() while "
                f"block {block.idx} is current)",
                op=op_type,
                attr=name,
            )


def checked_attrs(op: Operator, info: Any) -> Any:
    """The attrs of ``op`` as its kernel and grad rule read them: an op appended through the API
    was validated then; one loaded from a program is validated now (its op's ``info``), so
    that attrs it does not record read their defaults and wrong ones are refused, naming it."""
    if op.attr_types is info.attr_types:
        return op.attrs
    return info.validator().validate(dict(op.attrs))
