"""Saved programs record each op's provider; loading checks every op against the registry, names
the package to install for the missing ones, and warns when another provider stands in."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings

import pytest
from conftest import pythonpath_with, run_cli
from google.protobuf import text_format

import paddle_core as pc

FAKE_MANIFEST = """
ops {
  proto {
    type: "fake_double"
    comment: "out = 2 * x."
    inputs { name: "x" comment: "Input." }
    outputs { name: "out" comment: "Result." }
  }
  kernels { device: "cpu" dtypes: [FLOAT32] python: "double_cpu" }
  shape_rule: "paddle_core.rules:unary"
}
ops {
  proto {
    type: "fake_half"
    comment: "out = x / 2."
    inputs { name: "x" comment: "Input." }
    outputs { name: "out" comment: "Result." }
  }
  kernels { device: "cpu" dtypes: [FLOAT32] python: "half_cpu" }
  shape_rule: "paddle_core.rules:unary"
}
"""


class FakeOps:
    """An in-process plugin: the provider of fake_double and fake_half."""

    def paddle_core_manifest(self):
        return FAKE_MANIFEST

    def double_cpu(self, x):
        return x * 2

    def half_cpu(self, x):
        return x / 2


@pytest.fixture
def fake():
    return pc.register_plugin(FakeOps(), name="fake")


def build(flag_branch: bool = True) -> pc.Program:
    """x -> fake_double -> toy_scale -> cond(fake_half | toy_relu): ops of an in-process plugin,
    of an installed one (paddle-ops-toy) and of the core (cond_block), one in a sub-block."""
    p = pc.Program()
    with pc.program_guard(p):
        x = pc.data("x", [None, 3])
        flag = pc.data("flag", [], "bool")
        y = pc.ops.toy_scale(pc.ops.fake_double(x), scale=3.0)
        pc.layers.cond(flag, lambda: pc.ops.fake_half(y), lambda: pc.ops.toy_relu(y))
    return p


def providers(desc) -> dict[str, tuple[str, str, str]]:
    return {
        op.type: (op.provider.plugin, op.provider.distribution, op.provider.version)
        for block in desc.blocks
        for op in block.ops
    }


def toy_version() -> str:
    return pc.get_registry().plugins["toy"].version


# -- recording -----------------------------------------------------------------------------------


def test_every_op_records_its_provider(fake):
    p = build()
    toy = ("toy", "paddle-ops-toy", toy_version())
    assert p.global_block().ops[1].provider == toy
    assert providers(p.to_desc()) == {
        "fake_double": ("fake", "", ""),  # registered from Python: no distribution
        "toy_scale": toy,
        "fake_half": ("fake", "", ""),  # in the true block
        "toy_relu": toy,  # in the false block
        "cond_block": ("core", "paddle-core", pc.__version__),
    }
    loaded = pc.Program.parse(p.serialize())
    assert loaded.serialize() == p.serialize()
    assert loaded.global_block().ops[1].provider == toy


def test_ops_appended_by_backward_record_their_provider():
    p = pc.Program()
    with pc.program_guard(p):
        x = pc.data("x", [2, 3])
        x.stop_gradient = False
        y = pc.ops.toy_scale(x, scale=2.0)
        pc.gradients([y], [x])
    recorded = providers(p.to_desc())
    assert recorded["toy_scale"][1] == "paddle-ops-toy"
    assert recorded["fill_like"] == ("core", "paddle-core", pc.__version__)


def test_a_program_whose_ops_record_no_provider_is_refused():
    desc = build_toy().to_desc()
    desc.blocks[0].ops[1].ClearField("provider")
    with pytest.raises(pc.ProgramError, match=r"op 'toy_relu' \(#1 in block 0\) records no prov"):
        pc.Program.parse(desc.SerializeToString())


def build_toy() -> pc.Program:
    p = pc.Program()
    with pc.program_guard(p):
        x = pc.data("x", [None, 3])
        pc.ops.toy_relu(pc.ops.toy_scale(x, scale=2.0, bias=2.0), name="y")
    return p


# -- loading what no plugin provides -------------------------------------------------------------


def test_missing_ops_are_reported_together_at_load(fake):
    data = build().serialize()
    pc.unregister_plugin("fake")
    with pytest.raises(pc.OpNotFoundError) as err:
        pc.Program.parse(data)
    assert err.value.op == "fake_double"
    assert str(err.value) == (
        "the program uses 2 ops that no loaded plugin provides:\n"
        "  ops 'fake_double', 'fake_half': it was provided by plugin 'fake', registered from "
        "Python with register_plugin; register it again before loading the program"
    )


def test_a_missing_op_names_the_recorded_distribution_and_version(fake, tmp_path):
    desc = build().to_desc()
    for block in desc.blocks:
        for op in block.ops:
            if op.type.startswith("fake_"):  # as if installed from a distribution
                op.provider.distribution, op.provider.version = "my-ops", "0.1"
    desc.blocks[2].ops[0].type = "toy_mystery"  # in the false block, from another plugin
    mystery = desc.blocks[2].ops[0].provider
    mystery.plugin, mystery.distribution, mystery.version = "mystery", "", ""
    pc.unregister_plugin("fake")
    path = tmp_path / "model.pb"
    path.write_bytes(desc.SerializeToString())
    with pytest.raises(pc.OpNotFoundError) as err:
        pc.load_program(path)
    assert str(err.value) == (
        f"the program {str(path)!r} uses 3 ops that no loaded plugin provides:\n"
        "  ops 'fake_double', 'fake_half': it is provided by my-ops (the program was saved with "
        "0.1); install it with `pip install 'my-ops>=0.1'`\n"
        "  op 'toy_mystery': it was provided by plugin 'mystery', registered from Python with "
        "register_plugin; register it again before loading the program"
    )


def test_one_missing_op_reads_as_one(fake):
    p = pc.Program()
    with pc.program_guard(p):
        pc.ops.fake_double(pc.data("x", [3]))
    desc = p.to_desc()
    desc.blocks[0].ops[0].provider.distribution = "my-ops"
    desc.blocks[0].ops[0].provider.version = "1.2.post1"
    pc.unregister_plugin("fake")
    with pytest.raises(
        pc.OpNotFoundError,
        match=re.escape(
            "the program uses op 'fake_double', which no loaded plugin provides: it is provided "
            "by my-ops (the program was saved with 1.2.post1); install it with "
            "`pip install 'my-ops>=1.2.post1'`"
        ),
    ):
        pc.Program.from_desc(desc)


def test_a_disabled_provider_is_named_rather_than_installed(monkeypatch):
    data = build_toy().serialize()
    monkeypatch.setenv("PADDLE_CORE_DISABLE", "toy")
    pc.reload_registry()
    with pytest.raises(pc.OpNotFoundError, match=r"it is provided by plugin 'toy' .*disabled"):
        pc.Program.parse(data)


def test_a_first_party_provider_gets_the_catalogs_command(monkeypatch, tmp_path):
    """The catalog knows where a first-party package comes from (the checkout's wheelhouse);
    the recorded version goes into the command where pip can honour it."""
    from paddle_core._src.plugins import catalog
    from paddle_core._src.plugins.registry import Provider, Registry

    checkout = tmp_path / "checkout"
    (checkout / "plugins" / "paddle_ops_nn").mkdir(parents=True)
    (checkout / "plugins" / "paddle_ops_nn" / "pyproject.toml").write_text("")
    (checkout / "dist").mkdir()
    (checkout / "dist" / "paddle_ops_nn-0.1.0-cp311-cp311-linux_x86_64.whl").write_text("")
    monkeypatch.setitem(catalog.DIRECTORIES, "paddle-ops-nn", "plugins/paddle_ops_nn")
    monkeypatch.setitem(catalog._spelled, "paddle_ops_nn", "paddle-ops-nn")
    monkeypatch.setattr(catalog, "SOURCE", str(checkout))
    monkeypatch.chdir(checkout)
    records = [r for r in pc.get_registry().records if r.distribution != "paddle-ops-nn"]
    without_nn = Registry(records)
    recorded = Provider("nn", "paddle_ops_nn", "0.1.0")  # as the metadata may spell it
    assert without_nn.missing_reason("softmax", recorded) == (
        ": it is provided by paddle_ops_nn (the program was saved with 0.1.0); install it with "
        "`pip install --find-links dist 'paddle-ops-nn>=0.1.0'`"
    )


# -- another provider stands in ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("distribution", "version", "warning"),
    [
        ("paddle-ops-toy", "0.0.1", None),  # a newer version is installed: fine
        ("Paddle_Ops_Toy", None, None),  # the same distribution, spelled otherwise
        (
            "paddle-ops-toy",
            "99.0",
            "the program: op 'toy_scale' was saved with paddle-ops-toy 99.0, but paddle-ops-toy "
            "{v} is installed, which is older; upgrade it with `pip install 'paddle-ops-toy>=99.0'`",
        ),
        (
            "other-ops",
            "1.0",
            "the program: op 'toy_scale' was provided by other-ops 1.0 when it was saved, but "
            "here by paddle-ops-toy {v}; results may differ",
        ),
    ],
)
def test_another_or_older_provider_is_warned_about(distribution, version, warning):
    desc = build_toy().to_desc()
    recorded = desc.blocks[0].ops[0].provider
    recorded.distribution, recorded.version = distribution, version or recorded.version
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = pc.Program.from_desc(desc)
    messages = [str(w.message) for w in caught if w.category is pc.ProviderMismatchWarning]
    assert messages == ([warning.format(v=toy_version())] if warning else [])
    assert loaded.global_block().ops[0].provider.distribution == distribution  # kept as saved


def test_an_in_process_plugin_standing_in_is_warned_about(fake):
    desc = build().to_desc()
    for block in desc.blocks:
        for op in block.ops:
            if op.provider.plugin == "fake":
                op.provider.plugin = "notebook"
    with pytest.warns(
        pc.ProviderMismatchWarning,
        match=re.escape(
            "ops 'fake_double', 'fake_half' were provided by plugin 'notebook' (registered from "
            "Python) when it was saved, but here by plugin 'fake' (registered from Python)"
        ),
    ):
        pc.Program.from_desc(desc)


# -- every public load path ----------------------------------------------------------------------


def test_models_and_inference_models_check_their_ops(fake, tmp_path):
    p = pc.Program()
    with pc.program_guard(p):
        y = pc.ops.fake_double(pc.data("x", [None, 3]))
    pc.Model(main_program=p, startup_program=pc.Program()).save(tmp_path / "model")
    pc.io.save_inference_model(tmp_path / "inference", ["x"], [y], p, pc.Scope())
    pc.unregister_plugin("fake")
    needs_fake = "uses op 'fake_double', which no loaded plugin provides: it was provided by"
    with pytest.raises(pc.OpNotFoundError, match=needs_fake):
        pc.load_model(tmp_path / "model")
    with pytest.raises(pc.OpNotFoundError, match=needs_fake):
        pc.io.load_inference_model(tmp_path / "inference", pc.Scope())
    pc.register_plugin(FakeOps(), name="fake")
    model = pc.load_model(tmp_path / "model")
    assert model.main_program.serialize() == p.serialize()
    _, feed, fetch = pc.io.load_inference_model(tmp_path / "inference", pc.Scope())
    assert (feed, [v.name for v in fetch]) == (["x"], [y.name])


def test_a_removed_pip_installed_plugin_fails_at_load_in_a_fresh_process(tmp_path):
    """paddle-ops-toy is really pip-installed for this test run; a fresh process whose path
    lacks it stands for one after `pip uninstall paddle-ops-toy`. The library and `paddle-ops
    inspect` say the same."""
    path = tmp_path / "model.pb"
    pc.save_program(build_toy(), path)
    toy_site = os.path.dirname(os.path.dirname(pc.get_registry().plugins["toy"].manifest_path))
    pythonpath = [d for d in pythonpath_with().split(os.pathsep) if d and d != toy_site]
    without_toy = {"PYTHONPATH": os.pathsep.join(pythonpath)}
    script = "import sys, paddle_core as pc\npc.load_program(sys.argv[1])\n"
    result = subprocess.run(
        [sys.executable, "-P", "-c", script, str(path)],
        env={**os.environ, **without_toy},
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    v = toy_version()
    message = (
        f"the program {str(path)!r} uses 2 ops that no loaded plugin provides:\n"
        f"  ops 'toy_scale', 'toy_relu': it is provided by paddle-ops-toy (the program was "
        f"saved with {v}); install it with `pip install 'paddle-ops-toy>={v}'`"
    )
    error = "paddle_core._src.base.errors.OpNotFoundError: "
    assert result.stderr.rstrip().endswith(error + message), result.stderr
    cli = run_cli("inspect", str(path), env=without_toy, check=1)
    assert (cli.stdout, cli.stderr) == ("", f"paddle-ops: error: {message}\n")

    # Installed again (this process's path has it): it loads, and says what it needs.
    result = subprocess.run(
        [sys.executable, "-P", "-c", script, str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(run_cli("inspect", str(path), "--json").stdout)
    assert report["requires"] == [f"paddle-ops-toy>={v}"]
    toy = {"plugin": "toy", "distribution": "paddle-ops-toy", "version": v}
    assert report["ops"] == [
        {"block": 0, "type": "toy_scale", "provider": toy},
        {"block": 0, "type": "toy_relu", "provider": toy},
    ]


def test_inspect_lists_ops_by_provider(tmp_path):
    program = pc.Program()
    with pc.program_guard(program):
        x = pc.data("x", [2, 3])
        y = pc.ops.toy_scale(x)
        pc.layers.cond(pc.data("flag", [], "bool"), lambda: y, lambda: pc.ops.toy_relu(y))
    desc = program.to_desc()
    path = tmp_path / "model.pbtxt"
    path.write_text(text_format.MessageToString(desc))
    out = run_cli("inspect", str(path)).stdout
    v = toy_version()
    assert out.startswith(f"{path}: 3 blocks, 3 ops\n")
    rows = [line.split() for line in out.splitlines()]
    assert ["paddle-ops-toy", v, "toy", "toy_scale,", "toy_relu"] in rows, out
    assert ["paddle-core", pc.__version__, "core", "cond_block"] in rows, out
    requires = f"requires: paddle-core>={pc.__version__} paddle-ops-toy>={v}"
    assert out.rstrip().endswith(requires), out

    desc.blocks[2].ops[0].provider.version = "99.0"  # saved with a newer toy than installed
    path.write_text(text_format.MessageToString(desc))
    result = run_cli("inspect", str(path))
    assert result.stderr == (
        f"paddle-ops: warning: the program {str(path)!r}: op 'toy_relu' was saved with "
        f"paddle-ops-toy 99.0, but paddle-ops-toy {v} is installed, which is older; upgrade it "
        "with `pip install 'paddle-ops-toy>=99.0'`\n"
    )
    assert result.stdout.rstrip().endswith("paddle-ops-toy>=99.0")


def test_requirements_name_each_distribution_at_its_highest_recorded_version(fake):
    from paddle_core._src.graph.provenance import requirements

    desc = build().to_desc()
    versions = iter(["0.0.9", "0.0.10"])  # toy_scale, then toy_relu (in a sub-block)
    for block in desc.blocks:
        for op in block.ops:
            if op.provider.plugin == "toy":
                op.provider.version = next(versions)
    desc.blocks[2].ops[0].provider.distribution = "Paddle_Ops_Toy"  # another spelling
    program = pc.Program.from_desc(desc)
    # fake (registered from Python) has no distribution to install
    assert requirements(program) == [f"paddle-core>={pc.__version__}", "Paddle_Ops_Toy>=0.0.10"]


def test_an_op_the_installed_version_of_its_distribution_lacks():
    """paddle-ops-toy is installed, but in a version without the op the program was saved
    with: installing "a newer one" would change nothing, so the hint pins the saved version."""
    desc = build_toy().to_desc()
    desc.blocks[0].ops[1].type = "toy_retired"
    desc.blocks[0].ops[1].provider.version = "0.0.1"
    with pytest.raises(pc.OpNotFoundError) as err:
        pc.Program.from_desc(desc)
    assert str(err.value) == (
        "the program uses op 'toy_retired', which no loaded plugin provides: it is provided by "
        "paddle-ops-toy (the program was saved with 0.0.1), but not by the installed "
        f"paddle-ops-toy {toy_version()}; install the version the program was saved with: "
        "`pip install paddle-ops-toy==0.0.1`"
    )


def test_an_op_missing_from_the_very_version_it_was_saved_with():
    """Saved with the installed version, yet the op is not there (another build, e.g. a
    development install): pinning the same version would change nothing, so no command."""
    desc = build_toy().to_desc()
    desc.blocks[0].ops[1].type = "toy_unreleased"
    desc.blocks[0].ops[1].provider.version = toy_version()
    with pytest.raises(pc.OpNotFoundError) as err:
        pc.Program.from_desc(desc)
    assert str(err.value) == (
        "the program uses op 'toy_unreleased', which no loaded plugin provides: it is provided "
        f"by paddle-ops-toy (the program was saved with {toy_version()}), but the installed "
        f"paddle-ops-toy {toy_version()} does not provide it; the program was saved from "
        "another build of paddle-ops-toy (a development install?)"
    )
