"""ProgramDesc -> Program: rebuilding the Python objects from the protobuf form, checked.

The other direction is each class's ``to_desc``. Reading a desc is data only: no plugin code
runs, and the registry is not consulted (``Program.from_desc`` checks the ops afterwards, see
provenance.py; ``Program.clone`` needs no check).
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf.message import DecodeError

from ...proto import framework_pb2 as pb
from ..base import dtypes as D
from ..base.errors import PaddleCoreError, ProgramError
from ..plugins.registry import Provider
from ..spec.attrs import VALUE_FIELD, from_attr_value
from .block import Block
from .operator import ROLES, Operator, check_sub_blocks
from .variable import Initializer, Parameter, Variable

_NUMBERED = re.compile(r"(.+?)_(\d+)(?:\..*)?\Z")  # "split_0.outs_1" -> ("split", 0)


def parse_program_desc(data: bytes, source: str | None = None) -> Any:
    """ProgramDesc from bytes; ``source`` (a path) names them in errors."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        hint = " (text format: pc.load_program on a .pbtxt file)" if isinstance(data, str) else ""
        raise ProgramError(
            f"a serialized ProgramDesc is bytes, as Program.serialize() returns; got "
            f"{type(data).__name__}{hint}"
        )
    try:
        return pb.ProgramDesc.FromString(data)
    except DecodeError as e:
        what = f"{source!r} is" if source else "the data is"
        raise ProgramError(f"{what} not a serialized ProgramDesc: {e}") from None


def program_from_desc(cls: type, desc: Any) -> Any:
    """Build a Program (of class ``cls``) from a ProgramDesc, checking its structure."""
    if desc.version > cls.FORMAT_VERSION:
        raise ProgramError(
            f"the program uses format version {desc.version}; this paddle-core reads up to "
            f"{cls.FORMAT_VERSION} (upgrade paddle-core)"
        )
    if not desc.blocks:
        raise ProgramError("the ProgramDesc has no blocks")
    program = cls()
    program.random_seed = desc.random_seed
    program.blocks = []
    for i, bdesc in enumerate(desc.blocks):
        if bdesc.idx != i or not -1 <= bdesc.parent_idx < i or (i > 0) != (bdesc.parent_idx >= 0):
            raise ProgramError(f"block {i} has idx {bdesc.idx} and parent {bdesc.parent_idx}")
        block = Block(program, i, bdesc.parent_idx)
        program.blocks.append(block)
        for vdesc in bdesc.vars:
            var = _variable(block, vdesc)
            if var.name in block.vars:
                raise ProgramError(f"block {i} declares variable {var.name!r} twice")
            block.vars[var.name] = var
        for odesc in bdesc.ops:
            block.ops.append(_operator(block, odesc))
    for block in program.blocks:  # sub-blocks come after their ops' blocks: checked last
        for op in block.ops:
            names = [a for a, t in op.attr_types.items() if t == pb.BLOCK]
            if names:
                check_sub_blocks(op.type, op.attrs, names, block)
    # Continue unique-name counters after the highest number already used, so ops appended
    # to a loaded program never collide with its names.
    for var in program.list_vars():
        m = _NUMBERED.match(var.name)
        if m:
            prefix, n = m.group(1), int(m.group(2))
            program._name_counts[prefix] = max(program._name_counts.get(prefix, 0), n + 1)
    return program


def _variable(block: Block, vdesc: Any) -> Variable:
    """The Variable (or Parameter) a VarDesc of ``block`` declares."""
    shape = tuple(None if d < 0 else d for d in vdesc.shape)
    try:
        dtype = D.from_enum(vdesc.dtype)
    except PaddleCoreError as e:
        raise ProgramError(f"variable {vdesc.name!r} in block {block.idx}: {e}") from None
    if not vdesc.HasField("parameter"):
        return Variable(
            block,
            vdesc.name,
            shape,
            dtype,
            persistable=vdesc.persistable,
            is_data=vdesc.is_data,
            stop_gradient=vdesc.stop_gradient,
        )
    info = vdesc.parameter
    init = None
    if info.initializer:
        init = Initializer(
            info.initializer, **_attr_dict(info.initializer_attrs, f"parameter {vdesc.name!r}")
        )
    param = Parameter(
        block,
        vdesc.name,
        shape,
        dtype,
        trainable=info.trainable,
        initializer=init,
        optimize_attrs=_attr_dict(info.optimize_attrs, f"parameter {vdesc.name!r}"),
    )
    param.persistable, param.stop_gradient = vdesc.persistable, vdesc.stop_gradient
    return param


def _operator(block: Block, odesc: Any) -> Operator:
    """The Operator an OpDesc of ``block`` holds, each variable it names declared in the block or
    an enclosing one; its outputs (but parameters) get it as the op that computes them."""
    where = f"op {odesc.type!r} (#{len(block.ops)} in block {block.idx})"
    if odesc.role >= len(ROLES):
        raise ProgramError(
            f"{where} has role {odesc.role}, which this paddle-core does not know (upgrade "
            "paddle-core)"
        )
    op = Operator(
        block,
        odesc.type,
        {s.name: list(s.vars) for s in odesc.inputs},
        {s.name: list(s.vars) for s in odesc.outputs},
        _attr_dict(odesc.attrs, f"op {odesc.type!r} in block {block.idx}"),
        {a.name: a.value.type for a in odesc.attrs},
        ROLES[odesc.role],
        _provider(odesc, where),
    )
    for name in op.input_names + op.output_names:
        if block.find_var(name) is None:
            raise ProgramError(f"{where} uses variable {name!r}, which no enclosing block declares")
    for name in op.output_names:
        out = block.find_var(name)
        if out is not None and not isinstance(out, Parameter):
            out.op = op
    return op


def _provider(odesc: Any, owner: str) -> Provider:
    if not odesc.HasField("provider"):
        raise ProgramError(
            f"{owner} records no provider (the plugin, distribution and version that provided "
            "it): every program paddle-core writes records one per op"
        )
    p = odesc.provider
    return Provider(p.plugin, p.distribution, p.version)


def _attr_dict(attrs: Any, owner: str) -> dict[str, Any]:
    for a in attrs:
        if a.value.type not in VALUE_FIELD:
            raise ProgramError(f"{owner}: attr {a.name!r} has no valid type ({a.value.type})")
    return {a.name: from_attr_value(a.value) for a in attrs}
