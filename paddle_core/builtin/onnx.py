"""ONNX's If and Loop as the core's cond_block and while_block (the mappings in ops.pbtxt)."""

from __future__ import annotations

from paddle_core import control_flow, ops

# Loop's trip count when the node gives none: the loop stops on its condition.
_NO_LIMIT = 2**62


def if_(node) -> list:
    """If: a branch known at import (a constant condition) is built alone; else both, in one
    cond_block."""
    known = node.constant(0)
    if known is not None:
        if known.size != 1:
            raise node.error(f"the condition must hold one value, got shape {list(known.shape)}")
        return node.subgraph("then_branch" if bool(known.reshape(-1)[0]) else "else_branch")
    pred = node.input(0)
    if tuple(pred.shape) not in ((), (1,)):
        pred = ops.reshape(pred, shape=[])
    result = control_flow.cond(
        pred, lambda: node.subgraph("then_branch"), lambda: node.subgraph("else_branch")
    )
    return list(result) if isinstance(result, (list, tuple)) else [result]


def loop(node) -> list:
    """Loop(M, cond, v...): while i < M and cond, (cond, v...) = body(i, cond, v...); the
    final v... (scan outputs, which stack a value per iteration, are not supported)."""
    carried = [node.input(i) for i in range(2, node.input_count)]
    body = node.attrs["body"]
    scans = len(body.output) - 1 - len(carried)
    if scans:
        raise node.error(f"{scans} scan output(s): not supported (carried values only)")
    limit = node.input(0) if node.has_input(0) else None
    if limit is None:
        limit = ops.fill_constant(shape=[], dtype="int64", value=float(_NO_LIMIT))
    elif tuple(limit.shape) != ():
        limit = ops.reshape(limit, shape=[])
    keep_going = node.input(1) if node.has_input(1) else None
    if keep_going is None:
        keep_going = ops.fill_constant(shape=[], dtype="bool", value=1.0)
    elif tuple(keep_going.shape) != ():
        keep_going = ops.reshape(keep_going, shape=[])
    start = ops.fill_constant(shape=[], dtype="int64", value=0.0)
    one = ops.fill_constant(shape=[], dtype="int64", value=1.0)

    def condition(i, go, *values):
        return ops.logical_and(ops.less(i, limit), go)

    def step(i, go, *values):
        go_next, *new = node.subgraph("body", [i, go, *values])
        if tuple(go_next.shape) != ():
            go_next = ops.reshape(go_next, shape=[])
        return [ops.add(i, one), go_next, *new]

    results = control_flow.while_loop(condition, step, [start, keep_going, *carried])
    return list(results[2:])
