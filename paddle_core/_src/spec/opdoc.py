"""How an op reads to a person: its Python signature and docstring, built from its OpProto.

Used by the generated API (``help(pc.ops.scale)``), by ``paddle-ops stubs`` and ``show``.
"""

from __future__ import annotations

import textwrap
from typing import Any

from ...proto import framework_pb2 as pb
from . import attrs as A


def parameters(info: Any) -> list[tuple[str, str, str | None]]:
    """(name, annotation, default source or None) for each parameter of the generated function,
    inputs first (positional), then attrs and ``name`` (keyword-only)."""
    params: list[tuple[str, str, str | None]] = []
    for slot in info.proto.inputs:
        ann = "Sequence[Variable]" if slot.duplicable else "Variable"
        params.append(
            (
                slot.name,
                ann + (" | None" if slot.dispensable else ""),
                "None" if slot.dispensable else None,
            )
        )
    return params


def signature_text(info: Any) -> str:
    """``scale(x, *, scale=1.0, bias=0.0, name=None)`` (``paddle-ops stubs`` writes its own,
    annotated and formatted, in _stubs.py)."""
    parts = [name + (f"={default}" if default else "") for name, _, default in parameters(info)]
    parts.append("*")
    for ap in info.proto.attrs:
        default = (
            f"={A.render(info.attr_defaults[ap.name])}" if ap.name in info.attr_defaults else ""
        )
        parts.append(ap.name + default)
    parts.append("name=None")
    return f"{info.type}({', '.join(parts)})"


def return_annotation(info: Any) -> str:
    outs = ["list[Variable]" if s.duplicable else "Variable" for s in info.proto.outputs]
    return outs[0] if len(outs) == 1 else f"tuple[{', '.join(outs)}]"


def attr_summary(ap: Any, defaults: dict[str, Any]) -> str:
    """``float in [0, 1), default 0.5`` for an attr."""
    text = expectation(ap).removeprefix("a ").removeprefix("an ")
    if ap.name in defaults:
        text += f", default {A.render(defaults[ap.name])}"
    else:
        text += ", required"
    return text


def docstring(info: Any) -> str:
    """The docstring of a generated op function."""
    proto = info.proto
    wrap = lambda text, indent: textwrap.fill(  # noqa: E731
        text, 96, initial_indent=indent, subsequent_indent=indent + "    "
    )
    lines = [
        proto.comment.strip() or f"The {info.type!r} op (its plugin gives no description).",
        "",
    ]
    lines.append("Args:")
    for slot in proto.inputs:
        kind = "list of Variable" if slot.duplicable else "Variable"
        kind += ", optional" if slot.dispensable else ""
        lines.append(wrap(f"{slot.name} ({kind}): {slot.comment}".rstrip(": "), "    "))
    for ap in proto.attrs:
        lines.append(
            wrap(
                f"{ap.name} ({attr_summary(ap, info.attr_defaults)}): {ap.comment}".rstrip(": "),
                "    ",
            )
        )
    lines.append("    name (str, optional): Name of the output variable (default: generated).")
    lines += ["", "Returns:"]
    for slot in proto.outputs:
        kind = "list of Variable" if slot.duplicable else "Variable"
        kind += ", or None" if slot.dispensable else ""
        lines.append(wrap(f"{slot.name} ({kind}): {slot.comment}".rstrip(": "), "    "))
    kernels = ", ".join(
        f"{device} ({', '.join(d for (dv, d) in info.kernels if dv == device)})"
        for device in info.devices
    )
    lines += ["", f"Kernels: {kernels or 'none'}.", f"Provided by {info.plugin.label}."]
    return "\n".join(lines)


def expectation(ap: pb.AttrProto) -> str:
    """What an attr accepts, in words: "a float in [0, 1)", "one of 'sum', 'mean'"."""
    if ap.HasField("choices"):
        choices = ", ".join(A.render(c) for c in A.from_attr_value(ap.choices))
        if ap.type in A.LIST_TYPES:
            return f"{A.DESCRIPTION[ap.type]}, each one of {choices}"
        return f"one of {choices}"
    bounds = A.describe_range(ap)
    each = " each" if ap.type in A.LIST_TYPES else ""
    return A.DESCRIPTION[ap.type] + (f"{each} in {bounds}" if bounds else "")
