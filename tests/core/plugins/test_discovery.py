"""Plugin discovery with really installed packages: isolation of broken plugins, the on-disk
index and its invalidation, settings that switch plugins off, and hints for missing ops."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, pip_install, pythonpath_with, run_cli

import paddle_core as pc
from paddle_core._src.plugins import discovery, registry

TINY_MANIFEST = """
comment: "a tiny plugin, version {version}"
rules_module: "paddle_ops_tiny.rules"
{ops}
"""
TINY_OP = """
ops {{
  proto {{ type: "{op}" comment: "Doubles x." inputs {{ name: "x" }} outputs {{ name: "out" }} }}
  kernels {{ device: "cpu" dtypes: [FLOAT32] python: "double_cpu" }}
  shape_rule: "paddle_core.rules:unary"
}}
"""


def make_tiny_plugin(where: Path, version: str, ops: list[str]) -> Path:
    """Write a one-package plugin project (paddle-ops-tiny) declaring ``ops``."""
    project = where / f"tiny-{version}"
    package = project / "paddle_ops_tiny"
    package.mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        "[build-system]\n"
        'requires = ["setuptools>=69"]\n'
        'build-backend = "setuptools.build_meta"\n'
        "[project]\n"
        'name = "paddle-ops-tiny"\n'
        f'version = "{version}"\n'
        '[project.entry-points."paddle_core.plugins"]\n'
        'tiny = "paddle_ops_tiny:ops.pbtxt"\n'
        "[tool.setuptools.package-data]\n"
        'paddle_ops_tiny = ["*.pbtxt"]\n'
    )
    (package / "__init__.py").write_text("")
    (package / "rules.py").write_text("def double_cpu(x):\n    return x * 2\n")
    ops_text = "".join(TINY_OP.format(op=op) for op in ops)
    (package / "ops.pbtxt").write_text(TINY_MANIFEST.format(version=version, ops=ops_text))
    return project


def uninstall(site: Path, package: str) -> None:
    """Remove a package and its dist-info from a --target directory, as pip uninstall would."""
    for path in site.glob(f"{package}*"):
        shutil.rmtree(path)


def listed(pythonpath: Path, **env: str) -> dict[str, dict]:
    """`paddle-ops list --json` in a subprocess: op -> row."""
    result = run_cli("list", "--json", pythonpath=pythonpath, env=env)
    return {row["op"]: row for row in json.loads(result.stdout)["ops"]}


def plugins_json(pythonpath: Path | None = None, **env: str) -> dict[str, dict]:
    """`paddle-ops plugins --json` in a subprocess: name -> row. It exits 1 exactly when a
    plugin is broken or partial."""
    result = run_cli("plugins", "--json", pythonpath=pythonpath, env=env, check=None)
    rows = {row["name"]: row for row in json.loads(result.stdout)["plugins"]}
    failing = [name for name, row in rows.items() if row["status"] in ("broken", "partial")]
    assert result.returncode == (1 if failing else 0), (failing, result.stderr)
    if failing:
        assert result.stderr.strip().endswith(": " + ", ".join(failing)), result.stderr
    return rows


# -- the installed toy plugin ----------------------------------------------------------------


def test_installed_plugin_is_discovered_through_its_entry_point() -> None:
    record = pc.get_registry().plugins["toy"]
    assert record.distribution == "paddle-ops-toy"
    assert record.version == "0.1.0"
    assert record.entry_point == "paddle_ops_toy:ops.pbtxt"
    assert record.manifest_path.endswith("ops.pbtxt")
    assert record.status == "ok"
    assert {"toy_scale", "toy_matmul", "toy_concat"} <= set(pc.get_registry().ops)
    assert pc.get_registry().op("toy_scale").plugin is record


# -- one broken plugin never breaks the host ---------------------------------------------------


EXPECTED_PROBLEMS = {
    "bad_syntax": "bad_syntax.pbtxt: 3:",  # file, line and column of the syntax error
    "missing_file": "manifest file 'no_such_file.pbtxt' is missing from package 'broken_plugins'",
    "no_package": "package 'no_such_package' named by entry point",
    "wrong_core": "requires paddle-core >=99, but paddle-core 0.1.0 is installed",
    "bad_decl": "op 'bad_default_op': attr 'p': default 1.5 is outside [0, 1]",
    "raising_rules": "importing 'broken_plugins.raising_rules' raised RuntimeError",
    "missing_symbol": "'broken_plugins.good_rules' has no 'no_such_kernel'",
}


def test_each_kind_of_broken_plugin_is_reported_and_the_others_work(broken_site: Path) -> None:
    plugins = plugins_json(broken_site)
    for name, problem in EXPECTED_PROBLEMS.items():
        assert plugins[name]["status"] == "broken", name
        assert any(problem in p for p in plugins[name]["problems"]), plugins[name]["problems"]
    assert plugins["toy"]["status"] == "ok"
    assert plugins["dup"]["status"] == "ok"
    ops = listed(broken_site)
    assert {"toy_matmul", "toy_concat", "dup_only_op"} <= set(ops)
    # Plugins whose manifest did not load register nothing.
    assert "future_op" not in ops and "bad_default_op" not in ops


def test_a_broken_plugin_does_not_stop_programs_using_others(broken_site: Path, on_path) -> None:
    registry._warned.clear()  # the conflict is reported once per process: make it this test's
    with pytest.warns(pc.PluginConflictWarning, match="op 'toy_scale' is provided by plugin 'dup'"):
        on_path(broken_site)
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [2, 3])
        y = pc.ops.toy_matmul(x, x, transpose_y=True)
        bad = pc.ops.raising_op(x)  # its shape rule lives in the core, so appending works
    exe = pc.Executor()
    feed = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}
    (out,) = exe.run(prog, feed=feed, fetch_list=[y])
    np.testing.assert_allclose(out, feed["x"] @ feed["x"].T)
    with pytest.raises(pc.KernelLoadError, match=r"importing 'broken_plugins.raising_rules'"):
        exe.run(prog, feed=feed, fetch_list=[bad])
    record = pc.get_registry().plugins["raising_rules"]
    assert record.status == "broken" and "RuntimeError" in record.reason


def test_a_missing_kernel_symbol_is_an_error_at_first_use(broken_site: Path, on_path) -> None:
    on_path(broken_site)
    prog = pc.Program()
    with pc.program_guard(prog):
        y = pc.ops.symbolless_op(pc.data("x", [2]))
    with pytest.raises(pc.KernelLoadError) as err:
        pc.Executor().run(prog, feed={"x": np.ones(2, np.float32)}, fetch_list=[y])
    message = str(err.value)
    assert "plugin 'missing_symbol'" in message and "'no_such_kernel'" in message
    assert "op 'symbolless_op'" in message and err.value.op == "symbolless_op"


def test_ops_of_broken_or_disabled_plugins_name_them(
    broken_site: Path, on_path, monkeypatch
) -> None:
    on_path(broken_site)
    with pytest.raises(pc.OpNotFoundError, match=r"plugin 'wrong_core' .* broken: requires"):
        _ = pc.ops.future_op
    monkeypatch.setenv("PADDLE_CORE_DISABLE", "dup")
    pc.reload_registry()
    with pytest.raises(pc.OpNotFoundError, match=r"plugin 'dup' .* disabled"):
        _ = pc.ops.dup_only_op


def test_messages_read_aloud(broken_site: Path, on_path, monkeypatch, tmp_path: Path) -> None:
    """Counts agree with their nouns, and a disabled plugin is named with the setting that
    disabled it, once ("which is disabled: it is disabled" was said before)."""
    on_path(broken_site)
    monkeypatch.setenv("PADDLE_CORE_DISABLE", "dup")
    pc.reload_registry()
    with pytest.raises(pc.OpNotFoundError) as err:
        _ = pc.ops.dup_only_op
    assert str(err.value) == (
        "unknown op 'dup_only_op': it is provided by plugin 'dup' (paddle-ops-broken 0.1.0), "
        "which is disabled by PADDLE_CORE_DISABLE"
    )
    # One broken plugin: "1 problem", not "1 problems".
    doctor = run_cli(
        "doctor", pythonpath=broken_site, env={"PADDLE_CORE_PLUGINS": "bad_syntax"}, check=1
    )
    assert "1 problem, 0 warnings" in doctor.stdout.replace("\n", " ")
    assert doctor.stderr.strip().endswith("paddle-ops: doctor found 1 problem")
    dup = plugins_json(broken_site, PADDLE_CORE_DISABLE="dup")["dup"]
    assert (dup["status"], dup["problems"]) == ("disabled", ["disabled by PADDLE_CORE_DISABLE"])
    ones = run_cli("list", "--plugin", "core").stdout
    assert re.fullmatch(r"\d+ ops from 1 plugin", ones.splitlines()[-1])  # the core's own ops
    record = discovery.PluginRecord("two", errors=["first", "second"])
    assert record.reason == "first (and 1 more problem)"
    config = tmp_path / "config.toml"
    config.write_text('[plugins]\nallow = ["toy"]\n')
    monkeypatch.delenv("PADDLE_CORE_DISABLE")
    monkeypatch.setenv("PADDLE_CORE_CONFIG", str(config))
    pc.reload_registry()
    with pytest.raises(pc.OpNotFoundError) as err:
        _ = pc.ops.dup_only_op
    assert str(err.value).endswith(
        f"which is disabled by [plugins] allow in {config}, which allows only: toy"
    )


def test_listing_imports_no_plugin_code_numpy_or_pydantic(
    broken_site: Path, tmp_path: Path
) -> None:
    probe = (
        "import sys, io, contextlib\n"
        "from paddle_core.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['list'])\n"
        "roots = {m.split('.')[0] for m in sys.modules}\n"
        "watched = {'numpy', 'pydantic', 'paddle_ops_toy', 'paddle_ops_math', 'broken_plugins'}\n"
        "print(sorted(roots & (watched | {'google', 'rich'})))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": pythonpath_with(broken_site),
        "PADDLE_CORE_CACHE_DIR": str(tmp_path),
    }

    def imported() -> list[str]:
        out = subprocess.run(  # from outside the checkout: the installed package is probed
            [sys.executable, "-P", "-c", probe],
            env=env,
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.replace("'", '"'))

    assert imported() == ["google"]  # no index yet: manifests are parsed (protobuf), nothing else
    assert imported() == []  # warm index: not even protobuf


# -- the on-disk index ----------------------------------------------------------------------------


def test_the_index_spares_a_second_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    scans = []
    real_scan = discovery.scan
    monkeypatch.setattr(discovery, "scan", lambda version: scans.append(1) or real_scan(version))
    registry.reload_registry()  # may scan, if nothing indexed this environment yet
    before = len(scans)
    registry.reload_registry()
    registry.reload_registry()
    assert len(scans) == before  # both served by the index
    registry.reload_registry(rescan=True)
    assert len(scans) == before + 1


def test_the_index_follows_install_upgrade_edit_and_removal(tmp_path: Path) -> None:
    site = tmp_path / "site"
    pip_install(site, make_tiny_plugin(tmp_path, "1.0", ["tiny_double"]))
    ops = listed(site)
    assert ops["tiny_double"]["version"] == "1.0"

    # An upgrade, as pip does it in an environment: remove the old files, install the new.
    # (`pip install --target --upgrade` would leave the old dist-info behind.)
    uninstall(site, "paddle_ops_tiny")
    pip_install(site, make_tiny_plugin(tmp_path, "2.0", ["tiny_double", "tiny_twice"]))
    ops = listed(site)
    assert ops["tiny_double"]["version"] == "2.0" and "tiny_twice" in ops

    manifest = site / "paddle_ops_tiny" / "ops.pbtxt"  # edited in place, as in an editable install
    manifest.write_text(manifest.read_text().replace("tiny_twice", "tiny_thrice"))
    ops = listed(site)
    assert "tiny_thrice" in ops and "tiny_twice" not in ops

    uninstall(site, "paddle_ops_tiny")
    ops = listed(site)
    assert not any(op.startswith("tiny_") for op in ops) and "toy_scale" in ops


def test_an_unwritable_cache_only_means_no_caching(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    ops = listed(tmp_path, PADDLE_CORE_CACHE_DIR=str(blocker / "cache"))
    assert "toy_scale" in ops
    assert "toy_scale" in listed(tmp_path, PADDLE_CORE_NO_CACHE="1")


# -- settings ---------------------------------------------------------------------------------


def test_no_plugins_loads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_cli("list", env={"PADDLE_CORE_NO_PLUGINS": "1"})
    assert "PADDLE_CORE_NO_PLUGINS" in result.stdout
    monkeypatch.setenv("PADDLE_CORE_NO_PLUGINS", "1")
    pc.reload_registry()
    assert pc.get_registry().ops == {}
    with pytest.raises(pc.OpNotFoundError, match="PADDLE_CORE_NO_PLUGINS is set"):
        _ = pc.ops.toy_scale


def test_allowlist_and_disable(broken_site: Path) -> None:
    ops = listed(broken_site, PADDLE_CORE_PLUGINS="dup")
    # The core's own ops are exempt from the allowlist; every other op comes from dup.
    assert {row["plugin"] for row in ops.values()} == {"core", "dup"}
    non_core = {op for op, row in ops.items() if row["plugin"] != "core"}
    assert non_core == {"toy_scale", "dup_only_op"}
    assert ops["toy_scale"]["plugin"] == "dup"
    plugins = plugins_json(broken_site, PADDLE_CORE_PLUGINS="paddle-ops-toy")  # a distribution
    assert plugins["toy"]["status"] == "ok" and plugins["dup"]["status"] == "disabled"
    ops = listed(broken_site, PADDLE_CORE_DISABLE="dup")
    assert ops["toy_scale"]["plugin"] == "toy" and "dup_only_op" not in ops


def test_config_file_settings(broken_site: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[plugins]\ndisable = ["bad_decl"]\n[prefer]\ntoy_scale = "toy"\n')
    plugins = plugins_json(broken_site, PADDLE_CORE_CONFIG=str(config))
    assert plugins["bad_decl"]["status"] == "disabled"
    ops = listed(broken_site, PADDLE_CORE_CONFIG=str(config))
    assert ops["toy_scale"]["plugin"] == "toy"
    # The environment wins over the file.
    ops = listed(broken_site, PADDLE_CORE_CONFIG=str(config), PADDLE_CORE_PREFER="toy_scale=dup")
    assert ops["toy_scale"]["plugin"] == "dup"


def warned(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("paddle-ops: warning:")]


@pytest.mark.parametrize(
    ("env", "config", "warning"),
    [
        (
            {"PADDLE_CORE_PLUGINS": "mat,nn"},
            None,
            "PADDLE_CORE_PLUGINS names 'mat', which is no installed plugin (did you mean 'math'?); "
            "the plugins are: core, dist, math, nn, toy",
        ),
        (
            {"PADDLE_CORE_DISABLE": "toys"},
            None,
            "PADDLE_CORE_DISABLE names 'toys', which is no installed plugin (did you mean 'toy'?)",
        ),
        (
            {"PADDLE_CORE_PLUGIN": "math"},
            None,
            "environment variable PADDLE_CORE_PLUGIN is not a paddle-core setting and is ignored "
            "(did you mean 'PADDLE_CORE_PLUGINS' or",
        ),
        (
            {},
            "[plugins]\nalow = ['math']\n",
            "unknown key 'alow' in [plugins] is ignored (did you mean 'allow'?); [plugins] takes allow and disable",
        ),
        (
            {},
            "[plugin]\nallow = ['math']\n",
            "unknown section or key 'plugin' is ignored (did you mean 'plugins'?)",
        ),
        (
            {},
            "disable = ['toy']\n",
            "unknown section or key 'disable' is ignored (did you mean [plugins] disable?)",
        ),
        (
            {},
            "[plugins]\nallow = ['math', 'nnn']\n",
            "[plugins] allow in {config} names 'nnn', which is no installed plugin (did you mean 'nn'?)",
        ),
        (
            {"PADDLE_CORE_CONFIG": "{missing}"},
            None,
            "PADDLE_CORE_CONFIG names {missing}, which is not a file: no config file is read",
        ),
    ],
)
def test_settings_that_name_nothing_are_warnings_that_doctor_counts(
    env: dict[str, str], config: str | None, warning: str, tmp_path: Path
) -> None:
    """A typo in a setting is not silently ignored: every command warns, naming the setting and
    the close matches, and `doctor` lists and counts it."""
    path, missing = tmp_path / "config.toml", tmp_path / "no_such_config.toml"
    env = {k: v.format(missing=missing) for k, v in env.items()}
    if config is not None:
        path.write_text(config)
        env["PADDLE_CORE_CONFIG"] = str(path)
    warning = warning.format(config=path, missing=missing)
    (line,) = warned(run_cli("list", env=env))
    assert warning in line
    report = json.loads(run_cli("doctor", "--json", env=env).stdout)
    assert [w for w in report["warnings"] if warning in w]
    human = run_cli("doctor", env=env)
    assert "0 problems, 1 warning " in human.stdout.replace("\n", " ") and warned(human) == []


def test_settings_warnings_in_python_point_at_the_users_line(monkeypatch, fresh_warnings) -> None:
    monkeypatch.setenv("PADDLE_CORE_DISABLE", "mathh")
    with pytest.warns(pc.ConfigWarning, match="PADDLE_CORE_DISABLE names 'mathh'") as record:
        pc.reload_registry()
    assert record[0].filename == __file__


def test_list_filters_naming_nothing_are_errors() -> None:
    result = run_cli("list", "--plugin", "mat", check=1)
    assert result.stderr.strip() == (
        "paddle-ops: error: no plugin is named 'mat' (did you mean 'math'?); "
        "the plugins are: core, dist, math, nn, toy"
    )
    result = run_cli("list", "--device", "gpu", check=1)
    assert "no device type is named 'gpu'" in result.stderr and "cpu, cuda" in result.stderr
    result = run_cli("list", "--device", "gpu", "--json", check=1)  # not an empty JSON list
    assert "no device type is named 'gpu'" in result.stderr and not result.stdout
    assert run_cli("list", "--plugin", "paddle-ops-toy").stdout  # distributions are names too


def test_invalid_settings_are_clear_errors(tmp_path: Path) -> None:
    result = run_cli("list", env={"PADDLE_CORE_PREFER": "toy_scale"}, check=1)
    assert "PADDLE_CORE_PREFER entry 'toy_scale' must look like op=plugin" in result.stderr
    config = tmp_path / "config.toml"
    config.write_text("[plugins\n")
    result = run_cli("list", env={"PADDLE_CORE_CONFIG": str(config)}, check=1)
    assert f"cannot read config file {config}" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_conflicts_are_loud_and_deterministic(broken_site: Path) -> None:
    result = run_cli("list", "--json", pythonpath=broken_site)
    assert "op 'toy_scale' is provided by plugin 'dup'" in result.stderr
    assert "PADDLE_CORE_PREFER=toy_scale=<plugin>" in result.stderr
    first = json.loads(result.stdout)["ops"]
    assert first == json.loads(run_cli("list", "--json", pythonpath=broken_site).stdout)["ops"]
    preferred = run_cli("list", pythonpath=broken_site, env={"PADDLE_CORE_PREFER": "toy_scale=toy"})
    assert "provided by" not in preferred.stderr


# -- the catalog of first-party packages -----------------------------------------------------


def test_catalog_matches_the_first_party_plugins() -> None:
    """The installed catalog (written by the core's build) names the packages of plugins/ with
    exactly their ops."""
    import importlib.util

    from paddle_core._src.plugins import catalog
    from paddle_core._src.plugins.catalog import KNOWN_PACKAGES, provider_of

    spec = importlib.util.spec_from_file_location("catalog_script", ROOT / "plugins" / "catalog.py")
    updater = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(updater)
    expected = updater.first_party_ops()
    assert KNOWN_PACKAGES == expected, "stale: reinstall paddle-core (./dev test rebuilds it)"
    for package, ops in expected.items():
        assert all(provider_of(op) == package for op in ops)
    assert catalog.DIRECTORIES == {
        name: directory for name, (directory, _, _) in updater.first_party_plugins().items()
    }
    assert catalog.ONNX_OPS == {
        name: onnx for name, (_, _, onnx) in updater.first_party_plugins().items()
    }
    assert catalog.provider_of_onnx("Conv") == "paddle-ops-nn"
    assert catalog.provider_of_onnx("MatMul") == "paddle-ops-math"
    assert catalog.DIRECTORIES["paddle-ops-math"] == "plugins/paddle_ops_math"
    assert Path(catalog.SOURCE).is_dir()  # the checkout the installed core was built from


def test_a_missing_first_party_op_names_a_command_that_works_where_the_user_is(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No index serves the first-party packages (yet): the hint points back at the checkout
    the core was built from: its wheelhouse, or its plugin directory."""
    from paddle_core._src.plugins import catalog

    checkout = tmp_path / "checkout"
    (checkout / "plugins" / "paddle_ops_nn").mkdir(parents=True)
    (checkout / "plugins" / "paddle_ops_nn" / "pyproject.toml").write_text("")
    monkeypatch.setitem(catalog.KNOWN_PACKAGES, "paddle-ops-nn", ("warpctc", "softmax"))
    monkeypatch.setitem(catalog.DIRECTORIES, "paddle-ops-nn", "plugins/paddle_ops_nn")
    monkeypatch.setattr(catalog, "SOURCE", str(checkout))

    def hint() -> str:
        with pytest.raises(pc.OpNotFoundError) as err:
            _ = pc.ops.warpctc
        prefix = "unknown op 'warpctc': it is provided by paddle-ops-nn; install it with `"
        assert str(err.value).startswith(prefix) and str(err.value).endswith("`")
        return str(err.value)[len(prefix) : -1]

    dist, project = checkout / "dist", checkout / "plugins" / "paddle_ops_nn"
    # No wheel: the project, which builds against the paddle-core installed (plain pip). From
    # outside the checkout (wherever pytest runs from), its absolute path.
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert hint() == f"pip install {project}"
    monkeypatch.chdir(checkout)  # inside the checkout, as the user would type it there
    assert hint() == "pip install ./plugins/paddle_ops_nn"
    dist.mkdir()
    (dist / "paddle_ops_nn-0.1.0-cp311-cp311-linux_x86_64.whl").write_text("")  # ./dev wheels
    assert hint() == "pip install --find-links dist paddle-ops-nn"
    monkeypatch.setattr(catalog, "SOURCE", str(tmp_path / "gone"))  # the core came from elsewhere
    assert hint() == "pip install paddle-ops-nn"


# -- compiled kernel modules that cannot be used ------------------------------------------------

KERNEL_PROBLEMS = {
    "abi_mismatch": "was built for kernel ABI 99, but paddle-core 0.1.0 speaks kernel ABI 1",
    "failing_kernels": "'broken_plugins.failing_C' failed to import: ImportError: failing_C.so: "
    "undefined symbol",
    "missing_kernels": "'broken_plugins.not_built_C'",
}


def test_unusable_kernel_modules_are_reported_and_their_ops_marked_unavailable(
    broken_site: Path, tmp_path: Path
) -> None:
    env = {"PADDLE_CORE_CACHE_DIR": str(tmp_path)}
    # Before any plugin code ran, a module that is not even installed is already known.
    ops = listed(broken_site, **env)
    assert ops["missing_kernels_op"]["available"] is False
    assert ops["toy_add"]["available"] is True
    # `plugins` imports each compiled module, checks it and reports the problem...
    plugins = plugins_json(broken_site, **env)
    for name, problem in KERNEL_PROBLEMS.items():
        assert plugins[name]["status"] == "broken", name
        assert any(problem in p for p in plugins[name]["problems"]), plugins[name]["problems"]
    # ...which later listings know without importing anything.
    ops = listed(broken_site, **env)
    for name in KERNEL_PROBLEMS:
        assert ops[f"{name}_op"]["available"] is False, name
    table = run_cli("list", "--plugin", "abi_mismatch", pythonpath=broken_site, env=env).stdout
    assert "abi_mismatch_op (unavailable)" in table
    # Rebuilding the index (as `doctor` does) keeps them and does not call the index stale
    # for them; another sys.path, with an index of its own, knows them too.
    doctor = run_cli("doctor", "--json", pythonpath=broken_site, env=env, check=None)
    assert json.loads(doctor.stdout)["stale_index"] is False
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for path in (broken_site, f"{elsewhere}{os.pathsep}{broken_site}"):
        ops = listed(path, **env)
        assert all(ops[f"{name}_op"]["available"] is False for name in KERNEL_PROBLEMS), path


@pytest.mark.parametrize("plugin", sorted(KERNEL_PROBLEMS))
def test_running_an_op_of_an_unusable_kernel_module_says_why(broken_site, on_path, plugin) -> None:
    on_path(broken_site)
    prog = pc.Program()
    with pc.program_guard(prog):
        out = getattr(pc.ops, f"{plugin}_op")(pc.data("x", [2]))  # appending needs no kernel
    with pytest.raises(pc.KernelLoadError) as err:
        pc.Executor().run(prog, feed={"x": np.ones(2, np.float32)}, fetch_list=[out])
    message = str(err.value)
    assert f"op '{plugin}_op' cannot run: plugin '{plugin}' (paddle-ops-broken 0.1.0)" in message
    assert KERNEL_PROBLEMS[plugin] in message
    # Other plugins' ops still run in the same process.
    prog = pc.Program()
    with pc.program_guard(prog):
        ok = pc.ops.toy_leaky_relu(pc.data("x", [2]), alpha=0.5)
    (value,) = pc.Executor().run(prog, feed={"x": -np.ones(2, np.float32)}, fetch_list=[ok])
    assert value.tolist() == [-0.5, -0.5]


MISSING = (
    "its compiled module 'broken_plugins.partial_C' does not export kernel 'partial_gone', "
    "which the manifest declares: it cannot run; register it in the module under the name the "
    "manifest gives (or remove it from the manifest), then rebuild the plugin"
)


def test_a_missing_kernel_symbol_makes_only_its_op_unavailable(
    broken_site: Path, tmp_path: Path
) -> None:
    env = {"PADDLE_CORE_CACHE_DIR": str(tmp_path)}
    plugins = plugins_json(broken_site, **env)  # imports and checks each module: exit 1
    partial = plugins["partial"]
    assert partial["status"] == "partial"
    assert partial["problems"] == [f"op 'partial_gone': {MISSING}"]
    # Later listings know, without importing anything; the plugin's other op is available.
    ops = listed(broken_site, **env)
    assert ops["partial_gone"]["available"] is False
    assert ops["partial_gone"]["problems"] == [
        f"plugin 'partial' (paddle-ops-broken 0.1.0): {MISSING}"
    ]
    assert ops["partial_fill"]["available"] is True and ops["partial_fill"]["problems"] == []
    table = run_cli("list", "--plugin", "partial", pythonpath=broken_site, env=env).stdout
    assert "partial_gone (unavailable)" in table and "partial_fill (unavailable)" not in table
    assert f"partial_gone: plugin 'partial' (paddle-ops-broken 0.1.0): {MISSING}" in table
    shown = run_cli("show", "partial_gone", pythonpath=broken_site, env=env).stdout
    assert "native:partial_gone (missing)" in shown and "unavailable: " in shown
    assert "does not export kernel 'partial_gone'" in " ".join(shown.split())
    as_data = json.loads(
        run_cli("show", "partial_gone", "--json", pythonpath=broken_site, env=env).stdout
    )
    assert as_data["available"] is False and len(as_data["problems"]) == 1
    doctor = run_cli("doctor", "--json", pythonpath=broken_site, env=env, check=1)
    problems = json.loads(doctor.stdout)["problems"]
    assert f"plugin 'partial' (paddle-ops-broken 0.1.0): op 'partial_gone': {MISSING}" in problems


def test_the_other_ops_of_a_plugin_missing_a_kernel_run(broken_site: Path, on_path) -> None:
    on_path(broken_site)
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [2])
        filled, gone = pc.ops.partial_fill(x, value=3.0), pc.ops.partial_gone(x)
    exe = pc.Executor()
    (value,) = exe.run(prog, feed={"x": np.zeros(2, np.float32)}, fetch_list=[filled])
    assert value.tolist() == [3.0, 3.0]
    with pytest.raises(pc.KernelLoadError) as err:
        exe.run(prog, feed={"x": np.zeros(2, np.float32)}, fetch_list=[gone])
    assert str(err.value) == (
        f"op 'partial_gone' cannot run: plugin 'partial' (paddle-ops-broken 0.1.0): {MISSING}"
    )
    record = pc.get_registry().plugins["partial"]
    assert record.status == "partial" and record.missing_symbols == ["partial_gone"]
    (value,) = exe.run(prog, feed={"x": np.zeros(2, np.float32)}, fetch_list=[filled])
    assert value.tolist() == [3.0, 3.0]


