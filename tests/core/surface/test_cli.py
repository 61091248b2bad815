"""The `paddle-ops` command, run as a subprocess the way users run it."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import tomllib
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, pythonpath_with, ruff, run_cli

import paddle_core as pc

TOY_OPS = {
    "toy_add", "toy_concat", "toy_dropout", "toy_fill", "toy_leaky_relu", "toy_linear",
    "toy_matmul", "toy_reduce", "toy_relu", "toy_scale", "toy_split",
}  # fmt: skip


def as_json(*args: str, **kwargs) -> dict:
    data = json.loads(run_cli(*args, "--json", **kwargs).stdout)
    assert data.pop("schema") == 1
    return data


def test_list_json_rows() -> None:
    rows = {r["op"]: r for r in as_json("list")["ops"]}
    assert TOY_OPS <= set(rows)
    assert rows["toy_scale"] == {
        "op": "toy_scale",
        "plugin": "toy",
        "distribution": "paddle-ops-toy",
        "version": "0.1.0",
        "devices": ["cpu"],
        "dtypes": ["int32", "int64", "float32", "float64"],
        "has_grad": True,
        "grad": "yes",
        "available": True,
        "problems": [],
        "comment": rows["toy_scale"]["comment"],
    }
    assert rows["toy_scale"]["comment"].startswith("Multiply by a scalar")
    assert rows["toy_matmul"]["has_grad"] is False
    assert rows["toy_matmul"]["grad"] == "none"


def test_ops_constant_in_their_inputs_list_a_zero_gradient() -> None:
    """argmax, argmin and full_like name the core's no_grad rule: gradients stop there, which
    the listing says ("zero"), neither "yes" nor "-" (not differentiable at all)."""
    rows = {r["op"]: r for r in as_json("list", "--plugin", "math")["ops"]}
    for op in ("argmax", "argmin", "full_like"):
        assert (rows[op]["has_grad"], rows[op]["grad"]) == (False, "zero"), op
    assert (rows["sum"]["has_grad"], rows["sum"]["grad"]) == (True, "yes")
    table = {line.split()[0]: line.split()[-1] for line in run_cli("list").stdout.splitlines()}
    assert (table["argmax"], table["full_like"], table["sum"], table["toy_matmul"]) == (
        "zero",
        "zero",
        "yes",
        "-",
    )
    assert "no gradient flows back" in run_cli("show", "argmax").stdout


def test_the_dtypes_column_names_the_groups_an_op_takes_whole() -> None:
    """A table of 13 dtypes per op would not fit a line: whole groups are named, the rest
    listed; --json keeps every dtype."""
    from paddle_core._src.base.dtypes import DTYPES
    from paddle_core.cli import dtypes_cell

    numbers = [d for d in DTYPES if d != "bool"]
    floats = ["float16", "bfloat16", "float32", "float64"]
    assert dtypes_cell(list(DTYPES)) == "all"
    assert dtypes_cell(numbers) == "numbers"
    assert dtypes_cell([*floats, "int32", "int64"]) == "floats,int32,int64"
    assert dtypes_cell([d for d in numbers if d not in floats] + ["bool"]) == "ints,bool"
    assert dtypes_cell(["float64", "float32"]) == "float32,float64"
    assert dtypes_cell([]) == "-"
    ops = {op["op"]: op["dtypes"] for op in json.loads(run_cli("list", "--json").stdout)["ops"]}
    row = next(line for line in run_cli("list").stdout.splitlines() if line.startswith("add "))
    assert row.split()[4] == dtypes_cell(ops["add"]) == "numbers" and len(ops["add"]) == 12


def test_list_table_and_filters() -> None:
    out = run_cli("list").stdout.splitlines()
    assert out[0].split() == ["op", "plugin", "version", "devices", "dtypes", "grad"]
    assert set(out[1]) == {"─"}
    row = next(line for line in out if line.startswith("toy_scale "))
    assert row.split() == ["toy_scale", "toy", "0.1.0", "cpu", "int32,int64,float32,float64", "yes"]
    plugins = {line.split()[1] for line in out[2:-1]}  # the core's and math's too, not only toy
    assert out[-1] == f"{len(out) - 3} ops from {len(plugins)} plugins"
    toy = run_cli("list", "--plugin", "toy").stdout.splitlines()
    assert toy[0].split() == out[0].split() and set(toy[1]) == {"─"}
    assert {line.split()[0] for line in toy[2:-1]} == TOY_OPS
    assert row.split() in [line.split() for line in toy]
    assert toy[-1] == f"{len(TOY_OPS)} ops from 1 plugin"
    assert {r["op"] for r in as_json("list", "--plugin", "paddle-ops-toy")["ops"]} == TOY_OPS
    both = as_json("list", "--plugin", "toy", "--plugin", "core")["ops"]  # several: each one's
    assert {r["plugin"] for r in both} == {"toy", "core"}
    assert TOY_OPS < {r["op"] for r in both}
    # toy has no CUDA kernels (paddle-ops-math may have some, depending on its build)
    assert (
        "No op matches the filter." in run_cli("list", "--plugin", "toy", "--device", "cuda").stdout
    )


def test_show_json_has_everything_from_the_proto() -> None:
    op = as_json("show", "toy_dropout")
    assert op["signature"] == "toy_dropout(x, *, p=0.5, is_test=False, seed=0, name=None)"
    assert [i["name"] for i in op["inputs"]] == ["x"]
    assert op["outputs"][1] == {
        "name": "mask",
        "comment": "1 where kept, 0 where dropped; only while training.",
        "duplicable": False,
        "dispensable": True,
    }
    p = next(a for a in op["attrs"] if a["name"] == "p")
    assert p["type"] == "FLOAT" and p["default"] == 0.5 and not p["required"]
    assert p["min"] == {"value": 0.0, "exclusive": False}
    assert p["max"] == {"value": 1.0, "exclusive": True}
    seed = next(a for a in op["attrs"] if a["name"] == "seed")
    assert seed["type"] == "LONG"
    assert op["kernels"] == [
        {
            "device": "cpu",
            "dtype": d,
            "impl": "python",
            "ref": "paddle_ops_toy.rules:dropout_cpu",  # where the rule lives
            "plugin": "toy",
        }
        for d in ("float32", "float64")
    ]
    assert op["shape_rule"] == "paddle_ops_toy.rules:dropout_shape" and op["grad_rule"] is None
    reduction = next(a for a in as_json("show", "toy_reduce")["attrs"] if a["name"] == "reduction")
    assert reduction["choices"] == ["sum", "mean", "max"]
    shape = next(a for a in as_json("show", "toy_fill")["attrs"] if a["name"] == "shape")
    assert shape["required"] and shape["default"] is None


def test_show_human() -> None:
    out = run_cli("show", "toy_leaky_relu").stdout
    assert "toy_leaky_relu  from plugin 'toy' (paddle-ops-toy 0.1.0)" in out
    assert "toy_leaky_relu(x, *, alpha=0.02, name=None)" in out
    assert "float in [0, 1), default 0.02" in out
    assert "python:paddle_ops_toy.rules:leaky_relu_cpu" in out
    # Text in brackets is the plugin's, not rich's markup: shown as written.
    assert "[kh, kw] (ignored with global_pooling)" in run_cli("show", "pool2d").stdout


def test_unknown_op_exits_1_with_one_line() -> None:
    result = run_cli("show", "toy_scael", check=1)
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    # The closest name comes first; other toy ops share the prefix and may follow it.
    assert line.startswith("paddle-ops: error: unknown op 'toy_scael' (did you mean 'toy_scale'")
    assert line.endswith("?)")


def test_an_op_named_in_the_wrong_case_is_suggested() -> None:
    line = run_cli("show", "TOY_SCALE", check=1).stderr.strip()
    assert line.startswith("paddle-ops: error: unknown op 'TOY_SCALE' (did you mean 'toy_scale'")


def test_plugins_json() -> None:
    toy = next(p for p in as_json("plugins")["plugins"] if p["name"] == "toy")
    assert toy["status"] == "ok" and toy["problems"] == []
    assert toy["distribution"] == "paddle-ops-toy" and set(toy["ops"]) == TOY_OPS
    assert toy["comment"] == "NumPy-kernel ops for testing paddle-core"


def test_doctor_clean_and_broken(broken_site: Path) -> None:
    report = as_json("doctor")
    assert report["problems"] == [] and report["stale_index"] is False
    result = run_cli("doctor", "--json", pythonpath=broken_site, check=1)
    report = json.loads(result.stdout)
    assert "doctor found" in result.stderr
    problems = "\n".join(report["problems"])
    for plugin in ("bad_syntax", "wrong_core", "raising_rules", "missing_symbol", "no_package"):
        assert f"plugin {plugin!r}" in problems
    assert "op 'toy_scale' is provided by plugin 'dup'" in problems
    # With the conflict settled by a preference it becomes a warning, not a problem.
    report = json.loads(
        run_cli(
            "doctor",
            "--json",
            pythonpath=broken_site,
            env={"PADDLE_CORE_PREFER": "toy_scale=toy"},
            check=1,
        ).stdout
    )
    assert not any("'toy_scale'" in p for p in report["problems"])
    assert any("'toy_scale'" in w for w in report["warnings"])


def test_list_says_which_plugins_it_could_not_list(broken_site: Path) -> None:
    """A broken or switched-off plugin's ops are not listed; the list says so, not nothing."""
    out = run_cli("list", pythonpath=broken_site).stdout
    assert "plugin 'bad_syntax' (paddle-ops-broken) is not loaded: " in out
    assert "`paddle-ops plugins` says more." in out
    out = run_cli("list", "--plugin", "bad_syntax", pythonpath=broken_site).stdout
    assert out.startswith("plugin 'bad_syntax' (paddle-ops-broken) is not loaded: ")
    assert "No op matches" not in out
    out = run_cli("list", "--plugin", "toy", env={"PADDLE_CORE_PLUGINS": "nn"}).stdout
    assert out.startswith("plugin 'toy' (paddle-ops-toy) is switched off: ")
    assert "plugin 'toy'" not in run_cli("list").stdout  # a working plugin: no note


