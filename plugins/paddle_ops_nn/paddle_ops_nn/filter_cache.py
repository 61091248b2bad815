"""The filter cache pass: in a CPU plan whose convolution filters no op writes (an evaluation
program, a loaded inference model), oneDNN converts each filter to its primitive's layout
once, not on every run.

oneDNN's convolution reads its filter in a layout of its own choosing, so the kernel converts
the NCHW filter before every call; for ResNet-18 at 224x224 that is 11M weights moved per
inference, a quarter of its time. The pass gives each such conv2d a ``filter_fingerprint``,
``fingerprint(filter)``: the op reads only a parameter the plan does not write, so the core's
constant folding runs it once, and again only when the filter is set (a training step, a
``set_var``); the kernel converts the filter again only when the fingerprint differs from
the last run's. Float32 conv2d ops whose filter is constant, where oneDNN computes
(``paddle_ops_nn.onednn.is_enabled``): a parameter no op of the program writes and nothing
feeds, or the result of ops reading only such values (batch norm folding's filter).
"""

from __future__ import annotations

from typing import Any

NAME = "onednn_filter_cache"


def wants(program: Any, device: Any) -> bool:
    """Whether the pass would give some conv2d of ``program`` a fingerprint."""
    return bool(_cached_convs(program, device, ()))


def transform(program: Any, device: Any, feed_names: list, fetch_names: list) -> None:
    """A fingerprint op before each conv2d that reuses its converted filter."""
    block = program.global_block()
    made: dict[str, str] = {}  # filter -> its fingerprint (convolutions sharing a filter)
    for op in _cached_convs(program, device, feed_names):
        (name,) = op.input("filter")
        if name not in made:
            made[name] = f"{name}@fingerprint"
            index = block.ops.index(op)
            block.insert_op(index, "fingerprint", {"x": name}, {"out": made[name]}).role = op.role
        block.rewrite_op(op, inputs={"filter_fingerprint": made[name]})


def _cached_convs(program: Any, device: Any, feed_names: Any) -> list[Any]:
    if device.type != "cpu":
        return []
    block = program.global_block()
    convs = [op for op in block.ops if op.type == "conv2d" and not op.input("filter_fingerprint")]
    if not convs:
        return []
    from . import onednn  # (the compiled module: only for programs with a convolution)

    if not onednn.is_enabled():
        return []
    writers: dict[str, list[Any]] = {}
    for op in block.ops:
        for name in op.output_names:
            writers.setdefault(name, []).append(op)
    fed = set(feed_names)
    known: dict[str, bool] = {}  # (each value decided once: writers' inputs may be shared)

    def constant(name: str) -> bool:
        if name in known:
            return known[name]
        var, ops = block.find_var(name), writers.get(name, [])
        if var is None or name in fed:
            result = False
        elif var.persistable:
            result = not ops
        else:
            result = len(ops) == 1 and bool(ops[0].input_names)
            result = result and all(map(constant, ops[0].input_names))
        known[name] = result
        return result

    return [
        op
        for op in convs
        if block.var(op.input("filter")[0]).dtype == "float32" and constant(op.input("filter")[0])
    ]
