"""Plugin manifests: parse the text format, check every declaration once, summarise for listing.

A manifest is checked as a whole when its plugin is discovered; the result is cached with the
plugin index, so none of this runs again until the plugin changes. Nothing here imports plugin
code, NumPy or pydantic.
"""

from __future__ import annotations

import ast
import keyword
import math
import re
from typing import Any

from google.protobuf import text_format

from ...proto import framework_pb2 as pb
from ..base.errors import ManifestError
from ..base.runtime import KERNEL_ABI_VERSION
from . import attrs as A

_IDENT = re.compile(r"[a-z][a-z0-9_]*\Z")  # a leading "_" could shadow the generated code's names
_REF = re.compile(r"([A-Za-z_][\w.]*:)?[A-Za-z_]\w*\Z")  # "function" or "module:function"
# Parameter names the generated API uses itself; attrs and inputs may not take them.
RESERVED = frozenset({"name"})
# The device whose kernels give an op's dtypes to its kernels of other devices that list none.
CPU = "cpu"


def parse(text: str, *, plugin: str, source: str) -> pb.PluginManifest:
    """Parse manifest text; a syntax error names the file, the line and the column."""
    manifest = pb.PluginManifest()
    try:
        text_format.Parse(text, manifest)
    except text_format.ParseError as e:
        raise ManifestError(f"{source}: {e}", plugin=plugin) from None
    return manifest


def check(
    manifest: pb.PluginManifest, *, core_version: str, in_process: bool = False
) -> tuple[list[str], list[str]]:
    """Check a manifest; return (problems, warnings).

    Problems make the plugin unusable; warnings are shown by ``paddle-ops doctor``. As a side
    effect, the ``type`` of every default and choices AttrValue is filled in. ``in_process``
    manifests (``register_plugin``) resolve bare names on their plugin object, so they need no
    ``rules_module``.
    """
    bare_ok = bool(manifest.rules_module) or in_process
    problems: list[str] = []
    warnings: list[str] = []
    problems += _check_compatibility(manifest, core_version)
    seen: set[str] = set()
    for opdef in manifest.ops:
        op = opdef.proto.type
        where = f"op {op!r}" if op else "an op with no type"
        if op in seen:
            problems.append(f"{where} is declared twice")
        seen.add(op)
        problems += [f"{where}: {p}" for p in _check_op(opdef, bare_ok)]
        if not opdef.proto.comment:
            warnings.append(f"{where} has no comment (its docstring will be empty)")
    for pack in manifest.kernel_packs:
        if not _IDENT.match(pack.op):
            problems.append(f"kernel pack for {pack.op!r}: op is not a valid op type")
        problems += [f"kernels for {pack.op!r}: {p}" for p in _check_kernels(pack.kernels, bare_ok)]
    return problems, warnings


def _check_compatibility(manifest: pb.PluginManifest, core_version: str) -> list[str]:
    problems = []
    if manifest.requires_core:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet  # (~10 ms, rarely used)

        try:
            spec = SpecifierSet(manifest.requires_core)
        except InvalidSpecifier:
            problems.append(f"requires_core {manifest.requires_core!r} is not a version specifier")
        else:
            if not spec.contains(core_version, prereleases=True):
                problems.append(
                    f"requires paddle-core {manifest.requires_core}, "
                    f"but paddle-core {core_version} is installed"
                )
    has_native = any(k.WhichOneof("impl") == "native" for k in _all_kernels(manifest))
    if has_native and not manifest.kernel_module:
        problems.append("declares native kernels but no kernel_module")
    if has_native and manifest.kernel_abi != KERNEL_ABI_VERSION:
        problems.append(
            f"its kernels were built for kernel ABI {manifest.kernel_abi}, "
            f"but paddle-core {core_version} speaks kernel ABI {KERNEL_ABI_VERSION}"
        )
    return problems


