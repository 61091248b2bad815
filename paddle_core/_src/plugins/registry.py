"""The op registry: op type -> OpInfo (proto, plugin, kernels, rules), and the conflict rule.

Built from plugin records (``discovery``), cheaply: only op types and kernel keys are needed up
front. The OpProto, the attr model, the rules and the kernels are resolved per op on first use.

Conflict rule (documented in docs/writing-op-plugins.md): when several plugins declare the same
op type, or the same (op, device, dtype) kernel, the provider is chosen in this order:

1. the plugin the user prefers (``PADDLE_CORE_PREFER`` / ``[prefer]`` in the config file); a
   preference for one of an op's kernels (``scale:cpu:float32=math``) also picks the op's
   declaration when no preference names the op itself;
2. plugins registered in-process with ``register_plugin``, most recent first;
3. installed plugins by name (for kernels: the plugin declaring the op, then the others by name).

Every conflict not settled by a preference is reported once per process as a
``PluginConflictWarning`` and listed by ``paddle-ops doctor``.
"""

from __future__ import annotations

import shlex
from collections import namedtuple
from collections.abc import Container

from ..._version import __version__
from ..base.dtypes import DTYPES
from ..base.errors import OpNotFoundError, brief, did_you_mean, shown
from ..base.warn import warn
from . import discovery, index_cache, loading
from .config import ConfigWarning, Settings, load_settings, normalize
from .discovery import PluginRecord, missing_symbols_reason

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing would slow `paddle-ops list`
if TYPE_CHECKING:
    from typing import Any


class PluginConflictWarning(UserWarning):
    """Two plugins declare the same op or kernel; one was chosen by the conflict rule."""


# Who provides an op type: the plugin's name, and the distribution and version that installed it
# ("" for a plugin registered from Python). Each Operator keeps its op's, and saved programs
# record it (OpDesc.provider), so that loading them elsewhere names the package to install.
Provider = namedtuple("Provider", "plugin distribution version")


class KernelRef:
    """One declared kernel: (op, device, dtype) -> a Python function or a native symbol."""

    __slots__ = ("op", "device", "dtype", "plugin", "impl", "ref", "_loaded")

    def __init__(self, op: str, device: str, dtype: str, plugin: PluginRecord, impl: str, ref: str):
        self.op = op
        self.device = device
        self.dtype = dtype
        self.plugin = plugin
        self.impl = impl  # "python" or "native"
        self.ref = ref
        self._loaded: Any = None

    def __repr__(self) -> str:
        return f"<{self.impl} kernel {self.ref!r} for {self.op}/{self.device}/{self.dtype} from {self.plugin.name}>"

    @property
    def missing(self) -> bool:
        """Whether this native kernel is known not to load: its plugin's module is unusable,
        does not export the symbol, or exports a kernel that does not fit the op."""
        plugin = self.plugin
        return self.impl == "native" and bool(
            plugin.kernel_problem
            or self.ref in plugin.missing_symbols
            or plugin.refusal(self.op, self.ref)
        )

    def load(self) -> Any:
        """The callable (Python kernels) or the kernel capsule (native kernels), loaded on
        first use. Raises KernelLoadError naming plugin, op and symbol."""
        if self._loaded is None:
            if self.impl == "native":
                registry = get_registry()
                self._loaded = loading.load_native(
                    self.plugin, self.op, self.ref, registry.settings.cache_dir, registry.proto_of
                )
            else:
                self._loaded = loading.load_python(self.plugin, self.op, self.device, self.ref)
        return self._loaded


