"""What ``paddle-ops --help`` and each command's ``--help`` say (the parser is in cli.py)."""

from __future__ import annotations

# Each command: its line in `paddle-ops --help`, the paragraph its own --help starts with, and
# examples (command, what it does).
COMMANDS: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "list": (
        "list every op: plugin, version, devices, dtypes, gradient",
        "One line per op of the installed plugins. Reads the plugin index only (no plugin code "
        "is imported), so it is fast. The dtypes column names whole groups: all, numbers "
        "(all but bool), floats (float16, bfloat16, float32, float64), ints (int8 ... uint64); "
        "--json lists each dtype. The grad column says yes (a grad rule), zero (constant "
        "in its inputs) or - (not differentiable); (unavailable) marks ops that cannot run: "
        "their plugin is broken (`paddle-ops plugins` says why), or their kernels are missing "
        "from its compiled module (a line after the table says which).",
        [
            ("paddle-ops list --plugin math", "the ops of one plugin (or distribution)"),
            ("paddle-ops list --device cuda", "the ops with a CUDA kernel"),
            ("paddle-ops list --onnx", "the ONNX ops mapped, with their opsets and ops"),
            ("paddle-ops list --json", "the same as data, for scripts"),
        ],
    ),
    "show": (
        "show one op: comment, inputs, outputs, attrs, kernels",
        "Everything an op declares: its signature in Python, comment, inputs and outputs, "
        "attributes (type, default, range, choices), kernels per device and dtype, shape and "
        "grad rules, and the plugin that provides it.",
        [("paddle-ops show matmul", "one op"), ("paddle-ops show conv2d --json", "as data")],
    ),
    "inspect": (
        "show what a saved program uses: its ops and the packages that provide them",
        "Loads a saved program (a ProgramDesc file, text format for .pbtxt, JSON for .json) as "
        "pc.load_program does: ops that no loaded plugin provides fail it, each named with the "
        "command that installs its package (exit status 1). Then lists its ops by the plugin "
        "that provided them when the program was saved (distribution and version), and the "
        "pip requirements that installing those takes elsewhere.",
        [
            ("paddle-ops inspect model.pb", "its ops and their providers"),
            ("paddle-ops inspect model.pb --json", "the same as data (requires: pip lines)"),
        ],
    ),
    "onnx": (
        "check or convert an ONNX model through the plugins' mappings",
        "check lists every ONNX op a model uses that no installed plugin maps, each with its "
        "opset and nodes (exit status 1 if there is one); `paddle-ops list --onnx` shows what "
        "is mapped. convert imports the model (pc.onnx.load) and saves it as an inference "
        "model directory (pc.io.load_inference_model reads it back).",
        [
            ("paddle-ops onnx check model.onnx", "what would keep it from importing"),
            ("paddle-ops onnx convert model.onnx -o model", "a program and its values"),
        ],
    ),
    "draw": (
        "draw a saved program as SVG, PNG or Graphviz DOT",
        "Reads a saved program (a ProgramDesc file, text format for .pbtxt, JSON for .json) and "
        "draws it: each op a box with its type and the attrs that differ from their defaults, "
        "each variable a node with its dtype and shape, parameters as yellow cylinders, each "
        "sub-block (the body of a while_block, the branches of a cond_block) a cluster beside "
        "the op holding it. The suffix of --output gives the format: .svg, .png, or .dot / .gv "
        "(Graphviz's text, which needs no renderer); - prints the DOT text. Ops that no "
        "installed plugin provides are drawn too, with all their attrs. The same program "
        "always gives the same file.",
        [
            ("paddle-ops draw model.pb", "writes model.svg beside it"),
            ("paddle-ops draw model.pb -o model.png", "a picture"),
            ("paddle-ops draw model.pb -o -", "the DOT text, for Graphviz's own tools"),
        ],
    ),
    "launch": (
        "run a script on N processes, for data-parallel training",
        "Starts N processes of the script through MPI's mpiexec (the environment's own, which "
        'pip install "paddle-ops-dist[mpi]" brings, else the one on PATH); each learns its rank '
        "and the number of processes from pc.distributed. On several machines give a hostfile "
        "(one host per line, `host:slots` for several processes on one); under Slurm, run "
        "`srun -n N python train.py` instead (MPI reads Slurm's allocation). The exit status "
        "is the job's: non-zero when any rank failed, which ends every rank.",
        [
            ("paddle-ops launch -n 4 train.py --epochs 10", "four processes on this machine"),
            ("paddle-ops launch -n 16 --hostfile hosts train.py", "on the machines of hosts"),
        ],
    ),
    "profile": (
        "time each op of a saved model: a table by op type and by op, a Chrome trace",
        "Loads a saved inference model (its directory, as pc.io.load_inference_model reads it) "
        "or a saved program (then it fetches the values its ops compute that no op reads), "
        "runs it once to warm up, then --runs times under pc.profiler: each op's time, its "
        "kernel and the copies around it, taken in the compiled run loop. Prints the totals "
        "by op type and by op (its index in the program, type and outputs), largest first: "
        "calls, total, mean and share of the ops' time; then what the plan holds "
        "(PreparedProgram.memory: its arena, the kernels' workspaces, fetched and persistable "
        "values). --trace writes the runs as Trace "
        "Event JSON, which chrome://tracing and https://ui.perfetto.dev show as a timeline. "
        "Each input is given as a .npy file (np.save).",
        [
            ("paddle-ops profile model --feed image=x.npy", "10 timed runs of an inference model"),
            ("paddle-ops profile model --feed image=x.npy --trace t.json", "and a Chrome trace"),
            ("paddle-ops profile prog.pb --feed x=x.npy --runs 100", "a saved program, 100 runs"),
            ("paddle-ops profile model --feed image=x.npy --json", "the totals as data"),
        ],
    ),
    "plugins": (
        "list plugins and whether each loads (imports their code)",
        "One line per installed plugin: distribution, version, entry point, number of ops, and "
        "ok, disabled (and by which setting), broken (and why) or partial (some kernels are "
        "missing from its compiled module: the ops using them are unavailable, the others "
        "run). Imports each plugin's code to check it; exit status 1 when a plugin is broken "
        "or partial.",
        [("paddle-ops plugins", "which plugins are installed, and their state")],
    ),
    "doctor": (
        "find broken plugins, conflicts, missing kernels, settings naming nothing",
        "Checks every plugin for real (imports its rules, kernels and hooks), then reports "
        "problems (exit status 1): broken plugins, conflicts no preference settles, ops without "
        "kernels, a stale plugin index; and warnings: settings that name nothing, preferences "
        "nobody can honour.",
        [("paddle-ops doctor", "what is wrong, if anything"), ("paddle-ops doctor --json", "")],
    ),
    "validate": (
        "check a plugin project or installed distribution before publishing it",
        "Runs every check the core makes when it loads a plugin, at once and strictly: the "
        "manifest parses and passes the manifest checks (attr defaults within their ranges "
        "and choices, finite range bounds); each declared native kernel is exported by the "
        "built module and each exported kernel is declared; the module's kernel ABI and "
        "struct layout match the installed paddle-core's; the rules and Python kernels the "
        "manifest names import and are callable. One line per problem (exit status 1); "
        "warnings, such as third-party op types not starting with the plugin's name and an "
        "underscore, do not change the exit status. For a project directory the manifest is "
        "the project's, and the compiled module and rules are those of the installed "
        "distribution of the project's name: run `pip install .` first.",
        [
            ("paddle-ops validate .", "the project here (after `pip install .`)"),
            ("paddle-ops validate paddle-ops-math", "an installed distribution"),
            ("paddle-ops validate . --json", "the same as data, for scripts"),
        ],
    ),
    "stubs": (
        "write a .pyi so editors complete paddle_core.ops functions",
        "Writes type stubs for the generated API (paddle_core/ops.pyi, beside the installed "
        "package) from the installed plugins: editors then complete pc.ops.<op> with its "
        "signature and docstring. Run it again after installing or removing plugins.",
        [("paddle-ops stubs", ""), ("paddle-ops stubs -o typings/paddle_core/ops.pyi", "")],
    ),
    "new": (
        "write a new op package: manifest, C++ (and CUDA) kernels, tests",
        "Writes a third-party op package NAME into ./NAME (or --dir): pyproject.toml, "
        "CMakeLists.txt, a manifest declaring one op (<plugin>_cos, an attr with default and "
        "range, shape and grad rules), its CPU kernels and gradient, with --cuda its CUDA "
        "kernels, tests through paddle_core.testing.check_op, and a README. It builds with a "
        "plain `pip install .` and passes its tests as written; then replace the op with yours.",
        [
            ("paddle-ops new my-ops", "the package my-ops (import my_ops, ops my_ops_*)"),
            ("paddle-ops new my-ops --cuda", "with CUDA kernels, built where nvcc is found"),
        ],
    ),
    "help": (
        "show the help of a command",
        "The same as `paddle-ops <command> --help`.",
        [("paddle-ops help list", "")],
    ),
}

OVERVIEW = """\
Inspect the ops that installed paddle-core plugins provide, and the saved programs using them.

commands:
{commands}
"""

EXAMPLES = """\
examples:
  paddle-ops list                          every op, one line each
  paddle-ops show scale                    one op: signature, attrs, kernels
  paddle-ops inspect model.pb              the ops a saved program uses, and their packages
  paddle-ops draw model.pb                 a saved program drawn as model.svg
  paddle-ops profile model --feed x=x.npy  each op's time in a saved model's runs
  paddle-ops doctor                        what is wrong with the installed plugins, if anything
  paddle-ops validate .                    check the plugin project here (after `pip install .`)
  paddle-ops list --plugin nn --json       one plugin's ops, as data

`paddle-ops <command> --help` describes one command. Exit status: 0 on success, 1 with a
one-line reason on stderr when the request fails, 2 for usage errors. Settings
(PADDLE_CORE_PLUGINS, PADDLE_CORE_DISABLE, ...) are described in
docs/writing-op-plugins.md.
"""