def qualify(manifest: pb.PluginManifest) -> None:
    """Spell the bare names of one manifest file's rules and Python kernels in full
    ("module:function", with the file's rules_module), then drop its rules_module: the files of a
    plugin merge into one manifest, each keeping the rules module it names."""
    module = manifest.rules_module
    if not module:
        return

    def full(ref: str) -> str:
        return f"{module}:{ref}" if ref and ":" not in ref else ref

    for opdef in manifest.ops:
        opdef.shape_rule = full(opdef.shape_rule)
        opdef.grad_rule = full(opdef.grad_rule)
        opdef.random_rule = full(opdef.random_rule)
        for mapping in opdef.onnx:
            mapping.import_rule = full(mapping.import_rule)
            mapping.export_rule = full(mapping.export_rule)
            for attr in mapping.attrs:
                attr.rule = full(attr.rule)
                attr.export_rule = full(attr.export_rule)
    for k in _all_kernels(manifest):
        if k.WhichOneof("impl") == "python":
            k.python = full(k.python)
    manifest.ClearField("rules_module")


def resolve_dtypes(
    manifest: pb.PluginManifest, record: dict[str, Any] | None
) -> tuple[list[list[str]], list[list[str]], list[str]]:
    """Give every kernel that lists no dtypes its dtypes, and take out the kernels that cannot be
    registered; return (unbuilt, faults, clashes).

    ``record`` is the plugin's build record (kernels.json: "kernels", symbol -> the dtypes its
    class declares or None; "devices", those the build compiled), None when it has none. A
    kernel of another device than the CPU takes the dtypes of its op's CPU kernels (in the same
    op or kernel pack), if any; else a native kernel takes those its class declares. Taken out,
    as [op, device, symbol, why]: in ``unbuilt``, a native kernel the record lacks, of a device
    the build did not compile (no problem: a build without a CUDA toolkit); in ``faults``, one whose dtypes are
    unknown, or whose class does not handle the CPU dtypes it takes (problems of the plugin).
    A native kernel of a device the build compiled that the record lacks stays: loading reports
    it missing. ``clashes``: a (device, dtype) two kernels of one op give."""
    recorded = None if record is None else record["kernels"]
    built = None if record is None else set(record["devices"])
    unbuilt: list[list[str]] = []
    faults: list[list[str]] = []
    clashes: list[str] = []
    declarations = [(opdef.proto.type, opdef.kernels) for opdef in manifest.ops]
    declarations += [(pack.op, pack.kernels) for pack in manifest.kernel_packs]

    def own(k) -> list[int]:  # the kernel's own dtypes: listed, else recorded
        if k.dtypes or k.WhichOneof("impl") != "native" or recorded is None:
            return list(k.dtypes)
        return list(recorded.get(k.native) or ())

    for op, kernels in declarations:
        cpu = list(dict.fromkeys(d for k in kernels if k.device == CPU for d in own(k)))
        seen: dict[tuple[str, int], str] = {}
        out = []
        for i, k in enumerate(kernels):
            symbol = getattr(k, k.WhichOneof("impl") or "native")
            native = k.WhichOneof("impl") == "native"
            if native and built is not None and k.device not in built and k.native not in recorded:
                unbuilt.append([op, k.device, symbol, _not_built(k.device)])
                out.append(i)
                continue
            inherited = not k.dtypes and k.device != CPU and bool(cpu)
            dtypes = list(k.dtypes) or (cpu if inherited else own(k))
            why = _unknown_dtypes(k, recorded) if not dtypes else ""
            if inherited and native and recorded is not None and recorded.get(k.native):
                unhandled = [d for d in dtypes if d not in recorded[k.native]]
                if unhandled:
                    why = (
                        f"it takes its op's CPU dtypes, but its class does not handle "
                        f"{', '.join(map(_dtype_name, unhandled))}: list the dtypes it takes in "
                        "the manifest"
                    )
            if why:
                faults.append([op, k.device, symbol, why])
                out.append(i)
                continue
            if not k.dtypes:
                k.dtypes.extend(dtypes)
            for dtype in k.dtypes:
                other = seen.setdefault((k.device, dtype), symbol)
                if other != symbol:
                    taken = " (taken from its CPU kernels)" if inherited else ""
                    clashes.append(
                        f"op {op!r}: {k.device} kernels {other!r} and {symbol!r} both take "
                        f"{_dtype_name(dtype)}{taken}"
                    )
        for i in reversed(out):
            del kernels[i]
    return unbuilt, faults, clashes


def _dtype_name(dtype: int) -> str:
    return pb.VarType.DataType.Name(dtype)


def _not_built(device: str) -> str:
    return (
        f"not built: the plugin's build compiled no {device} kernels (for cuda: no CUDA toolkit "
        "where it was built)"
    )