def test_a_noted_kernel_problem_holds_for_its_own_installed_copy_only(tmp_path) -> None:
    # Two environments may hold a plugin of one name and version, built differently: a broken
    # build in one must not mark the other's unavailable.
    import copy

    from paddle_core._src.plugins import index_cache

    (math,) = [r for r in pc.get_registry().records if r.name == "math"]
    module = tmp_path / "_C.so"
    module.write_bytes(b"a built module")
    index_cache.note_kernel_problem(str(tmp_path), math, "it does not import", str(module), [])

    here = copy.copy(math)
    here.kernel_problem = ""
    index_cache.apply_kernel_problems(str(tmp_path), [here])
    assert here.kernel_problem == "it does not import"

    elsewhere = copy.copy(math)  # the same plugin, installed in another environment
    elsewhere.kernel_problem = ""
    elsewhere.manifest_path = str(tmp_path / "other-venv" / "paddle_ops_math" / "ops")
    index_cache.apply_kernel_problems(str(tmp_path), [elsewhere])
    assert elsewhere.kernel_problem == ""


# -- the record of a plugin's build: the dtypes its manifest does not list -----------------------

RECORDED_OPS = """
kernel_module: "recorded_ops._kernels" kernel_abi: 1
ops {
  proto { type: "recorded_twice" comment: "2x." inputs { name: "x" } outputs { name: "out" } }
  kernels { device: "cpu" native: "twice" }
  kernels { device: "cuda" native: "twice_cuda" }
  shape_rule: "paddle_core.rules:unary"
}
"""


