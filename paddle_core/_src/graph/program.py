"""Program: the compile-time description of a computation, and the default programs.

A Program is a list of blocks (variables, parameters, operators); each maps to its protobuf
desc (ProgramDesc, BlockDesc, VarDesc, OpDesc), and ``to_desc`` / ``from_desc`` convert
exactly, so a saved program loads back byte-for-byte identical. Python objects are the working
form (appending an op must be cheap); descs are built when saving.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from ...proto import framework_pb2 as pb
from ..base.errors import ProgramError
from ..plugins.registry import get_registry
from . import default_programs
from .block import Block
from .desc import parse_program_desc, program_from_desc
from .draw import render_program
from .operator import ROLES
from .provenance import check_ops
from .shape_inference import ShapeContext, infer
from .variable import Parameter, Variable


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
        self.op_role = "forward"  # the role of ops appended now (see role_guard)
        self._random_seed = 0
        # Plans prepared for this program, per executor (run/executor.py). Kept here, not in the
        # executor, so they go with the program: an executor never keeps alive what it ran.
        self.plan_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @property
    def version(self) -> int:
        return self._version

    @property
    def random_seed(self) -> int:
        """Seeds the random numbers of ops declared ``random`` (with each op's place in the
        program): the same seed gives the same numbers run after run."""
        return self._random_seed

    @random_seed.setter
    def random_seed(self, seed: int) -> None:
        if type(seed) is not int or not 0 <= seed < 2**64:
            raise ProgramError(f"random_seed must be an int in [0, 2**64), got {seed!r}")
        self._random_seed = seed
        self._version += 1  # plans carry the ops' keys

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

    def _repr_svg_(self) -> str:
        """Notebooks show a program as its drawing (``pc.draw_program`` writes it to a file)."""
        return render_program(self, "svg").decode("utf-8")

    # -- descs ------------------------------------------------------------------------------

    def to_desc(self) -> Any:
        desc = pb.ProgramDesc(version=self.FORMAT_VERSION, random_seed=self.random_seed)
        for block in self.blocks:
            block.to_desc(desc.blocks.add())
        return desc

    def serialize(self) -> bytes:
        """The ProgramDesc as protobuf bytes."""
        return self.to_desc().SerializeToString()

    @classmethod
    def from_desc(cls, desc: Any, *, source: str | None = None) -> Program:
        """Rebuild a program from a ProgramDesc. Reads data only: no plugin code runs.

        Every op type must be provided by a loaded plugin: the missing ones raise one
        OpNotFoundError naming each and the package to install (from the provider the program
        recorded); an op provided by another distribution, or an older version, than the
        recorded one gives a ProviderMismatchWarning. ``source`` (a path) names the program."""
        program = program_from_desc(cls, desc)
        check_ops(program, source)
        return program

    @classmethod
    def parse(cls, data: bytes) -> Program:
        """Rebuild a program from ``serialize()`` bytes (checked like ``from_desc``)."""
        return cls.from_desc(parse_program_desc(data))

    @contextlib.contextmanager
    def role_guard(self, role: str) -> Iterator[None]:
        """Ops appended inside the ``with`` block have ``role``: "forward" (the default),
        "backward" (what ``gradients`` appends) or "optimize" (parameter updates)."""
        if role not in ROLES:
            raise ProgramError(f"op role {role!r} is none of {', '.join(ROLES)}")
        saved, self.op_role = self.op_role, role
        try:
            yield
        finally:
            self.op_role = saved

    def clone(self, for_test: bool = False) -> Program:
        """An independent deep copy (through the desc, so it is exactly what would be saved).

        ``for_test`` gives the evaluation program: its forward ops only (backward and optimizer
        ops are dropped, with the variables only they wrote), and every op that has an
        ``is_test`` attr set to True (dropout, batch norm: inference mode). Running it never
        updates a parameter.
        """
        program = program_from_desc(Program, self.to_desc())  # (its ops are known: no check)
        if for_test:
            _keep_forward(program)
        return program


def _keep_forward(program: Program) -> None:
    """Turn a copy of a program into its evaluation program (see ``Program.clone``)."""
    for block in program.blocks:
        written = {n for op in block.ops for n in op.output_names}
        block.ops = [op for op in block.ops if op.role == "forward"]
        for op in block.ops:
            if op.attrs.get("is_test") is False:
                _to_inference(op)
        used = {n for op in block.ops for n in op.input_names + op.output_names}
        for name in written - used:  # what only dropped ops (or dropped outputs) wrote
            var = block.vars.get(name)
            if var is not None and not var.persistable and not var.is_data:
                del block.vars[name]
    program._version += 1


def _to_inference(op: Any) -> None:
    """Set an op's ``is_test`` and keep the outputs its shape rule still gives (a dropout's mask
    may exist only while training)."""
    op.set_attr("is_test", True)
    info = get_registry().op(op.type)
    inputs = {slot: [op.block.var(n) for n in names] for slot, names in op.inputs.items()}
    ctx = ShapeContext(op.type, inputs, op.attrs, info.signature().output_slots, op.block)
    infer(info, ctx)
    op.outputs = {slot: names for slot, names in op.outputs.items() if slot in ctx.outputs}


# -- the default programs and program_guard -------------------------------------------------

default_programs.main = Program()
default_programs.startup = Program()


def default_main_program() -> Program:
    """The program ops are appended to outside any ``program_guard``."""
    return default_programs.main


def default_startup_program() -> Program:
    """The program initializers go to outside any ``program_guard``."""
    return default_programs.startup


@contextlib.contextmanager
def program_guard(
    main_program: Program, startup_program: Program | None = None
) -> Iterator[Program]:
    """Make ``main_program`` (and ``startup_program``) the defaults inside the ``with`` block."""
    if not isinstance(main_program, Program):
        raise ProgramError(f"program_guard expects a Program, got {type(main_program).__name__}")
    if startup_program is not None and not isinstance(startup_program, Program):
        raise ProgramError(
            f"program_guard expects a startup Program, got {type(startup_program).__name__}"
        )
    saved = default_programs.main, default_programs.startup
    default_programs.main = main_program
    if startup_program is not None:
        default_programs.startup = startup_program
    try:
        yield main_program
    finally:
        default_programs.main, default_programs.startup = saved


def data(name: str, shape: Sequence[int | None], dtype: Any = "float32") -> Variable:
    """Declare an input fed at run time, in the global block of the current program.

    Use None (or -1) for dimensions known only at run time, typically the batch size.
    """
    var = default_programs.main.current_block().create_global_var(
        name, shape, dtype, stop_gradient=True
    )
    var.is_data = True
    return var