def _unknown_dtypes(k, recorded: dict[str, list[int] | None] | None) -> str:
    if k.WhichOneof("impl") != "native":
        return "lists no dtypes"
    if recorded is None:
        return (
            "its dtypes are unknown: the manifest lists none, and the plugin's build recorded none "
            "(no kernels.json beside its kernel module: the SDK's paddle_core_record_kernels "
            "writes it)"
        )
    if k.native in recorded:
        return "its dtypes are unknown: the manifest lists none, and its class declares no DTypes"
    return (
        f"its dtypes are unknown: the manifest lists none, and the plugin's build recorded no "
        f"kernel {k.native!r} (is it registered with PADDLE_CORE_REGISTER_KERNELS?)"
    )


def _all_kernels(manifest: pb.PluginManifest):
    for opdef in manifest.ops:
        yield from opdef.kernels
    for pack in manifest.kernel_packs:
        yield from pack.kernels


def _check_op(opdef: pb.OpDef, bare_ok: bool) -> list[str]:
    proto = opdef.proto
    problems = []
    if not _IDENT.match(proto.type) or keyword.iskeyword(proto.type):
        problems.append("type must be a lowercase Python identifier starting with a letter")
    if not proto.outputs:
        problems.append("declares no outputs")
    params: set[str] = set()  # names that become parameters of the generated function
    for kind, slots in (("input", proto.inputs), ("output", proto.outputs)):
        names: set[str] = set()
        for slot in slots:
            problems += _check_name(f"{kind} {slot.name!r}", slot.name, names)
        if kind == "input":
            params |= names
    for ap in proto.attrs:
        if ap.name in {s.name for s in proto.inputs}:
            problems.append(f"attr {ap.name!r} has the name of an input")
            continue
        problems += _check_name(f"attr {ap.name!r}", ap.name, params)
        problems += [f"attr {ap.name!r}: {p}" for p in _check_attr(ap)]
    problems += _check_inplace(proto)
    optional = None
    for slot in proto.inputs:
        if slot.dispensable:
            optional = optional or slot.name
        elif optional:  # the generated function's required parameter after a defaulted one
            problems.append(
                f"input {slot.name!r} is required but follows the dispensable input "
                f"{optional!r}: declare dispensable inputs last"
            )
            break
    inputs = [s.name for s in proto.inputs]
    if opdef.kernel_dtype_input and opdef.kernel_dtype_input not in inputs:
        problems.append(
            f"kernel_dtype_input {opdef.kernel_dtype_input!r} is not one of its inputs "
            f"({', '.join(inputs) or 'none'})"
        )
    problems += _check_kernels(opdef.kernels, bare_ok)
    if not opdef.shape_rule:
        problems.append("has no shape_rule")
    for field in ("shape_rule", "grad_rule", "random_rule"):
        problems += _check_ref(field, getattr(opdef, field), bare_ok)
    if opdef.random_rule and not opdef.random:
        problems.append("names a random_rule but is not random: true")
    for mapping in opdef.onnx:
        where = f"onnx mapping {onnx_name(mapping)}"
        problems += [f"{where}: {p}" for p in _check_onnx(mapping, proto, bare_ok)]
    return problems


def onnx_name(mapping: pb.OnnxMapping) -> str:
    """'Conv' (default domain) or 'com.example:MyOp', with its opset range: 'Conv (opset 11+)'."""
    name = f"{mapping.domain}:{mapping.op_type}" if mapping.domain else mapping.op_type
    last = f"-{mapping.until_version}" if mapping.until_version else "+"
    return f"{name!r} (opset {mapping.since_version}{last})"