def recorded_package(where: Path, record: str) -> Path:
    """A package ``recorded_ops`` whose kernel module has ``record`` as its kernels.json."""
    package = where / "recorded_ops"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_kernels.py").write_text("")  # never imported by discovery
    (package / "kernels.json").write_text(record)
    return package


def test_the_build_record_gives_native_kernels_their_dtypes(tmp_path, monkeypatch):
    """A CPU build: the CPU kernel takes the dtypes its class declared (recorded beside the
    module), and the CUDA kernel, not in the record, is listed as not built, which is no
    problem of the plugin; ``paddle-ops show`` says why."""
    from paddle_core.cli import op_json

    record = (
        '{"module": "recorded_ops._kernels", "devices": ["cpu"], "kernels": {"twice": [9, 10]}}'
    )
    package = recorded_package(tmp_path, record)
    monkeypatch.syspath_prepend(str(tmp_path))
    parts = [(RECORDED_OPS, "recorded.pbtxt")]
    plugin = discovery.record_from_manifest(discovery.PluginRecord("recorded"), parts, "0.1.0")
    assert plugin.errors == [] and plugin.kernel_record == str(package / "kernels.json")
    (op,) = plugin.ops
    assert op["kernels"] == [["cpu", ["float32", "float64"], "native", "twice"]]
    ((name, device, symbol, why),) = plugin.unbuilt
    assert (name, device, symbol) == ("recorded_twice", "cuda", "twice_cuda")
    assert why.startswith("not built: the plugin's build compiled no cuda kernels")
    assert plugin.status == "ok" and plugin.problems == [] and plugin.faults == []

    class Recorded:
        def paddle_core_manifest(self):
            return RECORDED_OPS

    pc.register_plugin(Recorded(), name="recorded")
    info = pc.get_registry().op("recorded_twice")
    assert info.devices == ["cpu"] and info.dtypes == ["float32", "float64"]
    shown = op_json(info)
    assert shown["not_built"] == [
        {"device": "cuda", "ref": "twice_cuda", "plugin": "recorded", "why": why}
    ]


