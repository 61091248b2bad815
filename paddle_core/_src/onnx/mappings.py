"""The ONNX operators the installed plugins map, gathered from their manifests (OpDef.onnx).

The importer and exporter keep no table of their own: this index is built from whatever
plugins are installed, so a third party's op and its mapping count like ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..plugins.registry import get_registry

DEFAULT_DOMAIN = "ai.onnx"


def domain_key(domain: str) -> str:
    """ONNX's default domain is written "" or "ai.onnx"; both are ""."""
    return "" if domain in ("", DEFAULT_DOMAIN) else domain


def onnx_op_name(domain: str, op_type: str) -> str:
    """'Conv', or 'com.example:MyOp' outside the default domain."""
    return f"{domain}:{op_type}" if domain_key(domain) else op_type


@dataclass(frozen=True)
class Mapping:
    """One mapping of one op of ours: ``info`` the op's registry entry, ``spec`` its
    OnnxMapping."""

    info: Any
    spec: Any

    def covers(self, version: int) -> bool:
        until = self.spec.until_version
        return self.spec.since_version <= version and (not until or version <= until)


class Mappings:
    """(domain, ONNX op type) -> the mappings of every installed op, newest first."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self.by_op: dict[tuple[str, str], list[Mapping]] = {}
        for info in registry.ops.values():
            for spec in info.opdef.onnx:
                if spec.export_only:  # (its nodes import through another op's mapping)
                    continue
                key = (domain_key(spec.domain), spec.op_type)
                self.by_op.setdefault(key, []).append(Mapping(info, spec))
        for found in self.by_op.values():
            found.sort(key=lambda m: -m.spec.since_version)

    def find(self, domain: str, op_type: str, version: int) -> Mapping | None:
        """The mapping of the newest ONNX operator version at or before ``version``."""
        for mapping in self.by_op.get((domain_key(domain), op_type), ()):
            if mapping.covers(version):
                return mapping
        return None

    def versions(self, domain: str, op_type: str) -> list[str]:
        """The opset ranges mapped for an ONNX op, e.g. ['13+', '11-12'] (for messages)."""
        return [
            f"{m.spec.since_version}"
            + (f"-{m.spec.until_version}" if m.spec.until_version else "+")
            for m in self.by_op.get((domain_key(domain), op_type), ())
        ]


_cached: tuple[Any, Mappings] | None = None


def get_mappings() -> Mappings:
    """The mappings of the current registry (rebuilt when plugins are reloaded)."""
    global _cached
    registry = get_registry()
    if _cached is None or _cached[0] is not registry:
        _cached = (registry, Mappings(registry))
    return _cached[1]