_ONNX_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _check_onnx(mapping: pb.OnnxMapping, proto: pb.OpProto, bare_ok: bool) -> list[str]:
    """An ONNX mapping names ONNX things that look like ONNX's and attrs, inputs and outputs of
    ours that exist; every literal and default has the type of what it sets."""
    problems = []
    if not _ONNX_NAME.match(mapping.op_type):
        problems.append(f"op_type {mapping.op_type!r} is not an ONNX operator name")
    if mapping.since_version < 1:
        problems.append("since_version must be 1 or more")
    if mapping.until_version and mapping.until_version < mapping.since_version:
        problems.append(f"until_version {mapping.until_version} is before since_version")
    ours = {a.name: a for a in proto.attrs}
    inputs = {s.name for s in proto.inputs}
    outputs = {s.name for s in proto.outputs}
    positions: set[int] = set()
    for given in mapping.inputs:
        what = f"input {given.index}"
        if given.index < 0 or given.index in positions:
            problems.append(f"{what} is negative or listed twice")
        positions.add(given.index)
        if sum(map(bool, (given.input, given.attr, given.constant))) != 1:
            problems.append(f"{what} must set exactly one of input, attr and constant")
        elif given.input and given.input not in inputs:
            problems.append(f"{what}: {given.input!r} is not an input of the op")
        elif given.attr and given.attr not in ours:
            problems.append(f"{what}: {given.attr!r} is not an attr of the op")
    names: set[str] = set()
    for attr in mapping.attrs:
        what = f"attr {attr.name!r}"
        if not _ONNX_NAME.match(attr.name) or attr.name in names:
            problems.append(f"{what} is not an ONNX attribute name or is listed twice")
        names.add(attr.name)
        target = attr.attr or attr.name
        sets = not (
            mapping.import_rule or attr.ignore or attr.rule or (attr.only and not attr.attr)
        )
        if sets and target not in ours:
            problems.append(
                f"{what}: {target!r} is not an attr of the op (name one with attr, or say "
                "ignore, only or rule)"
            )
        if attr.HasField("default"):
            problems += [f"{what}: default {p}" for p in _typed(attr.default, ours.get(target))]
        for literal in attr.only:
            try:
                ast.literal_eval(literal)
            except (ValueError, SyntaxError):
                problems.append(f"{what}: only {literal!r} is not a Python literal")
        problems += _check_ref(f"{what} rule", attr.rule, bare_ok)
        problems += _check_ref(f"{what} export_rule", attr.export_rule, bare_ok)
    for fixed in mapping.fixed:
        problems += [
            f"fixed attr {fixed.attr!r}: {p}" for p in _typed(fixed.value, ours.get(fixed.attr))
        ]
    problems += [
        f"output {o!r} is not an output of the op" for o in mapping.outputs if o not in outputs
    ]
    problems += _check_ref("import_rule", mapping.import_rule, bare_ok)
    problems += _check_ref("export_rule", mapping.export_rule, bare_ok)
    problems += [
        f"export_ignores {a!r} is not an attr of the op"
        for a in mapping.export_ignores
        if a not in ours
    ]
    if mapping.export_only and not mapping.export_rule:
        problems.append("is export_only but names no export_rule")
    return problems


def _typed(value: pb.AttrValue, ap: pb.AttrProto | None) -> list[str]:
    """Give ``value`` the type of our attr ``ap`` (as the manifest does for defaults); why not."""
    if ap is None:
        return ["sets no attr of the op"]
    field = A.VALUE_FIELD.get(ap.type)
    if set(A.set_fields(value)) - {field} or value.type not in (0, ap.type):
        return [f"must set only `{field}` (the attr is {A.type_name(ap.type)})"]
    value.type = ap.type
    return violations(ap, A.from_attr_value(value))


def _check_inplace(proto: pb.OpProto) -> list[str]:
    """``inplace`` is for outputs, naming an input of the same kind (one or a list)."""
    problems = [
        f"input {s.name!r} sets inplace (only outputs may)" for s in proto.inputs if s.inplace
    ]
    inputs = {s.name: s for s in proto.inputs}
    for out in proto.outputs:
        if not out.inplace:
            continue
        source = inputs.get(out.inplace)
        if source is None:
            problems.append(
                f"output {out.name!r}: inplace {out.inplace!r} is not one of its inputs "
                f"({', '.join(inputs) or 'none'})"
            )
        elif source.duplicable != out.duplicable:
            problems.append(
                f"output {out.name!r}: inplace {out.inplace!r} must be a list exactly when "
                f"{out.name!r} is (duplicable)"
            )
    return problems


def _check_name(what: str, name: str, taken: set[str]) -> list[str]:
    if not _IDENT.match(name) or keyword.iskeyword(name):
        return [f"{what} must be a lowercase Python identifier starting with a letter"]
    if name in RESERVED:
        return [f"{what} is reserved by the generated API"]
    if name in taken:
        return [f"{what} is declared twice"]
    taken.add(name)
    return []


