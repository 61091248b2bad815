"""The ``paddle-ops`` command: list ops, show one, inspect a saved program, draw one, profile
a saved model, launch a script on several processes, inspect plugins, diagnose, validate a
plugin package, write stubs, start a new op package.

Exit status: 0 on success; 1 with a one-line reason on stderr when the request fails (an
unknown op, a broken or partial plugin found by ``plugins``, a problem found by ``doctor`` or
``validate``; a saved program's missing ops one line each); 2 for usage errors.

``list`` reads only the plugin index (no plugin code, NumPy, pydantic or protobuf) and prints
its table without rich: rich's import and layout cost ~45 ms, half of the time budget that
``list`` has (no slower than ``import numpy``; see bench/bench_startup.py). The other commands
use rich. ``plugins`` and ``doctor`` import plugin code on purpose, to check it.
"""

from __future__ import annotations

import argparse
import sys

from ._cli_help import COMMANDS, EXAMPLES, OVERVIEW
from ._src.base.dtypes import DTYPES, FLOATING, INTEGER
from ._src.base.errors import DistributedError, PaddleCoreError, counted
from ._src.plugins.config import normalize
from ._src.plugins.registry import get_registry
from ._version import __version__

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing would slow `list`
if TYPE_CHECKING:
    from typing import Any

