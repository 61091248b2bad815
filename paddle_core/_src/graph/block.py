"""Block: a list of ops and the variables they use; blocks nest through ``parent_idx``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base.errors import ProgramError, did_you_mean, shown
from ..plugins.registry import get_registry
from . import default_programs
from .append import append
from .operator import Operator
from .variable import (
    Initializer,
    Parameter,
    Variable,
    format_shape,
    valid_dtype,
    valid_shape,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: programs build on blocks
    from .program import Program


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

    def free_name(self, name: str) -> str:
        """``name``, with underscores added until no variable this block sees has it: a name
        for a value a program pass makes, after the one it stands for."""
        while self.find_var(name) is not None:
            name += "_"
        return name

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
            valid_shape(shape, f"variable {name!r}"),
            valid_dtype(dtype, f"variable {name!r}"),
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
        """A new parameter; whichever block this is called on, it lands in the global block.

        With an ``initializer``, the op that gives the parameter its first value is appended
        to the startup program (``program_guard(main, startup)``, else the default one), so
        that running the startup program once initialises every parameter in the scope.
        """
        block = self.program.global_block()
        name = self.program.unique_name("param") if name is None else name
        block._check_new(name)
        dims = valid_shape(shape, f"parameter {name!r}")
        if None in dims:
            raise ProgramError(
                f"parameter {name!r}: every dimension must be known, got {format_shape(dims)}"
            )
        param = Parameter(
            block,
            name,
            dims,
            valid_dtype(dtype, f"parameter {name!r}"),
            trainable=trainable,
            initializer=initializer,
            optimize_attrs=optimize_attrs,
        )
        if initializer is not None:
            if not isinstance(initializer, Initializer):
                raise ProgramError(
                    f"parameter {name!r}: initializer must be a paddle_core.Initializer (e.g. "
                    f"pc.initializer.Constant(0.0)), got {type(initializer).__name__}"
                )
            append_initializer(param, initializer, default_programs.startup.global_block())
        return block._add_var(param)  # type: ignore[return-value]

    def _check_new(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ProgramError(f"variable names must be non-empty strings, got {shown(name)}")
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
        info = get_registry().op(type)
        inputs, attrs = _given(inputs), _given(attrs)
        return append(self, info, inputs, attrs, outputs)[0]

    def prepend_op(
        self,
        type: str,
        inputs: dict[str, Any] | None = None,
        outputs: dict[str, Any] | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> Operator:
        """Like ``append_op``, inserting the op first (e.g. initializers, loaders)."""
        return self.insert_op(0, type, inputs, outputs, attrs)

    def insert_op(
        self,
        index: int,
        type: str,
        inputs: dict[str, Any] | None = None,
        outputs: dict[str, Any] | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> Operator:
        """Like ``append_op``, inserting the op at ``index`` (a program pass's conversions)."""
        info = get_registry().op(type)
        inputs, attrs = _given(inputs), _given(attrs)
        return append(self, info, inputs, attrs, outputs, position=index)[0]

    def rewrite_op(
        self,
        op: Operator,
        inputs: dict[str, Any] | None = None,
        outputs: dict[str, Any] | None = None,
        attrs: dict[str, Any] | None = None,
        *,
        new_type: str | None = None,
    ) -> Operator:
        """Rebind an op of this block in place (a program pass's tool): ``inputs``, ``outputs``
        (slot -> a variable or name, or a list of them) and ``attrs`` replace the ones given
        (slots and attrs not given stay), checked and shape-inferred as ``append_op`` checks a
        new op. With ``new_type`` the op becomes an op of that type (a fused op computing what
        it computed), of exactly the slots and attrs given. The op keeps its place, role and
        identity, so a planner can tell it from ops a pass inserted, and draws the random
        numbers it drew before. Raises like ``append_op``; then the op is unchanged."""
        if op.block is not self:
            raise ProgramError(f"op {op.type!r} is not an op of block {self.idx}")
        info = get_registry().op(op.type if new_type is None else new_type)
        kept = new_type is None  # the slots and attrs not given stay
        duplicable = {slot for slot, dup, _, _ in info.signature().inputs if dup}
        bound = {}  # as append_op takes them: one name (not a list) for a slot of one variable
        for slot, value in {**(op.inputs if kept else {}), **_given(inputs)}.items():
            if isinstance(value, (list, tuple)) and len(value) == 1 and slot not in duplicable:
                value = value[0]
            if value is not None and value != []:
                bound[slot] = value
        new, out_vars = append(
            self,
            info,
            bound,
            {**(op.attrs if kept else {}), **_given(attrs)},
            {**(op.outputs if kept else {}), **_given(outputs)},
        )
        self.ops.pop()  # appended last: its fields move into ``op``
        op.type, op.provider = new.type, new.provider
        op.inputs, op.outputs = new.inputs, new.outputs
        op.attrs, op.attr_types = new.attrs, new.attr_types
        for vs in out_vars.values():
            for v in vs:
                if type(v) is not Parameter:
                    v.op = op
        return op

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


def _given(mapping: Any) -> Any:
    """An optional inputs or attrs argument: {} for None (not for any false value: a NumPy
    array has no truth value); appending checks the rest."""
    return {} if mapping is None else mapping


def append_initializer(var: Variable, initializer: Initializer, startup: Block) -> None:
    """Append ``initializer``'s op writing persistable ``var`` (declared there too, by name) to
    the startup program's global block ``startup``, so that running the startup program gives
    ``var`` its first value in the scope. The op's ``shape`` and ``dtype`` attrs, when it
    declares them and the initializer does not set them, are the variable's."""
    info = get_registry().op(initializer.op)
    attrs = dict(initializer.attrs)
    for attr, value in (("shape", list(var.shape)), ("dtype", var.dtype)):
        if attr in info.attr_types and attr not in attrs:
            attrs[attr] = value
    existing = startup.vars.get(var.name)
    if existing is not None:
        if (existing.shape, existing.dtype) != (var.shape, var.dtype):
            kind = "parameter" if isinstance(var, Parameter) else "variable"
            raise ProgramError(
                f"{kind} {var.name!r} is {var.dtype}{list(var.shape)}, but the startup "
                f"program already initialises a {existing.dtype}{list(existing.shape)} of that "
                "name (give each model its own: program_guard(main, startup))"
            )
        return  # created before (another program sharing this startup): initialised already
    target = startup.create_var(var.name, var.shape, var.dtype, persistable=True)
    output = info.signature().output_slots[0]
    try:
        append(startup, info, {}, attrs, {output: target})
    except Exception:
        del startup.vars[var.name]  # nothing is left half-made
        raise
