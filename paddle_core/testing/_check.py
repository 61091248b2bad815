"""``check_op``: every check an op package's tests need, in one call, failures collected."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._src.base.device import Device
from .._src.base.dtypes import DTYPES, FLOATING, canonical, numpy_dtype
from .._src.base.errors import AttrError, KernelRuntimeError, PaddleCoreError
from .._src.graph.program import Program
from .._src.plugins import devices as D
from .._src.plugins.registry import OpInfo, get_registry
from .._src.run.executor import Executor
from .._src.run.scope import Scope
from .._src.spec import attrs as A
from .._src.spec import manifest as M
from .._version import __version__
from ..proto import framework_pb2 as pb
from ._run import build, grad_problems, lower_precision_grad_problems, mismatch

# (rtol, atol) of the comparison with the reference, per dtype of the run. The reference sees
# the very inputs the kernel saw (rounded to the dtype), in float64, so these bound the op's
# own error: the rounding of its result and what its arithmetic adds in that dtype.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-3),  # 11-bit significand: half an ulp is 4.9e-4
    "bfloat16": (5e-2, 1e-2),  # 8-bit significand: half an ulp is 3.9e-3
    "float32": (1e-5, 1e-5),  # ~1e-5 relative: a few ulps, sums of a few hundred terms
    "float64": (1e-10, 1e-12),  # tight, but not bit-exact (libm and summation order differ)
}
# The gradient check: (eps, rtol, atol) of central finite differences, by the dtype it runs in.
GRAD_TOLERANCES: dict[str, tuple[float, float, float]] = {
    "float64": (1e-6, 1e-5, 1e-8),
    "float32": (1e-3, 1e-2, 1e-2),  # only where float64 is not tested: coarse, but catches 2x
}
# Gradients in these dtypes are compared with float64's (within TOLERANCES), not with finite
# differences of their own.
HALF_GRADS = ("float16", "bfloat16")
CHECKS = ("manifest", "run", "shape rule", "reference", "grad", "save/load", "attrs")
Run = tuple[Device, str]  # (device, dtype)


class _Report:
    """The failures of one check_op call: (check, device, dtype, what went wrong)."""

    def __init__(self, op: str) -> None:
        self.op = op
        self.failures: list[tuple[str, str, str, str]] = []

    def fail(self, check: str, problem: str, device: Device | None = None, dtype: str = "") -> None:
        self.failures.append((check, str(device or ""), dtype, problem))

    def raise_if_failed(self) -> None:
        if self.failures:
            raise self.error()

    def error(self) -> AssertionError:
        lines = [
            f"check_op({self.op!r}): {len(self.failures)} failed "
            f"({', '.join(sorted({f[0] for f in self.failures}, key=CHECKS.index))})"
        ]
        for check, device, dtype, problem in self.failures:
            where = " ".join(filter(None, [device, dtype]))
            lines.append(f"  [{check}] {where + ': ' if where else ''}{problem}")
        return AssertionError("\n".join(lines))


def check_op(
    op_type: str,
    inputs: dict[str, Any],
    attrs: dict[str, Any] | None = None,
    *,
    reference: Callable[..., Any] | None = None,
    grad: bool = True,
    devices: Sequence[Any] | None = None,
    dtypes: Sequence[Any] | None = None,
) -> None:
    """Check op ``op_type`` on ``inputs`` (slot -> array, or list of arrays for a duplicable
    slot) and ``attrs``; raise AssertionError listing every failed check.

    The checks, named so in the message: ``manifest`` (the op exists, its plugin's manifest
    passes the core's checks, its rules resolve), ``run`` (the kernel runs), ``shape rule`` (the
    shapes and dtypes inferred when the op is appended are those the kernel returns),
    ``reference`` (results match ``reference`` within ``TOLERANCES``), ``grad`` (gradients match
    finite differences), ``save/load`` (a saved and reloaded program gives the same results)
    and ``attrs`` (a value just outside each declared range or choice list is refused with an
    AttrError). See the module docstring for defaults and tolerances.
    """
    report = _Report(op_type)
    attrs = dict(attrs or {})
    try:
        info = get_registry().op(op_type)
    except PaddleCoreError as e:
        report.fail("manifest", str(e))
        raise report.error() from None
    if not _check_manifest(report, info):
        raise report.error()
    arrays = {slot: _arrays(value) for slot, value in inputs.items() if value is not None}
    runs = _runs(report, info, arrays, devices, dtypes)
    results: dict[Run, dict[str, list[np.ndarray]]] = {}
    for device, dtype in runs:
        cast = _cast(arrays, dtype)
        got = _run_checked(report, op_type, cast, attrs, device, dtype)
        if got is not None:
            results[(device, dtype)] = got
            _check_reference(report, info, reference, cast, attrs, got, device, dtype, results)
    if grad:
        _check_grad(report, info, arrays, attrs, list(results))  # where the op ran
    for device in dict.fromkeys(d for d, _ in results):
        dtype = next(t for d, t in results if d == device)
        _check_save_load(report, op_type, _cast(arrays, dtype), attrs, device, dtype)
    _check_attrs(report, info, arrays, attrs)
    report.raise_if_failed()


# -- 1. manifest ---------------------------------------------------------------------------


def _check_manifest(report: _Report, info: OpInfo) -> bool:
    """The core's manifest checks on the op's plugin, problems recorded against the plugin,
    and the op's rules resolving; False when nothing else can be checked."""
    plugin = info.plugin
    manifest = pb.PluginManifest()
    manifest.CopyFrom(plugin.manifest())  # (check fills in fields: leave the registry's alone)
    problems, _ = M.check(
        manifest, core_version=__version__, in_process=plugin.namespace is not None
    )
    op = repr(info.type)
    mine = (f"op {op}", f"kernels for {op}", f"kernel pack for {op}")
    others = ("op ", "an op", "kernels for ", "kernel pack for ")
    problems = [p for p in problems if p.startswith(mine) or not p.startswith(others)]
    problems += [p for p in plugin.problems if p not in problems]
    for problem in problems:
        report.fail("manifest", f"{plugin.label}: {problem}")
    usable = True
    for what, resolve in (("shape rule", info.shape_rule), ("grad rule", info.grad_rule)):
        try:
            resolve()
        except PaddleCoreError as e:
            report.fail("manifest", f"its {what} does not resolve: {e}")
            usable = usable and what != "shape rule"
    return usable