def _check_attr(ap: pb.AttrProto) -> list[str]:
    if ap.type not in A.VALUE_FIELD:
        return ["has no valid type"]
    problems = []
    numeric = ap.type in A.NUMERIC_TYPES
    for side in ("min", "max"):
        if ap.HasField(side) and not numeric:
            problems.append(f"{side} is only allowed on numeric types, not {A.type_name(ap.type)}")
    if ap.HasField("min") and ap.HasField("max") and ap.min.value > ap.max.value:
        problems.append(f"min {ap.min.value} is greater than max {ap.max.value}")
    if ap.HasField("choices"):
        field = A.CHOICES_FIELD.get(ap.type)
        stray = set(A.set_fields(ap.choices)) - {field}
        if field is None:
            problems.append(f"choices are not allowed on {A.type_name(ap.type)}")
        elif stray or not getattr(ap.choices, field):
            problems.append(f"choices must be a non-empty `{field}` list")
        else:
            ap.choices.type = next(t for t in A.LIST_TYPES if A.VALUE_FIELD[t] == field)
            for value in getattr(ap.choices, field):
                problems += [f"choice {value!r} {p}" for p in range_violations(ap, value)]
    if ap.HasField("default") and not problems:
        stray = set(A.set_fields(ap.default)) - {A.VALUE_FIELD[ap.type]}
        if stray or ap.default.type not in (0, ap.type):
            problems.append(f"default must set only `{A.VALUE_FIELD[ap.type]}`")
        else:
            ap.default.type = ap.type
            value = A.from_attr_value(ap.default)
            problems += [f"default {A.render(value)} {p}" for p in violations(ap, value)]
    return problems


def violations(ap: pb.AttrProto, value: Any) -> list[str]:
    """Why ``value`` (of the right type) breaks ``ap``'s range or choices; empty if it does not."""
    items = value if ap.type in A.LIST_TYPES else [value]
    problems = []
    for item in items:
        problems += range_violations(ap, item)
        if ap.HasField("choices"):
            allowed = list(getattr(ap.choices, A.CHOICES_FIELD[ap.type]))
            if item not in allowed:
                problems.append(f"is not one of {', '.join(A.render(c) for c in allowed)}")
    return problems


def range_violations(ap: pb.AttrProto, item: Any) -> list[str]:
    """Why a single number breaks ``ap``'s min/max; empty if it does not."""
    if isinstance(item, float) and math.isnan(item) and (ap.HasField("min") or ap.HasField("max")):
        return ["is NaN, outside " + A.describe_range(ap)]
    low = ap.HasField("min") and (item <= ap.min.value if ap.min.exclusive else item < ap.min.value)
    high = ap.HasField("max") and (
        item >= ap.max.value if ap.max.exclusive else item > ap.max.value
    )
    return [f"is outside {A.describe_range(ap)}"] if low or high else []


def _check_kernels(kernels, bare_ok: bool) -> list[str]:
    problems = []
    seen: set[tuple[str, int]] = set()
    has_cpu = any(k.device == CPU for k in kernels)
    for k in kernels:
        impl = k.WhichOneof("impl")
        name = f"{k.device or '?'} kernel"
        if not _IDENT.match(k.device):
            problems.append(f"{name}: device must be a lowercase identifier like 'cpu'")
        if 0 in k.dtypes:
            problems.append(f"{name}: lists DATA_TYPE_UNSPECIFIED among its dtypes")
        elif not k.dtypes and impl == "python" and (k.device == CPU or not has_cpu):
            problems.append(f"{name}: lists no dtypes")  # (only native kernels' are recorded)
        if impl is None:
            problems.append(f"{name}: sets neither `python` nor `native`")
        elif impl == "python":
            problems += _check_ref(f"{name} python", k.python, bare_ok)
        elif not re.match(r"[A-Za-z_]\w*\Z", k.native):
            problems.append(f"{name}: native symbol {k.native!r} is not an identifier")
        for dtype in k.dtypes:
            if (k.device, dtype) in seen:
                problems.append(f"{name}: dtype {pb.VarType.DataType.Name(dtype)} declared twice")
            seen.add((k.device, dtype))
    return problems


