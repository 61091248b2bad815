"""Find installed plugins and read their manifests, without importing any plugin code.

A plugin registers one entry point in group ``paddle_core.plugins`` whose value names its
manifest as ``package:file.pbtxt``, or ``package:directory`` holding several ``*.pbtxt``
files (one per op family, merged in name order). Beside its kernel module, its build records
what the compiled module exports (``kernels.json``: each kernel's dtypes, see
paddle_core/cmake/record_kernels.py), which fills in the dtypes the manifest does not list.
The core owns the loader loop: each plugin is read on its own, every failure is recorded
against that plugin (``PluginRecord.errors``), and nothing here raises. The result is cached
on disk (``index_cache``), so a process that finds nothing changed reads one small JSON file
instead of scanning distributions and parsing manifests.
"""

from __future__ import annotations

import base64
import json
import os

from ..base.errors import ManifestError, counted

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing would slow `paddle-ops list`
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


GROUP = "paddle_core.plugins"
# The largest manifest file read (the first-party ones hold tens of kilobytes).
MAX_MANIFEST_BYTES = 16 << 20


class PluginRecord:
    """What the core knows about one plugin: identity, status, and its manifest.

    ``errors`` are found at discovery (unreadable or invalid manifest, incompatible core): such
    a plugin registers no ops. Kernels its manifest declares but discovery takes out, each
    [op, device, symbol, why]: ``unbuilt`` for a device its build did not compile (a CUDA
    kernel of a build without a CUDA toolkit: only unavailable), ``faults`` where the
    declaration and the build disagree (dtypes unknown, or not handled: problems).
    ``runtime_errors`` are found on first use (a rules module that raises, a missing Python
    kernel): its ops stay listed but cannot run. ``missing_symbols``
    are native kernels its compiled module lacks, ``refused_kernels`` kernels bound to an op
    they do not fit: only the ops using them are affected.
    ``disabled`` is set from the user's settings. The manifest is kept serialised;
    ``manifest()`` parses it on demand so listing never needs protobuf.
    """

    # Fields stored in the index cache, in order.
    FIELDS = (
        "name",
        "distribution",
        "version",
        "entry_point",
        "manifest_path",
        "manifest_files",
        "kernel_record",
        "comment",
        "kernel_module",
        "hooks_module",
        "errors",
        "warnings",
        "ops",
        "kernel_packs",
        "unbuilt",
        "faults",
        "manifest_b64",
        "kernel_problem",
    )
    __slots__ = (
        *FIELDS,
        "missing_symbols",
        "refused_kernels",
        "disabled",
        "runtime_errors",
        "namespace",
        "_manifest",
    )

    def __init__(self, name: str, distribution: str = "", version: str = "", **fields: Any):
        self.name = name
        self.distribution = distribution
        self.version = version
        self.entry_point = fields.get("entry_point", "")
        self.manifest_path = fields.get("manifest_path", "")  # the file or directory named
        self.manifest_files: list[str] = list(fields.get("manifest_files", ()))
        self.kernel_record = fields.get("kernel_record", "")  # kernels.json, where there is one
        self.comment = fields.get("comment", "")
        self.kernel_module = fields.get("kernel_module", "")
        self.hooks_module = fields.get("hooks_module", "")
        self.errors: list[str] = list(fields.get("errors", ()))
        self.warnings: list[str] = list(fields.get("warnings", ()))
        self.ops: list[dict[str, Any]] = list(fields.get("ops", ()))
        self.kernel_packs: list[dict[str, Any]] = list(fields.get("kernel_packs", ()))
        self.unbuilt: list[list[str]] = list(fields.get("unbuilt", ()))
        self.faults: list[list[str]] = list(fields.get("faults", ()))
        self.manifest_b64: str = fields.get("manifest_b64", "")
        # Why the compiled kernel module cannot be used (not installed, failed to import, wrong
        # ABI): found without importing at discovery, or by a process that tried to load it,
        # and kept in the index so that `paddle-ops list` knows. Cleared by a successful load.
        self.kernel_problem: str = fields.get("kernel_problem", "")
        # Native symbols the manifest declares but the module does not export: only the
        # kernels naming them are unavailable. Noted with kernel_problem by the process that
        # found them (index_cache.note_kernel_problem), not stored in the index itself.
        self.missing_symbols: list[str] = []
        # [op, symbol, why] per kernel the manifest binds to an op it does not fit, by the
        # kernel's own declaration (slots, dtypes): unavailable for that op. Noted likewise.
        self.refused_kernels: list[list[str]] = []
        self.disabled: str | None = None  # "disabled by <the setting>", when the user did
        self.runtime_errors: list[str] = []
        # Where bare rule/kernel names resolve, for in-process plugins (register_plugin): their
        # own object. An installed plugin's names are spelled in full at discovery.
        self.namespace: Any = fields.get("namespace")
        self._manifest = None

    @property
    def problems(self) -> list[str]:
        """Everything wrong with the plugin, manifest problems first, then its ops' problems."""
        found = self.errors + self.runtime_errors
        if self.kernel_problem and self.kernel_problem not in found:
            found.append(self.kernel_problem)
        if not self.kernel_problem:  # (a module that cannot be used says it for all)
            found += [
                f"op {op!r}: {device} kernel {symbol!r}: {why}"
                for op, device, symbol, why in self.faults
            ]
        for op, symbols in self.missing_kernels().items():
            found.append(f"op {op!r}: " + missing_symbols_reason(self.kernel_module, symbols))
        found += [f"op {op!r}: {why}" for op, _, why in self.refused_kernels]
        return found

    @property
    def status(self) -> str:
        """'ok', 'disabled', 'broken', or 'partial' (some kernels are missing or refused, the
        rest work)."""
        if self.disabled:
            return "disabled"
        if self.errors or self.runtime_errors or self.kernel_problem:
            return "broken"
        partial = self.missing_symbols or self.refused_kernels or self.faults
        return "partial" if partial else "ok"

    def refusal(self, op: str, symbol: str) -> str:
        """Why kernel ``symbol`` was refused for ``op`` (it does not fit), or ""."""
        for refused_op, refused_symbol, why in self.refused_kernels:
            if (refused_op, refused_symbol) == (op, symbol):
                return why
        return ""

    def missing_kernels(self) -> dict[str, list[str]]:
        """Op -> the symbols of its kernels (declared by this plugin) that its module lacks."""
        missing = set(self.missing_symbols)
        found: dict[str, list[str]] = {}
        declared = [(s["type"], s["kernels"]) for s in self.ops]
        declared += [(p["op"], p["kernels"]) for p in self.kernel_packs]
        for op, kernels in declared if missing else []:
            lacking = [k[3] for k in kernels if k[2] == "native" and k[3] in missing]
            if lacking:
                found[op] = sorted({*found.get(op, ()), *lacking})
        return found

    @property
    def reason(self) -> str:
        """Why the plugin is not 'ok' (first problem, with a count of the rest), or ''."""
        if self.disabled:
            return self.disabled
        problems = self.problems
        if not problems:
            return ""
        more = f" (and {counted(len(problems) - 1, 'more problem')})" if len(problems) > 1 else ""
        return problems[0] + more

    @property
    def loaded(self) -> bool:
        """Whether the plugin's ops are registered (manifest valid and plugin enabled)."""
        return not self.errors and not self.disabled

    @property
    def label(self) -> str:
        """How messages name the plugin: "plugin 'math' (paddle-ops-math 0.1.0)"."""
        if self.distribution:
            return f"plugin {self.name!r} ({self.distribution} {self.version})"
        return f"plugin {self.name!r}"

    def manifest(self):
        """The parsed PluginManifest (imports protobuf on first call)."""
        if self._manifest is None:
            from ...proto import framework_pb2 as pb  # (protobuf: off the listing path)

            self._manifest = pb.PluginManifest.FromString(base64.b64decode(self.manifest_b64))
        return self._manifest

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.FIELDS}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PluginRecord:
        return cls(**data)