# -- which runs ----------------------------------------------------------------------------


def _arrays(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [np.asarray(v) for v in value]
    return np.asarray(value)


def _kernel_dtype(info: OpInfo, arrays: dict[str, Any]) -> str | None:
    """The dtype that selects the op's kernel for these inputs, as given."""
    slot = info.signature().selecting_input(arrays)
    if slot is None:
        return None
    value = arrays[slot]
    first = value[0] if isinstance(value, list) else value
    return first.dtype.name if first is not None else None


def _runs(
    report: _Report,
    info: OpInfo,
    arrays: dict[str, Any],
    devices: Sequence[Any] | None,
    dtypes: Sequence[Any] | None,
) -> list[Run]:
    """(device, dtype) pairs to run: every available device with kernels for the op (or those
    asked for) times the floating dtypes its kernels declare there (or those asked for)."""
    if devices is None:
        chosen_devices = [
            cls(0)
            for name, cls in D.device_types().items()
            if info.dtypes_for(name) and cls.is_available(0)
        ]
    else:
        chosen_devices = []
        for spec in devices:
            try:
                device = D.get_device(spec)
                chosen_devices += [device] if device not in chosen_devices else []
            except PaddleCoreError as e:
                report.fail("run", f"{e} (leave devices unset to test the available ones)")
    wanted = None if dtypes is None else [canonical(d) for d in dtypes]
    floating_inputs = any(_is_floating(a) for a in _flat(arrays))
    given = _kernel_dtype(info, arrays)
    runs = []
    for device in chosen_devices:
        declared = info.dtypes_for(device.type)
        if not declared:
            report.fail("run", f"op {info.type!r} has no kernel on this device", device)
            continue
        if wanted is None:
            chosen = [d for d in declared if d in FLOATING and floating_inputs and _numpy_has(d)]
            # Most precise first: without a reference, the first run is the others' reference.
            chosen.sort(key=_PRECISION.index)
            chosen = chosen or [given or "as given"]  # no floating inputs: run them as they are
        else:
            chosen = [d for d in wanted if d in declared]
        runs += [(device, d) for d in chosen]
    if wanted is not None:
        for dtype in wanted:
            if not any(d == dtype for _, d in runs):
                report.fail("run", f"no device tested declares a kernel for {dtype}", None, dtype)
            elif not _numpy_has(dtype):
                report.fail("run", f"NumPy cannot hold {dtype} (install ml_dtypes)", None, dtype)
                runs = [r for r in runs if r[1] != dtype]
    if not runs and not report.failures:
        declared = ", ".join(info.devices) or "none"
        report.fail(
            "run", f"no device here has a kernel for it (it declares kernels for: {declared})"
        )
    return runs


_PRECISION = ("float64", "float32", "float16", "bfloat16")


def _numpy_has(dtype: str) -> bool:
    try:
        numpy_dtype(dtype)
    except TypeError:  # bfloat16 without ml_dtypes
        return False
    return True


def _flat(arrays: dict[str, Any]) -> list[np.ndarray]:
    return [a for v in arrays.values() for a in (v if isinstance(v, list) else [v])]


def _is_floating(array: np.ndarray) -> bool:
    return array.dtype.name in FLOATING


def _cast(arrays: dict[str, Any], dtype: str) -> dict[str, Any]:
    """Inputs of floating dtype converted to ``dtype`` (the others as they are)."""

    def one(a: np.ndarray) -> np.ndarray:
        return a.astype(numpy_dtype(dtype)) if _is_floating(a) and dtype in DTYPES else a

    return {s: [one(a) for a in v] if isinstance(v, list) else one(v) for s, v in arrays.items()}


# -- 2. shape rule and 3. reference --------------------------------------------------------


def _run_checked(
    report: _Report, op_type: str, arrays: dict[str, Any], attrs: dict, device: Device, dtype: str
) -> dict[str, list[np.ndarray]] | None:
    """Run the op; check what the kernel returned against the shapes and dtypes inferred when
    the op was appended. None when it did not run."""
    try:
        prog, _, outputs, feed = build(op_type, arrays, attrs)
    except PaddleCoreError as e:
        report.fail("run", f"appending the op failed: {type(e).__name__}: {e}", device, dtype)
        return None
    names = [v.name for vs in outputs.values() for v in vs]
    try:
        values = Executor(device).run(prog, feed=feed, fetch_list=names, scope=Scope())
    except KernelRuntimeError as e:
        # A Python kernel's result unlike its declared outputs: the executor refuses it.
        check = "shape rule" if "but the op declares" in str(e) else "run"
        report.fail(check, f"{type(e).__name__}: {e}", device, dtype)
        return None
    except PaddleCoreError as e:
        report.fail("run", f"{type(e).__name__}: {e}", device, dtype)
        return None
    got = dict(zip(names, values))
    result: dict[str, list[np.ndarray]] = {}
    for slot, variables in outputs.items():
        result[slot] = [got[v.name] for v in variables]
        for var, value in zip(variables, result[slot]):
            declared = [d if d is not None and d >= 0 else None for d in var.shape]
            fits = len(declared) == value.ndim and all(
                d is None or d == g for d, g in zip(declared, value.shape)
            )
            if not fits or value.dtype.name != var.dtype:
                report.fail(
                    "shape rule",
                    f"output {slot!r}: the shape rule declares {var.dtype}{declared}, "
                    f"the kernel returned {value.dtype.name}{list(value.shape)}",
                    device,
                    dtype,
                )
    return result


def _check_reference(
    report: _Report,
    info: OpInfo,
    reference: Callable[..., Any] | None,
    arrays: dict[str, Any],
    attrs: dict,
    got: dict[str, list[np.ndarray]],
    device: Device,
    dtype: str,
    results: dict[Run, dict[str, list[np.ndarray]]],
) -> None:
    """Compare with ``reference`` (called on float64 copies of the inputs the kernel saw), or
    without one with the first run (the most precise dtype of the first device)."""
    if reference is None:
        first = next(iter(results))
        if first == (device, dtype):
            return
        expected = {s: [v.astype(np.float64) for v in vs] for s, vs in results[first].items()}
        source = f"the {first[0]} {first[1]} run"
    else:
        try:
            expected = _expected(info, reference, arrays, attrs, got)
        except Exception as e:  # the user's reference: report whatever it raises
            problem = f"calling the reference raised {type(e).__name__}: {e}"
            report.fail("reference", problem, device, dtype)
            return
        source = "the reference"
    rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0))
    for slot, wanted in expected.items():
        produced = got.get(slot)
        if produced is None:
            problem = f"{source} gives output {slot!r}, which the op did not"
            report.fail("reference", problem, device, dtype)
            continue
        if len(wanted) != len(produced):
            report.fail(
                "reference",
                f"output {slot!r}: {source} gives {len(wanted)} arrays, the op {len(produced)}",
                device,
                dtype,
            )
            continue
        for k, (value, want) in enumerate(zip(produced, wanted)):
            found = mismatch(value, want, rtol, atol)
            if found:
                name = f"{slot!r}" if len(produced) == 1 else f"{slot!r}[{k}]"
                report.fail("reference", f"output {name} vs {source}: {found}", device, dtype)


