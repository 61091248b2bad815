"""Every installed op on inputs that hold no element beside a huge dimension ([2**40, 0],
[0, 2**40]) and on small empty ones ([0, 5], [5, 0]), and the gradients of each: a sweep, not a
draw, over cases derived from the manifests.

Each op's first input takes the empty shape; its other inputs take, in turn, that shape, its
broadcast [1, ..., 1], its lane values (the last axis as 1: a loss, a hard label) or a vector
along one axis (a scale per channel), in the op's dtype or as int64 (labels, indices), and
every combination its shape rule accepts is run. Attrs keep their defaults, but for an axis
(each axis of the shape), axes (none, the first, the last), a shape (the empty one) and k (its
default, and 0). Where the op has a gradient, that of its first output is appended too. A few
cases whose inputs no such rule derives (recurrences, attention with dropout, packed
attention) are listed in EXTRA.

The property: each case answers within ``--budget`` seconds (walking 2**40 empty rows takes
hours), with every fetched array of its declared dtype and shape, the same values when run
twice, or with an error of the core's hierarchy; and a reduction over an empty axis gives its
identity (sum 0, prod 1, max -inf, min inf, mean NaN), as NumPy does. Each case is written to
``--log`` before it runs, so when the process dies or hangs the log's last line is the case.

    python tests/fuzz/empty_sweep.py --log empty.log

Run outside the checkout's root, so the installed paddle_core is imported. Prints one JSON
summary line; exits 1 when a case failed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
import traceback
import warnings

import numpy as np

import paddle_core as pc
from paddle_core._src.base.dtypes import ITEMSIZE
from paddle_core._src.plugins.registry import get_registry
from paddle_core.proto import framework_pb2 as pb

HUGE = 2**40
SHAPES = [[HUGE, 0], [0, HUGE], [0, 5], [5, 0]]
DTYPES = ["float64", "float32", "int64", "bool"]  # the first an op's kernels take is its dtype
OUTPUT_BUDGET = 1 << 26  # bytes of outputs a case may produce (an identity over 2**40 rows: no)


def extremes(dtype: np.dtype) -> tuple[float | int, float | int]:
    """The lowest and highest value of ``dtype`` (infinities for floats)."""
    if dtype.kind == "f":
        return -np.inf, np.inf
    return np.iinfo(dtype).min, np.iinfo(dtype).max


# What a reduction of no element gives, as NumPy's function (max and min with their identity,
# the dtype's lowest and highest value, where NumPy raises).
REDUCTIONS = {
    "sum": np.sum,
    "prod": np.prod,
    "mean": np.mean,
    "max": lambda x, axis: np.max(x, axis, initial=extremes(x.dtype)[0]),
    "min": lambda x, axis: np.min(x, axis, initial=extremes(x.dtype)[1]),
}


def families(shape: list[int]) -> list[list[int]]:
    """The shapes an input beside one of ``shape`` may take (those that can be fed: empty, or
    small)."""
    found = [shape, [1] * len(shape), [*shape[:-1], 1], *([d] for d in shape)]
    fed = [s for s in found if math.prod(s) <= 1 << 16]
    return [s for k, s in enumerate(fed) if s not in fed[:k]]


def attr_variants(info, shape: list[int]) -> list[dict]:
    """The attrs a case sets: axes, an axis, a shape attr; the rest keep their defaults."""
    variants: list[dict] = [{}]
    types = info.attr_types
    for name in ("axis", "begin_norm_axis"):
        if types.get(name) in (pb.INT, pb.LONG):
            variants = [{name: k} for k in range(-1, len(shape))]
    if types.get("axes") in (pb.INTS, pb.LONGS):
        variants = [{"axes": a} for a in ([], [0], [-1])]
    if types.get("shape") in (pb.INTS, pb.LONGS):
        variants = [dict(v, shape=shape) for v in variants]
    if types.get("k") in (pb.INT, pb.LONG):  # top k: also none of an empty axis
        variants += [dict(v, k=0) for v in variants]
    return variants


def cases(registry) -> list[dict]:
    """Every case: op, inputs {slot: [dtype, shape, duplicable]} and attrs."""
    found = []
    for op in registry.op_types():
        info = registry.op(op)
        if info.plugin.name == "toy" or pb.BLOCK in info.attr_types.values():
            continue  # control flow runs sub-blocks: it has no kernel of its own to sweep
        dtype = next((d for d in DTYPES if d in info.dtypes_for("cpu")), None)
        if dtype is None:
            continue
        slots = [s for s in info.proto.inputs if not s.dispensable]
        if not slots:  # made from attrs alone: a shape attr takes each shape
            made = [a for shape in SHAPES for a in attr_variants(info, shape)]
            found += [{"op": op, "inputs": {}, "attrs": a} for k, a in enumerate(made)
                      if a not in made[:k]]  # fmt: skip
            continue
        for shape in SHAPES:
            # The first input in the op's dtype or as int64 (indices); the others one family and
            # dtype for all of them, in turn.
            dtypes = dict.fromkeys([dtype, "int64"])
            others = itertools.product(families(shape), dtypes) if slots[1:] else [(None, None)]
            for attrs, first, (family, other) in itertools.product(
                attr_variants(info, shape), dtypes, others
            ):
                inputs = {s.name: [first, shape, s.duplicable] for s in slots[:1]}
                inputs |= {s.name: [other, family, s.duplicable] for s in slots[1:]}
                found.append({"op": op, "inputs": inputs, "attrs": attrs})
    return found + EXTRA


def T(dtype: str, shape: list[int], duplicable: bool = False) -> list:
    """An input of a case: [dtype, shape, duplicable]."""
    return [dtype, shape, duplicable]


def case(op: str, inputs: dict, attrs: dict | None = None) -> dict:
    return {"op": op, "inputs": inputs, "attrs": attrs or {}}


F = "float64"


def recurrence(op: str, gates: int, x: list[int]) -> dict:
    """lstm (4 gates) or gru (3) of 2 hidden units over x [T, B, 3]."""
    n = 2 * gates  # rows: each gate's 2 units
    weights = {"weight_ih": [n, 3], "weight_hh": [n, 2], "bias_ih": [n], "bias_hh": [n]}
    inputs = {s: T(F, w, duplicable=True) for s, w in weights.items()}
    return case(op, {"x": T(F, x), **inputs}, {"hidden_size": 2})


def attention(q: list[int], k: list[int], ev: int, attrs: dict) -> dict:
    """scaled_dot_product_attention of q, k and a v of ev features per key."""
    return case(
        "scaled_dot_product_attention",
        {"q": T(F, q), "k": T(F, k), "v": T(F, [*k[:-1], ev])},
        attrs,
    )


# Inputs no family above fits together: an optimizer's step, attrs an op needs, weights of a
# recurrence, attention's rng_state (made with dropout, it holds an element where q, k and v
# hold none; of no feature, the keys are 2**40), batch_norm's statistics per channel.
STATISTICS = {s: T(F, [3]) for s in ("scale", "bias", "mean", "variance")}
EXTRA = [
    case("sgd", {"param": T(F, [HUGE, 0]), "grad": T(F, [HUGE, 0]), "learning_rate": T(F, [1])}),
    case(
        "adam",
        {s: T(F, [HUGE, 0]) for s in ("param", "grad", "moment1", "moment2")}
        | {s: T(F, [1]) for s in ("beta1_pow", "beta2_pow", "learning_rate")},
    ),
    case("where", {"cond": T("bool", [1, 1]), "x": T(F, [HUGE, 0]), "y": T(F, [1, 1])}),
    case("tile", {"x": T(F, [1, 3])}, {"repeat_times": [HUGE, 0]}),
    case("conv2d", {"x": T(F, [0, 3, HUGE, 4]), "filter": T(F, [2, 3, 1, 1])}),
    *(recurrence(op, gates, x) for op, gates in (("lstm", 4), ("gru", 3))
      for x in ([HUGE, 0, 3], [0, 2, 3])),
    *(attention(q, k, ev, attrs)
      for q, k, ev in (([2, HUGE, 0, 4], [2, HUGE, 0, 4], 4), ([0, 2, HUGE, 4], [0, 2, 3, 4], 4),
                       ([1, 1, 3, 0], [1, 1, HUGE, 0], 0))
      for attrs in ({}, {"dropout_p": 0.5, "is_test": False}, {"is_causal": True})),
    *(case("packed_attention", {"qkv": T(F, qkv)}, attrs)
      for qkv in ([HUGE, 0, 3, 2, 4], [0, HUGE, 3, 2, 4], [2, 3, 3, HUGE, 0])
      for attrs in ({}, {"dropout_p": 0.5, "is_test": False}, {"is_causal": True})),
    *(case("batch_norm", {"x": T(F, x), **STATISTICS}, {"is_test": True})
      for x in ([HUGE, 3, 0, 4], [0, 3, HUGE, 4])),
]  # fmt: skip


def feed_value(dtype: str, shape: list[int]) -> np.ndarray:
    """Ones (no element of them for the empty shapes): variance 1, labels and indices 1."""
    return np.ones(shape, dtype)


def build(registry, case: dict):
    """The case's program, feed, fetch list (its op's outputs, and its gradients) and whether
    the op draws random numbers; None when the op's rules refuse the inputs."""
    prog = pc.Program()
    block = prog.global_block()
    inputs, feed, variables = {}, {}, []
    for slot, (dtype, shape, duplicable) in case["inputs"].items():
        var = block.create_var(f"{slot}_0", shape, dtype)
        var.stop_gradient = dtype != "float64" and dtype != "float32"
        feed[var.name] = feed_value(dtype, shape)
        variables.append(var)
        inputs[slot] = [var.name] if duplicable else var.name
    try:
        with pc.program_guard(prog):
            op = block.append_op(case["op"], inputs, attrs=case["attrs"])
            fetch = [block.var(n) for n in op.output_names]
            wrt = [v for v in variables if not v.stop_gradient]
            if (
                registry.op(case["op"]).has_grad
                and wrt
                and fetch[0].dtype in ("float32", "float64")
            ):
                try:
                    fetch += [g for g in pc.gradients([fetch[0]], wrt) if g is not None]
                except pc.PaddleCoreError:
                    pass  # not differentiable through these inputs: the forward alone
    except pc.PaddleCoreError:
        return None
    return prog, feed, fetch, registry.op(case["op"]).draws(op.attrs)