def missing_symbols_reason(module: str, symbols: list[str]) -> str:
    """How messages say that compiled ``module`` lacks declared kernel ``symbols``."""
    one = len(symbols) == 1
    return (
        f"its compiled module {module!r} does not export {'kernel' if one else 'kernels'} "
        f"{', '.join(map(repr, symbols))}, which the manifest declares: "
        f"{'it' if one else 'they'} cannot run; register {'it' if one else 'each'} in the "
        "module under the name the manifest gives (or remove "
        f"{'it' if one else 'them'} from the manifest), then rebuild the plugin"
    )


# Manifest fields that hold one value for the whole plugin: every file that sets one must agree.
# (rules_module holds for its own file: spelt into each of its names before merging.)
_PLUGIN_FIELDS = (
    "comment",
    "requires_core",
    "kernel_abi",
    "kernel_module",
    "hooks_module",
)
# The record of a plugin's build, beside its kernel module (paddle_core_record_kernels).
KERNEL_RECORD = "kernels.json"
MAX_RECORD_BYTES = 16 << 20


def record_from_manifest(
    record: PluginRecord, parts: list[tuple[str, str]], core_version: str
) -> PluginRecord:
    """Fill ``record`` from manifest texts ((text, source) per file, merged in order);
    problems go to ``record.errors``. Never raises."""
    # Parsing and checking need protobuf, which a listing served by the index never imports.
    from ...proto import framework_pb2 as pb
    from ..spec import manifest as M

    parsed = pb.PluginManifest()
    setters: dict[str, str] = {}
    bounds: list[str] = []  # bounds that are not finite numbers, found per file
    for text, source in parts:
        try:
            part = M.parse(text, plugin=record.name, source=source)
        except ManifestError as e:
            record.errors.append(str(e))
            continue
        bounds += M.bound_problems(part, text)
        if record.namespace is None:  # (an in-process plugin's bare names are on its object)
            M.qualify(part)
        for field in _PLUGIN_FIELDS:
            value, current = getattr(part, field), getattr(parsed, field)
            if value and current and value != current:
                record.errors.append(
                    f"{source} sets {field} {value!r}, but {setters[field]} sets {current!r}"
                )
            elif value:
                setters.setdefault(field, source)
        parsed.MergeFrom(part)
    if record.errors:
        return record
    in_process = record.namespace is not None
    errors, warnings = M.check(parsed, core_version=core_version, in_process=in_process)
    record.errors += errors + bounds
    record.warnings += warnings
    if not record.errors:
        built = read_kernel_record(record, parsed.kernel_module)
        record.unbuilt, record.faults, clashes = M.resolve_dtypes(parsed, built)
        record.errors += clashes
    record.comment = parsed.comment
    record.kernel_module = parsed.kernel_module
    record.hooks_module = parsed.hooks_module
    summary = M.summarize(parsed)
    record.ops = summary["ops"]
    record.kernel_packs = summary["kernel_packs"]
    record.manifest_b64 = base64.b64encode(parsed.SerializeToString()).decode("ascii")
    record._manifest = parsed
    return record


