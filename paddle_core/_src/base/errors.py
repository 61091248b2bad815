"""The core's error hierarchy: every user-facing failure is one of these.

Each error names what it is about (plugin, op, attr, variable) in its message and keeps those
names as attributes for programs that want to react to them. Where it helps, an error also
derives from the matching built-in (``ValueError``, ``LookupError``...) so generic handlers work.
"""

from __future__ import annotations

from collections.abc import Iterable


class PaddleCoreError(Exception):
    """Base class of every error raised by paddle-core."""


# What a plugin's code (a module imported, a rule, a Python kernel, a hook) may raise that the
# core turns into a problem of that plugin: any Exception, and SystemExit, so that a plugin
# calling sys.exit() cannot end the host. KeyboardInterrupt still stops it.
PLUGIN_CODE_ERRORS = (Exception, SystemExit)


class PluginError(PaddleCoreError):
    """A plugin could not be loaded or used. ``plugin`` is its name."""

    def __init__(self, message: str, *, plugin: str) -> None:
        super().__init__(message)
        self.plugin = plugin


class ManifestError(PluginError):
    """A plugin manifest is unreadable or declares something invalid."""


class OpNotFoundError(PaddleCoreError, AttributeError, LookupError):
    """No loaded plugin provides an op of this type."""

    def __init__(self, message: str, *, op: str) -> None:
        super().__init__(message)
        self.op = op


class AttrError(PaddleCoreError, ValueError):
    """An attribute value does not match its declaration (type, range, choices, name)."""

    def __init__(self, message: str, *, op: str, attr: str) -> None:
        super().__init__(message)
        self.op = op
        self.attr = attr


class OpInputError(PaddleCoreError, ValueError):
    """An op was given missing, surplus or wrongly typed inputs or outputs."""

    def __init__(self, message: str, *, op: str) -> None:
        super().__init__(message)
        self.op = op


class ShapeError(PaddleCoreError, ValueError):
    """Shape or dtype inference found inputs that do not fit together."""

    def __init__(self, message: str, *, op: str) -> None:
        super().__init__(message)
        self.op = op


class KernelError(PaddleCoreError):
    """A kernel is missing, cannot be loaded, or failed while running."""

    def __init__(self, message: str, *, op: str) -> None:
        super().__init__(message)
        self.op = op


class KernelNotFoundError(KernelError, LookupError):
    """No kernel is registered for an (op, device, dtype)."""


class KernelLoadError(KernelError):
    """A declared kernel cannot be resolved: its module fails to import or lacks the symbol."""


class KernelRuntimeError(KernelError, RuntimeError):
    """A kernel raised or returned something other than what its op declares."""


class ProgramError(PaddleCoreError, ValueError):
    """A program, block or variable is used inconsistently, or a saved program is invalid."""


class FeedError(PaddleCoreError, ValueError):
    """Fed or fetched variables do not match the program (missing, unknown, wrong shape/dtype),
    or an array cannot be exchanged with another library (DLPack)."""


class DeviceError(PaddleCoreError):
    """A device string is invalid or the device is not available on this machine."""


class ConfigError(PaddleCoreError):
    """A setting is invalid: environment variables, the config file, or an Executor's."""


class DistributedError(PaddleCoreError, RuntimeError):
    """A distributed run cannot go on: the ranks prepared different programs, a collective
    waited past its timeout, or no MPI is installed. Raised on every rank the problem reaches;
    the message names the op and the ranks involved."""


class OnnxError(PaddleCoreError, ValueError):
    """An ONNX model cannot be read, imported or exported: the message names the node, tensor
    or op. ``node`` is the ONNX node's name (or op type) where one is involved, else None."""

    def __init__(self, message: str, *, node: str | None = None) -> None:
        super().__init__(message)
        self.node = node


def brief(text: str, limit: int = 80) -> str:
    """``text`` for an error message: a hostile 5,000-character value is cut, not echoed."""
    return text if len(text) <= limit else f"{text[: limit - 20]}... ({len(text)} characters)"


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for an error message, cut like ``brief``; a value whose repr raises is
    named by its type instead of taking the message (and the error) down with it."""
    try:
        text = repr(value)
    except Exception:
        return f"<{type(value).__name__} object>"
    return brief(text, limit) if isinstance(text, str) else f"<{type(value).__name__} object>"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """ "1 problem", "2 problems": a count and its noun, read aloud correctly."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def did_you_mean(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str:
    """A suffix like " (did you mean 'scale'?)" for the closest candidates, or "". Names that
    share a long prefix (PADDLE_CORE_*) need a higher ``cutoff`` to leave the unrelated out."""
    import difflib  # (only when there is a mistake to explain)

    if not isinstance(word, str):  # a hostile value: nothing is close to it
        return ""
    # Only names compare (an attr's choices may be numbers: channel_block's 0, 8, 16).
    names = [c for c in candidates if isinstance(c, str)]
    close = difflib.get_close_matches(word, names, n=3, cutoff=cutoff)
    if not close:  # MATMUL is matmul in the wrong case
        folded = {c.lower(): c for c in names}
        close = [folded[c] for c in difflib.get_close_matches(word.lower(), folded, 3, cutoff)]
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