class OpSignature:
    """An op's interface flattened into plain tuples, built once: appending an op reads these
    instead of protobuf fields (each protobuf attribute read costs ~0.1 µs)."""

    __slots__ = (
        "inputs",
        "input_names",
        "outputs",
        "output_slots",
        "attr_types",
        "block_attrs",
        "validate",
        "kernel_dtype_input",
        "kernel_dtypes",
        "always_selecting",
    )

    def __init__(self, info: OpInfo) -> None:
        proto = info.proto
        # (name, duplicable, dispensable, comment) per input slot; (name, duplicable,
        # dispensable) per output slot.
        self.inputs = tuple((s.name, s.duplicable, s.dispensable, s.comment) for s in proto.inputs)
        self.input_names = frozenset(s.name for s in proto.inputs)
        self.outputs = tuple((s.name, s.duplicable, s.dispensable) for s in proto.outputs)
        self.output_slots = [s.name for s in proto.outputs]
        self.attr_types = info.attr_types
        validator = info.validator()
        self.block_attrs = validator.block_attrs  # given as Blocks, stored as their indices
        self.validate = validator.validate
        self.kernel_dtype_input = info.opdef.kernel_dtype_input
        # Every dtype some device's declared kernel takes (empty: the op declares none).
        self.kernel_dtypes = frozenset(dtype for _, dtype in info.kernels)
        # The selecting slot when it is a required input, so always bound (most ops: x).
        required = [name for name, _, dispensable, _ in self.inputs if not dispensable]
        first = self.kernel_dtype_input or (self.inputs[0][0] if self.inputs else None)
        self.always_selecting = first if first in required else None

    def selecting_input(self, bound: Container[str]) -> str | None:
        """The input slot whose dtype selects the op's kernel, among the ``bound`` ones: the
        manifest's kernel_dtype_input when it is bound, else the first bound input; None when
        no input is bound (the first output's dtype selects it then)."""
        if self.kernel_dtype_input and self.kernel_dtype_input in bound:
            return self.kernel_dtype_input
        return next((slot[0] for slot in self.inputs if slot[0] in bound), None)


class OpInfo:
    """Everything the core knows about one op type. Heavy parts are parsed on first use."""

    __slots__ = (
        "type",
        "plugin",
        "summary",
        "index",
        "kernels",
        "others",
        "provider",
        "_proto",
        "_opdef",
        "_attr_types",
        "_attr_defaults",
        "_validator",
        "_shape_rule",
        "_signature",
    )

    def __init__(self, plugin: PluginRecord, index: int, others: list[PluginRecord]):
        self.plugin = plugin
        self.index = index  # position in the plugin's manifest
        self.summary: dict[str, Any] = plugin.ops[index]
        self.type: str = self.summary["type"]
        self.others = others  # plugins whose declaration of this op lost the conflict
        self.provider = Provider(plugin.name, plugin.distribution, plugin.version)
        # (device, dtype) -> candidate kernels, preferred first.
        self.kernels: dict[tuple[str, str], list[KernelRef]] = {}
        self._opdef = self._proto = self._attr_types = self._attr_defaults = None
        self._validator = self._shape_rule = self._signature = None

    def __repr__(self) -> str:
        return f"<op {self.type!r} from {self.plugin.label}>"

    @property
    def opdef(self):
        if self._opdef is None:
            self._opdef = self.plugin.manifest().ops[self.index]
        return self._opdef

    @property
    def proto(self):
        if self._proto is None:
            self._proto = self.opdef.proto
        return self._proto

    @property
    def attr_types(self) -> dict[str, int]:
        """attr name -> AttrType, in declaration order."""
        if self._attr_types is None:
            self._attr_types = {a.name: a.type for a in self.proto.attrs}
        return self._attr_types

    @property
    def attr_defaults(self) -> dict[str, Any]:
        """attr name -> default Python value, for attrs that have one."""
        if self._attr_defaults is None:
            from ..spec.attrs import from_attr_value  # (protobuf: off the listing path)

            self._attr_defaults = {
                a.name: from_attr_value(a.default)
                for a in self.proto.attrs
                if a.HasField("default")
            }
        return self._attr_defaults

    def signature(self) -> OpSignature:
        if self._signature is None:
            self._signature = OpSignature(self)
        return self._signature

    @property
    def grad(self) -> str:
        """ "yes" (a grad rule), "zero" (constant in its inputs) or "none" (not differentiable)."""
        return self.summary["grad"]

    @property
    def has_grad(self) -> bool:
        return self.summary["grad"] == "yes"

    @property
    def devices(self) -> list[str]:
        return sorted({device for device, _ in self.kernels})

    def dtypes_for(self, device: str) -> list[str]:
        present = {dtype for dev, dtype in self.kernels if dev == device}
        return [d for d in DTYPES if d in present]

    @property
    def dtypes(self) -> list[str]:
        present = {dtype for _, dtype in self.kernels}
        return [d for d in DTYPES if d in present]

    @property
    def available(self) -> bool:
        """Whether the op can run as far as is known without importing plugin code: its plugin
        is not broken and one of its kernels is not missing."""
        return self.plugin.status != "broken" and any(
            not ref.missing for refs in self.kernels.values() for ref in refs
        )

    def missing_kernels(self) -> list[str]:
        """Why kernels of the op cannot run (symbols their modules lack, kernels that do not
        fit the op), one line per plugin and refused kernel."""
        reasons = []
        for plugin in {
            ref.plugin.name: ref.plugin for refs in self.kernels.values() for ref in refs
        }.values():
            symbols = plugin.missing_kernels().get(self.type)
            if symbols:
                reasons.append(
                    f"{plugin.label}: " + missing_symbols_reason(plugin.kernel_module, symbols)
                )
            reasons += [
                f"{plugin.label}: {why}" for op, _, why in plugin.refused_kernels if op == self.type
            ]
        return reasons

    def validator(self):
        """The attr validator (a pydantic schema, built on first call)."""
        if self._validator is None:
            from ..spec.attr_validator import AttrValidator  # (pydantic: off the listing path)

            self._validator = AttrValidator(self)
        return self._validator

    def shape_rule(self):
        if self._shape_rule is None:
            self._shape_rule = loading.resolve(
                self.plugin, self.opdef.shape_rule, f"shape rule of op {self.type!r}"
            )
        return self._shape_rule

    def grad_rule(self):
        """The grad rule callable, or None when the op is not differentiable."""
        ref = self.opdef.grad_rule
        return loading.resolve(self.plugin, ref, f"grad rule of op {self.type!r}") if ref else None

    def draws(self, attrs: dict) -> bool:
        """Whether an op of this type with ``attrs`` (as its kernel reads them) draws random
        numbers: a ``random`` op does, unless its ``random_rule`` says it does not."""
        if not self.opdef.random:
            return False
        ref = self.opdef.random_rule
        if not ref:
            return True
        rule = loading.resolve(self.plugin, ref, f"random rule of op {self.type!r}")
        return bool(rule(attrs))


