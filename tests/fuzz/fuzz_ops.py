"""Fuzz every installed op: random attrs, random inputs (dtypes, ranks, empty and 0-d shapes,
empty shapes with huge other dimensions, NaN and infinities), appended and run through the
public API.

The property: each case either works, with every fetched array of its declared dtype and
(static) shape and the same values when run twice (random ops and the collectives, whose
state lasts from program to program, aside: a kernel reading memory it never wrote gives
different values), or raises an error of the core's hierarchy. A raw Python
exception, a mismatch or a crash is a failure. Each case is written to ``--log`` before it runs,
so when the process dies (a crash, a hang killed by the caller) the log's last line is the case
that did it.

    python tests/fuzz/fuzz_ops.py --seconds 600 --seed 1 --log fuzz.log   (a long run)

Run outside the checkout's root (from tests/ or anywhere else), so the installed paddle_core
is imported. Prints one JSON summary line; exits 1 when a case failed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback

import numpy as np
from hostile import WARM_UP, resident_mb

import paddle_core as pc
from paddle_core._src.base.dtypes import ITEMSIZE
from paddle_core._src.plugins.registry import get_registry
from paddle_core.proto import framework_pb2 as pb

DTYPES = ["float32"] * 4 + ["float64", "int32", "int64", "bool", "uint8", "int8"]
DIMS = [0, 1, 1, 2, 3, 5]
# Dimensions beside a 0 in empty shapes ([2**40, 0], [0, 2**31 - 1, 4]): legal (no element, no
# byte), and hours of work for a kernel that walks them.
HUGE = [2**31 - 1, 2**40]
INTS = [-(2**31), -7, -2, -1, 0, 1, 2, 3, 4, 7, 2**31 - 1]
LONGS = [*INTS, -(2**63), 2**63 - 1]
FLOATS = [0.0, -1.0, 0.5, 1.0, 2.5, 1e-308, 1e308, -1e308, math.nan, math.inf, -math.inf]
OUTPUT_BUDGET = 1 << 28  # bytes of outputs a case may produce: 10 GiB one_hots are valid ops
STRINGS = ["", "max", "avg", "x" * 300, "upscale_in_train", "ü"]


class Case:
    """One random case, drawn from ``rng``; ``describe()`` is what the log records."""

    def __init__(self, rng: np.random.Generator, info) -> None:
        self.op = info.type
        self.inputs = {}
        # Mostly one dtype and often one shape for all inputs, so cases get past the shape
        # rules to the kernels; the rest mix them.
        common = self._tensor(rng)
        self.duplicable = {slot.name for slot in info.proto.inputs if slot.duplicable}
        for slot in info.proto.inputs:
            if slot.dispensable and rng.random() < 0.3:
                continue
            count = int(rng.integers(1, 4)) if slot.duplicable else 1
            self.inputs[slot.name] = [self._like(rng, common) for _ in range(count)]
        self.attrs = {}
        for ap in info.proto.attrs:
            if ap.name in info.attr_defaults and rng.random() < 0.35:
                continue  # its default
            self.attrs[ap.name] = self._attr(rng, ap)

    @classmethod
    def _like(cls, rng, common):
        dtype, shape = cls._tensor(rng)
        return (
            common[0] if rng.random() < 0.8 else dtype,
            common[1] if rng.random() < 0.6 else shape,
        )

    @staticmethod
    def _tensor(rng):
        dtype = str(rng.choice(DTYPES))
        if rng.random() < 0.15:
            return dtype, huge_empty_shape(rng)
        shape = [int(rng.choice(DIMS)) for _ in range(int(rng.integers(0, 5)))]
        return dtype, shape

    @staticmethod
    def _attr(rng, ap):
        pick = lambda values: values[int(rng.integers(len(values)))]  # noqa: E731
        if ap.HasField("choices") and rng.random() < 0.7:
            from paddle_core._src.spec.attrs import from_attr_value

            return pick(list(from_attr_value(ap.choices)))
        if ap.type == pb.INT:
            return pick(INTS)
        if ap.type == pb.LONG:
            return pick(LONGS)
        if ap.type == pb.FLOAT:
            return pick(FLOATS)
        if ap.type == pb.BOOL:
            return bool(rng.random() < 0.5)
        if ap.type == pb.STRING:
            return pick(STRINGS)
        if ap.type in (pb.INTS, pb.LONGS) and rng.random() < 0.1:  # a shape attr's empty shape
            return huge_empty_shape(rng, 2**31 - 1 if ap.type == pb.INTS else None)
        if ap.type == pb.INTS:
            return [pick(INTS[1:-1]) for _ in range(int(rng.integers(0, 6)))]
        if ap.type == pb.LONGS:  # mostly small, now and then a 64-bit extreme
            values = INTS[1:-1] * 4 + LONGS
            return [pick(values) for _ in range(int(rng.integers(0, 6)))]
        if ap.type == pb.FLOATS:
            return [pick(FLOATS) for _ in range(int(rng.integers(0, 4)))]
        if ap.type == pb.BOOLS:
            return [bool(rng.random() < 0.5) for _ in range(int(rng.integers(0, 4)))]
        if ap.type == pb.STRINGS:
            return [pick(STRINGS) for _ in range(int(rng.integers(0, 3)))]
        return None

    def describe(self) -> str:
        return json.dumps({"op": self.op, "inputs": self.inputs, "attrs": self.attrs}, default=str)


def huge_empty_shape(rng, huge: int | None = None) -> list[int]:
    """An empty shape of 2 to 4 dimensions, one 0 and one huge (``huge``, else one of HUGE),
    the others small: within the core's limits (their product stays far below 2**48 bytes)."""
    shape = [int(rng.choice(DIMS[1:])) for _ in range(int(rng.integers(2, 5)))]
    zero, big = rng.choice(len(shape), size=2, replace=False)
    shape[int(zero)] = 0
    shape[int(big)] = huge if huge is not None else int(rng.choice(HUGE))
    return shape