def test_doctor_warns_about_a_preference_nobody_can_honour() -> None:
    report = json.loads(
        run_cli("doctor", "--json", env={"PADDLE_CORE_PREFER": "toy_scale=nobody"}).stdout
    )
    warning = "preference toy_scale=nobody: no such plugin provides op 'toy_scale'"
    assert warning in report["warnings"]


def test_doctor_warns_about_a_thread_count_that_is_not_one() -> None:
    report = json.loads(run_cli("doctor", "--json", env={"PADDLE_CORE_NUM_THREADS": "abc"}).stdout)
    warning = "PADDLE_CORE_NUM_THREADS='abc' is not a thread count in [1, 4096]; ignoring it"
    assert warning in report["warnings"]
    clean = json.loads(run_cli("doctor", "--json", env={"PADDLE_CORE_NUM_THREADS": "2"}).stdout)
    assert not any("NUM_THREADS" in w for w in clean["warnings"])


def test_stubs_are_valid_python_with_signatures(tmp_path: Path) -> None:
    target = tmp_path / "typings" / "paddle_core" / "ops.pyi"  # the directories are made
    assert run_cli("stubs", "-o", str(target)).stdout.strip() == f"wrote {target}"
    text = target.read_text()
    tree = ast.parse(text)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert TOY_OPS <= set(functions)

    def signature(op: str) -> str:
        node = functions[op]
        return f"{op}({ast.unparse(node.args)}) -> {ast.unparse(node.returns)}"

    assert signature("toy_scale") == (
        "toy_scale(x: Variable, *, scale: float=1.0, bias: float=0.0, "
        "bias_after_scale: bool=True, name: str | None=None) -> Variable"
    )
    assert signature("toy_split") == (
        "toy_split(x: Variable, *, num: int=2, axis: int=0, name: str | None=None) "
        "-> list[Variable]"
    )
    assert signature("toy_linear") == (
        "toy_linear(x: Variable, w: Variable, b: Variable | None=None, *, "
        "name: str | None=None) -> Variable"
    )
    assert ast.get_docstring(functions["toy_scale"]).startswith("Multiply by a scalar")


