"""Whether a plugin's compiled module can be called: its kernel ABI, struct layout and capsules.

A module exports ``KERNEL_ABI_VERSION`` and ``KERNEL_LAYOUT``, the layout fingerprint of the
``kernel_abi.h`` it was compiled with; the core's compiled runtime exports its own, compiled
from the core's header. The rules for comparing layouts (struct by struct, each by its growth
rule, so that a plugin built against an older header of the same ABI still loads) are written
at the top of kernel_abi.h; ``layout_difference`` applies them.

Each function returns a problem (a sentence naming what differs and the command that fixes it)
or "": loading refuses the module on a problem, ``paddle-ops validate`` prints it.
"""

from __future__ import annotations

from ..._version import __version__
from ..base.dtypes import DTYPES
from ..base.runtime import KERNEL_ABI_VERSION, compiled_runtime
from .catalog import rebuild_command

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing would slow `paddle-ops list`
if TYPE_CHECKING:
    from typing import Any


def module_problem(module: Any, name: str, distribution: str) -> str:
    """Why the compiled module ``name`` speaks another kernel ABI or layout than the core, or ""."""
    runtime = compiled_runtime()
    abi = getattr(module, "KERNEL_ABI_VERSION", None)
    layout = getattr(module, "KERNEL_LAYOUT", None)
    ours = f"paddle-core {__version__} speaks kernel ABI {KERNEL_ABI_VERSION}"
    if abi != KERNEL_ABI_VERSION:
        return (
            f"its compiled module {name!r} was built for kernel ABI {abi}, but {ours}; "
            + _rebuild(distribution)
        )
    if layout is None:
        return (
            f"its compiled module {name!r} exports no KERNEL_LAYOUT (it was not built with the "
            "SDK's paddle_core/pybind.hpp); " + _rebuild(distribution)
        )
    if not isinstance(layout, str):
        return f"its compiled module {name!r} exports a KERNEL_LAYOUT that is not text: {layout!r}"
    difference = layout_difference(layout, runtime.KERNEL_LAYOUT)
    if not difference:
        return ""
    return (
        f"its compiled module {name!r} was built for kernel ABI {abi} with struct layout "
        f"{fingerprint_id(layout)}, but {ours} with struct layout "
        f"{fingerprint_id(runtime.KERNEL_LAYOUT)}: {difference}; " + _rebuild(distribution)
    )


def capsule_problem(symbol: str, capsule: Any, distribution: str) -> str:
    """Why kernel capsule ``symbol`` of a module of the right ABI cannot be used, or ""."""
    runtime = compiled_runtime()
    try:
        abi, size, exported, has_run = runtime.kernel_info(capsule)
    except Exception as e:
        return f"kernel {symbol!r} is not a kernel capsule: {e}"
    if size < runtime.KERNEL_BASE_SIZE:  # ABI 1's pc_kernel; later ones grow
        ours = parse(runtime.KERNEL_LAYOUT)["pc_kernel"][1]
        return (
            f"kernel {symbol!r} has a pc_kernel of struct_size {size}, but paddle-core "
            f"{__version__} needs at least {runtime.KERNEL_BASE_SIZE} (ABI "
            f"{KERNEL_ABI_VERSION}'s; its own pc_kernel is {ours} bytes): "
            "the module was not built with the SDK's kernel_abi.h; " + _rebuild(distribution)
        )
    if abi != KERNEL_ABI_VERSION or exported != symbol or not has_run:
        return (
            f"kernel {symbol!r} is malformed (ABI {abi}, expected {KERNEL_ABI_VERSION}; "
            f"name {exported!r}, expected {symbol!r}; run {'set' if has_run else 'missing'})"
        )
    return ""


def _rebuild(distribution: str) -> str:
    what = distribution or "the plugin"
    return f"rebuild {what} against the installed paddle-core: {rebuild_command(distribution)}"


# -- layout fingerprints --------------------------------------------------------------------------

# How each growth rule (kernel_abi.h) compares the plugin's fields with the core's.
_RULES = {
    "array": "the same size and fields",
    "core": "the plugin's fields first among the core's",
    "sized": "either side's fields first among the other's",
}


def parse(layout: str) -> dict[str, tuple[str, int, list[str]]]:
    """struct -> (growth rule, size, ["offset+size", ...]) of a KERNEL_LAYOUT text; {} for text
    that is not one."""
    structs = {}
    for entry in layout.split(";"):
        head, _, fields = entry.partition("=")
        name, _, rest = head.partition(":")
        rule, _, size = rest.partition(":")
        if not name or not size.isdigit():
            return {}
        structs[name] = (rule, int(size), fields.split(",") if fields else [])
    return structs


