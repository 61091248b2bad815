"""Drawing a program: Graphviz DOT text, and SVG or PNG laid out by Graphviz's ``dot``.

What is drawn: each op a rounded box naming its type and its attrs that differ from their
declared defaults (every attr when no loaded plugin declares the op); each variable a small
node with its name, dtype and shape, between the op that writes it and the ops that read it.
Parameters are yellow cylinders, other persistable variables (optimizer state) grey ones, fed
variables green boxes. A variable written again (an optimizer's update, a loop's result)
gets a new node, so the drawing stays a graph that flows one way. An op holding sub-blocks
(``while_block``, ``cond_block``, ``recurrent_block``) is framed with them: each sub-block a
cluster of its own ops and variables, whose edges reach the outer variables they read.

The DOT text needs nothing but this module. Its node names come from block indices, op
positions and variable names, and its lines follow the program's order, so one program always
gives the same text, and the same SVG or PNG from one Graphviz build. Layout is Graphviz's,
from the ``pygraphviz`` wheel, which bundles the Graphviz libraries: nothing has to be
installed on the system.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from ...proto import framework_pb2 as pb
from ..base.errors import PaddleCoreError, ProgramError, shown
from ..plugins.registry import get_registry
from .variable import Parameter, format_shape

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: programs build on this module (Program._repr_svg_)
    from .program import Program

# Output file suffix -> format.
FORMATS = {".svg": "svg", ".png": "png", ".dot": "dot", ".gv": "dot"}

# How much of a label is shown: the rest is elided, and the whole is the node's tooltip.
MAX_ATTRS = 8  # attr lines in an op's box
MAX_ITEMS = 4  # items of a list attr
MAX_TEXT = 32  # characters of a name or string attr

_GRAPH = (
    '  graph [rankdir=TB nodesep=0.25 ranksep=0.3 bgcolor="white" fontname="Helvetica" '
    "fontsize=10];\n"
    '  node [fontname="Helvetica" fontsize=9 margin="0.08,0.03" height=0.3];\n'
    '  edge [color="#666666" arrowsize=0.6];\n'
)
# Fill colours of an op's box by its role: the model, its gradients, its parameter updates.
_ROLE_FILL = {"forward": "#dbe9f6", "backward": "#f8e0d4", "optimize": "#e2f0d9"}


def to_dot(program: Program) -> str:
    """The program as Graphviz DOT text (``digraph "program" {...}``)."""
    if not callable(getattr(program, "global_block", None)):  # (Program builds on this module)
        raise ProgramError(f"drawing expects a Program, got {type(program).__name__}")
    drawing = _Drawing(program)
    drawing.walk(program.global_block())
    for block in program.blocks[1:]:  # a block no op holds: a cluster in its parent's
        if block.idx not in drawing.holders:
            drawing.groups[block.parent_idx].append(("cluster", block))
            drawing.walk(block)
    lines = ['digraph "program" {\n', _GRAPH, *drawing.group(0, "  "), *drawing.edges, "}\n"]
    return "".join(lines)


def render_program(program: Program, format: str = "svg") -> bytes:
    """The drawing of ``program`` as the bytes of a file: ``format`` is "svg", "png" or "dot"."""
    if format not in ("svg", "png", "dot"):
        raise ProgramError(f'cannot draw a program as {format!r}: formats are "svg", "png", "dot"')
    dot = to_dot(program)
    return dot.encode("utf-8") if format == "dot" else _layout(dot, format)


def draw_program(program: Program, path: str | os.PathLike) -> None:
    """Write the drawing of ``program`` to ``path``: its suffix (.svg, .png, .dot or .gv) gives
    the format. DOT text needs no renderer; SVG and PNG are laid out by Graphviz."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not isinstance(text, str) or not text:
        raise ProgramError(
            f"cannot draw the program: the path must be a non-empty str or os.PathLike, "
            f"got {shown(path)}"
        )
    data = render_program(program, format_of(text))
    try:
        with open(text, "wb") as f:
            f.write(data)
    except OSError as e:
        raise ProgramError(f"cannot draw the program to {text!r}: {e.strerror or e}") from None


