"""Loading a program checks its ops against the registry, using the providers it recorded.

Every op appended to a program keeps the plugin that provided its type (``Operator.provider``:
plugin, distribution, version) and a saved program records it in each OpDesc. Loading one
(``load_program``, ``Program.parse`` / ``from_desc``, models and inference models) checks, before
anything runs:

- every op type, in every block, is in the registry; the missing ones are reported together,
  in one ``OpNotFoundError`` naming each op and the package to install
  (``pip install 'my-ops>=0.1'``, from the recorded distribution and version);
- an op provided here by another distribution than the recorded one, or by an older version
  of it, is reported in a ``ProviderMismatchWarning``: the program may compute something else,
  or use what that version does not have. A newer version is what upgrading gives: no warning.

Reading the registry reads plugin manifests (or the index of them): no plugin code runs.
"""

from __future__ import annotations

from typing import Any

from ..base.errors import OpNotFoundError, counted
from ..base.warn import warn
from ..plugins.config import normalize
from ..plugins.registry import Provider, get_registry


class ProviderMismatchWarning(UserWarning):
    """A loaded program's op is provided here by another distribution than the one that
    provided it when the program was saved, or by an older version of it."""


def check_ops(program: Any, source: str | None = None) -> None:
    """Check every op of a loaded ``program`` against the registry (see the module docstring);
    ``source`` (a path) names the program in the error and warnings."""
    registry = get_registry()
    missing: dict[str, Provider] = {}  # op type -> the provider first recorded for it
    mismatched: dict[tuple[Provider, Provider], list[str]] = {}  # (recorded, here) -> ops
    for block in program.blocks:
        for op in block.ops:
            info = registry.ops.get(op.type)
            if info is None:
                missing.setdefault(op.type, op.provider)
            elif _differs(op.provider, info.provider):
                ops = mismatched.setdefault((op.provider, info.provider), [])
                if op.type not in ops:
                    ops.append(op.type)
    what = f"the program {source!r}" if source else "the program"
    if missing:
        raise OpNotFoundError(_missing_message(registry, missing, what), op=next(iter(missing)))
    for (recorded, here), ops in mismatched.items():
        warn(_mismatch_message(what, ops, recorded, here), ProviderMismatchWarning)


def requirements(program: Any) -> list[str]:
    """What installing ``program``'s providers takes, as pip requirements: each recorded
    distribution at the highest version recorded for it (``"paddle-ops-math>=0.1.0"``), by
    name. Plugins registered from Python have no distribution to name."""
    wanted: dict[str, Provider] = {}
    for block in program.blocks:
        for op in block.ops:
            p = op.provider
            if not p.distribution:
                continue
            key = normalize(p.distribution)
            known = wanted.get(key)
            if known is None or not known.version or _older(known.version, p.version):
                wanted[key] = p
    return [
        f"{p.distribution}>={p.version}" if p.version else p.distribution
        for _, p in sorted(wanted.items())
    ]


def _missing_message(registry: Any, missing: dict[str, Provider], what: str) -> str:
    if len(missing) == 1:
        ((op, provider),) = missing.items()
        reason = registry.missing_reason(op, provider)
        return f"{what} uses op {op!r}, which no loaded plugin provides{reason}"
    # Ops that share a recorded provider share one line (and one install command).
    groups: dict[Provider, list[str]] = {}
    for op, provider in missing.items():
        groups.setdefault(provider, []).append(op)
    lines = [f"{what} uses {counted(len(missing), 'op')} that no loaded plugin provides:"]
    for provider, ops in groups.items():
        names = ", ".join(repr(op) for op in ops)
        reason = registry.missing_reason(ops[0], provider)
        lines.append(f"  {'op' if len(ops) == 1 else 'ops'} {names}{reason}")
    return "\n".join(lines)


def _differs(recorded: Provider, here: Provider) -> bool:
    """Whether ``here`` is another distribution than ``recorded`` (another plugin, for one
    registered from Python), or an older version of it."""
    if recorded.distribution or here.distribution:
        if normalize(recorded.distribution) != normalize(here.distribution):
            return True
    elif normalize(recorded.plugin) != normalize(here.plugin):
        return True
    return _older(here.version, recorded.version)


def _older(version: str, than: str) -> bool:
    if not version or not than or version == than:
        return False
    from packaging.version import InvalidVersion, Version  # (only when versions differ)

    try:
        return Version(version) < Version(than)
    except InvalidVersion:  # not PEP 440: nothing to compare
        return False


def _mismatch_message(what: str, ops: list[str], recorded: Provider, here: Provider) -> str:
    names = ", ".join(repr(op) for op in ops)
    subject = f"op {names} was" if len(ops) == 1 else f"ops {names} were"
    saved, found = _describe(recorded), _describe(here)
    if normalize(recorded.distribution) == normalize(here.distribution) and recorded.distribution:
        from ..plugins.catalog import install_command  # (reads the catalog: only here)

        command = install_command(recorded.distribution, minimum=recorded.version)
        return (
            f"{what}: {subject} saved with {saved}, but {found} is installed, which is older; "
            f"upgrade it with `{command}`"
        )
    return (
        f"{what}: {subject} provided by {saved} when it was saved, but here by {found}; "
        "results may differ"
    )


def _describe(provider: Provider) -> str:
    if provider.distribution:
        return f"{provider.distribution} {provider.version}".rstrip()
    return f"plugin {provider.plugin!r} (registered from Python)"