def read_kernel_record(record: PluginRecord, kernel_module: str) -> dict[str, Any] | None:
    """The record the build left beside ``kernel_module`` (paddle_core/cmake/record_kernels.py
    writes it): {"kernels": symbol -> dtypes or None, "devices": [the devices compiled]}; None
    when there is none. Sets ``record.kernel_record`` to where it is or would be (the index
    watches it); a record that cannot be read goes to ``record.errors``."""
    spec = find_spec(kernel_module) if kernel_module else None
    if spec is None or not spec.origin or not spec.has_location:
        return None
    path = os.path.join(os.path.dirname(spec.origin), KERNEL_RECORD)
    record.kernel_record = path
    if not os.path.isfile(path):
        return None
    from ...proto import framework_pb2 as pb  # (protobuf: only when the index is stale)

    dtypes = frozenset(v for v in pb.VarType.DataType.values() if v)  # (not UNSPECIFIED)
    try:
        if os.path.getsize(path) > MAX_RECORD_BYTES:
            raise ValueError(f"it holds more than {MAX_RECORD_BYTES} bytes")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        kernels, devices = data["kernels"], data["devices"]
        if not isinstance(kernels, dict) or not all(
            listed is None
            or (isinstance(listed, list) and all(type(d) is int and d in dtypes for d in listed))
            for listed in kernels.values()
        ):
            raise ValueError("its 'kernels' is not a map of symbol -> list of dtype numbers")
        if not isinstance(devices, list) or not all(isinstance(d, str) for d in devices):
            raise ValueError("its 'devices' is not a list of device names")
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as e:
        record.errors.append(
            f"the record of its build, {path!r}, is unreadable ({type(e).__name__}: {e}): "
            "reinstall the plugin"
        )
        return None
    return {"kernels": kernels, "devices": devices}


