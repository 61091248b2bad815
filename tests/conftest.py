"""Shared fixtures: an isolated plugin index, real pip installs of test plugins, the CLI.

Test plugins never go into the environment the tests run in (that is the user's `.venv`, where
`paddle-ops list` must show only real plugins). They are pip-installed here, into target
directories of this test run: the toy plugin (tests/packages/paddle_ops_toy), which most tests
use, into one put on this process's sys.path and on the PYTHONPATH of every subprocess when the
run starts; the others into directories that tests put on the path of a subprocess (or,
carefully, of this process).

Under pytest-xdist (`./dev test` runs the whole suite on a worker per core) each of these is
still made once per run: the toy plugin by the controller, the others by the first worker that
needs them (``made_once``); every worker has its own index cache, config file and temporary
directories.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_PACKAGES = ROOT / "tests" / "packages"  # test plugins, pip-installed by the tests


# The PADDLE_CORE_* variables set when the run started, taken out of the environment for the
# run (isolated_settings): test knobs such as PADDLE_CORE_FUZZ_SECONDS are read from here.
OUTER_SETTINGS: dict[str, str] = {}


@pytest.fixture(scope="session", autouse=True)
def isolated_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test (and every subprocess it starts) uses a private index cache and an empty
    config file; none of the user's own settings (PADDLE_CORE_*) leaks in."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("PADDLE_CORE_")}
    OUTER_SETTINGS.update(saved)
    for key in saved:
        del os.environ[key]
    os.environ["PADDLE_CORE_CACHE_DIR"] = str(tmp_path_factory.mktemp("index-cache"))
    empty_config = tmp_path_factory.mktemp("config") / "empty.toml"
    empty_config.write_text("")
    os.environ["PADDLE_CORE_CONFIG"] = str(empty_config)
    yield
    for key in [k for k in os.environ if k.startswith("PADDLE_CORE_")]:
        del os.environ[key]
    os.environ.update(saved)


@pytest.fixture(autouse=True)
def fresh_registry() -> Iterator[None]:
    """Each test starts from the installed plugins, with no in-process plugin left behind
    (neither op-declaring ones nor hooks-only ones): after a test that registered a plugin or
    changed what the registry is built from (settings, sys.path, an explicit reload), the
    registry is rebuilt; after one that did not, it is kept (with its ops resolved and kernels
    loaded) for the next."""
    from paddle_core.testing.fixtures import isolated_plugins

    yield from isolated_plugins()


@pytest.fixture(autouse=True)
def fresh_default_programs() -> Iterator[None]:
    """Each test starts with empty default main and startup programs."""
    import paddle_core as pc
    from paddle_core._src.graph import default_programs

    saved = pc.default_main_program(), pc.default_startup_program()
    default_programs.main, default_programs.startup = pc.Program(), pc.Program()
    yield
    default_programs.main, default_programs.startup = saved


@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Conflict and device-fallback warnings are given once per process; a test using this
    fixture starts as if none had been given."""
    from paddle_core._src.plugins import registry
    from paddle_core._src.run import planning

    monkeypatch.setattr(registry, "_warned", set())
    monkeypatch.setattr(planning, "_warned_fallbacks", set())


@pytest.fixture
def without() -> Iterator[Any]:
    """``without(name)`` switches a plugin's program pass off for the test (paddle-ops-nn's or
    paddle-ops-math's, by name); every pass switched is on again afterwards."""
    import importlib

    switched: list[tuple[Any, str]] = []

    def off(name: str) -> None:
        for plugin in ("paddle_ops_nn", "paddle_ops_math"):
            passes = importlib.import_module(f"{plugin}.passes")
            if name in passes.PASSES:
                passes.set_pass_enabled(name, False)
                switched.append((passes, name))
                return
        raise AssertionError(f"no plugin has a pass {name!r}")

    yield off
    for passes, name in switched:
        passes.set_pass_enabled(name, True)


@pytest.fixture(params=["avx2", "portable"])
def avx2_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test on one code path of paddle-ops-math's kernels that have AVX2+FMA loops
    (chosen when a kernel is prepared; PADDLE_OPS_MATH_DISABLE_AVX2=1 forces the portable one).
    """
    if request.param == "avx2":
        from op_helpers import cpu_has_avx2_fma

        if not cpu_has_avx2_fma():
            pytest.skip("this CPU has no AVX2+FMA: only the portable path runs")
        monkeypatch.delenv("PADDLE_OPS_MATH_DISABLE_AVX2", raising=False)
    else:
        monkeypatch.setenv("PADDLE_OPS_MATH_DISABLE_AVX2", "1")
    return request.param


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow",
        action="store_true",
        help="also run the tests marked slow (they build everything in fresh environments)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        _slow_tests_first(config, items)
        return
    skip = pytest.mark.skip(reason="slow: builds everything in a fresh environment (--run-slow)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _slow_tests_first(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each pytest-xdist worker starts on its share of the slow tests (minutes each), so that
    none is left for the end of the run, one worker busy and the other idle. worksteal, the
    scheduler ./dev chooses, first hands each worker one contiguous share of the items: the
    slow tests go round-robin to the heads of those shares."""
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    slow = [item for item in items if "slow" in item.keywords]
    rest = [item for item in items if "slow" not in item.keywords]
    size, ordered = len(items) // workers, []
    for w in range(workers):
        share = slow[w::workers]
        take = len(rest) if w == workers - 1 else max(0, size - len(share))
        ordered += share + rest[:take]
        rest = rest[take:]
    items[:] = ordered