def expected(case: dict, got: list[np.ndarray]) -> str | None:
    """Why a reduction's result is not NumPy's (its identity over an empty axis), or None."""
    reduce = REDUCTIONS.get(case["op"])
    if reduce is None:
        return None
    ((dtype, shape, _),) = case["inputs"].values()
    if HUGE in shape:
        return None
    axes = case["attrs"].get("axes", [])
    axis = tuple(axes) if axes else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's mean of nothing
        want = np.asarray(reduce(np.ones(shape, dtype), axis=axis), dtype)
    if got[0].shape != want.shape or not np.array_equal(got[0], want, equal_nan=True):
        return f"out is {got[0]!r}, NumPy's {want!r}"
    return None


def run_case(registry, case: dict, budget: float, counts: dict) -> str | None:
    """None when the case holds the property, else why not."""
    start = time.monotonic()
    built = build(registry, case)
    if built is None:
        return None
    prog, feed, fetch, draws = built
    counts["appended"] += 1
    sizes = (math.prod(1 if d is None else d for d in v.shape) for v in fetch)
    if sum(n * ITEMSIZE[v.dtype] for n, v in zip(sizes, fetch)) > OUTPUT_BUDGET:
        return None  # valid, and an output too big to make here (the core refuses what cannot fit)
    exe = pc.Executor(num_threads=2)
    try:
        first = exe.run(prog, feed=feed, fetch_list=fetch, scope=pc.Scope())
    except pc.PaddleCoreError:
        first = None
    took = time.monotonic() - start
    if took > budget:
        return f"took {took:.1f} s"
    if first is None:
        return None
    counts["ran"] += 1
    for array, var in zip(first, fetch):
        if array.dtype.name != var.dtype or list(array.shape) != list(var.shape):
            return f"fetched {var.name} is {array.dtype}{list(array.shape)}, declared {var}"
    if not draws:
        second = exe.run(prog, feed=feed, fetch_list=fetch, scope=pc.Scope())
        for a, b, var in zip(first, second, fetch):
            if not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                return f"{var.name} differs between two runs of the same feed (unwritten memory?)"
    return expected(case, first)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=float, default=5, help="seconds a case may take")
    parser.add_argument("--log", default="empty.log")
    args = parser.parse_args()
    registry = get_registry()
    counts = {"cases": 0, "appended": 0, "ran": 0}
    failures = []
    with open(args.log, "w", encoding="utf-8") as log:
        for case in cases(registry):
            log.write(json.dumps(case) + "\n")
            log.flush()
            counts["cases"] += 1
            try:
                problem = run_case(registry, case, args.budget, counts)
            except Exception as e:  # the property's failure: a raw exception
                problem = traceback.format_exception_only(e)[-1].strip()
            if problem is not None:
                failures.append({"case": case, "problem": problem})
    print(json.dumps({**counts, "failures": failures[:20]}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