def is_first_party(distribution: str) -> bool:
    """Whether ``distribution`` is paddle-core or one of its first-party op packages (core,
    math, nn), whose ops own the unprefixed names."""
    from .catalog import KNOWN_PACKAGES  # (reads the catalog: only when the index is stale)

    return distribution == "paddle-core" or distribution in KNOWN_PACKAGES


def scan(core_version: str) -> list[PluginRecord]:
    """Read every installed plugin's manifest. One plugin's failure never stops the others."""
    from importlib.metadata import entry_points  # (~10 ms: only when the index is stale)

    records = []
    names: dict[str, PluginRecord] = {}
    for ep in sorted(entry_points(group=GROUP), key=lambda e: (e.name, e.value)):
        record = read_entry_point(ep, core_version)
        if record.name in names:
            other = names[record.name]
            record.errors.insert(
                0, f"plugin name {record.name!r} is already used by {other.distribution}"
            )
        names.setdefault(record.name, record)
        records.append(record)
    return records


def read_entry_point(ep, core_version: str) -> PluginRecord:
    """The record of one entry point's plugin, its manifest read and checked; never raises."""
    dist = getattr(ep, "dist", None)
    # Metadata without a Name or Version (damaged, or removed while being read) gives None.
    record = PluginRecord(
        ep.name,
        distribution=(dist.name if dist is not None else "") or "",
        version=(dist.version if dist is not None else "") or "",
        entry_point=ep.value,
    )
    try:
        parts = read_manifest(record, locate_manifest(ep.value))
    except (OSError, ValueError, UnicodeDecodeError) as e:
        record.errors.append(str(e))
        return record
    try:
        record_from_manifest(record, parts, core_version)
        if record.kernel_module and not record.errors and find_spec(record.kernel_module) is None:
            record.kernel_problem = (
                f"its compiled module {record.kernel_module!r} is not installed "
                "(did the plugin's build fail?)"
            )
        return record
    except Exception as e:  # a checker bug must not take the host down; report it instead
        record.errors.append(f"unexpected {type(e).__name__} while reading the manifest: {e}")
        return record


def read_manifest(record: PluginRecord, path: Path) -> list[tuple[str, str]]:
    """The (text, source) of the manifest file at ``path``, or of each ``*.pbtxt`` in the
    directory at ``path``; sets the record's manifest_path and manifest_files."""
    record.manifest_path = str(path)
    files = sorted(path.glob("*.pbtxt")) if path.is_dir() else [path]
    if not files:
        raise ValueError(f"manifest directory {str(path)!r} holds no *.pbtxt file")
    record.manifest_files = [str(f) for f in files]
    for f in files:  # a FIFO would block the read, /dev/zero never end it
        if not f.is_file():
            raise ValueError(f"manifest {str(f)!r} is not a regular file")
        if f.stat().st_size > MAX_MANIFEST_BYTES:
            raise ValueError(
                f"manifest {str(f)!r} holds {f.stat().st_size} bytes, more than a manifest may "
                f"({MAX_MANIFEST_BYTES})"
            )
    return [(f.read_text(encoding="utf-8"), str(f)) for f in files]


def locate_manifest(value: str) -> Path:
    """The manifest file (or directory) named by an entry-point value "package:file.pbtxt",
    found without importing the package (``find_spec`` locates it; nothing is executed)."""
    from pathlib import Path  # (5 ms: only when the index is stale)

    package, sep, resource = value.partition(":")
    package, resource = package.strip(), resource.strip()
    if not sep or not package or not resource:
        raise ValueError(f"entry point value {value!r} must look like 'package:manifest.pbtxt'")
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"package {package!r} named by entry point {value!r} is not installed")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / resource
        if candidate.exists():
            return candidate
    raise ValueError(f"manifest file {resource!r} is missing from package {package!r}")


def find_spec(name: str):
    """The module spec of a dotted name, found without importing anything (unlike
    importlib.util.find_spec, which imports parent packages); None if it is not there."""
    # (importlib's finders: only when the index is stale)
    import importlib.machinery
    import importlib.util

    parts = name.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
        for i in range(1, len(parts)):
            if spec is None or not spec.submodule_search_locations:
                return None
            locations = list(spec.submodule_search_locations)
            spec = importlib.machinery.PathFinder.find_spec(".".join(parts[: i + 1]), locations)
    except (ImportError, ValueError):
        return None
    return spec
