"""User settings that steer plugin loading: environment variables over an optional config file.

Environment variables (all optional):

- ``PADDLE_CORE_NO_PLUGINS=1``: load no plugin at all.
- ``PADDLE_CORE_PLUGINS=math,nn``: load only these plugins (entry-point or distribution names).
- ``PADDLE_CORE_DISABLE=broken_one``: never load these plugins.
- ``PADDLE_CORE_PREFER=scale=math,matmul=fast_blas``: which plugin provides an op type, or an
  (op, device, dtype) kernel, when several declare it. See docs/writing-op-plugins.md for the
  default rule.
- ``PADDLE_CORE_CACHE_DIR``: where the plugin index is cached (default: the user cache dir);
  ``PADDLE_CORE_NO_CACHE=1`` disables the cache.
- ``PADDLE_CORE_CONFIG``: path of the config file (default ``~/.config/paddle-core/config.toml``).

Nothing is ignored silently: another ``PADDLE_CORE_*`` variable, a ``PADDLE_CORE_CONFIG`` naming
no file, an unknown section or key in the config file, and a plugin name that no installed
plugin has are each a ``ConfigWarning`` naming the setting and the closest matches (given once
per process, and counted by ``paddle-ops doctor``).

The config file uses the same names in TOML::

    [plugins]
    allow = ["math", "nn"]        # like PADDLE_CORE_PLUGINS
    disable = ["broken_one"]      # like PADDLE_CORE_DISABLE
    [prefer]
    scale = "math"                # like PADDLE_CORE_PREFER
"""

from __future__ import annotations

import os

from ..base.errors import ConfigError, did_you_mean
from ..base.limits import MAX_THREADS

# Every environment variable paddle-core reads; another PADDLE_CORE_* is a mistake to report.
VARIABLES = (
    "PADDLE_CORE_NO_PLUGINS",
    "PADDLE_CORE_PLUGINS",
    "PADDLE_CORE_DISABLE",
    "PADDLE_CORE_PREFER",
    "PADDLE_CORE_CACHE_DIR",
    "PADDLE_CORE_NO_CACHE",
    "PADDLE_CORE_CONFIG",
    "PADDLE_CORE_NUM_THREADS",  # the executor's threads (run/executor.py)
    "PADDLE_CORE_VENV",  # the virtual environment of the checkout's ./dev script
    "PADDLE_CORE_SANITIZE_VENV",  # and of its `./dev sanitize`
    "PADDLE_CORE_FUZZ_SECONDS",  # how long the test suite's fuzzers run (tests/fuzz)
    "PADDLE_CORE_FUZZ_SEED",
)
# The config file's sections and their keys (None: any key; [prefer] is keyed by op types).
SECTIONS: dict[str, tuple[str, ...] | None] = {"plugins": ("allow", "disable"), "prefer": None}


class ConfigWarning(UserWarning):
    """A setting names something that does not exist (a variable, a config key, a plugin)."""