def test_a_kernel_the_build_did_not_record_is_a_problem(tmp_path, monkeypatch):
    record = '{"module": "recorded_ops._kernels", "devices": ["cpu"], "kernels": {}}'
    recorded_package(tmp_path, record)
    monkeypatch.syspath_prepend(str(tmp_path))
    parts = [(RECORDED_OPS, "recorded.pbtxt")]
    plugin = discovery.record_from_manifest(discovery.PluginRecord("recorded"), parts, "0.1.0")
    assert plugin.status == "partial"
    assert plugin.problems == [
        "op 'recorded_twice': cpu kernel 'twice': its dtypes are unknown: the manifest lists "
        "none, and the plugin's build recorded no kernel 'twice' (is it registered with "
        "PADDLE_CORE_REGISTER_KERNELS?)"
    ]


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ("not json", "JSONDecodeError"),
        ('{"devices": [], "kernels": {"twice": ["float32"]}}', "not a map of symbol -> list"),
        ('{"devices": [], "kernels": {"twice": [999]}}', "not a map of symbol -> list of dtype"),
        ('{"devices": [], "kernels": {"twice": [true]}}', "not a map of symbol -> list of dtype"),
        ('{"devices": [], "kernels": []}', "not a map of symbol -> list of dtype numbers"),
        ('{"devices": "cpu", "kernels": {}}', "its 'devices' is not a list of device names"),
        ('{"kernels": {}}', "KeyError"),
        ("[" * 100000 + "]" * 100000, "RecursionError"),
    ],
    ids=["syntax", "names", "unknown", "bool", "list", "devices", "missing", "deep"],
)
def test_an_unreadable_build_record_is_a_problem_naming_it(tmp_path, monkeypatch, record, why):
    """Whatever the file holds, a problem of its plugin naming it, never an exception."""
    package = recorded_package(tmp_path, record)
    monkeypatch.syspath_prepend(str(tmp_path))
    parts = [(RECORDED_OPS, "recorded.pbtxt")]
    plugin = discovery.record_from_manifest(discovery.PluginRecord("recorded"), parts, "0.1.0")
    (error,) = plugin.errors
    assert error.startswith(f"the record of its build, {str(package / 'kernels.json')!r}, is ")
    assert why in error and error.endswith("reinstall the plugin")