def _check_ref(what: str, ref: str, bare_ok: bool) -> list[str]:
    """``bare_ok``: a bare "function" has somewhere to resolve (a rules_module or, for
    in-process plugins, the plugin object)."""
    if not ref:
        return []
    if not _REF.match(ref):
        return [f"{what} {ref!r} must be 'function' or 'module:function'"]
    if ":" not in ref and not bare_ok:
        return [f"{what} {ref!r} names a function but the manifest sets no rules_module"]
    return []


_BOUND = re.compile(r"\b(min|max)\s*:?\s*\{([^{}]*)\}")
_BOUND_VALUE = re.compile(r"\bvalue\s*:\s*([^\s}]+)")
_SPELLED_INF = frozenset({"inf", "infinity", "-inf", "-infinity"})


def bound_problems(manifest: pb.PluginManifest, text: str) -> list[str]:
    """Range bounds that are not finite: NaN (no number compares with it), or infinite without
    saying so (``1e999`` overflows to inf). An infinite bound written as ``inf`` is explicit and
    allowed. ``manifest`` is ``text`` parsed (one file: the bounds are matched in order)."""
    spelled: dict[str, list[str]] = {"min": [], "max": []}
    for side, body in _BOUND.findall(text):
        value = _BOUND_VALUE.search(body)
        spelled[side].append(value.group(1).lower().lstrip("+") if value else "0")
    problems = []
    for side in ("min", "max"):
        bounds = [
            (opdef.proto.type, ap.name, getattr(ap, side).value)
            for opdef in manifest.ops
            for ap in opdef.proto.attrs
            if ap.HasField(side)
        ]
        tokens = spelled[side] if len(spelled[side]) == len(bounds) else [None] * len(bounds)
        for (op, attr, value), token in zip(bounds, tokens):
            where = f"op {op!r}: attr {attr!r}: {side}"
            if math.isnan(value):
                problems.append(f"{where} is NaN; a bound must be a number")
            elif math.isinf(value) and token is not None and token not in _SPELLED_INF:
                problems.append(
                    f"{where} {token} is not a finite number (it reads as {value}); write a "
                    f"finite bound, or `{'-' if value < 0 else ''}inf` if no bound is meant"
                )
    return problems


def naming_warnings(manifest: pb.PluginManifest, plugin: str) -> list[str]:
    """Op types of a third-party plugin that do not start with its name and an underscore
    (``example_cos`` for plugin ``example``), so that two plugins' ops cannot collide. The
    first-party plugins own the unprefixed names; the caller exempts them."""
    prefix = plugin.replace("-", "_") + "_"
    return [
        f"op {opdef.proto.type!r} does not start with {prefix!r}: name the ops of plugin "
        f"{plugin!r} {prefix}<op> (e.g. {prefix}{opdef.proto.type}), so that they cannot "
        "collide with another plugin's"
        for opdef in manifest.ops
        if not opdef.proto.type.startswith(prefix)
    ]


def summarize(manifest: pb.PluginManifest) -> dict[str, Any]:
    """The listing view of a manifest: plain data, cached in the plugin index."""
    return {
        "ops": [
            {
                "type": opdef.proto.type,
                "comment": opdef.proto.comment.strip().split("\n", 1)[0],
                "kernels": _kernel_summary(opdef.kernels),
                "grad": grad_kind(opdef.grad_rule),
            }
            for opdef in manifest.ops
        ],
        "kernel_packs": [
            {"op": pack.op, "kernels": _kernel_summary(pack.kernels)}
            for pack in manifest.kernel_packs
        ],
    }


NO_GRAD = "paddle_core.rules:no_grad"


def grad_kind(grad_rule: str) -> str:
    """How an op differentiates, as listings show it without importing its rules: "yes" (a
    grad rule), "zero" (the core's ``no_grad``: its outputs are constant in its inputs) or
    "none" (no grad rule: gradients cannot flow through it)."""
    return "zero" if grad_rule == NO_GRAD else "yes" if grad_rule else "none"


def _kernel_summary(kernels) -> list[list[Any]]:
    """[device, [dtype names], "python" | "native", reference] per kernel."""
    names = pb.VarType.DataType.Name
    summary = []
    for k in kernels:
        impl = k.WhichOneof("impl") or ""
        ref = getattr(k, impl) if impl else ""
        summary.append([k.device, [names(d).lower() for d in k.dtypes], impl, ref])
    return summary