def _expected(
    info: OpInfo,
    reference: Callable[..., Any],
    arrays: dict[str, Any],
    attrs: dict,
    got: dict[str, list[np.ndarray]],
) -> dict[str, list[np.ndarray]]:
    """The reference's outputs by slot: it gets the inputs in slot order (None for an omitted
    dispensable input before a given one), floating ones as float64, and the attrs given."""

    def up(a: np.ndarray) -> np.ndarray:
        return a.astype(np.float64) if _is_floating(a) else a.copy()

    args = [arrays.get(s.name) for s in info.proto.inputs]
    while args and args[-1] is None:
        args.pop()
    args = [
        None if a is None else [up(x) for x in a] if isinstance(a, list) else up(a) for a in args
    ]
    out = reference(*args, **attrs)
    slots = [s.name for s in info.proto.outputs if s.name in got]
    if isinstance(out, dict):
        unknown = [s for s in out if s not in slots]
        if unknown:
            raise ValueError(f"it returned outputs the op does not have: {', '.join(unknown)}")
        pairs = list(out.items())
    elif isinstance(out, tuple):
        if len(out) > len(slots):
            raise ValueError(f"it returned {len(out)} outputs, the op has {len(slots)}")
        pairs = list(zip(slots, out))
    else:
        pairs = [(slots[0], out)]
    duplicable = {s.name for s in info.proto.outputs if s.duplicable}
    return {
        s: [np.asarray(v) for v in value] if s in duplicable else [np.asarray(value)]
        for s, value in pairs
    }


