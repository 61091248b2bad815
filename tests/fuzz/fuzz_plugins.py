"""Fuzz plugin installation: corrupted manifests (mutated from the installed plugins' own) and
forged kernel modules (wrong ABI, wrong or garbled layout, bad capsules, missing and extra
symbols, garbage tables, forged pc_kernel structs, modules and rules that raise), each
installed as a plugin (a dist-info with an entry point, as pip leaves it) and then discovered,
listed, checked, documented and run in this process.

The property: every problem is recorded against the plugin (its status and problems) or raised
as an error of the core's hierarchy; never a raw Python exception, a crash or a hang; and the
other plugins keep working: after each case math's `add` still gives the right answer. Each
case is written to ``--log`` before it runs, so when the process dies the log's last line is
the case that did it.

    python tests/fuzz/fuzz_plugins.py --seconds 600 --seed 1 --log fuzz.log   (a long run)

Run outside the checkout's root, so the installed paddle_core is imported. Prints one JSON
summary line; exits 1 when a case failed.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
from hostile import WARM_UP, resident_mb

INTS = ["-1", "0", "1", "2", "7", "64", "65", "2147483647", "-2147483648", "99999999999999999999"]
FLOATS = ["nan", "inf", "-inf", "1e308", "-0.0", "0.5", "1e-320"]
ENUMS = ["FLOAT32", "FLOAT64", "INT32", "INT64", "BOOL", "UINT8", "FLOAT16", "BFLOAT16", "INT8"]
ATTR_TYPES = ["INT", "FLOAT", "STRING", "BOOL", "LONG", "INTS", "FLOATS", "STRINGS", "BLOCK"]
FLAGS = ["duplicable: true", "dispensable: true", 'inplace: "x"', "duplicable: false"]
LAYOUTS = ["", "garbage", "pc_kernel:sized:8=0+4", ";;;", "x:y:z=1+2", "pc_tensor:array:abc"]
TEXTS = [None, "1", "11", "?", "+", "*", "", "1x", "11?*+", "1" * 300, "\xff"]
# Hook implementations of a forged hooks module: raising, or returning what they must not.
HOOKS = [
    "@hookimpl\ndef paddle_core_select_kernel(op, device, dtype, candidates):\n"
    "    raise ValueError('no kernel for you')\n",
    "@hookimpl(tryfirst=True)\ndef paddle_core_select_kernel(op, device, dtype, candidates):\n"
    "    return 'a kernel'\n",
    "@hookimpl(tryfirst=True)\ndef paddle_core_select_kernel(op, device, dtype, candidates):\n"
    "    raise SystemExit(5)\n",
    "@hookimpl\ndef paddle_core_device_types():\n    raise RuntimeError('devices')\n",
    "@hookimpl\ndef paddle_core_device_types():\n    return [object, 5]\n",
    "@hookimpl\ndef paddle_core_device_types():\n    return 5\n",
    "@hookimpl\ndef paddle_core_transform_program(program, device):\n    raise KeyError(1)\n",
    "@hookimpl\ndef paddle_core_transform_program(program, device):\n"
    "    program.global_block().ops.clear()\n",
    "raise ImportError('hooks')\n",
]
RULE_BODIES = [
    "raise ValueError('rule says no')",
    "return None",
    "ctx.set_output('out', (-1, 'a'), 'float32')",
    "ctx.set_output('out', (2**62, 2**62), 'float64')",
    "ctx.set_output('nope', (1,), 'float32')",
    "ctx.set_output('out', ctx.input('x').shape, 'complex128')",
    "return rule(ctx)",  # infinite recursion
    "ctx.set_output('out', ctx.input('x').shape, ctx.input('x').dtype)",
]


class PcKernel(ctypes.Structure):
    """kernel_abi.h's pc_kernel as laid out today, for forged kernel structs."""

    _fields_ = [
        ("abi_version", ctypes.c_uint32),
        ("struct_size", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("prepare", ctypes.c_void_p),
        ("run", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("inputs", ctypes.c_char_p),
        ("outputs", ctypes.c_char_p),
        ("dtypes", ctypes.POINTER(ctypes.c_int32)),
    ]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
CAPSULE = b"paddle_core.kernel"
KEEP: list = []  # forged structs and their strings stay alive as long as the process


class Fuzzer:
    def __init__(self, rng: np.random.Generator, site: Path) -> None:
        import paddle_core as pc
        from paddle_core._src.base.runtime import compiled_runtime

        self.pc, self.rng, self.site = pc, rng, site
        registry = pc.get_registry()
        self.corpus = []  # manifest texts of the installed plugins
        self.math_corpus = []  # the math plugin's: its kernels are the real ones below
        for record in registry.records:
            for f in record.manifest_files:
                self.corpus.append(Path(f).read_text(encoding="utf-8"))
                if record.name == "math":
                    self.math_corpus.append(self.corpus[-1])
        self.real = dict(compiled_runtime().kernels())  # symbol -> capsule of real kernels
        self.real_module = "paddle_core._src.base._runtime"
        try:
            math = importlib.import_module("paddle_ops_math._C")
            self.real.update(math.kernels())
            self.real_module = "paddle_ops_math._C"
        except ImportError:
            pass
        self.layout = compiled_runtime().KERNEL_LAYOUT
        self.n = 0

    def pick(self, values):
        return values[int(self.rng.integers(len(values)))]

    # -- the manifest ------------------------------------------------------------------------

    def manifest(self, prefix: str, pristine: bool) -> str:
        text = self.pick(self.math_corpus if pristine else self.corpus)
        # Op types of our own, so that the case never takes over an installed plugin's op.
        text = re.sub(r'(\btype|\bop): "(\w+)"', rf'\1: "{prefix}\2"', text)
        text = re.sub(
            r"^(rules_module|kernel_module|hooks_module|kernel_abi): .*$", "", text, flags=re.M
        )
        for _ in range(0 if pristine else self.pick([0, 0, 1, 1, 1, 2, 3])):
            text = self.mutate(text)
        return text

    def mutate(self, text: str) -> str:
        """``text`` with one change: most keep it parseable and change what it declares."""
        rng, kind = self.rng, self.pick([0, 1, 2, 2, 3, 3, 4, 4, 4, 5, 5, 6, 6, 7, 8])
        if not text:
            return text
        at = int(rng.integers(len(text)))
        if kind == 0:  # a random character
            return text[:at] + chr(int(rng.integers(32, 127))) + text[at + 1 :]
        if kind == 1:  # cut a span, or the end
            return text[:at] + text[at + int(rng.integers(1, 80)) :]
        if kind == 2:  # a number replaced
            return re.sub(r"-?\d+(\.\d+)?", lambda m: self.pick(INTS + FLOATS), text, count=1)
        if kind == 3:  # a dtype or an attr type replaced
            words = ENUMS if rng.random() < 0.5 else ATTR_TYPES
            return re.sub(r"\b(" + "|".join(words) + r")\b", self.pick(words), text, count=1)
        if kind == 4:  # a slot flag added to a slot
            return re.sub(r"(inputs|outputs) \{", rf"\1 {{ {self.pick(FLAGS)}", text, count=1)
        if kind == 5:  # a block removed
            return re.sub(r"(inputs|outputs|attrs|kernels) \{[^{}]*\}", "", text, count=1)
        if kind == 6:  # another kernel symbol
            return re.sub(r'native: "\w+"', f'native: "{self.pick(sorted(self.real))}"', text)
        if kind == 7:  # a line repeated
            lines = text.splitlines()
            k = int(rng.integers(len(lines)))
            return "\n".join(lines[: k + 1] + lines[k:])
        return text.replace("true", "false") if rng.random() < 0.5 else text.replace('"', "'", 1)

    # -- the kernel module -------------------------------------------------------------------

    def forged_kernel(self, symbol: str, real) -> object:
        """A capsule of a pc_kernel with fields drawn at random around those of ``real``."""
        rng = self.rng
        base = PcKernel.from_address(_capsule_pointer(real, CAPSULE))
        k = PcKernel()
        k.abi_version = self.pick([1, 1, 1, 0, 2, 0xFFFFFFFF])
        k.struct_size = self.pick([ctypes.sizeof(PcKernel)] * 3 + [0, 24, 40, 48, 4096])
        name = self.pick([symbol] * 4 + [None, "", "other", "x" * 500])
        k.name = name.encode() if name is not None else None
        if rng.random() < 0.85:  # one real kernel's functions, or no run at all
            k.prepare, k.run, k.release = base.prepare, base.run, base.release
        for field, value in (("inputs", base.inputs), ("outputs", base.outputs)):
            text = value.decode() if value and rng.random() < 0.5 else self.pick(TEXTS)
            setattr(k, field, text.encode("utf-8", "surrogateescape") if text is not None else None)
        if rng.random() < 0.3:
            dtypes = None
        elif rng.random() < 0.2:  # a list that does not end within the core's bound
            dtypes = (ctypes.c_int32 * 400)(*([9] * 400))
        else:
            values = [int(self.pick([1, 4, 5, 9, 10, 99, -3])) for _ in range(int(rng.integers(4)))]
            dtypes = (ctypes.c_int32 * (len(values) + 1))(*values, 0)
        k.dtypes = ctypes.cast(dtypes, ctypes.POINTER(ctypes.c_int32)) if dtypes else None
        KEEP.append((k, dtypes))
        return _capsule_new(ctypes.addressof(k), CAPSULE, None)

    def kernel_module(self, symbols: list[str]) -> tuple[str, dict]:
        """Python source of a stand-in for a compiled module, and the objects it exports."""
        rng = self.rng
        if rng.random() < 0.15:
            raised = ["ImportError('no')", "RuntimeError('boom')", "SystemExit(3)", "KeyError(1)"]
            return f"raise {self.pick(raised)}\n", {}
        abi = self.pick(["1"] * 6 + ["0", "2", "'1'", "None", "2**70", None])
        layout = self.pick([repr(self.layout)] * 5 + [repr(s) for s in LAYOUTS] + ["b'x'", None])
        if layout == repr(self.layout) and rng.random() < 0.2:  # one size or offset changed
            at = self.pick([m.start() for m in re.finditer(r"\d+", self.layout)])
            layout = repr(self.layout[:at] + "9" + self.layout[at:])
        table = {}
        for symbol in symbols:
            if rng.random() < 0.1:
                continue  # a missing symbol
            real = self.real.get(symbol) or self.pick(list(self.real.values()))
            roll = rng.random()
            if roll < 0.5:
                table[symbol] = real
            elif roll < 0.8:
                table[symbol] = self.forged_kernel(symbol, real)
            elif roll < 0.9:  # a capsule of another kind
                table[symbol] = _capsule_new(ctypes.addressof(PcKernel()), b"other", None)
            else:
                table[symbol] = self.pick([1, "capsule", None, b"\x00"])
        if rng.random() < 0.2:  # an extra symbol
            table["extra_" + str(self.n)] = self.pick(list(self.real.values()))
        kernels = self.pick(
            ["return dict(TABLE)"] * 6
            + [
                "return list(TABLE)",
                "return None",
                "raise RuntimeError('table')",
                "return {1: 2}",
                "return {'a': object()}",
            ]
        )
        source = "TABLE = {}\n"
        if abi is not None:
            source += f"KERNEL_ABI_VERSION = {abi}\n"
        if layout is not None:
            source += f"KERNEL_LAYOUT = {layout}\n"
        source += "def kernels():\n    " + kernels + "\n"
        if rng.random() < 0.1:
            source += "kernels = 'not a function'\n"
        return source, table

    # -- one case ----------------------------------------------------------------------------

    def case(self) -> dict:
        self.n += 1
        package = f"fuzz_plugin_{self.n}"
        prefix = f"fz{self.n}_"
        # One case in eight is a math manifest as it is, with the real kernels and a rule that
        # behaves: a plugin that should work, so that however the draws fall, some cases reach
        # their kernels (and must not break the others).
        pristine = self.n % 8 == 0 and bool(self.math_corpus)
        text = self.manifest(prefix, pristine)
        symbols = sorted(set(re.findall(r'native: "(\w+)"', text)))
        choice = "real" if pristine else self.pick(["forged"] * 4 + ["real"] * 3 + ["none"])
        module = ""
        if choice == "real":
            module = self.real_module
        elif choice == "forged":
            module = f"{package}._kernels"
        header = f'rules_module: "{package}.rules"\n'
        if module:
            abi = 1 if pristine else self.pick([1] * 9 + [2])
            header += f'kernel_module: "{module}"\nkernel_abi: {abi}\n'
        rule = self.pick(RULE_BODIES + [RULE_BODIES[-1]] * len(RULE_BODIES))  # half behave
        hooks = self.pick(HOOKS) if self.rng.random() < 0.15 else ""
        if pristine:
            rule, hooks = RULE_BODIES[-1], ""
        if hooks:
            header += f'hooks_module: "{package}.hooks"\n'
        return {
            "package": package,
            "manifest": header + text,
            "module": choice,
            "symbols": symbols,
            "rule": rule,
            "hooks": hooks,
        }

    def install(self, case: dict) -> dict:
        package, site = case["package"], self.site
        (site / package).mkdir()
        (site / package / "__init__.py").write_text("")
        manifest = site / package / "ops.pbtxt"
        special = self.pick([None] * 30 + ["fifo", "zero", "dir"])
        if special == "fifo":  # reading it would block
            os.mkfifo(manifest)
        elif special == "zero":  # reading it would never end
            manifest.symlink_to("/dev/zero")
        elif special == "dir":
            manifest.mkdir()
        else:
            manifest.write_text(case["manifest"], encoding="utf-8")
        # Every rule the corpus names resolves to one function of the case's behaviour.
        names = set(re.findall(r'(?:shape_rule|grad_rule|python): "(\w+)"', case["manifest"]))
        rules = "".join(f"def {n}(*args, **kwargs):\n    return rule(*args)\n" for n in names)
        rules += f"def rule(ctx, *rest):\n    {case['rule']}\n"
        (site / package / "rules.py").write_text(rules)
        if case["hooks"]:
            hooks = "from paddle_core import hookimpl\n\n" + case["hooks"]
            (site / package / "hooks.py").write_text(hooks)
        exports = None
        if case["module"] == "forged":
            source, exports = self.kernel_module(case["symbols"])
            (site / package / "_kernels.py").write_text(source)
        dist = site / f"{package}-1.0.dist-info"
        dist.mkdir()
        metadata = f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n"
        if self.rng.random() < 0.05:  # damaged metadata: no name, no version
            metadata = self.pick(["", "garbage\n", "Name: \n", f"Name: {package}\n"])
        (dist / "METADATA").write_text(metadata)
        (dist / "entry_points.txt").write_text(
            f"[paddle_core.plugins]\nfz{self.n} = {package}:ops.pbtxt\n"
        )
        importlib.invalidate_caches()
        if exports is not None:  # the forged module's table: set once it is imported
            sys.modules.pop(f"{package}._kernels", None)
            module = importlib.util.module_from_spec(
                importlib.util.spec_from_file_location(
                    f"{package}._kernels", site / package / "_kernels.py"
                )
            )
            try:
                module.__spec__.loader.exec_module(module)
            except BaseException:  # it raises on import: let the core find that itself
                pass
            else:
                module.TABLE = exports
                sys.modules[module.__name__] = module
        return case

    def exercise(self, case: dict, counts: dict) -> None:
        """Discover, list, check and run the case's plugin; raises what the core raises."""
        pc = self.pc
        from paddle_core._src.plugins import doctor

        registry = pc.reload_registry()
        (record,) = [r for r in registry.records if r.name == f"fz{self.n}"]
        counts["broken" if record.errors else "discovered"] += 1
        shown = [str(record.problems), record.status, record.reason]  # `paddle-ops plugins`
        doctor.check_plugin_code(record, registry)
        shown += [str(record.problems), record.status]
        for summary in record.ops[:4]:
            op = summary["type"]
            if op not in registry or registry.op(op).plugin is not record:
                continue
            info = registry.op(op)
            shown += [info.available, info.missing_kernels(), info.dtypes]  # `paddle-ops show`
            shown.append(getattr(pc.ops, op).__doc__)  # the generated API and its docstring
            self.run_op(info, counts)

    def run_op(self, info, counts: dict) -> None:
        pc, rng = self.pc, self.rng
        prog = pc.Program()
        block = prog.global_block()
        inputs, feed = {}, {}
        dtype = self.pick(["float32", "float64", "int32"])
        for slot in info.proto.inputs:
            names = []
            for k in range(2 if slot.duplicable else 1):
                name = f"{slot.name}_{k}"
                block.create_var(name, [2, 3], dtype)
                feed[name] = rng.standard_normal((2, 3)).astype(dtype)
                names.append(name)
            inputs[slot.name] = names if slot.duplicable else names[0]
        try:
            op = block.append_op(info.type, inputs)
        except pc.PaddleCoreError:
            return
        counts["appended"] += 1
        fetch = [block.var(n) for n in op.output_names]
        try:
            pc.Executor().run(prog, feed=feed, fetch_list=fetch, scope=pc.Scope())
        except pc.PaddleCoreError:
            return
        counts["ran"] += 1

    def others_work(self) -> str | None:
        """None when math's add (another plugin's op) still runs right, else what is wrong."""
        pc = self.pc
        if "add" not in pc.get_registry():
            return None  # paddle-ops-math is not installed: nothing to check
        prog = pc.Program()
        with pc.program_guard(prog):
            out = pc.ops.add(pc.data("x", [2]), pc.data("y", [2]))
        x = np.array([1.0, 2.0], np.float32)
        (got,) = pc.Executor().run(prog, feed={"x": x, "y": x}, fetch_list=[out])
        return None if got.tolist() == [2.0, 4.0] else f"add gave {got.tolist()}"

    def remove(self, case: dict) -> None:
        from paddle_core._src.plugins import hooks

        manager = hooks.plugin_manager()  # hooks stay registered until taken out
        if manager.has_plugin(f"fz{self.n}"):
            manager.unregister(name=f"fz{self.n}")
        shutil.rmtree(self.site / case["package"], ignore_errors=True)
        shutil.rmtree(self.site / f"{case['package']}-1.0.dist-info", ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log", default="fuzz-plugins.log")
    parser.add_argument(
        "--min-cases",
        type=int,
        default=0,
        help="run at least this many cases, however long they take (each discovers every "
        "installed plugin anew: a slow machine gets few cases in a short run)",
    )
    args = parser.parse_args()
    site = Path(tempfile.mkdtemp(prefix="fuzz-plugins-"))
    os.environ.setdefault("PADDLE_CORE_CACHE_DIR", str(site / "cache"))
    sys.path.insert(0, str(site))
    fuzzer = Fuzzer(np.random.default_rng(args.seed), site)
    pc = fuzzer.pc
    counts = {
        "cases": 0,
        "discovered": 0,
        "broken": 0,
        "appended": 0,
        "ran": 0,
        "raw": 0,
        "others_broken": 0,
    }
    failures = []
    warm = 0.0
    deadline = time.monotonic() + args.seconds
    try:
        with open(args.log, "w", encoding="utf-8") as log:
            while time.monotonic() < deadline or counts["cases"] < args.min_cases:
                case = fuzzer.case()
                log.write(json.dumps(case) + "\n")
                log.flush()
                counts["cases"] += 1
                if counts["cases"] == WARM_UP:
                    warm = resident_mb()
                fuzzer.install(case)
                try:
                    fuzzer.exercise(case, counts)
                except pc.PaddleCoreError:
                    pass
                except Exception as e:  # the property's failure: a raw exception
                    counts["raw"] += 1
                    failures.append({"case": case, "raw": traceback.format_exc(limit=-3)})
                    del e
                fuzzer.remove(case)
                try:
                    problem = fuzzer.others_work()
                except Exception as e:
                    problem = f"{type(e).__name__}: {e}"
                if problem:
                    counts["others_broken"] += 1
                    failures.append({"case": case, "others": problem})
    finally:
        shutil.rmtree(site, ignore_errors=True)
    # Resident memory grown since the warm-up: what the cases kept (None: too few cases to say).
    counts["rss_growth_mb"] = round(resident_mb() - warm, 1) if warm else None
    print(json.dumps({**counts, "failures": failures[:20]}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
