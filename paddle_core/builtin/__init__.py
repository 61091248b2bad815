"""Rules of the core's own ops (declared in ops.pbtxt; their kernels are compiled into the
core's runtime module)."""

from __future__ import annotations

from paddle_core._src.base.dtypes import FLOATING
from paddle_core._src.base.errors import KernelRuntimeError, ProgramError
from paddle_core._src.graph.backward import block_gradients
from paddle_core._src.graph.shape_rules import check_fill_value
from paddle_core._src.graph.variable import format_shape
from paddle_core._src.plugins.registry import get_registry
from paddle_core.proto import framework_pb2


def fill_like_shape(ctx):
    """out is like x; an integer x takes a value its dtype holds."""
    x = ctx.input("x")
    check_fill_value(ctx, x.dtype)
    ctx.set_output("out", x.shape, x.dtype)


def add_n_shape(ctx):
    xs = ctx.input_list("xs")
    first = xs[0]
    for x in xs[1:]:
        if (
            x.dtype != first.dtype
            or len(x.shape) != len(first.shape)
            or any(a is not None and b is not None and a != b for a, b in zip(x.shape, first.shape))
        ):
            ctx.fail(f"all inputs need {first.dtype}{list(first.shape)}; {x.name!r} differs")
    ctx.set_output("out", first.shape, first.dtype)


def add_n_grad(ctx):
    """Each input's gradient is the output's gradient (copied by a one-input add_n)."""
    g = ctx.output_grad("out")
    for name in ctx.input_grads("xs"):
        if name is not None:
            ctx.append_op("add_n", {"xs": [g]}, {"out": name})


# -- control flow (while_block, cond_block): planned and run by paddle_core/_src/run/control.py


def _bool_scalar(ctx, what: str) -> None:
    """The condition must be a bool scalar: shape [] or [1]."""
    c = ctx.input("condition")
    if c.dtype != "bool" or tuple(c.shape) not in ((), (1,)):
        ctx.fail(
            f"in block {ctx.block.idx}, the condition {c.name!r} must be a bool scalar "
            f"(shape [] or [1]), got {c.dtype}{format_shape(c.shape)} ({what})"
        )


def while_block_shape(ctx):
    """out is carried, variable for variable; the condition is one of them (the body must
    recompute it, or the loop never ends)."""
    body = ctx.attrs["sub_block"]
    _bool_scalar(ctx, f"body block {body}")
    carried = ctx.input_list("carried")
    condition = ctx.input("condition")
    if condition.name not in [v.name for v in carried]:
        ctx.fail(
            f"in block {ctx.block.idx}, body block {body} never writes the condition "
            f"{condition.name!r}: list it among the carried variables"
        )
    ctx.set_output_list("out", [(v.shape, v.dtype) for v in carried])


def cond_block_shape(ctx):
    """out[i] is true_outs[i], which must have the dtype and shape of false_outs[i]."""
    program = ctx.block.program
    true_idx, false_idx = ctx.attrs["true_block"], ctx.attrs["false_block"]
    _bool_scalar(ctx, f"blocks {true_idx} and {false_idx}")
    true_outs, false_outs = ctx.attrs["true_outs"], ctx.attrs["false_outs"]
    where = f"in block {ctx.block.idx}"
    if len(true_outs) != len(false_outs):
        ctx.fail(
            f"{where}, true block {true_idx} gives {len(true_outs)} value(s) but false block "
            f"{false_idx} gives {len(false_outs)}"
        )
    specs = []
    for i, (t, f) in enumerate(zip(true_outs, false_outs)):
        tv = program.block(true_idx).var(t)
        fv = program.block(false_idx).var(f)
        if (
            tv.dtype != fv.dtype
            or len(tv.shape) != len(fv.shape)
            or any(a is not None and b is not None and a != b for a, b in zip(tv.shape, fv.shape))
        ):
            ctx.fail(
                f"{where}, result {i} differs between the branches: true block {true_idx} "
                f"gives {t!r} {tv.dtype}{format_shape(tv.shape)}, false block {false_idx} gives "
                f"{f!r} {fv.dtype}{format_shape(fv.shape)}"
            )
        shape = tuple(a if a is not None else b for a, b in zip(tv.shape, fv.shape))
        specs.append((shape, tv.dtype))
    ctx.set_output_list("out", specs)