def test_stubs_come_out_formatted(tmp_path: Path) -> None:
    """A generated file passes the project's lint and format checks as it is written, however
    long its signatures and whatever its defaults (quotes, infinity)."""
    import paddle_core as pc
    from paddle_core._stubs import write_stubs

    class Awkward:
        def paddle_core_manifest(self):
            attrs = "".join(
                f'attrs {{ name: "{name}" type: {kind} comment: "." default {{ {value} }} }}\n'
                for name, kind, value in [
                    ("quoted", "STRING", 's: "say \\"hi\\" it\'s"'),
                    ("low", "FLOAT", "f: -inf"),
                    ("bounds", "FLOATS", "floats: [-inf, 0.5, inf]"),
                    ("mode", "STRING", 's: "a_rather_long_default_value"'),
                    ("sizes", "INTS", "ints: [1, 2, 3, 4]"),
                ]
            )
            return unary_op_text("awkward_op_with_a_long_name", attrs)

    pc.register_plugin(Awkward(), name="awkward")
    target = write_stubs(pc.get_registry(), tmp_path / "ops.pyi")
    config = ["--config", str(ROOT / "pyproject.toml")]
    for command in (["check"], ["format", "--check", "--diff"]):
        result = subprocess.run(
            [ruff(), *command, *config, str(target)], capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout + result.stderr
    tree = ast.parse(target.read_text())
    (awkward,) = [n for n in tree.body if getattr(n, "name", "") == "awkward_op_with_a_long_name"]
    defaults = [ast.literal_eval(d) for d in awkward.args.kw_defaults]
    assert defaults[:3] == ['say "hi" it\'s', ..., ...]


def unary_op_text(op_type: str, attrs: str) -> str:
    return f"""
        ops {{
          proto {{
            type: "{op_type}" comment: "A test op."
            inputs {{ name: "x" comment: "Input." }}
            outputs {{ name: "out" comment: "Output." }}
            {attrs}
          }}
          kernels {{ device: "cpu" dtypes: [FLOAT32] python: "f" }}
          shape_rule: "paddle_core.rules:unary"
        }}
    """


def test_usage_errors_exit_2() -> None:
    assert run_cli(check=2).stderr.startswith("usage: paddle-ops")
    assert "invalid choice" in run_cli("frobnicate", check=2).stderr
    # An option the command lacks is reported with that command's usage, which lists its own.
    usage, error = run_cli("stubs", "--json", check=2).stderr.splitlines()
    assert usage == "usage: paddle-ops stubs [-h] [-o OUTPUT]"
    assert error == "paddle-ops stubs: error: unrecognized arguments: --json"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("list", "--plugin", ""), "no plugin is named ''"),
        (("list", "--device", "", "--json"), "no device type is named ''"),
        (("show", "x" * 5000), "unknown op 'xxx"),
        (("new", "pkg", "--dir", "/proc/no/such/dir"), "cannot write the package to"),
        (("stubs", "-o", "/proc/no/such/dir/ops.pyi"), "cannot write the stubs to"),
        (("stubs", "-o", ""), "--output needs a file name"),
        (("profile", "model", "--runs", "0"), "--runs must be 1 or more, got 0"),
        (("profile", "/proc/no/such/model.pb"), "/proc/no/such/model.pb"),
    ],
)
def test_hostile_arguments_get_one_line_errors(args: tuple[str, ...], message: str) -> None:
    """Empty filters name nothing (they do not mean "everything"), unwritable places and long
    values get the core's one-line error (long values cut), never a traceback."""
    result = run_cli(*args, check=1)
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("paddle-ops: error: ") and message in line and len(line) < 300, line