def feed_value(rng, dtype, shape):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith(("int", "uint")):
        return rng.integers(-3 if dtype != "uint8" else 0, 4, shape).astype(dtype)
    values = rng.standard_normal(shape).astype(dtype)
    if values.size and rng.random() < 0.2:  # now and then a NaN or an infinity
        values.flat[int(rng.integers(values.size))] = rng.choice([np.nan, np.inf, -np.inf])
    return values


def run_case(rng, case: Case, random_op: bool, counts: dict) -> str | None:
    """None when the case holds the property, else why not."""
    prog = pc.Program()
    block = prog.global_block()
    inputs, feed = {}, {}
    for slot, tensors in case.inputs.items():
        names = []
        for k, (dtype, shape) in enumerate(tensors):
            name = f"{slot}_{k}"
            block.create_var(name, shape, dtype)
            feed[name] = feed_value(rng, dtype, shape)
            names.append(name)
        inputs[slot] = names if slot in case.duplicable else names[0]
    try:
        op = block.append_op(case.op, inputs, attrs=case.attrs)
    except pc.PaddleCoreError:
        return None
    counts["appended"] += 1
    fetch = [block.var(n) for n in op.output_names]
    sizes = (math.prod(1 if d is None else d for d in v.shape) for v in fetch)
    if sum(n * ITEMSIZE[v.dtype] for n, v in zip(sizes, fetch)) > OUTPUT_BUDGET:
        return None  # valid, and too big to run twice here (the core refuses what cannot fit)
    exe = pc.Executor(num_threads=2)
    try:
        first = exe.run(prog, feed=feed, fetch_list=fetch, scope=pc.Scope())
    except pc.PaddleCoreError:
        return None
    counts["ran"] += 1
    for array, var in zip(first, fetch):
        if array.dtype.name != var.dtype or any(
            d is not None and d != s for d, s in zip(var.shape, array.shape)
        ):
            return f"fetched {var.name} is {array.dtype}{list(array.shape)}, declared {var}"
    if random_op:
        return None
    second = exe.run(prog, feed=feed, fetch_list=fetch, scope=pc.Scope())
    for a, b, var in zip(first, second, fetch):
        floating = a.dtype.kind in "fc" or a.dtype.name == "bfloat16"  # ml_dtypes': kind "V"
        if not np.array_equal(a, b, equal_nan=floating):
            return f"{var.name} differs between two runs of the same feed (unwritten memory?)"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log", default="fuzz.log")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    registry = get_registry()
    ops = [registry.op(t) for t in registry.op_types() if registry.op(t).plugin.name != "toy"]
    counts = {"cases": 0, "appended": 0, "ran": 0, "typed_or_ok": 0, "raw": 0, "mismatch": 0}
    failures = []
    warm = 0.0
    deadline = time.monotonic() + args.seconds
    with open(args.log, "w", encoding="utf-8") as log:
        while time.monotonic() < deadline:
            info = ops[int(rng.integers(len(ops)))]
            case = Case(rng, info)
            log.write(case.describe() + "\n")
            log.flush()
            counts["cases"] += 1
            if counts["cases"] == WARM_UP:
                warm = resident_mb()
            try:
                # (a collective's state lasts from program to program, as a started allreduce
                # waits for its c_wait: a second run may see the first's)
                rerun_differs = getattr(info.opdef, "random", False) or info.plugin.name == "dist"
                problem = run_case(rng, case, bool(rerun_differs), counts)
            except Exception as e:  # the property's failure: a raw exception
                counts["raw"] += 1
                failures.append(
                    {"case": case.describe(), "raw": traceback.format_exception_only(e)[-1]}
                )
                continue
            if problem is None:
                counts["typed_or_ok"] += 1
            else:
                counts["mismatch"] += 1
                failures.append({"case": case.describe(), "mismatch": problem})
    # Resident memory grown since the warm-up: what the cases kept (None: too few cases to say).
    counts["rss_growth_mb"] = round(resident_mb() - warm, 1) if warm else None
    print(json.dumps({**counts, "failures": failures[:20]}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