def while_block_kernel(*args, **attrs):
    raise KernelRuntimeError(
        "op 'while_block' runs through its planned body (an executor's plan), never as a "
        "kernel called directly",
        op="while_block",
    )


def cond_block_kernel(*args, **attrs):
    raise KernelRuntimeError(
        "op 'cond_block' runs through its planned blocks (an executor's plan), never as a "
        "kernel called directly",
        op="cond_block",
    )


def cond_block_grad(ctx):
    """The gradient of a cond_block is a cond_block on the same condition: each of its blocks
    recomputes its branch's values (they lived in the branch's own run) and appends their
    gradients (``block_gradients``), seeded by the outputs' gradients; an input a branch does
    not reach gets zeros there. Branches holding blocks of their own are not supported yet."""
    op = ctx.op
    wanted = [(n, g) for n, g in zip(ctx.inputs("x"), ctx.input_grads("x")) if g is not None]
    if not wanted:
        return
    seeds = list(zip(op.attrs["true_outs"], op.attrs["false_outs"], ctx.output_grads("out")))
    program = ctx.block.program
    blocks, results = [], []
    for side, branch in enumerate(("true_block", "false_block")):
        forward = program.block(op.attrs[branch])
        block = program.create_block(parent_idx=ctx.block.idx)
        try:
            for fop in forward.ops:
                if framework_pb2.BLOCK in fop.attr_types.values():
                    raise ProgramError(
                        f"gradients through op 'cond_block' in block {op.block.idx}: its block "
                        f"{forward.idx} holds op {fop.type!r}, which holds blocks of its own "
                        "(not supported yet)"
                    )
                block.append_op(fop.type, _slots(fop.inputs), _slots(fop.outputs), dict(fop.attrs))
            branch_seeds: dict[str, list[str]] = {}
            for outs in seeds:
                if outs[2] is not None:
                    branch_seeds.setdefault(outs[side], []).append(outs[2])
            grads = block_gradients(block, branch_seeds, [n for n, _ in wanted])
            names = []
            for name, _ in wanted:
                grad = grads[name]
                if grad is None:
                    zeros = block.append_op("fill_like", {"x": name}, None, {"value": 0.0})
                    grad = zeros.output("out")[0]
                names.append(grad)
        finally:
            program.rollback()
        blocks.append(block)
        results.append(names)
    reads: dict[str, None] = {}
    for block, names in zip(blocks, results):
        for gop in block.ops:
            for name in gop.input_names:
                if name not in block.vars:
                    reads[name] = None
        for name in names:
            if name not in block.vars:
                reads[name] = None
    condition = ctx.input("condition")
    reads.pop(condition, None)
    ctx.append_op(
        "cond_block",
        {"condition": condition, "x": list(reads)},
        {"out": [g for _, g in wanted]},
        {
            "true_block": blocks[0],
            "false_block": blocks[1],
            "true_outs": results[0],
            "false_outs": results[1],
        },
    )


def _slots(bound):
    """An op's slots as append_op takes them: one name, or a list for several."""
    return {slot: names[0] if len(names) == 1 else list(names) for slot, names in bound.items()}


def while_block_backward_shape(ctx):
    """Each gradient is shaped like the variable it is the gradient of."""
    block = ctx.block
    for slot, attr in (("carried_grad", "diff_carried"), ("x_grad", "wanted_x")):
        vars_ = [block.var(name) for name in ctx.attrs[attr]]
        ctx.set_output_list(slot, [(v.shape, v.dtype) for v in vars_])