def toy_loop_program() -> pc.Program:
    """A program of toy ops (one inside a cond's branch): drawn with and without the toy
    plugin installed."""
    program = pc.Program()
    with pc.program_guard(program):
        x = pc.data("x", [2, 3])
        y = pc.ops.toy_scale(x, scale=3.0)
        pc.layers.cond(pc.data("flag", [], "bool"), lambda: y, lambda: pc.ops.toy_relu(y))
    return program


def test_draw_writes_each_format(tmp_path: Path) -> None:
    """`paddle-ops draw` writes the file its -o names (SVG beside the program by default),
    byte for byte what pc.render_program gives in this process; - prints the DOT text."""
    program = toy_loop_program()
    path = tmp_path / "model.pb"
    pc.save_program(program, path)
    result = run_cli("draw", str(path))
    # Nothing on stderr: the fontconfig warnings Graphviz's libraries print are dropped.
    assert (result.stdout, result.stderr) == (f"{tmp_path / 'model.svg'}: 3 blocks, 3 ops\n", "")
    assert (tmp_path / "model.svg").read_bytes() == pc.render_program(program, "svg")
    for name in ("drawn.svg", "drawn.png", "drawn.dot", "drawn.gv"):
        run_cli("draw", str(path), "-o", str(tmp_path / name))
    assert (tmp_path / "drawn.svg").read_bytes() == pc.render_program(program, "svg")
    assert (tmp_path / "drawn.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    dot = pc.render_program(program, "dot")
    assert (tmp_path / "drawn.dot").read_bytes() == (tmp_path / "drawn.gv").read_bytes() == dot
    assert run_cli("draw", str(path), "-o", "-").stdout == dot.decode()


def test_draw_refuses_a_suffix_naming_no_format(tmp_path: Path) -> None:
    path = tmp_path / "model.pb"
    pc.save_program(toy_loop_program(), path)
    result = run_cli("draw", str(path), "-o", str(tmp_path / "model.jpg"), check=1)
    assert result.stderr == (
        f"paddle-ops: error: cannot draw the program to {str(tmp_path / 'model.jpg')!r}: its "
        "suffix '.jpg' names no format; use one of .svg, .png, .dot, .gv\n"
    )
    assert not (tmp_path / "model.jpg").exists()


def test_draw_a_program_whose_plugin_is_missing(tmp_path: Path) -> None:
    """Drawing reads the program only: ops no installed plugin provides are drawn with every
    attr they record (no defaults to leave out), where `inspect` and loading fail."""
    path = tmp_path / "model.pb"
    pc.save_program(toy_loop_program(), path)
    toy_site = os.path.dirname(os.path.dirname(pc.get_registry().plugins["toy"].manifest_path))
    pythonpath = [d for d in pythonpath_with().split(os.pathsep) if d and d != toy_site]
    without_toy = {"PYTHONPATH": os.pathsep.join(pythonpath)}
    run_cli("inspect", str(path), env=without_toy, check=1)
    with_toy = run_cli("draw", str(path), "-o", "-").stdout
    without = run_cli("draw", str(path), "-o", "-", env=without_toy).stdout
    assert 'label="toy_scale\\nscale=3\\l" ' in with_toy  # the others are their defaults
    assert 'label="toy_scale\\nscale=3\\lbias=0\\lbias_after_scale=True\\l" ' in without


def saved_classifier(directory: Path) -> tuple[Path, Path, list[str]]:
    """A small inference model saved in ``directory`` / "model" (an fc layer and softmax, its
    parameters initialised), an input for it in ``directory`` / "x.npy", and its op types."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [4])
        probabilities = pc.layers.softmax(pc.layers.fc(x, 3))
    scope = pc.Scope()
    pc.Executor().run(startup, scope=scope)
    model = pc.io.save_inference_model(directory / "model", ["x"], [probabilities], main, scope)
    np.save(directory / "x.npy", np.ones((5, 4), np.float32))
    return directory / "model", directory / "x.npy", [op.type for op in model.global_block().ops]


def test_profile_prints_the_tables_of_a_saved_model(tmp_path: Path) -> None:
    """`paddle-ops profile` runs a saved inference model under pc.profiler: a table by op
    type and one by op, every op of the model in each, then what the plan holds; --trace
    writes the Chrome trace."""
    model, x, types = saved_classifier(tmp_path)
    trace = tmp_path / "trace.json"
    args = ("profile", str(model), "--feed", f"x={x}", "--runs", "3")
    out = run_cli(*args, "--trace", str(trace)).stdout
    assert out.startswith(f"{model}: 3 runs on cpu, after one to warm up\n")
    by_type, by_op = out.split("\nby op: ")
    assert "by op type: 3 runs, " in by_type and "total ms" in by_type and "share %" in by_op
    for index, op in enumerate(types):
        assert f" {op} " in by_type
        assert any(line.split()[:2] == [f"#{index}", op] for line in by_op.splitlines()), by_op
    events = json.loads(trace.read_text())["traceEvents"]
    assert len([e for e in events if e["cat"] == "op"]) == 3 * len(types)
    data = as_json(*args)
    assert (data["runs"], data["device"], data["trace"]) == (3, "cpu", None)
    assert sum(row["calls"] for row in data["by_type"]) == 3 * len(types)
    assert sorted(row["index"] for row in data["by_op"]) == list(range(len(types)))
    assert sum(row["total_ns"] for row in data["by_op"]) == sum(
        row["total_ns"] for row in data["by_type"]
    )
    # then what the plan holds (PreparedProgram.memory)
    assert "\nwhat the plan holds:\narena " in out and "persistable values" in out
    memory = data["memory"]
    assert memory["held_bytes"] == memory["arena_bytes"] + memory["fetched_bytes"]
    assert memory["fetched_bytes"] == 5 * 3 * 4  # the probabilities, float32 [5, 3]
    assert memory["persistable_bytes"] == (4 * 3 + 3) * 4  # the fc's weights and bias
    # the model file itself names the whole model; a bare program fetches what no op reads
    assert run_cli("profile", str(model / "model.pb"), "--feed", f"x={x}").stdout.count("#") >= 3
    program = pc.Program()
    with pc.program_guard(program):
        pc.ops.relu(pc.ops.scale(pc.data("x", [None, 4]), scale=2.0))
    pc.save_program(program, tmp_path / "bare.pb")
    bare = as_json("profile", str(tmp_path / "bare.pb"), "--feed", f"x={x}", "--runs", "2")
    assert [row["type"] for row in sorted(bare["by_op"], key=lambda r: r["index"])] == [
        "scale",
        "relu",
    ]


@pytest.mark.parametrize(
    ("feeds", "message"),
    [
        ((), "takes x too: give each with --feed NAME=FILE.npy"),
        (("x",), "--feed takes NAME=FILE.npy, got 'x'"),
        (("y=x.npy",), "has no input 'y'; its inputs are: x"),
        (("x=missing.npy",), "--feed x: cannot read 'missing.npy' as a .npy array"),
    ],
)
def test_profile_says_what_is_wrong_with_the_feeds(
    tmp_path: Path, feeds: tuple[str, ...], message: str
) -> None:
    model, _, _ = saved_classifier(tmp_path)
    args = [a for feed in feeds for a in ("--feed", feed)]
    result = run_cli("profile", str(model), *args, check=1)
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("paddle-ops: error: ") and message in line, line


COMMANDS = (
    "list",
    "show",
    "inspect",
    "draw",
    "profile",
    "plugins",
    "doctor",
    "validate",
    "stubs",
    "new",
    "help",
)


def test_help_reads_like_git_help() -> None:
    """`paddle-ops --help`: every command with one line, examples at the end; each command's
    --help (or `paddle-ops help <command>`) starts with what the command does."""
    top = run_cli("--help").stdout.splitlines()
    for name in COMMANDS:
        (line,) = [line for line in top if line.split()[:1] == [name]]
        assert len(line.split()) >= 5, line  # the command and a line about it
    assert top.index("examples:") > top.index("options:") > top.index("commands:")
    assert [line for line in top[top.index("examples:") :] if line.startswith("  paddle-ops ")]
    for name in COMMANDS:
        own = run_cli(name, "--help").stdout
        assert own == run_cli("help", name).stdout
        assert own.startswith(f"usage: paddle-ops {name} ")
        described = own.split("\n\n")[1:3]  # the paragraphs between usage and options
        assert not any(p.startswith("options:") for p in described), own
        assert len(" ".join(described).split()) >= 10, own
        assert "\nexamples:\n  paddle-ops " in own
    bare = run_cli(check=2)  # no command: the overview, as a usage error
    assert bare.stdout == "" and "commands:" in bare.stderr and "examples:" in bare.stderr


def test_version() -> None:
    assert run_cli("--version").stdout.strip() == "paddle-core 0.1.0"


def test_no_plugins_message() -> None:
    result = run_cli("plugins", env={"PADDLE_CORE_NO_PLUGINS": "1"})
    assert "PADDLE_CORE_NO_PLUGINS" in result.stdout


def test_test_plugins_stay_out_of_the_environment_the_tests_run_in() -> None:
    """`./dev test` runs in the user's .venv: a test plugin installed there would show up in
    their `paddle-ops list`. The tests install theirs into a directory of the test run."""
    listed = json.loads(run_cli("list", "--json", env={"PYTHONPATH": ""}).stdout)
    test_plugins = {
        tomllib.loads(p.read_text())["project"]["name"]
        for p in (ROOT / "tests" / "packages").glob("*/pyproject.toml")
    }
    assert {row["distribution"] for row in listed["ops"]}.isdisjoint(test_plugins)
    assert not [row["op"] for row in listed["ops"] if row["op"].startswith("toy_")]