def format_of(path: str) -> str:
    """The format a drawing's file name asks for; ProgramError naming the suffixes known."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FORMATS:
        known = ", ".join(FORMATS)
        got = f"its suffix {suffix!r}" if suffix else "it has no suffix"
        raise ProgramError(
            f"cannot draw the program to {path!r}: {got} names no format; use one of {known}"
        )
    return FORMATS[suffix]


class _Drawing:
    """The nodes and edges of one program, found by walking its blocks in order."""

    def __init__(self, program: Program) -> None:
        self.registry = get_registry()
        # What each block's cluster holds, in order: node statements, an op holding sub-blocks
        # ("frame": drawn as a frame around the op and its sub-blocks' clusters), and child
        # blocks no op holds ("cluster").
        self.groups: dict[int, list[Any]] = {b.idx: [] for b in program.blocks}
        self.edges: list[str] = []
        self.holders: dict[int, str] = {}  # sub-block -> "op_type.attr" of the op holding it
        self.current: dict[tuple[int, str], str] = {}  # (declaring block, name) -> its node
        self.versions: dict[tuple[int, str], int] = {}
        self.first_reads: set[str] = set()  # nodes of variables read before any op wrote them
        self._edge_set: set[tuple[str, str]] = set()

    def walk(self, block: Any) -> None:
        for i, op in enumerate(block.ops):
            node = f"op:{block.idx}:{i}"
            for name in op.input_names:
                self.edge(self.read(block, name), node)
            statement = f"{_quote(node)} [{_op_style(op, self.registry)}];\n"
            subs = []
            for attr, idx in op.attrs.items():
                if (
                    op.attr_types.get(attr) == pb.BLOCK
                    and type(idx) is int
                    and 0 < idx < len(block.program.blocks)
                    and idx not in self.holders
                ):
                    self.holders[idx] = f"{op.type}.{attr}"
                    subs.append(block.program.blocks[idx])
            if subs:
                self.groups[block.idx].append(("frame", node, statement, subs))
                before = dict(self.current)
                for sub in subs:
                    self.walk(sub)
                # What the sub-blocks wrote stays in them; what they read first (a parameter
                # created in a loop's body) is drawn once, for the ops after them too.
                self.current = {
                    key: before.get(key, node)
                    for key, node in self.current.items()
                    if key in before or node in self.first_reads
                }
            else:
                self.groups[block.idx].append(statement)
            for name in op.output_names:
                self.edge(node, self.write(block, name))
        for var in block.vars.values():  # fed variables no op reads are drawn all the same
            if var.is_data and (block.idx, var.name) not in self.current:
                self.read(block, var.name)

    def read(self, block: Any, name: str) -> str:
        """The node of variable ``name`` as ops of ``block`` see it now (made on first use, in
        the cluster of the block that declares it)."""
        var = block.find_var(name)
        key = (var.block.idx if var is not None else block.idx, name)
        if key not in self.current:
            self.current[key] = self.node(key, var, key[0])
            self.first_reads.add(self.current[key])
        return self.current[key]

    def write(self, block: Any, name: str) -> str:
        """A new node for variable ``name``, written by an op of ``block`` (in its cluster)."""
        var = block.find_var(name)
        key = (var.block.idx if var is not None else block.idx, name)
        self.current[key] = self.node(key, var, block.idx)
        return self.current[key]

    def node(self, key: tuple[int, str], var: Any, group: int) -> str:
        version = self.versions.get(key, 0)
        self.versions[key] = version + 1
        node = f"var:{key[0]}:{version}:{key[1]}"
        self.groups[group].append(f"{_quote(node)} [{_var_style(key[1], var)}];\n")
        return node

    def edge(self, tail: str, head: str) -> None:
        if (tail, head) not in self._edge_set:  # an op reading one variable twice: one edge
            self._edge_set.add((tail, head))
            self.edges.append(f"  {_quote(tail)} -> {_quote(head)};\n")

    def group(self, idx: int, indent: str) -> list[str]:
        """The DOT lines of block ``idx``'s nodes and nested clusters."""
        lines = []
        for item in self.groups[idx]:
            if isinstance(item, str):
                lines.append(indent + item)
            elif item[0] == "cluster":
                lines += self.cluster(item[1], indent)
            else:
                _, node, statement, subs = item
                lines += [
                    f"{indent}subgraph {_quote('cluster_' + node)} {{\n",
                    f'{indent}  graph [label="" style="rounded,dashed" color="#888888"];\n',
                    f"{indent}  {statement}",
                ]
                for sub in subs:
                    lines += self.cluster(sub, indent + "  ")
                lines.append(f"{indent}}}\n")
        return lines

    def cluster(self, block: Any, indent: str) -> list[str]:
        holder = f" ({self.holders[block.idx]})" if block.idx in self.holders else ""
        return [
            f'{indent}subgraph "cluster_b{block.idx}" {{\n',
            f"{indent}  graph [label={_quote(f'block {block.idx}{holder}')} labeljust=l "
            'style="rounded,filled" fillcolor="#f7f7f7" color="#aaaaaa"];\n',
            *(
                self.group(block.idx, indent + "  ")
                # (Graphviz leaves out an empty cluster: a block without ops says so)
                or [
                    f'{indent}  "empty:{block.idx}" [label="(no ops)" shape=plaintext '
                    'fontcolor="#888888" class="empty"];\n'
                ]
            ),
            f"{indent}}}\n",
        ]