def while_block_grad(ctx):
    """The gradient of a while_block is a while_block_backward (see its OpProto) holding a
    gradient block: the body's ops again, each carried variable they write renamed (so
    every value of one body run stays available), then their gradients (``block_gradients``)
    seeded by the gradients of the run's results. Gradients flow through floating-point
    carried variables only; bodies holding blocks of their own are not supported yet."""
    op = ctx.op
    program = ctx.block.program
    carried, outs = ctx.inputs("carried"), ctx.outputs("out")
    diff = [(c, o, g) for c, o, g in zip(carried, outs, ctx.output_grads("out"))]
    diff = [(c, o, g) for c, o, g in diff if ctx.block.var(c).dtype in FLOATING]
    x_names = ctx.inputs("x")
    x_wanted = [
        (n, g)
        for n, g in zip(x_names, ctx.input_grads("x"))
        if g is not None and ctx.block.var(n).dtype in FLOATING
    ]
    carried_grads = ctx.input_grads("carried")
    if not diff or not (x_wanted or any(g is not None for g in carried_grads)):
        return
    seeds = [g if g is not None else ctx.zeros_like(o) for _, o, g in diff]
    body = program.block(op.attrs["sub_block"])
    block = program.create_block(parent_idx=ctx.block.idx)
    try:
        rename: dict[str, str] = {}
        outer = set(carried)
        for fop in body.ops:
            _check_recomputable(fop, f"op 'while_block' in block {op.block.idx}", "body", body)
            inputs = {s: [rename.get(n, n) for n in names] for s, names in fop.inputs.items()}
            outputs = {}
            for slot, names in fop.outputs.items():
                fresh = []
                for name in names:
                    if name in outer:
                        var = ctx.block.var(name)
                        new = block.create_var(
                            program.unique_name(f"{name}@NEXT"), var.shape, var.dtype
                        )
                        rename[name] = new.name
                        fresh.append(new.name)
                    else:
                        fresh.append(name)
                outputs[slot] = fresh
            block.append_op(fop.type, _slots(inputs), _slots(outputs), dict(fop.attrs))
        branch_seeds = {rename.get(c, c): [s] for (c, _, _), s in zip(diff, seeds)}
        wanted = [c for c, _, _ in diff] + [n for n, _ in x_wanted]
        grads = block_gradients(block, branch_seeds, wanted)
        grad_outs = []
        for name in wanted:
            grad = grads[name]
            if grad is None:
                grad = block.append_op("fill_like", {"x": name}, None, {"value": 0.0}).output(
                    "out"
                )[0]
            grad_outs.append(grad)
    finally:
        program.rollback()
    by_name = dict(zip(carried, carried_grads))
    carried_out = [by_name[c] if by_name[c] is not None else ctx.unused_grad(c) for c, _, _ in diff]
    ctx.append_op(
        "while_block_backward",
        {"carried": carried, "x": x_names, "out_grad": seeds},
        {"carried_grad": carried_out, "x_grad": [g for _, g in x_wanted]},
        {
            "sub_block": op.attrs["sub_block"],
            "grad_block": block,
            "max_iters": op.attrs["max_iters"],
            "condition": ctx.input("condition"),
            "diff_carried": [c for c, _, _ in diff],
            "wanted_x": [n for n, _ in x_wanted],
            "grad_outs": grad_outs,
        },
    )


# -- recurrent_block: a cell's step block run once per time step


def _with_time(shape, axis: int, n):
    return (*shape[:axis], n, *shape[axis:])


def recurrent_block_shape(ctx):
    """outputs: the step outputs' shapes with the time axis put back; final_states: the
    states'; state_tape: [T, *state]. The sequences share one length."""
    axis = 0 if ctx.attrs["time_major"] else 1
    step = ctx.block.program.block(ctx.attrs["sub_block"])
    seqs = ctx.input_list("inputs")
    lengths = set()
    for seq in seqs:
        if len(seq.shape) <= axis:
            ctx.fail(
                f"in block {ctx.block.idx}, sequence {seq.name!r} is "
                f"{seq.dtype}{format_shape(seq.shape)}, with no time axis {axis}"
            )
        lengths.add(seq.shape[axis])
    known = lengths - {None}
    if len(known) > 1:
        ctx.fail(f"in block {ctx.block.idx}, the sequences differ in length: {sorted(known)}")
    n = known.pop() if known and None not in lengths else None
    outs = [step.var(name) for name in ctx.attrs["step_outputs"]]
    ctx.set_output_list("outputs", [(_with_time(v.shape, axis, n), v.dtype) for v in outs])
    states = ctx.input_list("initial_states")
    ctx.set_output_list("final_states", [(v.shape, v.dtype) for v in states])
    ctx.set_output_list("state_tape", [((n, *v.shape), v.dtype) for v in states])