def layout_difference(plugin: str, core: str) -> str:
    """What breaks the plugin's layout (a KERNEL_LAYOUT text) against the core's, or ""."""
    theirs, ours = parse(plugin), parse(core)
    if not theirs:
        return f"its KERNEL_LAYOUT {plugin!r} is not a layout fingerprint"
    for name, (rule, size, fields) in ours.items():
        if name not in theirs:  # built before the struct existed: it does not use it
            continue
        _, their_size, their_fields = theirs[name]
        n = min(len(fields), len(their_fields))
        if rule == "array":
            ok = (size, fields) == (their_size, their_fields)
        elif rule == "core":
            ok = len(their_fields) <= len(fields) and fields[:n] == their_fields
        else:
            ok = fields[:n] == their_fields[:n]
        if not ok:
            return (
                f"{name} is {their_size} bytes with fields at {_fields(their_fields)} in the "
                f"module, {size} bytes with fields at {_fields(fields)} in paddle-core "
                f"(expected {_RULES.get(rule, 'the same layout')})"
            )
    return ""


def _fields(fields: list[str]) -> str:
    return " ".join(fields) or "(none)"


def fingerprint_id(layout: str) -> str:
    """A short name for a layout in messages: 8 hex digits of its CRC-32."""
    import zlib  # (only for a message)

    return f"{zlib.crc32(layout.encode()):08x}"


# -- what a kernel fits ---------------------------------------------------------------------------

# How many tensors a slot character stands for (kernel_abi.h, pc_kernel.inputs), and which of
# an op's slot characters a kernel's handles: each count the op's allows is one the kernel's does.
_COUNTS = {"1": "one tensor", "?": "none or one", "+": "one or more", "*": "any number"}
_FITS = {"1": "1", "?": "1?", "+": "1+", "*": "1?+*"}
_LEGEND = ", ".join(f"{c!r} {words}" for c, words in _COUNTS.items())


def slot_text(slots: Any) -> str:
    """An op's input (or output) VarProtos as a slot declaration: one character per slot."""
    return "".join(
        ("*" if s.dispensable else "+") if s.duplicable else ("?" if s.dispensable else "1")
        for s in slots
    )


def signature_problem(symbol: str, capsule: Any, proto: Any, dtypes: Any) -> str:
    """Why kernel ``symbol`` does not fit op ``proto`` with the ``dtypes`` (DataType values) a
    manifest lists for it, by what the kernel declares it fits (kernel_abi.h, pc_kernel), or "".
    A kernel that declares nothing is not checked."""
    try:
        inputs, outputs, accepted = compiled_runtime().kernel_signature(capsule)
    except Exception as e:  # a forged table: texts or lists that do not end
        return f"kernel {symbol!r} has a malformed declaration of what it fits: {e}"
    found = []
    sides = (("inputs", inputs, proto.inputs), ("outputs", outputs, proto.outputs))
    for side, declared, slots in sides:
        if declared is None:
            continue
        ours = slot_text(slots)
        if declared.strip("1?+*"):
            found.append(f"its {side} are declared as {declared!r}, which is not a slot text")
        elif not _fits(declared, ours):
            names = ", ".join(s.name for s in slots) or "none"
            found.append(
                f"its {side} are declared as {declared!r}, the op's are {ours!r} ({names})"
            )
    if accepted is not None:
        missing = [d for d in dtypes if d not in accepted]
        if missing:
            found.append(
                f"it handles dtypes {_dtype_names(accepted) or 'none'}, the manifest lists "
                f"{_dtype_names(missing)} for it"
            )
    if not found:
        return ""
    return (
        f"kernel {symbol!r} does not fit op {proto.type!r}: "
        + "; ".join(found)
        + f" (slots: {_LEGEND}); bind the op to a kernel that fits in the manifest, or correct "
        "the kernel's declaration (kernel.hpp's signature and DTypes), then rebuild the plugin"
    )


def declares_fit(capsule: Any) -> bool:
    """Whether a kernel declares its slots and dtypes (one that does not is not checked)."""
    try:
        return None not in compiled_runtime().kernel_signature(capsule)
    except Exception:  # malformed: signature_problem says so
        return True


def _dtype_names(values: Any) -> str:
    return ", ".join(DTYPES[d - 1] if 1 <= d <= len(DTYPES) else f"dtype {d}" for d in values)


def _fits(kernel: str, op: str) -> bool:
    """Whether an op's slots (a slot text) fit a kernel's: slot by slot, and trailing kernel
    slots the op lacks must allow none."""
    if len(op) > len(kernel):
        return False
    return all(o in _FITS[k] for o, k in zip(op, kernel)) and not kernel[len(op) :].strip("?*")
