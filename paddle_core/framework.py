"""Program, Block, Variable, Parameter, Operator: the compile-time description of a computation.

Each class maps to its protobuf desc (ProgramDesc, BlockDesc, VarDesc, OpDesc); ``to_desc`` and
``from_desc`` convert exactly, so a saved program loads back byte-for-byte identical. Python
objects are the working form (appending an op must be cheap); descs are built when saving.
Shapes are tuples with ``None`` for dimensions unknown until run time (``-1`` in descs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from . import dtypes as D
from .errors import PaddleCoreError, ProgramError, did_you_mean

Shape = tuple  # tuple[int | None, ...]


def _shape(shape: Sequence[int | None] | None, what: str) -> Shape:
    if shape is None:
        return ()
    try:
        dims = tuple(None if d is None or d == -1 else int(d) for d in shape)
    except (TypeError, ValueError):
        raise ProgramError(
            f"{what}: shape must be a sequence of ints or None, got {shape!r}"
        ) from None
    if any(d is not None and d < 0 for d in dims):
        raise ProgramError(f"{what}: dimensions must be >= 0 or None (unknown), got {list(shape)}")
    return dims


def _dtype(dtype: Any, what: str) -> str:
    try:
        return D.canonical(dtype)
    except PaddleCoreError as e:
        raise ProgramError(f"{what}: {e}") from None


def format_shape(shape: Shape) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


class Variable:
    """A named tensor slot in a block. ``op`` is the operator that last wrote it, if any."""

    __slots__ = (
        "block",
        "name",
        "shape",
        "dtype",
        "op",
        "_persistable",
        "is_data",
        "stop_gradient",
    )

    def __init__(
        self,
        block: Block,
        name: str,
        shape: Shape,
        dtype: str,
        *,
        persistable: bool = False,
        is_data: bool = False,
        stop_gradient: bool = False,
    ) -> None:
        self.block = block
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.op: Operator | None = None
        self._persistable = persistable
        self.is_data = is_data
        self.stop_gradient = stop_gradient

    @property
    def persistable(self) -> bool:
        """Whether the value lives in the scope across runs (parameters, optimizer state)."""
        return self._persistable

    @persistable.setter
    def persistable(self, value: bool) -> None:
        self._persistable = bool(value)
        self.block.program._version += 1  # plans differ: the value now comes from the scope

    @property
    def program(self) -> Program:
        return self.block.program

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Variable({self.name!r}, shape={format_shape(self.shape)}, dtype={self.dtype!r})"

    def _describe(self) -> str:
        flags = [
            label
            for label, on in (
                ("data", self.is_data),
                ("persistable", self.persistable),
                ("no grad", self.stop_gradient and not self.is_data),
            )
            if on
        ]
        flagged = f"  ({', '.join(flags)})" if flags else ""
        return f"var {self.name} : {self.dtype}{format_shape(self.shape)}{flagged}"

    def to_desc(self, desc: Any) -> None:
        desc.name = self.name
        desc.dtype = D.to_enum(self.dtype)
        desc.shape.extend(-1 if d is None else d for d in self.shape)
        desc.persistable = self.persistable
        desc.is_data = self.is_data
        desc.stop_gradient = self.stop_gradient


class Initializer:
    """How a parameter gets its first value: an op type and its attrs (e.g. fill_constant)."""

    __slots__ = ("op", "attrs")

    def __init__(self, op: str, **attrs: Any) -> None:
        self.op = op
        self.attrs = attrs

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.attrs.items())
        return f"Initializer({self.op!r}{args})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Initializer) and (self.op, self.attrs) == (other.op, other.attrs)


class Parameter(Variable):
    """A persistable, trainable variable; always lives in the global block.

    A parameter is never an op's computed output (``op`` stays None): initializers and
    optimizers update it in place.
    """

    __slots__ = ("trainable", "initializer", "optimize_attrs")

    def __init__(
        self,
        block: Block,
        name: str,
        shape: Shape,
        dtype: str,
        *,
        trainable: bool = True,
        initializer: Initializer | None = None,
        optimize_attrs: dict[str, Any] | None = None,
    ):
        super().__init__(block, name, shape, dtype, persistable=True)
        self.trainable = trainable
        self.initializer = initializer
        self.optimize_attrs = dict(optimize_attrs or {})

    def __repr__(self) -> str:
        return f"Parameter({self.name!r}, shape={format_shape(self.shape)}, dtype={self.dtype!r})"

    def _describe(self) -> str:
        text = f"param {self.name} : {self.dtype}{format_shape(self.shape)}"
        text += "" if self.trainable else "  (frozen)"
        if self.initializer is not None:
            text += f"  init={self.initializer.op}({_attrs_text(self.initializer.attrs)})"
        return text

    def to_desc(self, desc: Any) -> None:
        super().to_desc(desc)
        from .attrs import infer_attr_value

        info = desc.parameter
        info.trainable = self.trainable
        if self.initializer is not None:
            info.initializer = self.initializer.op
            for name, value in self.initializer.attrs.items():
                infer_attr_value(value, info.initializer_attrs.add(name=name).value)
        for name, value in self.optimize_attrs.items():
            infer_attr_value(value, info.optimize_attrs.add(name=name).value)


def _attrs_text(attrs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in attrs.items())


class OpAttrs(dict):
    """An op's attrs: a dict that refuses changes, since a plan prepared for the old values
    would go on running them. ``Operator.set_attr`` changes one the safe way."""

    __slots__ = ("op_type",)

    def __init__(self, values: dict[str, Any], op_type: str) -> None:
        super().__init__(values)
        self.op_type = op_type

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise ProgramError(
            f"op {self.op_type!r}: attrs are read-only; change one with "
            "op.set_attr(name, value), which re-validates it and has executors plan again"
        )

    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    update = pop = popitem = clear = setdefault = _refuse  # type: ignore[assignment]


class Operator:
    """One op in a block: its type, the variable names bound to each slot, and its attrs."""

    __slots__ = ("block", "type", "inputs", "outputs", "attrs", "attr_types")

    def __init__(
        self,
        block: Block,
        type: str,
        inputs: dict[str, list[str]],
        outputs: dict[str, list[str]],
        attrs: dict[str, Any],
        attr_types: dict[str, int],
    ) -> None:
        self.block = block
        self.type = type
        self.inputs = inputs  # slot -> variable names
        self.outputs = outputs
        # Validated Python values, every declared attr; read-only, since a plan prepared for
        # the old values would go on running them: change one with set_attr.
        self.attrs = OpAttrs(attrs, type)
        self.attr_types = attr_types  # attr -> AttrType (shared with the op's registry entry)

    def input(self, slot: str) -> list[str]:
        return self.inputs.get(slot, [])

    def output(self, slot: str) -> list[str]:
        return self.outputs.get(slot, [])

    def attr(self, name: str) -> Any:
        try:
            return self.attrs[name]
        except KeyError:
            raise ProgramError(
                f"op {self.type!r} has no attr {name!r}{did_you_mean(name, self.attrs)}"
            ) from None

    def set_attr(self, name: str, value: Any) -> None:
        """Change one attr: validated like at append time, and the program's version moves on
        so executors plan again. Raises AttrError naming the op and attr."""
        from .registry import get_registry

        self.attr(name)  # a ProgramError naming close matches for an unknown attr
        sig = get_registry().op(self.type).signature()
        self.attrs = OpAttrs(sig.validate({**self.attrs, name: value}), self.type)
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
        attrs = f"  {{{_attrs_text(self.attrs)}}}" if self.attrs else ""
        return f"{', '.join(self.output_names)} = {self.type}({inputs}){attrs}"

    def to_desc(self, desc: Any) -> None:
        from .attrs import to_attr_value

        desc.type = self.type
        for slot, names in self.inputs.items():
            desc.inputs.add(name=slot, vars=names)
        for slot, names in self.outputs.items():
            desc.outputs.add(name=slot, vars=names)
        for name, value in self.attrs.items():
            to_attr_value(self.attr_types[name], value, desc.attrs.add(name=name).value)


class Block:
    """A list of ops and the variables they use; blocks nest through ``parent_idx``."""

    def __init__(self, program: Program, idx: int, parent_idx: int = -1) -> None:
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.vars: dict[str, Variable] = {}
        self.ops: list[Operator] = []

    @property
    def parent(self) -> Block | None:
        return self.program.blocks[self.parent_idx] if self.parent_idx >= 0 else None

    def __repr__(self) -> str:
        return f"<Block {self.idx} (parent {self.parent_idx}): {len(self.vars)} vars, {len(self.ops)} ops>"

    # -- variables --------------------------------------------------------------------------

    def find_var(self, name: str) -> Variable | None:
        """The variable ``name`` in this block or an ancestor, or None."""
        block: Block | None = self
        while block is not None:
            var = block.vars.get(name)
            if var is not None:
                return var
            block = block.parent
        return None

    def var(self, name: str) -> Variable:
        """Like ``find_var`` but raises ProgramError naming close matches."""
        var = self.find_var(name)
        if var is None:
            visible: list[str] = []
            block: Block | None = self
            while block is not None:
                visible += block.vars
                block = block.parent
            raise ProgramError(
                f"no variable {name!r} in block {self.idx}{did_you_mean(name, visible)}"
            )
        return var

    def create_var(
        self,
        name: str | None = None,
        shape: Sequence[int | None] | None = None,
        dtype: Any = "float32",
        *,
        persistable: bool = False,
        stop_gradient: bool = False,
    ) -> Variable:
        """A new variable in this block (named uniquely when ``name`` is None)."""
        name = self.program.unique_name("tmp") if name is None else name
        self._check_new(name)
        var = Variable(
            self,
            name,
            _shape(shape, f"variable {name!r}"),
            _dtype(dtype, f"variable {name!r}"),
            persistable=persistable,
            stop_gradient=stop_gradient,
        )
        return self._add_var(var)

    def create_global_var(self, *args: Any, **kwargs: Any) -> Variable:
        """Like ``create_var``, in the global block."""
        return self.program.global_block().create_var(*args, **kwargs)

    def create_parameter(
        self,
        name: str | None = None,
        shape: Sequence[int] = (),
        dtype: Any = "float32",
        *,
        trainable: bool = True,
        initializer: Initializer | None = None,
        optimize_attrs: dict[str, Any] | None = None,
    ) -> Parameter:
        """A new parameter; whichever block this is called on, it lands in the global block."""
        block = self.program.global_block()
        name = self.program.unique_name("param") if name is None else name
        block._check_new(name)
        dims = _shape(shape, f"parameter {name!r}")
        if None in dims:
            raise ProgramError(
                f"parameter {name!r}: every dimension must be known, got {list(shape)}"
            )
        param = Parameter(
            block,
            name,
            dims,
            _dtype(dtype, f"parameter {name!r}"),
            trainable=trainable,
            initializer=initializer,
            optimize_attrs=optimize_attrs,
        )
        return block._add_var(param)  # type: ignore[return-value]

    def _check_new(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ProgramError(f"variable names must be non-empty strings, got {name!r}")
        if name in self.vars:
            raise ProgramError(f"block {self.idx} already has a variable named {name!r}")

    def _add_var(self, var: Variable) -> Variable:
        self.vars[var.name] = var
        self.program._version += 1
        return var

    # -- operators --------------------------------------------------------------------------

    def append_op(
        self,
        type: str,
        inputs: dict[str, Any] | None = None,
        outputs: dict[str, Any] | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> Operator:
        """Append an op: attrs validated, inputs checked and output shapes inferred now.

        ``inputs``/``outputs`` map slot names to a Variable, a variable name, or a list of them
        (duplicable slots). Outputs not given are created, named uniquely.
        """
        from .append import append

        return append(self, type, inputs or {}, attrs or {}, outputs)

    def prepend_op(
        self,
        type: str,
        inputs: dict[str, Any] | None = None,
        outputs: dict[str, Any] | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> Operator:
        """Like ``append_op``, inserting the op first (e.g. initializers, loaders)."""
        from .append import append

        return append(self, type, inputs or {}, attrs or {}, outputs, position=0)

    def remove_op(self, index: int) -> Operator:
        op = self.ops.pop(index)
        self.program._version += 1
        return op

    # -- descs ------------------------------------------------------------------------------

    def to_desc(self, desc: Any) -> None:
        desc.idx = self.idx
        desc.parent_idx = self.parent_idx
        for var in self.vars.values():
            var.to_desc(desc.vars.add())
        for op in self.ops:
            op.to_desc(desc.ops.add())

    def _describe(self) -> list[str]:
        head = f"block {self.idx}" + (
            f" (parent {self.parent_idx})" if self.parent_idx >= 0 else ""
        )
        lines = [head + ":"]
        lines += ["  " + v._describe() for v in self.vars.values()]
        lines += ["  " + op._describe() for op in self.ops]
        return lines


class Program:
    """A whole computation: a list of blocks, block 0 being the global block.

    ``version`` increases on every change made through the API; executors key their prepared
    plans on it.
    """

    FORMAT_VERSION = 1

    def __init__(self) -> None:
        self.blocks: list[Block] = [Block(self, 0)]
        self.current_block_idx = 0
        self._version = 0
        self._name_counts: dict[str, int] = {}

    @property
    def version(self) -> int:
        return self._version

    def global_block(self) -> Block:
        return self.blocks[0]

    def current_block(self) -> Block:
        return self.blocks[self.current_block_idx]

    def block(self, idx: int) -> Block:
        if not 0 <= idx < len(self.blocks):
            raise ProgramError(f"no block {idx}; the program has {len(self.blocks)}")
        return self.blocks[idx]

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    def create_block(self, parent_idx: int | None = None) -> Block:
        """A new block, child of the current one (or of ``parent_idx``); it becomes current."""
        parent = self.current_block_idx if parent_idx is None else self.block(parent_idx).idx
        block = Block(self, len(self.blocks), parent)
        self.blocks.append(block)
        self.current_block_idx = block.idx
        self._version += 1
        return block

    def rollback(self) -> None:
        """Make the current block's parent current again (after building a sub-block)."""
        parent = self.current_block().parent_idx
        if parent < 0:
            raise ProgramError("rollback() called on the global block")
        self.current_block_idx = parent

    def unique_name(self, prefix: str) -> str:
        """``prefix_N`` with N counting per prefix within this program."""
        n = self._name_counts.get(prefix, 0)
        self._name_counts[prefix] = n + 1
        return f"{prefix}_{n}"

    def list_vars(self) -> Iterator[Variable]:
        for block in self.blocks:
            yield from block.vars.values()

    def all_parameters(self) -> list[Parameter]:
        return [v for v in self.global_block().vars.values() if isinstance(v, Parameter)]

    def __str__(self) -> str:
        lines = [f"Program ({len(self.blocks)} block{'s' if len(self.blocks) > 1 else ''})"]
        for block in self.blocks:
            lines += block._describe()
        return "\n".join(lines)

    def __repr__(self) -> str:
        ops = sum(len(b.ops) for b in self.blocks)
        return f"<Program: {len(self.blocks)} blocks, {ops} ops, version {self._version}>"

    # -- descs ------------------------------------------------------------------------------

    def to_desc(self) -> Any:
        from .proto import framework_pb2 as pb

        desc = pb.ProgramDesc(version=self.FORMAT_VERSION)
        for block in self.blocks:
            block.to_desc(desc.blocks.add())
        return desc

    def serialize(self) -> bytes:
        """The ProgramDesc as protobuf bytes."""
        return self.to_desc().SerializeToString()

    @classmethod
    def from_desc(cls, desc: Any) -> Program:
        """Rebuild a program from a ProgramDesc. Reads data only: no plugin code runs."""
        from .serialization import program_from_desc

        return program_from_desc(cls, desc)

    @classmethod
    def parse(cls, data: bytes) -> Program:
        """Rebuild a program from ``serialize()`` bytes."""
        from .serialization import parse_program_desc

        return cls.from_desc(parse_program_desc(data))

    def clone(self) -> Program:
        """An independent deep copy (through the desc, so it is exactly what would be saved)."""
        return Program.from_desc(self.to_desc())


# -- the default program and program_guard ---------------------------------------------------

_main_program = Program()
_startup_program = Program()


def default_main_program() -> Program:
    """The program ops are appended to outside any ``program_guard``."""
    return _main_program


def default_startup_program() -> Program:
    """The program initializers go to outside any ``program_guard``."""
    return _startup_program


@contextlib.contextmanager
def program_guard(
    main_program: Program, startup_program: Program | None = None
) -> Iterator[Program]:
    """Make ``main_program`` (and ``startup_program``) the defaults inside the ``with`` block."""
    global _main_program, _startup_program
    if not isinstance(main_program, Program):
        raise ProgramError(f"program_guard expects a Program, got {type(main_program).__name__}")
    saved = _main_program, _startup_program
    _main_program = main_program
    if startup_program is not None:
        _startup_program = startup_program
    try:
        yield main_program
    finally:
        _main_program, _startup_program = saved


def data(name: str, shape: Sequence[int | None], dtype: Any = "float32") -> Variable:
    """Declare an input fed at run time, in the global block of the current program.

    Use None (or -1) for dimensions known only at run time, typically the batch size.
    """
    var = _main_program.current_block().create_global_var(name, shape, dtype, stop_gradient=True)
    var.is_data = True
    return var
