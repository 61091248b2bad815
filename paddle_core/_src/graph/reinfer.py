"""What a changed attr does downstream: shapes and dtypes inferred again from the changed op to
the end of its block, checked, and then applied, or refused with nothing changed.

``set_attr("perm", [0, 1])`` on a transpose changes its output's shape, and so the shapes of
every op that reads it, and so on; a plan made from stale declarations would disagree with
what the kernels return.
"""

from __future__ import annotations

from typing import Any

from ..base.errors import ShapeError
from ..plugins.registry import get_registry
from .shape_inference import ShapeContext, TensorSpec, check_spec, infer
from .variable import format_shape

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .operator import Operator


def reinfer_from(op: Operator, attrs: dict[str, Any]) -> dict[str, tuple[tuple, str]]:
    """The new (shape, dtype) of every variable that changes if ``op`` gets ``attrs``: ``op``'s
    outputs, then those of each later op of its block that reads a changed variable. Raises
    ShapeError naming the op that no longer fits; nothing is changed here."""
    block = op.block
    registry = get_registry()
    changed: dict[str, tuple[tuple, str]] = {}
    ops = block.ops[block.ops.index(op) :]
    for k, current in enumerate(ops):
        if k > 0 and not any(n in changed for n in current.input_names):
            continue
        info = registry.op(current.type)
        inputs = {
            slot: [_spec(block, n, changed) for n in names]
            for slot, names in current.inputs.items()
        }
        own = attrs if k == 0 else current.attrs
        ctx = ShapeContext(current.type, inputs, own, info.signature().output_slots, block)
        infer(info, ctx)
        for slot, names in current.outputs.items():
            specs = ctx.outputs.get(slot)
            if specs is None:  # an output the op no longer gives (a dropout's mask, is_test)
                continue
            if len(specs) != len(names):
                raise ShapeError(
                    f"op {current.type!r} would give {len(specs)} values for output {slot!r}, "
                    f"but the program binds {len(names)}",
                    op=current.type,
                )
            for name, (shape, dtype) in zip(names, specs):
                check_spec(info, slot, shape, dtype)
                var = block.var(name)
                if (var.shape, var.dtype) == (shape, dtype) and name not in changed:
                    continue
                if var.persistable or var.is_data:
                    raise ShapeError(
                        f"op {current.type!r} would make {'persistable' if var.persistable else 'data'} "
                        f"variable {name!r} {dtype}{format_shape(shape)}, but it is declared "
                        f"{var.dtype}{format_shape(var.shape)}",
                        op=current.type,
                    )
                changed[name] = (shape, dtype)
    return changed


def _spec(block: Any, name: str, changed: dict[str, tuple[tuple, str]]) -> Any:
    if name in changed:
        return TensorSpec(name, *changed[name])
    return block.var(name)