# -- 4. gradients --------------------------------------------------------------------------


def _check_grad(
    report: _Report, info: OpInfo, arrays: dict[str, Any], attrs: dict, runs: list[Run]
) -> None:
    """Gradients against finite differences, on each device, in the most precise floating
    dtype tested there (float64 wherever the op declares it); float16 and bfloat16 gradients,
    where tested beside float64, against float64's within TOLERANCES."""
    floating = [s for s, v in arrays.items() if any(_is_floating(a) for a in _flat({s: v}))]
    if not floating or info.grad == "zero":
        return
    if info.grad == "none":
        report.fail("grad", "declares no grad rule; pass grad=False if it is not differentiable")
        return
    for device in dict.fromkeys(d for d, _ in runs):
        tested = [t for d, t in runs if d == device]
        dtype = next((t for t in GRAD_TOLERANCES if t in tested), None)
        if dtype is None:
            continue
        eps, rtol, atol = GRAD_TOLERANCES[dtype]
        common = {"wrt": floating, "seed": 0, "device": device}
        checked = _report_grads(
            report,
            (device, dtype),
            grad_problems,
            info.type,
            _cast(arrays, dtype),
            attrs,
            output=None,
            eps=eps,
            rtol=rtol,
            atol=atol,
            **common,
        )
        if not checked or dtype != "float64":
            continue
        # The 16-bit floats: their gradients against float64's, which finite differences just
        # vouched for, from the same values (too coarse for finite differences of their own).
        for low in (t for t in tested if t in HALF_GRADS):
            rtol, atol = TOLERANCES[low]
            _report_grads(
                report,
                (device, low),
                lower_precision_grad_problems,
                info.type,
                _cast(arrays, low),
                attrs,
                dtype=low,
                rtol=rtol,
                atol=atol,
                **common,
            )