class Settings:
    """Resolved settings. (A plain class: dataclasses would cost the listing path 16 ms.)"""

    def __init__(
        self,
        *,
        no_plugins: bool = False,
        allow: frozenset[str] | None = None,
        disable: frozenset[str] = frozenset(),
        prefer: dict[str, str] | None = None,
        cache_dir: str | None = None,
        config_file: str | None = None,
        sources: dict[str, str] | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        self.no_plugins = no_plugins
        self.allow = allow  # None: every plugin
        self.disable = disable
        self.prefer = prefer or {}  # op type or "op:device:dtype" -> plugin name
        self.cache_dir = cache_dir  # None: no cache
        self.config_file = config_file  # the file these came from, if any
        # Where "allow" and "disable" came from, as messages name it: "PADDLE_CORE_PLUGINS" or
        # "[plugins] allow in <config file>".
        self.sources = {"allow": "PADDLE_CORE_PLUGINS", "disable": "PADDLE_CORE_DISABLE"}
        self.sources.update(sources or {})
        self.warnings = warnings or []  # settings that name nothing (see unknown_plugins too)

    def why_disabled(self, *names: str) -> str | None:
        """Why a plugin known by any of ``names`` is switched off ("disabled by ..."), or None
        if it is not."""
        keys = {normalize(n) for n in names}
        if self.no_plugins:
            return "disabled by PADDLE_CORE_NO_PLUGINS"
        if keys == {"core", "paddle_core"}:  # the core's own ops: only NO_PLUGINS turns them off
            return None
        if self.allow is not None and not keys & self.allow:
            allowed = ", ".join(sorted(self.allow)) or "none"
            return f"disabled by {self.sources['allow']}, which allows only: {allowed}"
        if keys & self.disable:
            return f"disabled by {self.sources['disable']}"
        return None

    def unknown_plugins(self, plugins: list[tuple[str, str]]) -> list[str]:
        """A warning per name in the allowlist or the disable list that none of ``plugins``
        ((name, distribution) pairs) answers to."""
        if self.no_plugins:
            return []
        known = {normalize(n) for pair in plugins for n in pair if n}
        names = sorted({name for name, _ in plugins})
        found = []
        for field in ("allow", "disable"):
            for name in sorted((getattr(self, field) or frozenset()) - known):
                found.append(
                    f"{self.sources[field]} names {name!r}, which is no installed plugin"
                    f"{did_you_mean(name, known)}; the plugins are: {', '.join(names) or 'none'}"
                )
        return found


def normalize(name: str) -> str:
    """Plugin and distribution names compare case-insensitively, with - and _ alike."""
    return name.strip().lower().replace("-", "_")


def thread_setting(environ: dict[str, str] | os._Environ = os.environ) -> tuple[int | None, str]:
    """The thread count PADDLE_CORE_NUM_THREADS, else OMP_NUM_THREADS, gives (None: neither
    gives one), and what is wrong with PADDLE_CORE_NUM_THREADS ("" when nothing is)."""
    problem = ""
    for var in ("PADDLE_CORE_NUM_THREADS", "OMP_NUM_THREADS"):
        value = environ.get(var, "").strip()
        if value.isdigit() and 0 < int(value) <= MAX_THREADS:
            return int(value), problem
        if value and var == "PADDLE_CORE_NUM_THREADS":  # (OMP_NUM_THREADS has forms of its own)
            problem = (
                f"PADDLE_CORE_NUM_THREADS={value!r} is not a thread count in [1, {MAX_THREADS}]; "
                "ignoring it"
            )
    return None, problem


def config_path(environ: dict[str, str] | os._Environ = os.environ) -> str:
    """The config file settings are read from (it need not exist)."""
    # os.path rather than pathlib: importing pathlib would cost every `paddle-ops list` 5 ms.
    return environ.get("PADDLE_CORE_CONFIG") or os.path.join(
        environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config"),
        "paddle-core",
        "config.toml",
    )


def settings_inputs(environ: dict[str, str] | os._Environ = os.environ) -> tuple:
    """Everything ``load_settings`` reads, as a value equal to an earlier one while the settings
    it would give are the same: the PADDLE_CORE_* variables, the ones the default paths derive
    from, and the config file's size and modification time. (The test fixtures rebuild the
    registry only after a test that changed it.)"""
    variables = sorted(
        (k, v)
        for k, v in environ.items()
        if k.startswith("PADDLE_CORE_") or k in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
    )
    try:
        stat = os.stat(config_path(environ))
        config = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        config = None
    return tuple(variables), config


def load_settings(environ: dict[str, str] | os._Environ = os.environ) -> Settings:
    """Read settings from the config file (if any), then the environment on top."""
    home = os.path.expanduser("~")
    config_file = config_path(environ)
    warnings = [
        f"environment variable {key} is not a paddle-core setting and is ignored"
        + did_you_mean(key, VARIABLES, cutoff=0.85)
        for key in sorted(environ)
        if key.startswith("PADDLE_CORE_") and key not in VARIABLES
    ]
    if environ.get("PADDLE_CORE_CONFIG") and not os.path.isfile(config_file):
        warnings.append(
            f"PADDLE_CORE_CONFIG names {config_file}, which is not a file: no config file is read"
        )
    file_conf = _read_config(config_file) if os.path.isfile(config_file) else {}
    warnings += _unknown_keys(file_conf, config_file)
    plugins = file_conf.get("plugins", {})

    sources = {}
    allow = _names(environ.get("PADDLE_CORE_PLUGINS"), "PADDLE_CORE_PLUGINS")
    if allow is None and "allow" in plugins:
        allow = frozenset(normalize(n) for n in _str_list(plugins["allow"], "[plugins] allow"))
        sources["allow"] = f"[plugins] allow in {config_file}"
    disable = _names(environ.get("PADDLE_CORE_DISABLE"), "PADDLE_CORE_DISABLE")
    if disable is None:
        disable = frozenset(
            normalize(n) for n in _str_list(plugins.get("disable", []), "[plugins] disable")
        )
        sources["disable"] = f"[plugins] disable in {config_file}"
    prefer = {str(k): str(v) for k, v in file_conf.get("prefer", {}).items()}
    prefer.update(_pairs(environ.get("PADDLE_CORE_PREFER", "")))

    cache_dir = None
    if not _flag(environ.get("PADDLE_CORE_NO_CACHE")):
        cache_dir = environ.get("PADDLE_CORE_CACHE_DIR") or os.path.join(
            environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "paddle-core"
        )
    return Settings(
        no_plugins=_flag(environ.get("PADDLE_CORE_NO_PLUGINS")),
        allow=allow,
        disable=disable,
        prefer=prefer,
        cache_dir=cache_dir,
        config_file=config_file if file_conf else None,
        sources=sources,
        warnings=warnings,
    )


def _unknown_keys(conf: dict, path: str) -> list[str]:
    """A warning per section or key of the config file that paddle-core does not read."""
    found = []
    for section, value in conf.items():
        if section not in SECTIONS:
            owner = next((s for s, keys in SECTIONS.items() if keys and section in keys), None)
            hint = (
                f" (did you mean [{owner}] {section}?)"
                if owner
                else did_you_mean(section, SECTIONS)
            )
            sections = " and ".join(f"[{s}]" for s in SECTIONS)
            found.append(
                f"config file {path}: unknown section or key {section!r} is ignored{hint}; "
                f"the file has the sections {sections}"
            )
            continue
        if not isinstance(value, dict):
            raise ConfigError(f"config file {path}: [{section}] must be a table, got {value!r}")
        keys = SECTIONS[section]
        for key in [k for k in value if keys is not None and k not in keys]:
            found.append(
                f"config file {path}: unknown key {key!r} in [{section}] is ignored"
                f"{did_you_mean(key, keys)}; [{section}] takes {' and '.join(keys)}"
            )
    return found


def _read_config(path: str) -> dict:
    import tomllib  # (only when a config file exists: most listings have none)

    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"cannot read config file {path}: {e}") from None


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


def _names(value: str | None, var: str) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset(normalize(n) for n in value.split(",") if n.strip())


def _str_list(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"config {where} must be a list of strings, got {value!r}")
    return value


def _pairs(value: str) -> dict[str, str]:
    pairs = {}
    for item in filter(None, (p.strip() for p in value.split(","))):
        key, sep, plugin = item.partition("=")
        if not sep or not key.strip() or not plugin.strip():
            raise ConfigError(
                f"PADDLE_CORE_PREFER entry {item!r} must look like op=plugin "
                "(e.g. PADDLE_CORE_PREFER=scale=math)"
            )
        pairs[key.strip()] = plugin.strip()
    return pairs
