"""The filter cache pass: in a CPU plan whose convolution filters no op writes (an evaluation
program, a loaded inference model), oneDNN converts each filter to its primitive's layout
once, not on every run.

oneDNN's convolution reads its filter in a layout of its own choosing, so the kernel converts
the NCHW filter before every call; for ResNet-18 at 224x224 that is 11M weights moved per
inference, a quarter of its time. The pass gives each such conv2d a ``filter_fingerprint``,
``fingerprint(filter)``: the op reads only a parameter the plan does not write, so the core's
constant folding runs it once, and again only when the filter is set (a training step, a
``set_var``); the kernel converts the filter again only when the fingerprint differs from
the last run's. Float32 conv2d ops whose filter is persistable, not fed and written by no op
of the program, where oneDNN computes (``paddle_ops_nn.onednn.is_enabled``).
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
    written = {name for op in block.ops for name in op.output_names}
    fed = set(feed_names)
    cached = []
    for op in convs:
        (name,) = op.input("filter")
        var = block.find_var(name)
        if (
            var is not None
            and var.persistable
            and var.dtype == "float32"
            and name not in written
            and name not in fed
        ):
            cached.append(op)
    return cached