def pytest_sessionstart(session: pytest.Session) -> None:
    """Install the toy plugin for this run only, before any test imports paddle_core's registry.
    Under pytest-xdist the controller installs it, before it starts the workers (which inherit
    its PYTHONPATH), and each worker puts the controller's site on its own sys.path."""
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is None:
        site = Path(tempfile.mkdtemp(prefix="paddle-core-test-")) / "site"
        site.mkdir()
        pip_install(site, TEST_PACKAGES / "paddle_ops_toy")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(site), os.environ.get("PYTHONPATH")])
        )
        session.config.stash[_TEST_SITE] = site
    else:
        site = Path(workerinput[_TEST_SITE_KEY])
    while str(site) in sys.path:  # (a worker has it from PYTHONPATH: once, first)
        sys.path.remove(str(site))
    sys.path.insert(0, str(site))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """(pytest-xdist, in the controller) Tell a worker where the toy plugin is installed."""
    node.workerinput[_TEST_SITE_KEY] = str(node.config.stash[_TEST_SITE])


def pytest_sessionfinish(session: pytest.Session) -> None:
    site = session.config.stash.get(_TEST_SITE, None)  # (the controller's, not a worker's)
    if site is not None:
        shutil.rmtree(site.parent, ignore_errors=True)


_TEST_SITE = pytest.StashKey[Path]()
_TEST_SITE_KEY = "paddle_core_toy_site"


def made_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]
) -> Path:
    """A new directory ``name`` filled by ``make(directory)`` (a session fixture's costly work:
    building and installing a test package), once per test run: under pytest-xdist the workers
    share it (the first to ask makes it, holding a lock; the others wait, then reuse it)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        target = tmp_path_factory.mktemp(name)
        make(target)
        return target
    root = tmp_path_factory.getbasetemp().parent  # the run's, above each worker's own
    target, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (released when the file closes)
        if not done.exists():
            shutil.rmtree(target, ignore_errors=True)  # a worker that failed to make it
            target.mkdir()
            make(target)
            done.touch()
    return target


def pythonpath_with(*dirs: Path) -> str:
    """A PYTHONPATH putting ``dirs`` before this run's own (which holds the toy plugin)."""
    return os.pathsep.join([*map(str, dirs), *filter(None, [os.environ.get("PYTHONPATH")])])


def pip_install(target: Path, *packages: Path | str) -> None:
    """Really install ``packages`` (local project directories) into ``target`` with pip.

    Each is built from a copy in a directory beside ``target``, kept as long as it is (a
    plugin's rebuild hint names the directory it was installed from): setuptools builds in the
    project's own directory, so two test runs at once (pytest -n) would race on its build/.
    """
    sources = Path(tempfile.mkdtemp(prefix=f"{target.name}-sources-", dir=target.parent))
    copies = [sources / Path(package).name for package in packages]
    for package, copy in zip(packages, copies, strict=True):
        shutil.copytree(package, copy, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    cmd += ["--no-deps", "--no-build-isolation", "--target", str(target)]
    result = subprocess.run([*cmd, *map(str, copies)], capture_output=True, text=True)
    assert result.returncode == 0, f"pip install {packages} failed:\n{result.stderr}"


@pytest.fixture(scope="session")
def broken_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the deliberately broken plugins (paddle-ops-broken), pip-installed."""
    return made_once(
        tmp_path_factory,
        "broken-site",
        lambda target: pip_install(target, TEST_PACKAGES / "broken"),
    )


@pytest.fixture(scope="session")
def example_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/paddle_ops_example (a compiled plugin: CMake, scikit-build-core; its CUDA
    kernels too where nvcc is found) built and pip-installed into a directory of its own, from a
    copy (the checkout gets no build directory)."""

    def make(target: Path) -> None:
        project = tmp_path_factory.mktemp("example") / "paddle_ops_example"
        shutil.copytree(
            ROOT / "examples" / "paddle_ops_example",
            project,
            ignore=shutil.ignore_patterns("build"),
        )
        pip_install(target, project)

    return made_once(tmp_path_factory, "example-site", make)


def ruff() -> str:
    """The ruff of this environment (it comes with the [test] extra); skips the test without."""
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (it comes with the [test] extra)")
    return found


def paddle_ops_command() -> str:
    """The installed `paddle-ops` console script of this environment."""
    found = shutil.which("paddle-ops", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("the paddle-ops console script is not installed in this environment")
    return found


def run_cli(
    *args: str,
    pythonpath: Path | None = None,
    env: dict[str, str] | None = None,
    check: int | None = 0,
) -> subprocess.CompletedProcess:
    """Run `paddle-ops ARGS` as a subprocess; assert its exit status when ``check`` is given."""
    full_env = {**os.environ, **(env or {})}
    if pythonpath is not None:
        full_env["PYTHONPATH"] = pythonpath_with(pythonpath)
    result = subprocess.run(
        [paddle_ops_command(), *args], env=full_env, capture_output=True, text=True, timeout=120
    )
    if check is not None:
        assert result.returncode == check, (
            f"paddle-ops {' '.join(args)} exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    return result


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """Put directories on this process's sys.path and rebuild the registry (undone after)."""
    from paddle_core import reload_registry

    def add(*dirs: Path) -> None:
        for d in dirs:
            monkeypatch.syspath_prepend(str(d))
        reload_registry()

    yield add