def recurrent_block_backward_shape(ctx):
    """Each gradient is shaped like the variable it is the gradient of."""
    step_inputs = ctx.attrs["step_inputs"]
    seqs = ctx.input_list("inputs")
    by_step = dict(zip(step_inputs, seqs))
    ctx.set_output_list(
        "inputs_grad", [(by_step[n].shape, by_step[n].dtype) for n in ctx.attrs["wanted_inputs"]]
    )
    tapes = dict(zip(ctx.attrs["step_states"], ctx.input_list("state_tape")))
    ctx.set_output_list(
        "initial_states_grad",
        [(tuple(tapes[n].shape[1:]), tapes[n].dtype) for n in ctx.attrs["diff_states"]],
    )
    wanted = [ctx.block.var(name) for name in ctx.attrs["wanted_x"]]
    ctx.set_output_list("x_grad", [(v.shape, v.dtype) for v in wanted])


def recurrent_block_kernel(*args, **attrs):
    raise KernelRuntimeError(
        "op 'recurrent_block' runs through its planned step block (an executor's plan), never "
        "as a kernel called directly",
        op="recurrent_block",
    )


def _check_recomputable(fop, where: str, which: str, source) -> None:
    """A gradient block runs a body's or step's ops again: refuse an op holding blocks of its
    own, and one drawing random numbers (run again, it would draw other numbers than the
    forward's, and its gradient would differentiate those)."""
    if framework_pb2.BLOCK in fop.attr_types.values():
        raise ProgramError(
            f"gradients through {where}: its {which} block {source.idx} holds op "
            f"{fop.type!r}, which holds blocks of its own (not supported yet)"
        )
    if get_registry().op(fop.type).draws(fop.attrs):
        raise ProgramError(
            f"gradients through {where}: its {which} block {source.idx} holds op "
            f"{fop.type!r}, which draws random numbers; the gradient block would run it again "
            "with other numbers than the forward's (not supported yet: apply it outside the "
            "loop, or without randomness inside it)"
        )


def _copy_block_ops(source, block, where: str) -> None:
    """Append ``source``'s ops to ``block`` (recomputing a step's values in a gradient block),
    refusing those that cannot be recomputed (``_check_recomputable``)."""
    for fop in source.ops:
        _check_recomputable(fop, where, "step", source)
        block.append_op(fop.type, _slots(fop.inputs), _slots(fop.outputs), dict(fop.attrs))