class Conflict:
    """Several plugins provide one op type (kind "op") or one kernel key (kind "kernel")."""

    def __init__(
        self, kind: str, key: str, chosen: PluginRecord, others: list[PluginRecord], preferred: bool
    ):
        self.kind, self.key, self.chosen, self.others, self.preferred = (
            kind,
            key,
            chosen,
            others,
            preferred,
        )

    def describe(self) -> str:
        labels = [p.label for p in [self.chosen, *self.others]]
        names = ", ".join(labels[:-1]) + " and " + labels[-1]
        how = "as preferred by the user" if self.preferred else "by the default conflict rule"
        hint = "" if self.preferred else f"; choose with PADDLE_CORE_PREFER={self.key}=<plugin>"
        return f"{self.kind} {self.key!r} is provided by {names}; using {self.chosen.name!r} {how}{hint}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "chosen": self.chosen.name,
            "others": [p.name for p in self.others],
            "preferred": self.preferred,
        }


class Registry:
    """Op types, their providers and kernels, built from plugin records."""

    def __init__(self, records: list[PluginRecord], settings: Settings | None = None):
        self.settings = settings or Settings()
        self.records = records
        self.plugins = {r.name: r for r in records}
        self.ops: dict[str, OpInfo] = {}
        self.conflicts: list[Conflict] = []
        self._build()

    def _build(self) -> None:
        loaded = [r for r in self.records if r.loaded]
        declared: dict[str, list[tuple[PluginRecord, int]]] = {}
        for record in loaded:
            for i, summary in enumerate(record.ops):
                declared.setdefault(summary["type"], []).append((record, i))
        for op, candidates in declared.items():
            ordered, preferred = self._order(op, candidates)
            (plugin, index), rest = ordered[0], ordered[1:]
            info = OpInfo(plugin, index, [p for p, _ in rest])
            self.ops[op] = info
            if rest:
                self.conflicts.append(Conflict("op", op, plugin, info.others, preferred))
        # Kernels: the declaring plugin's first, then kernel packs by plugin order.
        providers: dict[tuple[str, str, str], list[KernelRef]] = {}
        for op, info in self.ops.items():
            self._add_kernels(providers, info.plugin, op, info.summary["kernels"])
        for record in loaded:
            for pack in record.kernel_packs:
                if pack["op"] in self.ops:
                    self._add_kernels(providers, record, pack["op"], pack["kernels"])
        for (op, device, dtype), refs in providers.items():
            key = f"{op}:{device}:{dtype}"
            ordered, preferred = self._order(key, [(ref.plugin, ref) for ref in refs])
            self.ops[op].kernels[(device, dtype)] = [ref for _, ref in ordered]
            if len(refs) > 1:
                chosen, *others = [p for p, _ in ordered]
                self.conflicts.append(Conflict("kernel", key, chosen, others, preferred))

    @staticmethod
    def _add_kernels(providers, plugin: PluginRecord, op: str, kernels: list) -> None:
        for device, dtypes, impl, ref in kernels:
            for dtype in dtypes:
                providers.setdefault((op, device, dtype), []).append(
                    KernelRef(op, device, dtype, plugin, impl, ref)
                )

    def _order(self, key: str, candidates: list[tuple[PluginRecord, Any]]):
        """Candidates in rule order (records are already in default order), and whether a
        user preference decided the first."""
        wanted = self.settings.prefer.get(key)
        if wanted is None and key.count(":") == 2:  # kernels fall back to the op's preference
            wanted = self.settings.prefer.get(key.split(":", 1)[0])
        elif wanted is None and ":" not in key:  # an op follows a preference for its kernels
            prefix = key + ":"
            wanted = next(
                (w for k, w in self.settings.prefer.items() if k.startswith(prefix)), None
            )
        if wanted is not None:
            w = normalize(wanted)
            chosen = [
                c for c in candidates if w in (normalize(c[0].name), normalize(c[0].distribution))
            ]
            if chosen:
                return chosen + [c for c in candidates if c not in chosen], True
        return candidates, False

    # -- queries ---------------------------------------------------------------------------

    def __contains__(self, op: str) -> bool:
        return op in self.ops

    def proto_of(self, op: str) -> Any:
        """The OpProto of a declared op, or None: loading checks the kernels of a plugin's
        kernel packs against ops other plugins declare."""
        info = self.ops.get(op)
        return info.proto if info is not None else None

    def op_types(self) -> list[str]:
        return sorted(self.ops)

    def unbuilt_kernels(self, op: str) -> list[tuple[PluginRecord, str, str, str]]:
        """(plugin, device, symbol, why) for each kernel of ``op`` that a loaded plugin declares
        but its build did not make (a CUDA kernel of a build without a CUDA toolkit)."""
        return self._taken_out(op, "unbuilt")

    def kernel_faults(self, op: str) -> list[tuple[PluginRecord, str, str, str]]:
        """(plugin, device, symbol, why) for each kernel of ``op`` that a loaded plugin declares
        in a way its build contradicts (dtypes unknown, or not handled by its class)."""
        return self._taken_out(op, "faults")

    def _taken_out(self, op: str, field: str) -> list[tuple[PluginRecord, str, str, str]]:
        return [
            (record, device, symbol, why)
            for record in self.records
            if record.loaded
            for taken_op, device, symbol, why in getattr(record, field)
            if taken_op == op
        ]

    def op(self, op: str) -> OpInfo:
        """The OpInfo for ``op``; OpNotFoundError says what to do when it is missing."""
        if type(op) is not str:  # before hashing it: a hostile value could raise anything
            raise OpNotFoundError(f"op types are strings, got {shown(op)}", op=shown(op))
        try:
            return self.ops[op]
        except KeyError:
            raise OpNotFoundError(self.explain_missing(op), op=op) from None

    def explain_missing(self, op: str, provider: Provider | None = None) -> str:
        """Why ``op`` is not in the registry and what to do about it. ``provider`` is the
        plugin recorded for it in a saved program, if any: it names the package to install."""
        return f"unknown op {brief(repr(op))}" + self.missing_reason(op, provider)

    def missing_reason(self, op: str, provider: Provider | None = None) -> str:
        """The part of ``explain_missing`` after the op's name: ": it is provided by ...;
        install it with `...`", or a did-you-mean, or a pointer to `paddle-ops list`."""
        for record in self.records:
            if any(s["type"] == op for s in record.ops) and not record.loaded:
                state = record.disabled or f"broken: {record.reason}"
                return f": it is provided by {record.label}, which is {state}"
        # (reads the catalog: only when an op is missing)
        from .catalog import install_command, provider_of

        if provider is not None and provider.distribution and self.settings.no_plugins:
            return ": no plugin is loaded, since PADDLE_CORE_NO_PLUGINS is set"
        if provider is not None and provider.distribution:
            package, version = provider.distribution, provider.version
            saved = f" (the program was saved with {version})" if version else ""
            # Installed, but in a version without the op, or unusable (its plugin of the
            # recorded name first: a distribution may hold several).
            same = [r for r in self.records if normalize(r.distribution) == normalize(package)]
            same.sort(key=lambda r: r.name != provider.plugin)
            record = same[0] if same else None
            if record is not None and not record.loaded:
                state = record.disabled or f"broken: {record.reason}"
                return f": it is provided by {package}{saved}; {record.label} is {state}"
            if record is not None and version and record.version == version:
                return (  # (reinstalling the same version would change nothing)
                    f": it is provided by {package}{saved}, but the installed "
                    f"{record.distribution} {record.version} does not provide it; the program "
                    f"was saved from another build of {package} (a development install?)"
                )
            if record is not None:
                pinned = shlex.quote(f"{package}=={version}") if version else package
                return (
                    f": it is provided by {package}{saved}, but not by the installed "
                    f"{record.distribution} {record.version}; install the version the program "
                    f"was saved with: `pip install {pinned}`"
                )
            command = install_command(package, minimum=version)
            return f": it is provided by {package}{saved}; install it with `{command}`"
        if provider is not None:
            return (
                f": it was provided by plugin {provider.plugin!r}, registered from Python with "
                "register_plugin; register it again before loading the program"
            )
        hint = did_you_mean(op, self.ops)
        if hint:
            return hint
        if self.settings.no_plugins:
            return ": no plugin is loaded, since PADDLE_CORE_NO_PLUGINS is set"
        package = provider_of(op)
        if package:
            return f": it is provided by {package}; install it with `{install_command(package)}`"
        if not self.ops:
            first = install_command("paddle-ops-math")
            return f": no op plugin is installed (install one, e.g. `{first}`)"
        return "; `paddle-ops list` shows the available ops"

    def kernel_candidates(self, op: str, device: str, dtype: str) -> list[KernelRef]:
        return self.ops[op].kernels.get((device, dtype), [])

    @property
    def settings_warnings(self) -> list[str]:
        """Settings that name nothing: unknown variables, config keys and plugin names."""
        plugins = [(r.name, r.distribution) for r in self.records]
        return self.settings.warnings + self.settings.unknown_plugins(plugins)

    def warn_settings(self) -> None:
        for message in self.settings_warnings:
            if message not in _warned:
                _warned.add(message)
                warn(message, ConfigWarning)

    def warn_conflicts(self) -> None:
        for conflict in self.conflicts:
            if not conflict.preferred and conflict.key not in _warned:
                _warned.add(conflict.key)
                warn(conflict.describe(), PluginConflictWarning)