def _report_grads(
    report: _Report, run: Run, check: Callable[..., list[str]], *args, **kwargs
) -> bool:
    """Run one gradient check and record its problems (or the error computing them) against
    ``run`` (device, dtype); True when there were none."""
    try:
        problems = check(*args, **kwargs)
    except PaddleCoreError as e:
        problems = [f"computing the gradients failed: {type(e).__name__}: {e}"]
    for problem in problems:
        report.fail("grad", problem, *run)
    return not problems


# -- 5. save/load --------------------------------------------------------------------------


def _check_save_load(
    report: _Report, op_type: str, arrays: dict[str, Any], attrs: dict, device: Device, dtype: str
) -> None:
    """Serialise the program, parse it back, run both: the same bytes and the same results."""
    prog, _, outputs, feed = build(op_type, arrays, attrs)
    names = [v.name for vs in outputs.values() for v in vs]
    try:
        data = prog.serialize()
        loaded = Program.parse(data)
        again = loaded.serialize()
        # (Fresh scopes: a random op draws the same numbers in both runs.)
        before = Executor(device).run(prog, feed=feed, fetch_list=names, scope=Scope())
        after = Executor(device).run(loaded, feed=feed, fetch_list=names, scope=Scope())
    except PaddleCoreError as e:
        report.fail("save/load", f"{type(e).__name__}: {e}", device, dtype)
        return
    if again != data:
        report.fail("save/load", "the reloaded program serialises differently", device, dtype)
    for name, a, b in zip(names, before, after):
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
            found = mismatch(b, a, 0.0, 0.0) or f"{b.dtype}{list(b.shape)} vs {a.dtype}"
            report.fail("save/load", f"{name!r} after reloading: {found}", device, dtype)


# -- 6. attrs ------------------------------------------------------------------------------


def _check_attrs(report: _Report, info: OpInfo, arrays: dict[str, Any], attrs: dict) -> None:
    """For each attr with a declared range or choices, values just outside are refused."""
    for ap in info.proto.attrs:
        for bad in outside_values(ap):
            shown = f"attr {ap.name!r} = {A.render(bad)} ({_declared(ap)})"
            try:
                build(info.type, arrays, {**attrs, ap.name: bad})
            except AttrError as e:
                if e.attr != ap.name:
                    report.fail("attrs", f"{shown} was refused as a bad attr {e.attr!r}: {e}")
            except PaddleCoreError as e:
                report.fail("attrs", f"{shown} raised {type(e).__name__}, not AttrError: {e}")
            else:
                report.fail("attrs", f"{shown} was accepted")


def _declared(ap: pb.AttrProto) -> str:
    parts = []
    if ap.HasField("min") or ap.HasField("max"):
        parts.append(f"declared range {A.describe_range(ap)}")
    if ap.HasField("choices"):
        choices = getattr(ap.choices, A.CHOICES_FIELD[ap.type])
        parts.append(f"choices {', '.join(A.render(c) for c in choices)}")
    return "; ".join(parts)


def outside_values(ap: pb.AttrProto) -> list[Any]:
    """Values of ``ap``'s type just outside its declared range, and one not among its
    choices (a list attr gets one-element lists of them); empty for an unconstrained attr."""
    scalar = A.ELEMENT_TYPE.get(ap.type, ap.type)
    values: list[Any] = []
    integer = scalar in (pb.INT, pb.LONG)
    for side, away in (("min", -math.inf), ("max", math.inf)):
        if not ap.HasField(side):
            continue
        bound = getattr(ap, side)
        if math.isinf(bound.value) and (integer or not bound.exclusive):
            continue  # nothing of the type lies beyond it
        if integer:
            step = -1 if side == "min" else 1
            edge = math.ceil(bound.value) if side == "min" else math.floor(bound.value)
            values.append(edge if bound.exclusive and edge == bound.value else edge + step)
        elif bound.exclusive:
            values.append(float(bound.value))
        else:
            values.append(math.nextafter(float(bound.value), away))
    if ap.HasField("choices"):
        allowed = list(getattr(ap.choices, A.CHOICES_FIELD[ap.type]))
        if scalar == pb.STRING:
            bad: Any = "not_" + "_or_".join(allowed)
        elif integer:
            bad = max(allowed) + 1
        else:
            bad = max(allowed) + 0.5
        values.append(bad)
    if ap.type in A.LIST_TYPES:
        values = [[v] for v in values]
    return values