JSON_SCHEMA_VERSION = 1


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    argv = sys.argv[1:] if argv is None else argv
    if not argv:  # like git: no command shows what there is to do
        parser.print_help(sys.stderr)
        return 2
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # reported by the command's parser, with its usage, not the top level's
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    import warnings  # (not at the top: the listing path imports nothing it does not use)

    warnings.showwarning = _show_warning
    if args.run is cmd_doctor:  # it reports every warning itself
        warnings.simplefilter("ignore")
    try:
        return args.run(args)
    except PaddleCoreError as e:
        print(f"paddle-ops: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `paddle-ops list | head`
        return 0


def _show_warning(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
    print(f"paddle-ops: warning: {message}", file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    width = max(map(len, COMMANDS))
    lines = "\n".join(f"  {name:<{width}}  {line}" for name, (line, _, _) in COMMANDS.items())
    parser = argparse.ArgumentParser(
        prog="paddle-ops",
        usage="paddle-ops [--version] [-h] <command> [<args>]",
        description=OVERVIEW.format(commands=lines),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"paddle-core {__version__}")
    sub = parser.add_subparsers(required=True, metavar="<command>", help=argparse.SUPPRESS)

    def command(name: str, run: Any, *, json_output: bool = True) -> argparse.ArgumentParser:
        line, paragraph, examples = COMMANDS[name]
        width = max(len(c) for c, _ in examples)
        shown = "\n".join(f"  {c:<{width}}  {what}".rstrip() for c, what in examples)
        p = sub.add_parser(
            name,
            prog=f"paddle-ops {name}",
            help=line,
            description=f"{line[0].upper()}{line[1:]}.\n\n" + _wrap(paragraph),
            epilog=f"examples:\n{shown}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if json_output:
            p.add_argument("--json", action="store_true", help="machine-readable output")
        p.set_defaults(run=run, parser=p)
        return p

    p = command("list", cmd_list)
    p.add_argument(
        "--plugin",
        action="append",
        help="only ops of this plugin (name or distribution); repeat it for several",
    )
    p.add_argument("--device", help="only ops with a kernel for this device type (cpu, cuda)")
    p.add_argument(
        "--onnx", action="store_true", help="the ONNX ops the plugins map, by opset, instead"
    )
    p = command("show", cmd_show)
    p.add_argument("op", help="the op type, e.g. matmul")
    p = command("inspect", cmd_inspect)
    p.add_argument(
        "program", help="a saved program: protobuf, text format (.pbtxt, .txt) or JSON (.json)"
    )
    p = command("onnx", cmd_onnx)
    p.add_argument("action", choices=["check", "convert"], help="check or convert a model")
    p.add_argument("model", help="an ONNX model file")
    p.add_argument("-o", "--output", help="convert: the inference model directory to write")
    p = command("draw", cmd_draw, json_output=False)
    p.add_argument(
        "program", help="a saved program: protobuf, text format (.pbtxt, .txt) or JSON (.json)"
    )
    p.add_argument(
        "-o",
        "--output",
        help="the file to write: .svg, .png, .dot or .gv (default: the program's name with "
        ".svg); - prints the DOT text",
    )
    p = command("launch", cmd_launch, json_output=False)
    p.add_argument("-n", "--nprocs", type=int, required=True, help="the number of processes")
    p.add_argument(
        "--hostfile", help="the machines to run on, one per line (MPI's hostfile; else this one)"
    )
    p.add_argument("script", help="the Python script each process runs")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="its arguments")
    p = command("profile", cmd_profile)
    p.add_argument(
        "model",
        help="a saved inference model's directory (pc.io.save_inference_model), or a saved "
        "program file",
    )
    p.add_argument(
        "--feed",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="an input and the .npy file holding its value; one for each input",
    )
    p.add_argument("--runs", type=int, default=10, help="runs to time (default 10)")
    p.add_argument("--trace", metavar="FILE.json", help="also write the runs as a Chrome trace")
    p.add_argument("--device", default="cpu", help="the device to run on (default cpu)")
    p.add_argument("--top", type=int, default=20, help="rows of the table by op (default 20)")
    command("plugins", cmd_plugins)
    command("doctor", cmd_doctor)
    p = command("validate", cmd_validate)
    p.add_argument(
        "target",
        metavar="PATH|DIST",
        help="a plugin project directory, or an installed distribution",
    )
    p = command("stubs", cmd_stubs, json_output=False)
    p.add_argument(
        "-o", "--output", help="file to write (default: ops.pyi beside paddle_core/ops.py)"
    )
    p = command("new", cmd_new, json_output=False)
    p.add_argument("name", help="the distribution name, e.g. my-ops")
    p.add_argument("--dir", help="where to write it (default: ./NAME)")
    p.add_argument("--cuda", action="store_true", help="with CUDA kernels")
    p = command("help", lambda args: _help(parser, args.command), json_output=False)
    p.add_argument("command", nargs="?", choices=sorted(COMMANDS), metavar="<command>")
    return parser


def _wrap(text: str) -> str:
    import textwrap  # (only for --help)

    return textwrap.fill(text, 92)


def _help(parser: argparse.ArgumentParser, command: str | None) -> int:
    args = [command, "--help"] if command else ["--help"]
    parser.parse_args(args)  # prints the help and exits 0
    return 0


# rich, json, protobuf (through the op docs), plugin code: imported by the commands that use
# them, so that `list` stays near-free.


def _console() -> Any:
    from rich.console import Console  # (~45 ms: not for `list`)

    # No markup: what is printed comes from plugins and messages ("[kh, kw]", "[plugins]"),
    # which rich would read as its tags and drop.
    return Console(width=None if sys.stdout.isatty() else 160, highlight=False, markup=False)


def _table(*columns: str, title: str | None = None) -> Any:
    # (~45 ms: not for `list`)
    from rich import box
    from rich.table import Table

    table = Table(*columns, title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    return table


def _dump(data: Any) -> None:
    import json  # (only for --json)

    print(json.dumps({"schema": JSON_SCHEMA_VERSION, **data}, indent=2, sort_keys=True))


# -- list ----------------------------------------------------------------------------------------


# The dtype groups the list's dtypes column names, largest first (--json lists every dtype).
DTYPE_GROUPS = (
    ("all", frozenset(DTYPES)),
    ("numbers", FLOATING | INTEGER),
    ("floats", FLOATING),
    ("ints", INTEGER),
)


def dtypes_cell(dtypes: list[str]) -> str:
    """An op's dtypes for the list's table: the groups it takes whole ("all", "numbers",
    "floats", "ints"), then the others, in DTYPES order; "-" for none."""
    rest, parts = set(dtypes), []
    for name, group in DTYPE_GROUPS:
        if group <= rest:
            parts.append(name)
            rest -= group
    parts += [d for d in DTYPES if d in rest]
    return ",".join(parts) or "-"


def cmd_list(args: argparse.Namespace) -> int:
    if args.onnx:
        return _list_onnx(args)
    registry = get_registry()
    infos = [registry.ops[t] for t in registry.op_types()]
    wanted = set()
    for name in args.plugin or ():  # (an empty name names nothing: an error, not "every plugin")
        _check_plugin_name(registry, name)
        wanted.add(normalize(name))
    if wanted:
        infos = [
            i
            for i in infos
            if {normalize(i.plugin.name), normalize(i.plugin.distribution)} & wanted
        ]
    if args.device is not None:
        infos = [i for i in infos if args.device in i.devices]
    rows = [
        {
            "op": i.type,
            "plugin": i.plugin.name,
            "distribution": i.plugin.distribution,
            "version": i.plugin.version,
            "devices": i.devices,
            "dtypes": i.dtypes,
            "has_grad": i.has_grad,
            "grad": i.grad,
            "available": i.available,
            "problems": i.missing_kernels(),
            "comment": i.summary["comment"],
        }
        for i in infos
    ]
    if not rows and args.device is not None:  # a device type nobody registered is a mistake
        _check_device_type(args.device)
    if args.json:
        _dump({"ops": rows})
        return 0
    listed = {r["plugin"] for r in rows}
    absent = [  # plugins the filter asks for whose ops are not there to list
        r
        for r in registry.records
        if r.status in ("disabled", "broken")
        and r.name not in listed
        and (not wanted or {normalize(r.name), normalize(r.distribution)} & wanted)
    ]
    notes = [_not_loaded_note(r) for r in absent]
    if not rows:
        if args.plugin and notes:
            print("\n".join(notes))
        else:
            print(
                "No op matches the filter."
                if args.plugin or args.device
                else _empty_reason(registry, "ops")
            )
        return 0
    lines = plain_table(
        ("op", "plugin", "version", "devices", "dtypes", "grad"),
        [
            (
                r["op"] if r["available"] else f"{r['op']} (unavailable)",
                r["plugin"],
                r["version"],
                ",".join(r["devices"]) or "-",
                dtypes_cell(r["dtypes"]),
                "-" if r["grad"] == "none" else r["grad"],
            )
            for r in rows
        ],
    )
    plugins = len({r["plugin"] for r in rows})
    lines.append(f"{counted(len(rows), 'op')} from {counted(plugins, 'plugin')}")
    lines += [f"{r['op']}: {problem}" for r in rows for problem in r["problems"]]
    sys.stdout.write("\n".join(lines + notes) + "\n")
    return 0


def _list_onnx(args: argparse.Namespace) -> int:
    """The ONNX ops the installed plugins map (reads their manifests), by domain and opset."""
    from ._src.onnx.mappings import get_mappings, onnx_op_name  # (protobuf: not for `list`)

    for name in args.plugin or ():
        _check_plugin_name(get_registry(), name)
    wanted = {normalize(n) for n in args.plugin or ()}
    rows = []
    for (domain, op_type), found in sorted(get_mappings().by_op.items()):
        for m in found:
            plugin = m.info.plugin
            if wanted and not {normalize(plugin.name), normalize(plugin.distribution)} & wanted:
                continue
            last = str(m.spec.until_version) if m.spec.until_version else "latest"
            rows.append(
                {
                    "onnx_op": onnx_op_name(domain, op_type),
                    "domain": domain or "ai.onnx",
                    "since_version": m.spec.since_version,
                    "until_version": m.spec.until_version or None,
                    "op": m.info.type,
                    "plugin": plugin.name,
                    "code": bool(m.spec.import_rule),
                    "opsets": f"{m.spec.since_version}-{last}",
                }
            )
    if args.json:
        _dump({"onnx": rows})
        return 0
    lines = plain_table(
        ("onnx op", "opsets", "op", "plugin", "how"),
        [
            (r["onnx_op"], r["opsets"], r["op"], r["plugin"], "rule" if r["code"] else "declared")
            for r in rows
        ],
    )
    ops = len({r["onnx_op"] for r in rows})
    lines.append(
        f"{counted(ops, 'ONNX op')} mapped by {counted(len({r['plugin'] for r in rows}), 'plugin')}"
    )
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _not_loaded_note(record: Any) -> str:
    """Why a plugin's ops are missing from the list."""
    who = f"plugin {record.name!r}" + (f" ({record.distribution})" if record.distribution else "")
    if record.status == "disabled":
        return f"{who} is switched off: {record.disabled}."
    return f"{who} is not loaded: {record.reason}; `paddle-ops plugins` says more."


def _check_plugin_name(registry: Any, name: str) -> None:
    """A filter naming no plugin is a mistake, not an empty result."""
    known = {normalize(n) for r in registry.records for n in (r.name, r.distribution) if n}
    if normalize(name) not in known:
        from ._src.base.errors import PluginError, did_you_mean  # (only for a mistake)

        names = ", ".join(sorted(r.name for r in registry.records)) or "none"
        raise PluginError(
            f"no plugin is named {name!r}{did_you_mean(normalize(name), known)}; "
            f"the plugins are: {names}",
            plugin=name,
        )


def _check_device_type(name: str) -> None:
    """A filter naming no device type is a mistake, not an empty result."""
    # (pluggy, difflib: only when nothing matched)
    from ._src.base.errors import DeviceError, did_you_mean
    from ._src.plugins.devices import device_types

    types = device_types()
    if name not in types:
        raise DeviceError(
            f"no device type is named {name!r}{did_you_mean(name, types)}; "
            f"the device types are: {', '.join(sorted(types))}"
        )


def plain_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns under a rule, as rich's SIMPLE_HEAD table draws them."""
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    return [line(headers), "─" * (sum(widths) + 2 * (len(widths) - 1)), *map(line, rows)]


def _empty_reason(registry: Any, what: str) -> str:
    """Why there are no ops (or plugins) to show, and what to do about it."""
    if registry.settings.no_plugins:
        return f"No {what}: plugins are switched off (PADDLE_CORE_NO_PLUGINS is set)."
    if registry.records:
        return f"No {what}: no installed plugin loaded; `paddle-ops plugins` says why."
    from ._src.plugins.catalog import install_command  # (only when there is nothing to show)

    first = install_command("paddle-ops-math")
    return f"No {what}: no plugin is installed. Install one, e.g. `{first}`."


# -- show ----------------------------------------------------------------------------------------


def op_json(info: Any) -> dict[str, Any]:
    """Everything about one op as plain data (``show --json``)."""
    # (protobuf: not for `list`)
    from ._src.spec import attrs as A
    from ._src.spec.opdoc import signature_text

    def bound(ap: Any, side: str) -> Any:
        if not ap.HasField(side):
            return None
        b = getattr(ap, side)
        return {"value": b.value, "exclusive": b.exclusive}

    proto = info.proto
    return {
        "op": info.type,
        "comment": proto.comment,
        "plugin": info.plugin.name,
        "distribution": info.plugin.distribution,
        "version": info.plugin.version,
        "signature": signature_text(info),
        "inputs": [_slot_json(s) for s in proto.inputs],
        "outputs": [_slot_json(s) for s in proto.outputs],
        "attrs": [
            {
                "name": ap.name,
                "type": A.type_name(ap.type),
                "comment": ap.comment,
                "required": ap.name not in info.attr_defaults,
                "default": info.attr_defaults.get(ap.name),
                "min": bound(ap, "min"),
                "max": bound(ap, "max"),
                "choices": A.from_attr_value(ap.choices) if ap.HasField("choices") else None,
            }
            for ap in proto.attrs
        ],
        "kernels": [
            {
                "device": device,
                "dtype": dtype,
                "impl": refs[0].impl,
                "ref": refs[0].ref,
                "plugin": refs[0].plugin.name,
            }
            for (device, dtype), refs in sorted(info.kernels.items())
        ],
        "not_built": [
            {"device": device, "ref": symbol, "plugin": plugin.name, "why": why}
            for plugin, device, symbol, why in get_registry().unbuilt_kernels(info.type)
        ],
        "available": info.available,
        "problems": _kernel_problems(info),
        "shape_rule": info.opdef.shape_rule,
        "grad_rule": info.opdef.grad_rule or None,
        "also_declared_by": [p.name for p in info.others],
    }


def _kernel_problems(info: Any) -> list[str]:
    """Why kernels of the op cannot run: missing or refused by its module, or declared in a way
    its plugin's build contradicts."""
    faults = get_registry().kernel_faults(info.type)
    return info.missing_kernels() + [
        f"{plugin.label}: {device} kernel {symbol!r}: {why}"
        for plugin, device, symbol, why in faults
    ]


def _slot_json(slot: Any) -> dict[str, Any]:
    return {
        "name": slot.name,
        "comment": slot.comment,
        "duplicable": slot.duplicable,
        "dispensable": slot.dispensable,
    }


def cmd_show(args: argparse.Namespace) -> int:
    from ._src.spec.opdoc import attr_summary, signature_text  # (protobuf: not for `list`)

    info = get_registry().op(args.op)
    if args.json:
        _dump(op_json(info))
        return 0
    console = _console()
    proto = info.proto
    console.print(info.type, style="bold", end="")
    console.print(f"  from {info.plugin.label}")
    console.print(signature_text(info))
    console.print()
    console.print(proto.comment.strip() or "(no description)")
    for title, slots in (("inputs", proto.inputs), ("outputs", proto.outputs)):
        table = _table("name", "kind", "comment", title=title)
        for s in slots:
            kind = ", ".join(
                k for k, on in (("list", s.duplicable), ("optional", s.dispensable)) if on
            )
            table.add_row(s.name, kind or "one", s.comment)
        console.print(table)
    if proto.attrs:
        table = _table("name", "accepts", "comment", title="attrs")
        for ap in proto.attrs:
            table.add_row(ap.name, attr_summary(ap, info.attr_defaults), ap.comment)
        console.print(table)
    table = _table("device", "dtype", "kernel", "plugin", title="kernels")
    for (device, dtype), refs in sorted(info.kernels.items()):
        missing = " (missing)" if refs[0].missing else ""
        table.add_row(device, dtype, f"{refs[0].impl}:{refs[0].ref}{missing}", refs[0].plugin.name)
    unbuilt = get_registry().unbuilt_kernels(info.type)
    for plugin, device, symbol, _ in unbuilt:
        table.add_row(device, "-", f"native:{symbol} (not built)", plugin.name)
    console.print(table)
    for plugin, device, symbol, why in unbuilt:
        console.print(f"{device} kernel {symbol!r} of {plugin.label}: {why}")
    if not info.available:
        broken = info.plugin.status == "broken"
        why = info.plugin.reason if broken else "none of its kernels can run"
        console.print(f"unavailable: {why}")
    for problem in _kernel_problems(info):
        console.print(f"missing kernels: {problem}")
    console.print(f"shape rule: {info.opdef.shape_rule}")
    rule = info.opdef.grad_rule
    grad = {
        "none": "- (not differentiable)",
        "zero": f"{rule} (its outputs are constant in its inputs: no gradient flows back)",
    }.get(info.grad, rule)
    console.print(f"grad rule:  {grad}")
    if info.others:
        names = ", ".join(p.label for p in info.others)
        console.print(f"also declared by {names} (not used)")
    if info.opdef.onnx:
        from ._src.spec.manifest import onnx_name  # (protobuf: not for `list`)

        console.print(f"onnx:       {', '.join(onnx_name(m) for m in info.opdef.onnx)}")
    return 0


# -- onnx ----------------------------------------------------------------------------------------


def cmd_onnx(args: argparse.Namespace) -> int:
    """check: every ONNX op the model uses that no plugin maps (exit 1 if any); convert: the
    model imported and saved as an inference model directory."""
    # (protobuf, NumPy, the executor: only for this command)
    from ._src.base.errors import OnnxError  # (with the importer)
    from ._src.onnx import importer  # (protobuf, NumPy: only here)
    from ._src.onnx.reader import read_model  # (NumPy: only here)

    if args.action == "check":
        model, _ = read_model(args.model)
        missing = importer.missing(model)
        if args.json:
            _dump({"model": args.model, "missing": [{"op": o, "nodes": n} for o, n in missing]})
        elif missing:
            print(f"{args.model}: {counted(len(missing), 'ONNX op')} no installed plugin maps:")
            for op, nodes in missing:
                print(f"  {op}: {nodes}")
        else:
            print(f"{args.model}: every ONNX op it uses is mapped")
        return 1 if missing else 0
    if not args.output:
        raise OnnxError("paddle-ops onnx convert: name the directory to write with -o")
    from .io import save_inference_model  # (the executor: only to convert)

    imported = importer.load(args.model)
    block = imported.program.global_block()
    save_inference_model(
        args.output,
        imported.inputs,
        [block.var(name) for name in imported.outputs],
        imported.program,
        imported.scope,
    )
    ops = len(block.ops)
    if args.json:
        _dump({"model": args.model, "output": args.output, "ops": ops})
    else:
        print(f"{args.model}: {counted(ops, 'op')} saved to {args.output}")
    return 0


# -- inspect -------------------------------------------------------------------------------------


def cmd_inspect(args: argparse.Namespace) -> int:
    # (protobuf, the graph layer: not for `list`)
    from ._src.graph.provenance import requirements
    from ._src.graph.serialization import load_program

    program = load_program(args.program)  # an op no loaded plugin provides: exit status 1
    ops = [
        {
            "block": block.idx,
            "type": op.type,
            "provider": dict(op.provider._asdict()),
        }
        for block in program.blocks
        for op in block.ops
    ]
    requires = requirements(program)
    if args.json:
        _dump(
            {
                "program": args.program,
                "blocks": len(program.blocks),
                "ops": ops,
                "requires": requires,
            }
        )
        return 0
    # One row per provider, in order of first use: its distribution, version, plugin, op types.
    groups: dict[Any, list[str]] = {}
    for block in program.blocks:
        for op in block.ops:
            types = groups.setdefault(op.provider, [])
            if op.type not in types:
                types.append(op.type)
    console = _console()
    blocks, count = counted(len(program.blocks), "block"), counted(len(ops), "op")
    console.print(f"{args.program}: {blocks}, {count}")
    table = _table("distribution", "version", "plugin", "ops")
    for provider, types in groups.items():
        dist = provider.distribution or "(registered from Python)"
        table.add_row(dist, provider.version, provider.plugin, ", ".join(types))
    console.print(table)
    if requires:
        console.print("requires: " + " ".join(requires))
    return 0


def cmd_draw(args: argparse.Namespace) -> int:
    import os  # (only for draw)

    # (protobuf, the graph layer: not for `list`)
    from ._src.graph.draw import draw_program, format_of, to_dot
    from ._src.graph.serialization import load_program

    output = args.output
    if output is None:
        stem, suffix = os.path.splitext(args.program)
        output = (stem if suffix else args.program) + ".svg"
    elif output != "-":
        format_of(output)  # a suffix naming no format: said before the program is read
    program = load_program(args.program, check_ops=False)  # drawn even where ops are missing
    if output == "-":
        sys.stdout.write(to_dot(program))
        return 0
    draw_program(program, output)
    ops = sum(len(block.ops) for block in program.blocks)
    print(f"{output}: {counted(len(program.blocks), 'block')}, {counted(ops, 'op')}")
    return 0


# -- launch --------------------------------------------------------------------------------------


def cmd_launch(args: argparse.Namespace) -> int:
    import os  # (only for launch)
    import shutil  # (only for launch)
    import subprocess  # (only for launch)

    if args.nprocs < 1:
        args.parser.error(f"-n must be at least 1, got {args.nprocs}")
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")  # the environment's own
    mpiexec = here if os.access(here, os.X_OK) else shutil.which("mpiexec")
    if mpiexec is None:
        raise DistributedError(
            "launch runs the processes with MPI's mpiexec, and there is none here; install "
            'it with: pip install "paddle-ops-dist[mpi]"'
        )
    command = [mpiexec, "-n", str(args.nprocs)]
    if args.hostfile:
        command += ["-hostfile", args.hostfile]
    command += [sys.executable, args.script, *args.script_args]
    env = dict(os.environ)
    if "PADDLE_CORE_NUM_THREADS" not in env and "OMP_NUM_THREADS" not in env:
        # The ranks share this machine's cores (a hostfile's machines: unknown, one each):
        # more threads than cores would spin against each other.
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
        env["OMP_NUM_THREADS"] = str(1 if args.hostfile else max(cores // args.nprocs, 1))
    status = subprocess.call(command, env=env)
    if status:
        print(
            f"paddle-ops launch: the job failed (exit status {status}); the failing rank's "
            "error is above",
            file=sys.stderr,
        )
    return status


# -- profile -------------------------------------------------------------------------------------


def cmd_profile(args: argparse.Namespace) -> int:
    """A saved model run --runs times under the profiler, after one run to warm up; then what
    its plan holds."""
    # (NumPy, protobuf, the executor: only for this command)
    from ._src.base.errors import ConfigError
    from ._src.run.executor import Executor
    from ._src.run.profiler import profile
    from ._src.run.scope import Scope

    for name, value in (("--runs", args.runs), ("--top", args.top)):
        if value < 1:
            raise ConfigError(f"paddle-ops profile: {name} must be 1 or more, got {value}")
    scope = Scope()
    program, inputs, fetch_names = _profiled_model(args.model, scope)
    feed = _feeds(args.feed, inputs, args.model)
    exe = Executor(args.device)
    exe.run(program, feed=feed, fetch_list=fetch_names, scope=scope)  # plans; warms the caches
    with profile() as prof:
        for _ in range(args.runs):
            exe.run(program, feed=feed, fetch_list=fetch_names, scope=scope)
    memory = exe.prepare(program, feed, fetch_names).memory
    if args.trace:
        try:
            prof.export_chrome_trace(args.trace)
        except OSError as e:
            raise ConfigError(f"cannot write the trace to {args.trace!r}: {e.strerror}") from None
    if args.json:

        def rows(stats: list) -> list[dict[str, Any]]:
            return [
                {
                    "type": s.type,
                    **({} if s.index is None else {"index": s.index, "outputs": list(s.outputs)}),
                    "calls": s.calls,
                    "total_ns": s.total_ns,
                    "mean_ns": s.mean_ns,
                    "share": s.share,
                }
                for s in stats
            ]

        _dump(
            {
                "model": args.model,
                "device": str(exe.device),
                "runs": prof.runs,
                "by_type": rows(prof.by_type()),
                "by_op": rows(prof.by_op()),
                "trace": args.trace,
                "memory": {**vars(memory), "held_bytes": memory.held_bytes},
            }
        )
        return 0
    print(f"{args.model}: {counted(args.runs, 'run')} on {exe.device}, after one to warm up\n")
    sys.stdout.write(prof.table("type") + "\n" + prof.table("op", limit=args.top))
    print(f"\nwhat the plan holds:\n{memory}")
    if args.trace:
        print(f"\ntrace: {args.trace} (open it in chrome://tracing or https://ui.perfetto.dev)")
    return 0


def _profiled_model(path: str, scope: Any) -> tuple[Any, list[str] | None, list[str]]:
    """(program, its inputs or None for any, its fetches) of a saved inference model's
    directory (or its model.pb), or of a saved program, whose fetches are then the values its
    ops compute that none reads."""
    # (protobuf, NumPy, the executor: only for profile)
    import os

    from ._src.base.errors import ProgramError
    from ._src.graph.serialization import load_program
    from .io import META, MODEL, load_inference_model

    directory = os.path.dirname(path) or "."
    if os.path.basename(path) == MODEL and os.path.isfile(os.path.join(directory, META)):
        path = directory  # the model file of an inference model: the whole model
    if os.path.isdir(path):
        program, inputs, fetches = load_inference_model(path, scope)
        return program, inputs, [v.name for v in fetches]
    program = load_program(path)
    block = program.global_block()
    read = {n for op in block.ops for n in op.input_names}
    written = [n for op in block.ops for n in op.output_names]
    fetches = [n for n in dict.fromkeys(written) if n not in read and not block.var(n).persistable]
    if not fetches:
        raise ProgramError(f"{path}: no op of the program computes a value that none reads")
    return program, None, fetches


def _feeds(given: list[str], inputs: list[str] | None, model: str) -> dict[str, Any]:
    """--feed NAME=FILE.npy items as {name: array}, checked against the model's inputs."""
    # (NumPy: only for profile)
    import numpy as np

    from ._src.base.errors import FeedError, did_you_mean

    feed = {}
    for item in given:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise FeedError(f"--feed takes NAME=FILE.npy, got {item!r}")
        if inputs is not None and name not in inputs:
            raise FeedError(
                f"{model} has no input {name!r}{did_you_mean(name, inputs)}; its inputs are: "
                f"{', '.join(inputs)}"
            )
        try:
            feed[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise FeedError(f"--feed {name}: cannot read {path!r} as a .npy array: {e}") from None
    missing = [n for n in inputs or () if n not in feed]
    if missing:
        raise FeedError(
            f"{model} takes {', '.join(missing)} too: give each with --feed NAME=FILE.npy"
        )
    return feed


# -- plugins and doctor ---------------------------------------------------------------------------


def plugin_json(record: Any) -> dict[str, Any]:
    return {
        "name": record.name,
        "distribution": record.distribution,
        "version": record.version,
        "entry_point": record.entry_point,
        "manifest": record.manifest_path,
        "comment": record.comment,
        "status": record.status,
        "problems": ([record.disabled] if record.disabled else []) + record.problems,
        "warnings": record.warnings,
        "ops": [s["type"] for s in record.ops],
    }


def cmd_plugins(args: argparse.Namespace) -> int:
    from ._src.plugins.doctor import check_plugin_code  # (pluggy, protobuf: not for `list`)

    registry = get_registry()
    for record in registry.records:
        check_plugin_code(record, registry)
    rows = [plugin_json(r) for r in registry.records]
    failing = [r for r in registry.records if r.status in ("broken", "partial")]
    if args.json:
        _dump({"plugins": rows})
    elif not rows:
        print(_empty_reason(registry, "plugins"))
    else:
        table = _table("plugin", "distribution", "version", "entry point", "ops", "status")
        for r, record in zip(rows, registry.records):
            status = record.disabled or record.status
            status += f": {record.reason}" if record.status in ("broken", "partial") else ""
            ops = str(len(r["ops"]))
            table.add_row(r["name"], r["distribution"], r["version"], r["entry_point"], ops, status)
        _console().print(table)
    if failing:  # broken plugins, or plugins with ops that cannot run
        names = ", ".join(r.name for r in failing)
        print(
            f"paddle-ops: {counted(len(failing), 'plugin')} with problems: {names}", file=sys.stderr
        )
        return 1
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from ._src.plugins import doctor  # (pluggy, protobuf: not for `list`)

    registry = get_registry()
    report = doctor.report(registry)
    if args.json:
        _dump(report)
    else:
        console = _console()
        for p in report["problems"]:
            console.print("problem", style="red", end="")
            console.print(f"  {p}")
        for w in report["warnings"]:
            console.print("warning", style="yellow", end="")
            console.print(f"  {w}")
        plugins = len(registry.records)
        console.print(
            f"{counted(len(report['problems']), 'problem')}, "
            f"{counted(len(report['warnings']), 'warning')} ({counted(plugins, 'plugin')}, "
            f"{counted(len(registry.ops), 'op')}, paddle-core {report['core_version']})"
        )
    if report["problems"]:
        found = counted(len(report["problems"]), "problem")
        print(f"paddle-ops: doctor found {found}", file=sys.stderr)
        return 1
    return 0


# -- validate ------------------------------------------------------------------------------------


def cmd_validate(args: argparse.Namespace) -> int:
    from ._src.plugins.plugin_check import summary_line, validate  # (plugin code: not for `list`)

    report = validate(args.target)
    if args.json:
        _dump(report.to_json())
    else:
        for problem in report.problems:
            print(f"{args.target}: {problem}")
        for warning in report.warnings:
            print(f"warning: {args.target}: {warning}")
        if not report.problems:
            print(f"{args.target}: {summary_line(report)}")
    if report.problems:
        found = counted(len(report.problems), "problem")
        print(f"paddle-ops: validate found {found} in {args.target}", file=sys.stderr)
        return 1
    return 0


# -- stubs ---------------------------------------------------------------------------------------


def cmd_stubs(args: argparse.Namespace) -> int:
    # (the generated API, protobuf: not for `list`)
    from pathlib import Path

    from ._stubs import write_stubs

    if args.output == "":
        raise PaddleCoreError("--output needs a file name, e.g. typings/paddle_core/ops.pyi")
    path = Path(args.output) if args.output is not None else None
    written = write_stubs(get_registry(), path)
    print(f"wrote {written}")
    return 0


# -- new -----------------------------------------------------------------------------------------


def cmd_new(args: argparse.Namespace) -> int:
    from ._scaffold import Names, new_package  # (templates, only for `new`)

    path = new_package(args.name, args.dir, cuda=args.cuda)
    names = Names.of(args.name)
    print(f"wrote {path}/: the op package {names.dist} (import {names.package}, op {names.op})")
    print("next:")
    print(f"  cd {path} && pip install .   # builds the kernels against this paddle-core")
    print("  pip install pytest && pytest")
    print(f"  paddle-ops validate . && paddle-ops show {names.op}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