def _op_style(op: Any, registry: Any) -> str:
    info = registry.ops.get(op.type)
    defaults = info.attr_defaults if info is not None else {}
    shown = [
        (name, value)
        for name, value in op.attrs.items()
        if op.attr_types.get(name) != pb.BLOCK  # the clusters show these
        and not (name in defaults and _same(value, defaults[name]))
    ]
    lines = [f"{name}={_short(value)}" for name, value in shown[:MAX_ATTRS]]
    if len(shown) > MAX_ATTRS:
        lines.append(f"… {len(shown) - MAX_ATTRS} more")
    label = _escape(op.type) + "\\n" + "".join(_escape(line) + "\\l" for line in lines)
    tooltip = ""
    if len(shown) > MAX_ATTRS or any(_elides(value) for _, value in shown):
        full = "\n".join([op.type, *(f"{name}={value!r}" for name, value in shown)])
        tooltip = f' tooltip="{_escape(full)}"'
    fill = _ROLE_FILL.get(op.role, _ROLE_FILL["forward"])
    return (
        f'label="{label}" shape=box style="rounded,filled" fillcolor="{fill}" '
        f'color="#4a6f99" fontsize=10 class="op"{tooltip}'
    )


def _var_style(name: str, var: Any) -> str:
    shown = name if len(name) <= MAX_TEXT else name[: MAX_TEXT - 13] + "…" + name[-12:]
    what = f"{var.dtype} {format_shape(var.shape)}" if var is not None else "(undeclared)"
    tooltip = f' tooltip="{_escape(name)}"' if shown != name else ""
    if isinstance(var, Parameter):
        style = 'shape=cylinder style=filled fillcolor="#fff2b3" color="#b38f00" class="param"'
    elif var is not None and var.persistable:
        style = 'shape=cylinder style=filled fillcolor="#e8e8e8" color="#888888" class="state"'
    elif var is not None and var.is_data:
        style = 'shape=box style=filled fillcolor="#d9f0d3" color="#4d9a44" class="data"'
    else:
        style = 'shape=box style=filled fillcolor="#ffffff" color="#aaaaaa" class="var"'
    return f'label="{_escape(shown)}\\n{_escape(what)}" {style}{tooltip}'


def _same(value: Any, default: Any) -> bool:
    if type(value) is bool or type(default) is bool:  # True == 1 would hide a changed attr
        return type(value) is type(default) and value == default
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return len(value) == len(default) and all(map(_same, value, default))
    return value == default


def _short(value: Any) -> str:
    """An attr value in a few characters: floats to 6 digits, lists and strings elided."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 1] + "…"
    if isinstance(value, (list, tuple)):
        items = [_short(v) for v in value[:MAX_ITEMS]]
        more = f", … +{len(value) - MAX_ITEMS}" if len(value) > MAX_ITEMS else ""
        return "[" + ", ".join(items) + more + "]"
    return repr(value)


def _elides(value: Any) -> bool:
    """Whether ``_short`` leaves something of ``value`` out."""
    if isinstance(value, float):
        return float(_short(value)) != value
    if isinstance(value, str):
        return len(value) > MAX_TEXT
    if isinstance(value, (list, tuple)):
        return len(value) > MAX_ITEMS or any(map(_elides, value))
    return False


def _escape(text: str) -> str:
    """``text`` inside a DOT string: quotes and backslashes escaped, newlines as ``\\n``."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _quote(name: str) -> str:
    return f'"{_escape(name)}"'


# -- layout -----------------------------------------------------------------------------------

_stderr_lock = threading.Lock()


def _layout(dot: str, format: str) -> bytes:
    try:
        import pygraphviz  # (Graphviz's libraries: loaded only to draw)
    except ImportError as e:
        raise PaddleCoreError(
            f"drawing a program as {format.upper()} needs pygraphviz, a dependency of "
            f"paddle-core that cannot be imported here ({e}); `pip install pygraphviz` "
            "installs it. DOT text (a .dot file) needs nothing."
        ) from None
    with _graphviz_stderr():
        try:
            return pygraphviz.AGraph(string=dot).draw(format=format, prog="dot")
        except (ValueError, OSError) as e:
            raise PaddleCoreError(f"Graphviz could not draw the program: {e}") from None


@contextlib.contextmanager
def _graphviz_stderr() -> Iterator[None]:
    """Graphviz's libraries write to the process's stderr, not through Python. The fontconfig
    the pygraphviz wheel bundles is older than many systems' configuration, and warns about
    elements it does not know on first use: those warnings are dropped, anything else is
    passed on through ``sys.stderr``."""
    with _stderr_lock, tempfile.TemporaryFile() as sink:
        if sys.stderr is not None:  # (None in a process started without one)
            sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            lines = sink.read().decode("utf-8", "replace").splitlines()
            for line in lines:
                if line.strip() and not line.startswith("Fontconfig warning") and sys.stderr:
                    print(line, file=sys.stderr)