_warned: set[str] = set()
_registry: Registry | None = None
# Plugins registered from Python (register_plugin), most recent first.
in_process: list[PluginRecord] = []
# Called after the registry is rebuilt, so caches of generated functions can be dropped.
_rebuild_listeners: list[Any] = []
# Counts rebuilds (register_plugin and unregister_plugin of a plugin declaring ops rebuild too):
# a test fixture that sees it unchanged knows the registry is the one it saw before.
generation = 0


def get_registry() -> Registry:
    """The process-wide registry, built on first use from the plugin index."""
    global _registry
    if _registry is None:
        reload_registry()
    assert _registry is not None
    return _registry


def reload_registry(settings: Settings | None = None, *, rescan: bool = False) -> Registry:
    """Rebuild the registry (re-reading settings; ``rescan`` ignores the on-disk index)."""
    global _registry, generation
    generation += 1  # first: a rebuild that raises leaves a registry to rebuild again
    settings = settings or load_settings()
    records = discover(settings, rescan=rescan)
    for record in records:
        record.disabled = settings.why_disabled(record.name, record.distribution)
    _registry = Registry(in_process + records, settings)
    for listener in _rebuild_listeners:
        listener()
    _registry.warn_settings()
    _registry.warn_conflicts()
    return _registry


def discover(settings: Settings, *, rescan: bool = False) -> list[PluginRecord]:
    """Installed plugins' records, from the on-disk index when it is still valid."""
    if settings.no_plugins:
        return []
    if settings.cache_dir is None:
        return discovery.scan(__version__)
    records = None if rescan else index_cache.load(settings.cache_dir, __version__)
    if records is None:
        records = discovery.scan(__version__)
        index_cache.store(settings.cache_dir, __version__, records)
    index_cache.apply_kernel_problems(settings.cache_dir, records)
    return records
