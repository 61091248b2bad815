"""ONNX node cases through `pc.onnx.load`: the runner.

The `onnx` wheel builds its node test cases in memory (`collect_testcases`): a model with one
node, its inputs and its expected outputs. Each case whose ONNX op an installed plugin maps is
imported with `pc.onnx.load` and run on the CPU, compared with ONNX's tolerances and exact
dtypes. The mapping is the plugin's (its manifest's `onnx` entries); this file holds no table.
Inputs the mapping reads as constants (Reshape's shape, Slice's starts...) are made initializers
of the case's model, as exporters write them; the others are fed.

Outcomes: pass; wrong (ours differs); gap (we cannot run it; the reason is our error's first
line); n/a (only for a reason written here, per case). Where ONNX asks for more outputs than we
give, the ones we give are still compared: wrong beats gap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

import paddle_core as pc
from paddle_core._src.onnx.mappings import get_mappings

PASS, WRONG, GAP, NA = "pass", "wrong", "gap", "n/a"


class Gap(Exception):
    """A case's value our variables cannot hold (a sequence, an optional)."""


# Cases not applicable, each for a reason: a semantic choice of ours or an ONNX feature we
# deliberately do not provide. Keys are case names or name prefixes ending in '*'.
NOT_APPLICABLE: dict[str, str] = {
    "test_cumsum_2d_int32": "cumsum of int32 is int64, as in NumPy and PyTorch (scan.pbtxt)",
    "test_cumsum_1d_int32_exclusive": "cumsum of int32 is int64, as in NumPy and PyTorch",
    # A variable is one dense tensor (framework.proto's VarDesc: a dtype and a shape).
    "test_identity_sequence": "a sequence value: our variables are tensors",
    "test_identity_opt": "an optional value: our variables are tensors",
    # ONNX's expected output is one draw of NumPy's generator; ours draws its own mask.
    "test_training_dropout": "a random mask: NumPy's draw, not a property of dropout",
    "test_training_dropout_mask": "a random mask: NumPy's draw, not a property of dropout",
    "test_training_dropout_default": "a random mask: NumPy's draw, not a property of dropout",
    "test_training_dropout_default_mask": "a random mask: NumPy's draw, not a property of dropout",
}


# ---- the runner ---------------------------------------------------------------------------


@dataclass
class Outcome:
    case: str  # the ONNX case name (test_...)
    op_type: str  # its ONNX op type
    status: str  # PASS, WRONG, GAP or NA
    reason: str = ""  # why (gap, n/a) or how ours differs (wrong)


def node_cases(cases: list) -> list:
    """The single-node cases of `collect_testcases` whose ONNX op an installed plugin maps."""
    mapped = {op_type for _, op_type in get_mappings().by_op}
    return [
        c
        for c in cases
        if c.model is not None
        and len(c.model.graph.node) == 1
        and c.model.graph.node[0].op_type in mapped
    ]


def matches(key: str, name: str) -> bool:
    """A NOT_APPLICABLE key matches the case name (itself, or a prefix ending in '*')."""
    return name == key or (key.endswith("*") and name.startswith(key[:-1]))


def matches_any(key: str, names: set[str]) -> bool:
    return any(matches(key, name) for name in names)


def _not_applicable(name: str) -> str:
    return next((reason for key, reason in NOT_APPLICABLE.items() if matches(key, name)), "")


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    text = text.split(" (plugin ")[0]  # the plugin's version is no part of the reason
    return f"{type(e).__name__}: {text}"[:160]


def as_array(value: Any) -> np.ndarray:
    """A case's input or output as an array (TensorProto, NumPy scalar); Gap for a sequence
    or an optional, which our ops do not take."""
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    raise Gap(f"a {type(value).__name__} value, not a tensor")


def constant_inputs(model: onnx.ModelProto) -> set[int]:
    """Positions of the node's inputs its mapping reads as constants."""
    node = model.graph.node[0]
    version = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    mapping = get_mappings().find(node.domain, node.op_type, version)
    if mapping is None:
        return set()
    return {g.index for g in mapping.spec.inputs if g.attr or g.constant}


def as_model(case: Any, values: dict[str, np.ndarray]) -> tuple[onnx.ModelProto, dict]:
    """The case's model with its constant inputs made initializers; (model, feed)."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    node = model.graph.node[0]
    constant = {node.input[i] for i in constant_inputs(model) if i < len(node.input)}
    kept = [v for v in model.graph.input if v.name not in constant]
    for name in constant - {""}:
        model.graph.initializer.append(numpy_helper.from_array(values[name], name))
    del model.graph.input[:]
    model.graph.input.extend(kept)
    return model, {v.name: values[v.name] for v in kept}


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    """'' when got matches want (dtype, shape, values within tolerance), else how it differs."""
    got = np.asarray(got)
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype.kind in "fc" or want.dtype.name == "bfloat16":  # (ml_dtypes': kind "V")
        f64 = np.float64
        ok = np.isclose(got.astype(f64), want.astype(f64), rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = got == want
    if ok.all():
        return ""
    i = np.argwhere(~ok)[0]
    return f"{(~ok).sum()} of {ok.size} differ, e.g. at {i.tolist()}: {got[tuple(i)]!r} vs {want[tuple(i)]!r}"


def run_case(case: Any) -> Outcome:
    """Import and run one ONNX node case through the public API."""
    node = case.model.graph.node[0]
    reason = _not_applicable(case.name)
    if reason:
        return Outcome(case.name, node.op_type, NA, reason)
    inputs, expected = case.data_sets[0]
    names = [i.name for i in case.model.graph.input]
    try:
        values = {name: as_array(v) for name, v in zip(names, inputs)}
        expected = [as_array(v) for v in expected]
        model, feed = as_model(case, values)
        got = pc.onnx.load(model.SerializeToString()).run(feed)
    except Exception as e:  # every failure to run is a gap, with our error's reason
        return Outcome(case.name, node.op_type, GAP, _first_line(e))
    for i, (g, w) in enumerate(zip(got, expected)):
        diff = compare(g, w, case.rtol, case.atol)
        if diff:
            return Outcome(case.name, node.op_type, WRONG, f"output {i}: {diff}")
    if len(expected) > len(got):  # the outputs we give are right; ONNX asks for more
        missing = f"output {len(got)} ({case.model.graph.output[len(got)].name}) unsupported"
        return Outcome(case.name, node.op_type, GAP, f"Gap: {missing}")
    return Outcome(case.name, node.op_type, PASS)