def recurrent_block_grad(ctx):
    """The gradient of a recurrent_block is a recurrent_block_backward (see its OpProto)
    holding a gradient block: the step's ops again (fed one run's sequence slices and states,
    read from the forward op's state_tape), then their gradients (``block_gradients``) seeded
    by the gradients of the run's outputs and new states. Each wanted x's gradient is summed
    over the runs inside the block: it is fed the running sum and computes sum + this run's
    part with ``add_n``, so the runtime only carries the sum to the next run. Gradients flow
    through floating-point states, sequences and x only."""
    op = ctx.op
    program = ctx.block.program
    attrs = op.attrs
    step = program.block(attrs["sub_block"])
    where = f"op 'recurrent_block' in block {op.block.idx}"
    states, new_states = attrs["step_states"], attrs["step_new_states"]
    floating = [step.var(s).dtype in FLOATING for s in states]
    state_grads = ctx.input_grads("initial_states")
    final_grads = ctx.output_grads("final_states")
    diff = [k for k, f in enumerate(floating) if f]
    seqs = ctx.inputs("inputs")
    wanted_inputs = [
        (name, g)
        for name, seq, g in zip(attrs["step_inputs"], seqs, ctx.input_grads("inputs"))
        if g is not None and ctx.block.var(seq).dtype in FLOATING
    ]
    x_names = ctx.inputs("x")
    wanted_x = [
        (n, g)
        for n, g in zip(x_names, ctx.input_grads("x"))
        if g is not None and ctx.block.var(n).dtype in FLOATING
    ]
    if not (wanted_inputs or wanted_x or any(state_grads[k] is not None for k in diff)):
        return
    out_grads = [
        (name, out, g)
        for name, out, g in zip(
            attrs["step_outputs"], ctx.outputs("outputs"), ctx.output_grads("outputs")
        )
        if g is not None
    ]
    finals = ctx.outputs("final_states")
    final_seeds = [
        final_grads[k] if final_grads[k] is not None else ctx.zeros_like(finals[k]) for k in diff
    ]
    block = program.create_block(parent_idx=ctx.block.idx)
    try:
        for name in (*attrs["step_inputs"], *states):
            var = step.var(name)
            block.create_var(name, var.shape, var.dtype)
        _copy_block_ops(step, block, where)
        seeds: dict[str, list[str]] = {}
        output_seeds = []
        for name, _, _ in out_grads:
            var = block.var(name)
            seed = block.create_var(program.unique_name(f"{name}@GRAD@STEP"), var.shape, var.dtype)
            seeds.setdefault(name, []).append(seed.name)
            output_seeds.append(seed.name)
        state_seeds = []
        for k in diff:
            var = block.var(new_states[k])
            seed = block.create_var(
                program.unique_name(f"{new_states[k]}@GRAD@STEP"), var.shape, var.dtype
            )
            seeds.setdefault(new_states[k], []).append(seed.name)
            state_seeds.append(seed.name)
        wanted = (
            [states[k] for k in diff] + [n for n, _ in wanted_inputs] + [n for n, _ in wanted_x]
        )
        grads = block_gradients(block, seeds, wanted)
        fed = {*attrs["step_inputs"], *states, *x_names, *output_seeds, *state_seeds}
        grad_outs = []
        for name in wanted[: len(diff) + len(wanted_inputs)]:
            grad = grads[name]
            if grad is None:
                grad = block.append_op("fill_like", {"x": name}, None, {"value": 0.0}).output(
                    "out"
                )[0]
            elif grad in fed or grad in grad_outs:  # (the scan swaps or saves distinct values)
                grad = block.append_op("add_n", {"xs": [grad]}, None).output("out")[0]
            grad_outs.append(grad)
        accumulators = []
        for name, _ in wanted_x:
            var = ctx.block.var(name)
            acc = block.create_var(program.unique_name(f"{name}@GRAD@SUM"), var.shape, var.dtype)
            accumulators.append(acc.name)
            part = grads[name]
            xs = [acc.name] if part is None else [acc.name, part]
            grad_outs.append(block.append_op("add_n", {"xs": xs}, None).output("out")[0])
    finally:
        program.rollback()
    carried_out = [
        state_grads[k]
        if state_grads[k] is not None
        else ctx.unused_grad(ctx.inputs("initial_states")[k])
        for k in diff
    ]
    ctx.append_op(
        "recurrent_block_backward",
        {
            "inputs": seqs,
            "x": x_names,
            "state_tape": ctx.outputs("state_tape"),
            "outputs_grad": [g for _, _, g in out_grads],
            "final_states_grad": final_seeds,
        },
        {
            "inputs_grad": [g for _, g in wanted_inputs],
            "initial_states_grad": carried_out,
            "x_grad": [g for _, g in wanted_x],
        },
        {
            "grad_block": block,
            "time_major": attrs["time_major"],
            "is_reverse": attrs["is_reverse"],
            "step_inputs": attrs["step_inputs"],
            "step_states": states,
            "output_seeds": output_seeds,
            "diff_states": [states[k] for k in diff],
            "state_seeds": state_seeds,
            "wanted_inputs": [n for n, _ in wanted_inputs],
            "wanted_x": [n for n, _ in wanted_x],
            "accumulators": accumulators,
            "grad_outs": grad_outs,
        },
    )
